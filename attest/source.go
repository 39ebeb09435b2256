package attest

import (
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// SourceField is one field of a Source that a Fulcio certificate can vouch
// for with one of its extensions.
type SourceField struct {
	// Claim names the predicate claim: "source.repository", "source.commit"
	// or "source.ref".
	Claim string
	// Extension names the Fulcio extension (OID and name).
	Extension string
	// Get returns the field of a Source.
	Get func(*Source) string
}

// SourceFields returns the fields of a Source in predicate order, each
// with the Fulcio extension that vouches for it (1.3.6.1.4.1.57264.1.12–.14,
// docs/STATEMENT.md "Claims are the signer's word").
func SourceFields() []SourceField {
	return []SourceField{
		{"source.repository", "1.3.6.1.4.1.57264.1.12 (source repository URI)", func(s *Source) string { return s.Repository }},
		{"source.commit", "1.3.6.1.4.1.57264.1.13 (source repository digest)", func(s *Source) string { return s.Commit }},
		{"source.ref", "1.3.6.1.4.1.57264.1.14 (source repository ref)", func(s *Source) string { return s.Ref }},
	}
}

// ErrSourceMismatch is wrapped by a *SourceMismatchError.
var ErrSourceMismatch = errors.New("source claim contradicts the certificate")

// SourceMismatchError is a predicate source claim that the certificate's
// extension contradicts.
type SourceMismatchError struct {
	Field SourceField
	// Claimed is the predicate's value, Vouched the certificate's.
	Claimed, Vouched string
}

func (e *SourceMismatchError) Error() string {
	return fmt.Sprintf("the predicate says %s is %s, the certificate's extension %s says %s",
		e.Field.Claim, textsafe.RawQuote(e.Claimed), e.Field.Extension, textsafe.RawQuote(e.Vouched))
}

// Unwrap returns ErrSourceMismatch.
func (e *SourceMismatchError) Unwrap() error { return ErrSourceMismatch }

// CheckSource compares the claimed source with the one a certificate's
// extensions vouch for, field by field: a field either side leaves empty
// is not compared. The first field that differs is a *SourceMismatchError.
func CheckSource(claimed, vouched *Source) error {
	if claimed == nil || vouched == nil {
		return nil
	}
	for _, f := range SourceFields() {
		c, v := f.Get(claimed), f.Get(vouched)
		if c != "" && v != "" && c != v {
			return &SourceMismatchError{Field: f, Claimed: c, Vouched: v}
		}
	}
	return nil
}
