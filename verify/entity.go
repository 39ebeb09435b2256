package verify

import (
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// parsedBundle is a bundle whose parts are parsed once per verification.
// sigstore-go's Verify asks its entity for the verification material twice
// and for the signature content three times, and mcpsign reads the
// material and the log entries again after it; each *bundle.Bundle call
// parses again (the leaf certificate, the DSSE envelope, each entry's
// body): docs/PERFORMANCE.md, "In-process, one verifier reused". The
// results are the bundle's own, so every reader sees what it would have
// parsed. Not for concurrent use: one per verification.
type parsedBundle struct {
	*bundle.Bundle

	vc     sgverify.VerificationContent
	vcErr  error
	vcDone bool

	sc     sgverify.SignatureContent
	scErr  error
	scDone bool

	entries     []*tlog.Entry
	entriesErr  error
	entriesDone bool
}

func newParsedBundle(b *bundle.Bundle) *parsedBundle { return &parsedBundle{Bundle: b} }

func (p *parsedBundle) VerificationContent() (sgverify.VerificationContent, error) {
	if !p.vcDone {
		p.vc, p.vcErr = p.Bundle.VerificationContent()
		p.vcDone = true
	}
	return p.vc, p.vcErr
}

func (p *parsedBundle) SignatureContent() (sgverify.SignatureContent, error) {
	if !p.scDone {
		p.sc, p.scErr = p.Bundle.SignatureContent()
		p.scDone = true
	}
	return p.sc, p.scErr
}

func (p *parsedBundle) TlogEntries() ([]*tlog.Entry, error) {
	if !p.entriesDone {
		p.entries, p.entriesErr = p.Bundle.TlogEntries()
		p.entriesDone = true
	}
	return p.entries, p.entriesErr
}
