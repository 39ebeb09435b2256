package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Prefix starts every digest string: "sha256:" then 64 lowercase hex digits.
const Prefix = "sha256:"

// EmptySetDigest is the Set Digest of a kind with no definitions: the
// SHA-256 of the JCS form of the empty JSON array, "[]".
const EmptySetDigest = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"

// canonPool reuses canonicalizer buffers between calls.
var canonPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// Canonicalize reads one JSON text strictly and returns its RFC 8785 (JCS)
// form. It refuses invalid UTF-8, lone and reversed surrogates, repeated
// member names at any depth, number spellings outside RFC 8259 and numbers
// that are not finite doubles; the error is a *SyntaxError. Unlike a
// definition, any JSON value is accepted, and numbers of any finite
// magnitude.
func Canonicalize(data []byte) ([]byte, error) {
	c := canonPool.Get().(*canonicalizer)
	defer canonPool.Put(c)
	out, err := c.canonicalize(data, canonOptions{})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// DefinitionDigest returns the Definition Digest v1 of one raw definition
// object: strict parse (refusing also any number of magnitude 2^53 or more),
// top-level "_meta" removed, RFC 8785, SHA-256. The error, when the
// definition has no digest, is a *SyntaxError naming the JSON pointer of the
// offending value.
func DefinitionDigest(raw []byte) (string, error) {
	d, _, err := definitionDigest(raw, "")
	return d, err
}

// definitionDigest digests one definition and captures the string value of
// its key member. keyErr describes a key member that is present but not a
// usable string.
func definitionDigest(raw []byte, keyMember string) (digest string, key keyResult, err error) {
	c := canonPool.Get().(*canonicalizer)
	defer canonPool.Put(c)
	canon, err := c.canonicalize(raw, canonOptions{safeNumbers: true, definition: true, keyMember: keyMember})
	if err != nil {
		return "", keyResult{}, err
	}
	key = keyResult{found: c.hasKey, value: string(c.key), err: c.keyErr}
	return hashHex(canon), key, nil
}

type keyResult struct {
	found bool
	value string
	err   string
}

// InstructionsDigest returns the Instructions Digest: SHA-256 over the UTF-8
// bytes of the instructions string.
func InstructionsDigest(instructions string) string {
	return hashHex([]byte(instructions))
}

// KeyDigest pairs a definition's key with its digest.
type KeyDigest struct {
	Key    string
	Digest string
}

// SetDigest returns the Set Digest of one kind: the (key, digest) pairs
// sorted by key then digest in UTF-8 byte order, the JSON array of the
// digest strings in that order, in JCS form, SHA-256. The caller must not
// pass a set in which any definition is invalid or any key repeats.
func SetDigest(pairs []KeyDigest) string {
	sorted := slices.Clone(pairs)
	slices.SortFunc(sorted, func(a, b KeyDigest) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Digest, b.Digest)
	})
	// Digest strings are "sha256:" and hex: their JCS form is the string as
	// is, quoted, so the array is written directly.
	buf := make([]byte, 0, 2+len(sorted)*(len(Prefix)+64+3))
	buf = append(buf, '[')
	for i, p := range sorted {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCanonicalString(buf, []byte(p.Digest))
	}
	buf = append(buf, ']')
	return hashHex(buf)
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return Prefix + hex.EncodeToString(sum[:])
}

// ValidDigest reports whether s is a well-formed digest string: "sha256:"
// and 64 lowercase hex digits.
func ValidDigest(s string) bool {
	if len(s) != len(Prefix)+64 || !strings.HasPrefix(s, Prefix) {
		return false
	}
	for _, b := range []byte(s[len(Prefix):]) {
		if (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	return true
}

// Definition is one definition of a snapshot with its digest, or the reason
// it has none.
type Definition struct {
	Kind   Kind
	Key    string // "" when it could not be read
	Index  int    // position in the listing, from 0
	Digest string // "" when Err is set
	Raw    json.RawMessage
	Err    error // a *SyntaxError, ErrMissingKey, ErrDuplicateKey or a key error
}

// Result holds the digests of a snapshot.
type Result struct {
	// Definitions has every definition, valid or not, ordered by kind
	// (tools, prompts, resource templates), then key, then index.
	Definitions []Definition
	// Sets has the Set Digest of each kind whose definitions all have a
	// digest; a kind with any invalid or repeated definition is absent.
	Sets map[Kind]string
	// Counts has the number of definitions of each kind.
	Counts map[Kind]int
	// Instructions is the Instructions Digest, "" when there are none.
	Instructions string
}

// CountText is CountText of r.Counts: "N tools, N prompts, N resource
// templates".
func (r *Result) CountText() string {
	return CountText(func(k Kind) int { return r.Counts[k] })
}

// Err returns an *InvalidDefinitionsError listing every definition without a
// digest, or nil when every definition has one.
func (r *Result) Err() error {
	var errs []*DefinitionError
	for _, d := range r.Definitions {
		if d.Err != nil {
			errs = append(errs, &DefinitionError{Kind: d.Kind, Key: d.Key, Index: d.Index, Err: d.Err})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &InvalidDefinitionsError{Errors: errs}
}

// Lookup returns the definition of kind k with key, if exactly one valid
// definition has it.
func (r *Result) Lookup(k Kind, key string) (Definition, bool) {
	for _, d := range r.Definitions {
		if d.Kind == k && d.Key == key && d.Err == nil {
			return d, true
		}
	}
	return Definition{}, false
}

// Compute digests every definition of s, finds repeated keys, and computes
// the Set Digests and the Instructions Digest. It never fails as a whole: a
// definition without a digest carries its reason, and Result.Err reports
// them all. It covers the signed kinds (Kinds) only: s.Resources are
// ComputeResources'.
func Compute(s *Snapshot) *Result {
	r := &Result{Sets: map[Kind]string{}, Counts: map[Kind]int{}}
	for _, k := range Kinds {
		r.addKind(k, s.Definitions(k))
	}
	if s.Instructions != nil {
		r.Instructions = InstructionsDigest(*s.Instructions)
	}
	return r
}

// ComputeResources digests the static resources of s as Compute digests a
// kind (KindResource, keyed by "uri"; docs/DIGEST.md): every resource with
// its digest or the reason it has none, repeated URIs withheld, and the Set
// Digest of them all in Sets[KindResource] when every one has a digest. It
// returns nil when s has no resources listed (s.Resources is nil).
func ComputeResources(s *Snapshot) *Result {
	if s.Resources == nil {
		return nil
	}
	r := &Result{Sets: map[Kind]string{}, Counts: map[Kind]int{}}
	r.addKind(KindResource, s.Resources)
	return r
}

// Summary digests s (Compute, and ComputeResources when its static
// resources are listed) and says what it holds, as 'mcpsign snapshot'
// does: "N tools, N prompts, N resource templates", then ", N resources"
// when they are listed. err is the *InvalidDefinitionsError of the
// definitions, else of the resources, that have no digest.
func Summary(s *Snapshot) (counts string, err error) {
	r := Compute(s)
	counts, err = r.CountText(), r.Err()
	if rr := ComputeResources(s); rr != nil {
		counts += ", " + KindResource.Count(len(s.Resources))
		if err == nil {
			err = rr.Err()
		}
	}
	return counts, err
}

// addKind digests the definitions of one kind, sorted by key then index,
// and its Set Digest when all are valid.
func (r *Result) addKind(k Kind, defs []json.RawMessage) {
	r.Counts[k] = len(defs)
	first := len(r.Definitions)
	for i, raw := range defs {
		r.Definitions = append(r.Definitions, digestOne(k, i, raw))
	}
	kindDefs := r.Definitions[first:]
	markDuplicates(kindDefs)
	slices.SortStableFunc(kindDefs, func(a, b Definition) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	pairs := make([]KeyDigest, 0, len(kindDefs))
	for _, d := range kindDefs {
		if d.Err != nil {
			return
		}
		pairs = append(pairs, KeyDigest{Key: d.Key, Digest: d.Digest})
	}
	r.Sets[k] = SetDigest(pairs)
}

func digestOne(k Kind, index int, raw json.RawMessage) Definition {
	d := Definition{Kind: k, Index: index, Raw: raw}
	dg, key, err := definitionDigest(raw, k.KeyMember())
	switch {
	case err != nil:
		d.Err = err
		// Name the definition where possible even though it is invalid.
		d.Key = bestEffortKey(k, raw)
	case key.err != "":
		d.Err = errors.New(key.err)
	case !key.found:
		d.Err = ErrMissingKey
	case key.value == "":
		d.Err = errors.New("key member " + textsafe.RawQuote(k.KeyMember()) + " is an empty string")
	default:
		d.Key, d.Digest = key.value, dg
	}
	return d
}

// bestEffortKey reads the key of a definition that failed the strict
// reader, for naming it in the error only. It never yields a digest.
func bestEffortKey(k Kind, raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var key string
	if json.Unmarshal(m[k.KeyMember()], &key) != nil || !utf8.ValidString(key) {
		return ""
	}
	return key
}

// markDuplicates withholds every copy of a key that appears more than once.
func markDuplicates(defs []Definition) {
	seen := make(map[string]int, len(defs))
	// An invalid copy named by its best-effort key counts too: the valid
	// copy would otherwise stand for a key the server also served otherwise.
	for _, d := range defs {
		if d.Key != "" {
			seen[d.Key]++
		}
	}
	for i := range defs {
		if defs[i].Key != "" && seen[defs[i].Key] > 1 && defs[i].Err == nil {
			defs[i].Err = ErrDuplicateKey
			defs[i].Digest = ""
		}
	}
}
