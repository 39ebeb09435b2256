package monitor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/verify"
)

// Released is the set of artifact digests a publisher released
// ("sha256:HEX"): an entry whose logged digest is among them is not a
// finding.
type Released struct {
	digests map[string]bool
}

// NewReleased returns an empty set.
func NewReleased() *Released { return &Released{digests: map[string]bool{}} }

// Contains reports whether d was released.
func (r *Released) Contains(d string) bool { return r != nil && r.digests[d] }

// Len is the number of digests.
func (r *Released) Len() int {
	if r == nil {
		return 0
	}
	return len(r.digests)
}

// AddDigest adds one digest, "sha256:" and 64 lowercase hex digits.
func (r *Released) AddDigest(d string) error {
	if !digest.ValidDigest(d) {
		return fmt.Errorf("released digest %q is not sha256: and 64 lowercase hex digits", d)
	}
	r.digests[d] = true
	return nil
}

// AddBundle adds the digests a Sigstore bundle's signature covers, as a
// log entry records them: for a DSSE envelope the SHA-256 of its payload
// (a Rekor dsse entry) and of its pre-authentication encoding (a Rekor v2
// hashedrekord over the envelope, as mcpsign signs); for a message
// signature its message digest; and the digest of each Rekor v2 or v1
// entry the bundle carries.
func (r *Released) AddBundle(data []byte) error {
	b, err := verify.ParseBundle(data, true)
	if err != nil {
		return err
	}
	switch {
	case b.GetDsseEnvelope() != nil:
		env := b.GetDsseEnvelope()
		r.add(sha256.Sum256(env.GetPayload()))
		r.add(sha256.Sum256(dsse.PAE(env.GetPayloadType(), env.GetPayload())))
	case b.GetMessageSignature() != nil:
		md := b.GetMessageSignature().GetMessageDigest()
		if alg, ok := hashNames.Get()[md.GetAlgorithm()]; ok && len(md.GetDigest()) > 0 {
			r.digests[alg+":"+hex.EncodeToString(md.GetDigest())] = true
		}
	}
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		if pe, err := ParseEntry(e.GetCanonicalizedBody()); err == nil {
			r.digests[pe.Digest] = true
		} else if pe, err := parseEntryV1(e.GetCanonicalizedBody()); err == nil {
			r.digests[pe.Digest()] = true
		}
	}
	return nil
}

func (r *Released) add(sum [32]byte) { r.digests[digest.Prefix+hex.EncodeToString(sum[:])] = true }

// AddDir adds every bundle in dir: the files named *.sigstore.json,
// *.sigstore or *.bundle.json, recursively. A file that is not a bundle is
// an error naming it; symbolic links are not followed.
func (r *Released) AddDir(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || !isBundleName(d.Name()) {
			return nil
		}
		data, err := verify.ReadBundleFile(path)
		if err != nil {
			return err
		}
		if err := r.AddBundle(data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		n++
		return nil
	})
	return n, err
}

func isBundleName(name string) bool {
	return slices.ContainsFunc([]string{".sigstore.json", ".sigstore", ".bundle.json"}, func(s string) bool { return strings.HasSuffix(name, s) })
}
