package pin

import (
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Expected is what a reviewer saw and approves (docs/LOCK.md, "approval"):
// the Set Digest of each kind named (digest.KindResource for the static
// resources) and the Instructions Digest ("" for none), when named.
type Expected struct {
	Sets         map[digest.Kind]string
	Instructions *string
}

// ParseExpect reads what a reviewer expects, one SET=DIGEST a value: SET
// is tools, prompts, resourceTemplates, resources or instructions, DIGEST
// "sha256:" and 64 lowercase hex digits (or none, for instructions that
// were removed). A repeated or unknown SET, or a malformed digest, is an
// error.
func ParseExpect(values []string) (*Expected, error) {
	e := &Expected{Sets: map[digest.Kind]string{}}
	for _, v := range values {
		set, d, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("%s: want SET=DIGEST", textsafe.RawQuote(v))
		}
		if set == "instructions" {
			if e.Instructions != nil {
				return nil, fmt.Errorf("instructions given twice")
			}
			if d == "none" {
				d = ""
			} else if !digest.ValidDigest(d) {
				return nil, fmt.Errorf("%s: the digest is not sha256: and 64 lowercase hex digits (or none)", textsafe.RawQuote(v))
			}
			e.Instructions = &d
			continue
		}
		var kind digest.Kind
		for _, k := range append(digest.Kinds[:], digest.KindResource) {
			if k.ListMember() == set {
				kind = k
			}
		}
		switch {
		case kind == "":
			return nil, fmt.Errorf("%s: SET is one of tools, prompts, resourceTemplates, resources, instructions", textsafe.RawQuote(v))
		case e.Sets[kind] != "":
			return nil, fmt.Errorf("%s given twice", set)
		case !digest.ValidDigest(d):
			return nil, fmt.Errorf("%s: the digest is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(v))
		}
		e.Sets[kind] = d
	}
	return e, nil
}
