package verify

import (
	"crypto"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Mismatch is what a failed verification did not match, where
// sigstore-go's own words do not say it ("accepted signatures do not match
// threshold", "0 < 1"): see Explain.
type Mismatch struct {
	// Step is the failed step: StepSignature or StepTlog.
	Step Step
	// BundleKey is the key ID the bundle names by its key hint
	// (sha256:HEX, or the hint quoted when it has another form; "" when
	// the bundle carries a certificate), Key the key ID of the key it was
	// verified with (StepSignature).
	BundleKey, Key string
	// BundleLogs are the log IDs (hex) of the bundle's entries, none of
	// them in TrustedLogs, the log IDs of the trusted root, sorted
	// (StepTlog).
	BundleLogs, TrustedLogs []string
}

// Explain is Explain with the verifier's own key (Policy.PublicKey) and
// Sigstore trusted root: what err, a failed signature or log step of
// verifying bundleJSON with v, did not match.
func (v *Verifier) Explain(err error, bundleJSON []byte) *Mismatch {
	return Explain(err, bundleJSON, v.policy.PublicKey, v.sigstore)
}

// Explain returns what err, a failed signature or log step of the bundle
// bundleJSON, did not match: the bundle's key hint against key (nil: no
// key, nothing to say), or the bundle's logs against those of tm (the
// trusted material it was verified with; nil: none). It is nil when there
// is nothing to add: another step, a bundle that does not parse, or a
// bundle logged by a trusted log (the failure is something else).
func Explain(err error, bundleJSON []byte, key crypto.PublicKey, tm root.TrustedMaterial) *Mismatch {
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepSignature && se.Step != StepTlog {
		return nil
	}
	b, perr := ParseBundle(bundleJSON, true)
	if perr != nil {
		return nil
	}
	m := &Mismatch{Step: se.Step}
	if se.Step == StepSignature {
		if key == nil {
			return nil
		}
		if m.Key, perr = evidence.KeyID(key); perr != nil {
			return nil
		}
		if pk := b.GetVerificationMaterial().GetPublicKey(); pk != nil {
			var ok bool
			if m.BundleKey, ok = evidence.KeyIDOfHint(pk.GetHint()); !ok {
				m.BundleKey = textsafe.RawQuote(pk.GetHint())
			}
		}
		return m
	}
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		m.BundleLogs = append(m.BundleLogs, hex.EncodeToString(e.GetLogId().GetKeyId()))
	}
	if tm != nil {
		for id := range tm.RekorLogs() {
			m.TrustedLogs = append(m.TrustedLogs, id)
		}
	}
	slices.Sort(m.TrustedLogs)
	for _, l := range m.BundleLogs {
		if slices.Contains(m.TrustedLogs, l) {
			return nil
		}
	}
	return m
}
