package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrHint: a server.json the hint cannot be written into.
var ErrHint = errors.New("cannot write the attestation hint")

// MaxPublisherProvidedBytes is what the official registry keeps of
// _meta[PublisherProvided]: a hint that makes it larger is refused.
const MaxPublisherProvidedBytes = 4096

// HintFile is Hint over the server.json file at path, read within the
// bound of one entry (DefaultLimits.MaxEntryBytes); an error of Hint
// names path.
func HintFile(path string, ptrs []Pointer) ([]byte, error) {
	data, err := boundedfile.Read(path, int64(DefaultLimits.MaxEntryBytes), nil)
	if err != nil {
		return nil, err
	}
	out, err := Hint(data, ptrs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// WriteServerJSON writes data to path atomically, keeping the mode of the
// file it replaces (0644 for a new one): a server.json hinted in place
// keeps its permissions.
func WriteServerJSON(path string, data []byte) error {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	return atomicfile.Write(path, data, atomicfile.Options{Overwrite: true, Perm: perm})
}

// Hint writes the attestation pointer into server.json (docs/REGISTRY.md,
// "The hint"): _meta[PublisherProvided][AttestationMember] becomes the
// one pointer, or the list when there are several; every other byte of
// the document is kept (members, order, white space), _meta and
// PublisherProvided are added when absent. The document must read
// strictly, and the publisher-provided block must stay within
// MaxPublisherProvidedBytes.
func Hint(serverJSON []byte, ptrs []Pointer) ([]byte, error) {
	if len(ptrs) == 0 {
		return nil, fmt.Errorf("%w: no bundle to point at", ErrHint)
	}
	for i, p := range ptrs {
		// Each pointer as the user gave it, said once (not through the
		// reader of pointers, whose prefixes name a document's members).
		if err := mcpwire.CheckBundleURL(p.URL); err != nil {
			return nil, fmt.Errorf("%w: bundle %d: bundleUrl %w", ErrHint, i+1, err)
		}
		if !digest.ValidDigest(p.Digest) {
			return nil, fmt.Errorf("%w: bundle %d: bundleDigest %s is not sha256: and 64 lowercase hex digits", ErrHint, i+1, textsafe.RawQuote(textsafe.Cut(p.Digest, 80)))
		}
		if _, err := pointers(hintMeta(p), DefaultLimits.withDefaults()); err != nil {
			return nil, fmt.Errorf("%w: bundle %d: %w", ErrHint, i+1, err)
		}
	}
	var val any = ptrs[0]
	if len(ptrs) > 1 {
		val = ptrs
	}
	v, _ := json.Marshal(val)
	out, err := setMember(serverJSON, []string{"_meta", PublisherProvided, AttestationMember}, v)
	if err != nil {
		return nil, err
	}
	e, err := ParseServer(out, Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHint, err)
	}
	if e.AttestationErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrHint, e.AttestationErr)
	}
	_, meta, _ := digest.Members(out)
	_, pp, _ := digest.Members(meta["_meta"])
	if n := len(compact(pp[PublisherProvided])); n > MaxPublisherProvidedBytes {
		return nil, fmt.Errorf("%w: _meta.%s would be %d bytes; the registry keeps %d", ErrHint, PublisherProvided, n, MaxPublisherProvidedBytes)
	}
	return out, nil
}

func hintMeta(p Pointer) []byte {
	v, _ := json.Marshal(map[string]any{PublisherProvided: map[string]any{AttestationMember: p}})
	return v
}

func compact(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// setMember sets the member at path (object member names from the top)
// to the JSON value v, adding the missing objects, and keeps every other
// byte of doc. doc must be strict JSON with an object at each step.
func setMember(doc []byte, path []string, v []byte) ([]byte, error) {
	if _, _, err := digest.Members(bytes.TrimSpace(doc)); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object read strictly: %w", ErrHint, err)
	}
	root, err := hujson.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHint, err)
	}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%w: not a JSON object", ErrHint)
	}
	indent := "  "
	depth := 1
	for i, name := range path {
		last := i == len(path)-1
		j := -1
		for k, m := range obj.Members {
			if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == name {
				j = k
			}
		}
		if j >= 0 && !last {
			next, ok := obj.Members[j].Value.Value.(*hujson.Object)
			if !ok {
				return nil, fmt.Errorf("%w: %s is not an object", ErrHint, strings.Join(path[:i+1], "."))
			}
			if ind := memberIndent(obj); ind != "" && depth == 1 {
				indent = ind
			}
			obj, depth = next, depth+1
			continue
		}
		// The value to put here: v, or the rest of the path around v.
		val := v
		for k := len(path) - 1; k > i; k-- {
			val, _ = json.Marshal(map[string]json.RawMessage{path[k]: val})
		}
		nv, err := hujson.Parse(val)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrHint, err)
		}
		if ind := memberIndent(obj); ind != "" && depth == 1 {
			indent = ind
		}
		if j >= 0 {
			nv.BeforeExtra, nv.AfterExtra = obj.Members[j].Value.BeforeExtra, obj.Members[j].Value.AfterExtra
			obj.Members[j].Value = nv
			break
		}
		addMember(obj, name, nv, strings.Repeat(indent, depth))
		break
	}
	return root.Pack(), nil
}

// memberIndent is the white space before the object's first member name
// after its last newline ("" when the object is on one line).
func memberIndent(obj *hujson.Object) string {
	if len(obj.Members) == 0 {
		return ""
	}
	b := string(obj.Members[0].Name.BeforeExtra)
	i := strings.LastIndexByte(b, '\n')
	if i < 0 {
		return ""
	}
	return b[i+1:]
}

// addMember appends name: nv to obj, laid out as its other members are.
func addMember(obj *hujson.Object, name string, nv hujson.Value, indent string) {
	m := hujson.ObjectMember{Name: hujson.Value{Value: hujson.String(name)}, Value: nv}
	m.Value.BeforeExtra = hujson.Extra(" ")
	if n := len(obj.Members); n > 0 {
		last := obj.Members[n-1]
		m.Name.BeforeExtra = append(hujson.Extra(nil), last.Name.BeforeExtra...)
		m.Value.BeforeExtra = append(hujson.Extra(nil), last.Value.BeforeExtra...)
	} else if strings.Contains(string(obj.AfterExtra), "\n") {
		m.Name.BeforeExtra = hujson.Extra("\n" + indent)
	}
	obj.Members = append(obj.Members, m)
}

// WithVerified returns the entry's server.json with
// _meta[VerifiedMember] set to block (the other bytes kept).
func WithVerified(serverJSON []byte, block []byte) ([]byte, error) {
	return setMember(serverJSON, []string{"_meta", VerifiedMember}, block)
}
