package mcpwire

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// AttestationCapability is the member of a server's capabilities.extensions
// (2026-07-28) or capabilities.experimental (earlier protocols) under which
// it may advertise its own attestation (docs/DISCOVERY.md).
const AttestationCapability = "dev.mcpsign/attestation"

// MaxAttestationBundleBytes bounds a bundle carried in a hello, as a bundle
// file is bounded.
const MaxAttestationBundleBytes = boundedfile.MaxBundleBytes

// ErrAttestation is wrapped by every refusal of an advertised attestation:
// a hint that is malformed, too large or names no usable bundle.
var ErrAttestation = errors.New("advertised attestation")

// ErrNoAttestation: the server advertised no attestation.
var ErrNoAttestation = errors.New(`the server advertises no attestation (no "` + AttestationCapability + `" in its capabilities)`)

// Attestation is what a server advertised of its own attestation: either
// the bundle itself, or where to fetch it. It is a hint: the bundle is
// verified as a bundle file would be, under the host's policy.
type Attestation struct {
	// Bundle is the Sigstore bundle JSON object, raw as the server sent it;
	// nil when the server gave a URL.
	Bundle []byte
	// URL is the https URL of the bundle; empty when the bundle is inline.
	URL string
	// Digest is "sha256:<64 lowercase hex>", the SHA-256 of the bytes at
	// URL, when the server gave one.
	Digest string
}

// attestationMembers are the members of the hint object.
var attestationMembers = []string{"bundle", "bundleUrl", "bundleDigest"}

// Advertised returns the capability object that may carry the server's
// attestation: capabilities.extensions under the 2026-07-28 generation,
// capabilities.experimental under the initialize one; nil when absent or
// null.
func (h *Hello) Advertised() []byte {
	if h == nil || h.Caps == nil {
		return nil
	}
	v := h.Caps[advertisedMember(h.Modern)]
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

func advertisedMember(modern bool) string {
	if modern {
		return "extensions"
	}
	return "experimental"
}

// Attestation reads the attestation the server advertised in its hello
// (see AdvertisedAttestation). It returns ErrNoAttestation when there is
// none.
func (h *Hello) Attestation() (*Attestation, error) {
	return AdvertisedAttestation(h.Advertised())
}

// AdvertisedAttestation reads the attestation hint from caps, the
// capability object Hello.Advertised returns (and digest.Snapshot.Advertised
// carries), strictly: caps is an object whose member
// "dev.mcpsign/attestation" (no case variant, not repeated) is an object
// with exactly one of "bundle" (a JSON object of at most
// MaxAttestationBundleBytes) and "bundleUrl" (an absolute https URL with a
// host and no user info), and "bundleDigest" ("sha256:" and 64 lowercase
// hex digits) only beside bundleUrl. Other members are ignored. It returns
// ErrNoAttestation when caps is empty or has no such member (or it is
// null), and an error wrapping ErrAttestation for anything else refused.
func AdvertisedAttestation(caps []byte) (*Attestation, error) {
	caps = bytes.TrimSpace(caps)
	if len(caps) == 0 || string(caps) == "null" {
		return nil, ErrNoAttestation
	}
	m, err := digest.ReadMembers(caps, AttestationCapability)
	if err != nil {
		return nil, fmt.Errorf("%w: capabilities: %w", ErrAttestation, err)
	}
	raw, ok := m[AttestationCapability]
	if !ok || string(raw) == "null" {
		return nil, ErrNoAttestation
	}
	return ParseAttestation(raw)
}

// ParseAttestation reads the hint object itself (the value of
// "dev.mcpsign/attestation"); see AdvertisedAttestation.
func ParseAttestation(raw []byte) (*Attestation, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrAttestation, fmt.Sprintf(format, a...))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, bad("%s is not a JSON object", textsafe.RawQuote(AttestationCapability))
	}
	m, err := digest.ReadMembers(raw, attestationMembers...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAttestation, err)
	}
	b, hasBundle := m["bundle"]
	u, hasURL := m["bundleUrl"]
	d, hasDigest := m["bundleDigest"]
	switch {
	case hasBundle && hasURL:
		return nil, bad("both bundle and bundleUrl: give one")
	case !hasBundle && !hasURL:
		return nil, bad("neither bundle nor bundleUrl")
	case hasBundle && hasDigest:
		return nil, bad("bundleDigest is for bundleUrl, not an inline bundle")
	}
	a := &Attestation{}
	if hasBundle {
		b = bytes.TrimSpace(b)
		if len(b) > MaxAttestationBundleBytes {
			return nil, fmt.Errorf("%w: bundle: %w: %d bytes, at most %d", ErrAttestation, boundedfile.ErrTooLarge, len(b), MaxAttestationBundleBytes)
		}
		if len(b) == 0 || b[0] != '{' {
			return nil, bad("bundle is not a JSON object")
		}
		if _, _, err := digest.Members(b); err != nil {
			return nil, fmt.Errorf("%w: bundle: %w", ErrAttestation, err)
		}
		a.Bundle = b
		return a, nil
	}
	s, err := digest.DecodeString(u)
	if err != nil {
		return nil, fmt.Errorf("%w: bundleUrl: %w", ErrAttestation, err)
	}
	if err := CheckBundleURL(s); err != nil {
		return nil, fmt.Errorf("%w: bundleUrl: %w", ErrAttestation, err)
	}
	a.URL = s
	if hasDigest {
		if a.Digest, err = digest.DecodeString(d); err != nil {
			return nil, fmt.Errorf("%w: bundleDigest: %w", ErrAttestation, err)
		}
		if !digest.ValidDigest(a.Digest) {
			return nil, bad("bundleDigest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(textsafe.Cut(a.Digest, 80)))
		}
	}
	return a, nil
}

// CheckBundleURL accepts an absolute https URL with a host, no user info
// and no fragment: where a bundle may be fetched from.
func CheckBundleURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		// The text is not echoed: a URL that does not parse cannot be
		// redacted, and it may carry a password or token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a URL (%d bytes): %w", len(s), err)
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("%s is not an https URL", textsafe.RawQuote(textsafe.Cut(netguard.ShownURL(u), 120)))
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%s has no host", textsafe.RawQuote(textsafe.Cut(netguard.ShownURL(u), 120)))
	case u.User != nil:
		return fmt.Errorf("%s carries user info", textsafe.RawQuote(textsafe.Cut(netguard.ShownURL(u), 120)))
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%s has a fragment", textsafe.RawQuote(textsafe.Cut(netguard.ShownURL(u), 120)))
	}
	return nil
}
