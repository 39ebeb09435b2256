package digest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// SyntaxError describes why a JSON text was refused by the strict reader:
// what is wrong, the JSON pointer (RFC 6901) of the value in which it was
// found, and the byte offset in the input.
type SyntaxError struct {
	Reason  string // what is wrong, e.g. "invalid UTF-8 in a string"
	Pointer string // JSON pointer of the offending value; "" is the whole text
	Offset  int    // byte offset in the input
}

func (e *SyntaxError) Error() string {
	where := "at the top level"
	if e.Pointer != "" {
		where = "at " + e.Pointer
	}
	return fmt.Sprintf("%s %s (byte %d)", e.Reason, where, e.Offset)
}

// fail returns a SyntaxError at the current position and path.
func (c *canonicalizer) fail(reason string) error {
	return c.failAt(c.pos, reason)
}

// failAt returns a SyntaxError at offset (the current position when
// negative) and the current path.
func (c *canonicalizer) failAt(offset int, reason string) error {
	if offset < 0 {
		offset = c.pos
	}
	return &SyntaxError{Reason: reason, Pointer: c.pointer(), Offset: offset}
}

// pointer renders the current path as a JSON pointer. The innermost object
// frame names the member being read.
func (c *canonicalizer) pointer() string {
	var b strings.Builder
	for _, f := range c.path {
		b.WriteByte('/')
		if f.array {
			b.WriteString(strconv.Itoa(f.index))
			continue
		}
		if f.keyEnd <= f.keyStart || f.keyEnd > len(c.keys) {
			continue
		}
		b.WriteString(PointerToken(string(c.keys[f.keyStart:f.keyEnd])))
	}
	return b.String()
}

// PointerToken escapes a member name as one JSON Pointer reference token
// (RFC 6901 section 3): "~" as "~0", then "/" as "~1". It is the one
// escaping of the tree's pointers (docs/JSON.md).
func PointerToken(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// Errors a definition can have besides a SyntaxError.
var (
	// ErrDuplicateKey marks every copy of a definition whose key appears
	// more than once in its kind: all copies are withheld.
	ErrDuplicateKey = errors.New("duplicate key: another definition of this kind has the same key; every copy is withheld")
	// ErrMissingKey marks a definition without its key member.
	ErrMissingKey = errors.New("missing key member")
)

// DefinitionError is the reason one definition has no digest.
type DefinitionError struct {
	Kind  Kind
	Key   string // "" when the key could not be read
	Index int    // position in the listing, from 0
	Err   error
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("%s: %v", e.Name(), e.Err)
}

func (e *DefinitionError) Unwrap() error { return e.Err }

// Name names the definition for people: its kind and quoted key, or its
// position in the listing when it has no readable key.
func (e *DefinitionError) Name() string {
	if e.Key == "" {
		return fmt.Sprintf("%s #%d", e.Kind, e.Index)
	}
	return fmt.Sprintf("%s %s", e.Kind, textsafe.RawQuote(e.Key))
}

// InvalidDefinitionsError lists every definition of a snapshot that has no
// digest. A snapshot with any such definition has no complete set of digests:
// callers must not sign, verify or pin a partial set.
type InvalidDefinitionsError struct {
	Errors []*DefinitionError
}

func (e *InvalidDefinitionsError) Error() string {
	return strings.Join(e.ErrorLines(), "\n")
}

// ErrorLines is the message line by line (textsafe.Lines): the count, then
// one indented line per definition.
func (e *InvalidDefinitionsError) ErrorLines() []string {
	lines := []string{fmt.Sprintf("%d definition(s) cannot be digested", len(e.Errors))}
	for _, d := range e.Errors {
		lines = append(lines, "  "+d.Error())
	}
	return lines
}
