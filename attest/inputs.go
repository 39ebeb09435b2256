package attest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// MaxPackages bounds the packages of a statement.
const MaxPackages = 64

// maxClaimBytes bounds a package URL and a source claim.
const maxClaimBytes = 2048

// isPURLPrefix reports whether s starts as a package URL does: "pkg:",
// a type (a letter, '.', '+' or '-', then also digits), "/".
func isPURLPrefix(s string) bool {
	rest, ok := strings.CutPrefix(s, "pkg:")
	typ, _, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || typ == "" || (typ[0] >= '0' && typ[0] <= '9') {
		return false
	}
	return !strings.ContainsFunc(typ, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '+' || r == '-')
	})
}

// isDigestAlg reports whether s is a digest algorithm name: lowercase
// letters, digits and '-', at most 32, not starting with '-'.
func isDigestAlg(s string) bool {
	return len(s) >= 1 && len(s) <= 32 && s[0] != '-' &&
		!strings.ContainsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
}

// isDigestHex reports whether s is 16 to 256 lowercase hex digits.
func isDigestHex(s string) bool {
	return len(s) >= 16 && len(s) <= 256 &&
		!strings.ContainsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'f' || r >= '0' && r <= '9') })
}

// InputError is a package URL, a package digest or a source claim that a
// statement cannot carry. Part says which: "purl", "digest", "integrity", or the claim
// ("source.repository", "source.commit", "source.ref").
type InputError struct {
	Part, Value, Reason string
}

func (e *InputError) Error() string {
	switch {
	case strings.HasPrefix(e.Part, "source."):
		return e.Reason
	case e.Part == "integrity":
		return textsafe.RawQuote(e.Value) + ": " + e.Reason
	}
	return fmt.Sprintf("%s: %s", textsafe.RawQuote(e.Value), e.Reason)
}

// ParsePackage reads a package of a statement: its package URL
// (pkg:TYPE/NAMESPACE/NAME@VERSION) and, when digest is not "", its digest
// ALG:HEX (lowercase). A malformed one is an *InputError.
func ParsePackage(purl, digest string) (Package, error) {
	if len(purl) > maxClaimBytes || !isPURLPrefix(purl) || strings.ContainsFunc(purl, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return Package{}, &InputError{"purl", purl, "not a package URL (pkg:TYPE/NAMESPACE/NAME@VERSION, see github.com/package-url/purl-spec)"}
	}
	pkg := Package{PURL: purl}
	if digest != "" {
		alg, hexd, ok := strings.Cut(digest, ":")
		if !ok || !isDigestAlg(alg) || !isDigestHex(hexd) {
			return Package{}, &InputError{"digest", digest, "want ALG:HEX with a lowercase algorithm and lowercase hex, e.g. sha256:9f86d0…"}
		}
		pkg.Digest = map[string]string{alg: hexd}
	}
	return pkg, nil
}

// SourceWithDefaults returns the source revision a statement claims: src,
// each empty field filled from the GitHub Actions environment getenv reads
// (SourceFromGitHubActions); nil when it claims nothing. A claim with a
// control character or of more than 2048 bytes is an *InputError.
func SourceWithDefaults(src Source, getenv func(string) string) (*Source, error) {
	if gh := SourceFromGitHubActions(getenv); gh != nil {
		src.Repository = cmpOr(src.Repository, gh.Repository)
		src.Commit = cmpOr(src.Commit, gh.Commit)
		src.Ref = cmpOr(src.Ref, gh.Ref)
	}
	for _, f := range SourceFields() {
		v := f.Get(&src)
		if len(v) > maxClaimBytes || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, &InputError{f.Claim, v, "control characters or more than 2048 bytes"}
		}
	}
	if src == (Source{}) {
		return nil, nil
	}
	return &src, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ParseIntegrity reads a package digest in Subresource Integrity form, as
// npm writes "integrity" in a package-lock ("sha512-" or "sha256-" and the
// standard base64 of the digest), into algorithm → lowercase hex, the form
// of Package.Digest. A malformed one is an *InputError.
func ParseIntegrity(s string) (map[string]string, error) {
	alg, b64, ok := strings.Cut(s, "-")
	size := 0
	switch alg {
	case "sha256":
		size = 32
	case "sha512":
		size = 64
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if !ok || size == 0 || err != nil || len(raw) != size {
		return nil, &InputError{"integrity", s, `want sha512-BASE64 (or sha256-BASE64), as npm writes "integrity" in a package-lock`}
	}
	return map[string]string{alg: hex.EncodeToString(raw)}, nil
}
