package monitor

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// Errors of Released.AddBundle: why a bundle released nothing.
var (
	// ErrNotBundle: the bytes are not a Sigstore bundle.
	ErrNotBundle = errors.New("not a Sigstore bundle")
	// ErrUnwatchedRelease: the bundle is signed by a signer the monitor
	// does not watch (a certificate identity or key none of the watched
	// ones): it can release no watched entry.
	ErrUnwatchedRelease = errors.New("the bundle is not signed by a watched identity or key")
	// ErrUnverifiedRelease: the bundle claims a watched signer but does not
	// verify (its signature, certificate, or a log entry proven in a
	// trusted log). It releases nothing; listed by a registry for a watched
	// server it is an alert (KindUnverifiedRelease).
	ErrUnverifiedRelease = errors.New("the released bundle does not verify")
	// ErrUnverifiedListing: a run reported KindUnverifiedRelease alerts (a
	// registry lists, for a watched server, bundles that do not verify)
	// and wrote no state.
	ErrUnverifiedListing = errors.New("a registry lists bundles that do not verify")
)

// ReleaseCheck is what a released bundle must verify under
// (docs/MONITOR.md "Released"): the watched signers, and the trusted root
// whose logs must prove its log entry.
type ReleaseCheck struct {
	// TrustedMaterial is the trusted root: Fulcio CAs, CT logs, the
	// transparency logs and timestamp authorities.
	TrustedMaterial root.TrustedMaterial
	// Identities are the watched certificate identities (sigstore method).
	Identities []verify.Identity
	// KeyIDs are the watched keys, "sha256:HEX" (verify.KeyID).
	KeyIDs []string
}

// Released is the set of artifact digests a publisher released
// ("sha256:HEX"), each with the transparency logs that proved it: an
// entry whose logged digest was released in the log the monitor reads is
// not a finding.
type Released struct {
	check    ReleaseCheck
	sigstore *verify.Verifier
	keys     map[string]*verify.Verifier
	// digests maps each released digest to the log IDs (hex, as the
	// trusted root keys its logs) of the verified log entries of the
	// bundles that released it; a nil set is every log (a digest given
	// as released).
	digests map[string]map[string]bool
	// findings are about bundles a registry lists that released nothing,
	// reported by each run (ReleasedFromRegistry; RegistryRefresh starts
	// them again).
	findings []Finding
}

// NewReleased returns an empty set whose bundles must verify under c. It
// fails when c's identities do not compile.
func NewReleased(c ReleaseCheck) (*Released, error) {
	r := &Released{check: c, digests: map[string]map[string]bool{}, keys: map[string]*verify.Verifier{}}
	if len(c.Identities) > 0 && c.TrustedMaterial != nil {
		v, err := verify.New(verify.Trust{Sigstore: c.TrustedMaterial}, verify.Policy{Method: verify.MethodSigstore, Identities: c.Identities})
		if err != nil {
			return nil, fmt.Errorf("released bundles: %w", err)
		}
		r.sigstore = v
	}
	return r, nil
}

// releasedIn reports whether d was released in one of logIDs.
func (r *Released) releasedIn(d string, logIDs []string) bool {
	if r == nil {
		return false
	}
	logs, ok := r.digests[d]
	if !ok {
		return false
	}
	if logs == nil {
		return true
	}
	return slices.ContainsFunc(logIDs, func(id string) bool { return logs[id] })
}

// Len is the number of digests.
func (r *Released) Len() int {
	if r == nil {
		return 0
	}
	return len(r.digests)
}

// AddDigest adds one digest, "sha256:" and 64 lowercase hex digits,
// released in every log: the caller vouches for it.
func (r *Released) AddDigest(d string) error {
	if !digest.ValidDigest(d) {
		return fmt.Errorf("released digest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(d))
	}
	r.digests[d] = nil
	return nil
}

func (r *Released) addIn(d string, logs map[string]bool) {
	cur, ok := r.digests[d]
	if ok && cur == nil {
		return // released in every log already
	}
	if cur == nil {
		cur = map[string]bool{}
		r.digests[d] = cur
	}
	for id := range logs {
		cur[id] = true
	}
}

// AddBundle verifies a Sigstore bundle and adds the digests its verified
// signature covers, as a log entry records them: for a DSSE envelope the
// SHA-256 of its payload (a Rekor dsse entry) and of its
// pre-authentication encoding (a Rekor v2 hashedrekord over the envelope,
// as mcpsign signs), for a message signature its message digest. They are
// released only in the logs of the bundle's entries that verify.
//
// The bundle must verify through the verify package (sigstore-go) under a
// watched signer: a certificate of a watched identity (the sigstore
// method: chain, SCT, a verified signing time) or a watched key; and each
// log entry counted must verify on its own, with an inclusion proof whose
// checkpoint a trusted log's key signs. The log entries a bundle carries
// are never read for digests: a copy of a log entry releases nothing.
//
// Bytes that are not a bundle are ErrNotBundle; a bundle of another
// signer ErrUnwatchedRelease; one that claims a watched signer and does
// not verify ErrUnverifiedRelease. Nothing is added then.
func (r *Released) AddBundle(ctx context.Context, data []byte) error {
	if r.check.TrustedMaterial == nil {
		return errors.New("released bundles: no trusted material to verify them against")
	}
	// ParseBundle (sigstore-go) refuses more than 32 log entries: each is
	// verified on its own below.
	b, err := verify.ParseBundle(data, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotBundle, err)
	}
	digests, art, err := signedDigests(b.Bundle)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnverifiedRelease, err)
	}
	if len(b.GetVerificationMaterial().GetTlogEntries()) == 0 {
		return fmt.Errorf("%w: it has no transparency log entry", ErrUnverifiedRelease)
	}
	v, err := r.verifierFor(b.Bundle)
	if err != nil {
		return err
	}
	logs := map[string]bool{}
	var last error
	for i, te := range b.GetVerificationMaterial().GetTlogEntries() {
		if te.GetInclusionProof() == nil {
			last = fmt.Errorf("log entry %d (index %d) has no inclusion proof: nothing proves it is in the log", i, te.GetLogIndex())
			continue
		}
		one := proto.Clone(b.Bundle).(*protobundle.Bundle)
		one.VerificationMaterial.TlogEntries = []*protorekor.TransparencyLogEntry{te}
		oneJSON, err := protojson.Marshal(one)
		if err != nil {
			return err
		}
		res, err := v.VerifyBundle(ctx, oneJSON, art)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = err
			continue
		}
		if res.Tlog == nil || res.Tlog.LogID != hex.EncodeToString(te.GetLogId().GetKeyId()) {
			last = fmt.Errorf("log entry %d (index %d) was not the verified one", i, te.GetLogIndex())
			continue
		}
		logs[res.Tlog.LogID] = true
	}
	switch {
	case len(logs) > 0:
	case errors.Is(last, verify.ErrIdentityMismatch):
		return fmt.Errorf("%w: %w", ErrUnwatchedRelease, last)
	default:
		return fmt.Errorf("%w: %w", ErrUnverifiedRelease, last)
	}
	for _, d := range digests {
		r.addIn(d, logs)
	}
	return nil
}

// verifierFor is the verifier of b's signer: the sigstore method with the
// watched identities for a certificate, the key method for a watched key
// (found among the keys its log entries name, by its key id: the
// signature must then verify with it).
func (r *Released) verifierFor(b *protobundle.Bundle) (*verify.Verifier, error) {
	vm := b.GetVerificationMaterial()
	if vm.GetPublicKey() == nil {
		if r.sigstore == nil {
			return nil, fmt.Errorf("%w: it is signed with a certificate, and no certificate identity is watched", ErrUnwatchedRelease)
		}
		return r.sigstore, nil
	}
	for _, te := range vm.GetTlogEntries() {
		for _, der := range entryKeys(te.GetCanonicalizedBody()) {
			pub, err := x509.ParsePKIXPublicKey(der)
			if err != nil {
				continue
			}
			id, err := verify.KeyID(pub)
			if err != nil || !slices.Contains(r.check.KeyIDs, id) {
				continue
			}
			if v, ok := r.keys[id]; ok {
				return v, nil
			}
			v, err := verify.New(verify.Trust{Sigstore: r.check.TrustedMaterial}, verify.Policy{Method: verify.MethodKey, PublicKey: pub, RequireTlog: true})
			if err != nil {
				return nil, fmt.Errorf("%w: key %s: %w", ErrUnverifiedRelease, id, err)
			}
			r.keys[id] = v
			return v, nil
		}
	}
	return nil, fmt.Errorf("%w: it is signed with a key, and its log entries name no watched key", ErrUnwatchedRelease)
}

// entryKeys are the DER public keys a log entry body names (Rekor v2 or
// v1), nil when it names none or does not read.
func entryKeys(body []byte) [][]byte {
	var out [][]byte
	if e, err := ParseEntry(body); err == nil {
		for _, s := range e.Signers {
			if s.PublicKey != nil {
				out = append(out, s.PublicKey)
			}
		}
		return out
	}
	if e, err := parseEntryV1(body); err == nil {
		for _, s := range e.signers {
			if !s.cert && s.der != nil {
				out = append(out, s.der)
			}
		}
	}
	return out
}

// signedDigests are the digests b's signature covers, as log entries
// record them, and the artifact to verify it with: a subject of a DSSE
// statement (sigstore-go checks it is among the signed subjects), the
// message digest of a message signature.
func signedDigests(b *protobundle.Bundle) ([]string, verify.Artifact, error) {
	if env := b.GetDsseEnvelope(); env != nil {
		payload := env.GetPayload()
		pae := sha256.Sum256(dsse.PAE(env.GetPayloadType(), payload))
		sum := sha256.Sum256(payload)
		var st struct {
			Subject []struct {
				Digest map[string]string `json:"digest"`
			} `json:"subject"`
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			return nil, verify.Artifact{}, fmt.Errorf("the DSSE payload is not an in-toto statement: %v", err)
		}
		for _, s := range st.Subject {
			for _, alg := range []string{"sha256", "sha384", "sha512"} {
				if h, err := hex.DecodeString(s.Digest[alg]); err == nil && len(h) > 0 {
					return []string{digest.Prefix + hex.EncodeToString(sum[:]), digest.Prefix + hex.EncodeToString(pae[:])},
						verify.Artifact{Digest: h, DigestAlgorithm: alg}, nil
				}
			}
		}
		return nil, verify.Artifact{}, errors.New("the in-toto statement has no subject with a sha256, sha384 or sha512 digest")
	}
	md := b.GetMessageSignature().GetMessageDigest()
	alg, ok := hashNames.Get()[md.GetAlgorithm()]
	if !ok || len(md.GetDigest()) == 0 {
		return nil, verify.Artifact{}, errors.New("the message signature has no digest of a known algorithm")
	}
	return []string{alg + ":" + hex.EncodeToString(md.GetDigest())}, verify.Artifact{Digest: md.GetDigest(), DigestAlgorithm: alg}, nil
}

// SkippedFile is a file of a released directory that released nothing,
// and why.
type SkippedFile struct {
	Path string
	Err  error
}

func (s SkippedFile) String() string { return s.Path + ": " + s.Err.Error() }

// AddDir reads every regular file under dir (recursively; symbolic links
// and other non-regular files are not followed, and are skipped) as a
// released bundle (AddBundle). A file that is not a bundle, or a bundle
// of a signer that is not watched, is skipped and returned in skipped,
// with why: nothing is skipped silently. A file named as bundles are
// (*.sigstore.json, *.sigstore, *.bundle.json) that is not a bundle, and
// a bundle of a watched signer that does not verify, are errors naming
// the file.
func (r *Released) AddDir(ctx context.Context, dir string) (added int, skipped []SkippedFile, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			skipped = append(skipped, SkippedFile{path, fmt.Errorf("not a regular file (%s): not read", d.Type())})
			return nil
		}
		data, err := verify.ReadBundleFile(path)
		if err == nil {
			err = r.AddBundle(ctx, data)
		}
		switch {
		case err == nil:
			added++
		case errors.Is(err, verify.ErrBundleTooLarge) && !isBundleName(d.Name()):
			skipped = append(skipped, SkippedFile{path, fmt.Errorf("%w: larger than %d bytes", ErrNotBundle, verify.MaxBundleBytes)})
		case errors.Is(err, ErrNotBundle) && !isBundleName(d.Name()), errors.Is(err, ErrUnwatchedRelease):
			skipped = append(skipped, SkippedFile{path, err})
		default:
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	return added, skipped, err
}

func isBundleName(name string) bool {
	return slices.ContainsFunc([]string{".sigstore.json", ".sigstore", ".bundle.json"}, func(s string) bool { return strings.HasSuffix(name, s) })
}
