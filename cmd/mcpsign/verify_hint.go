package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// explainFailure adds to a failed verification with v what did not match
// (verify.Verifier.Explain), said with the flags that fix it, and the
// flags that fix other failures (withFlagHint). Other errors are returned
// as they are; the step stays the same.
func explainFailure(verr error, bundleJSON []byte, v *verify.Verifier) error {
	if hinted := withFlagHint(verr); hinted != verr {
		return hinted
	}
	var se *verify.StepError
	m := v.Explain(verr, bundleJSON)
	if m == nil || !errors.As(verr, &se) {
		return verr
	}
	var hint string
	switch {
	case m.Step == verify.StepSignature && m.BundleKey == m.Key:
		hint = fmt.Sprintf("the bundle names --key %s (its key hint), but the signature does not verify with it: the bundle was changed after it was signed", m.Key)
	case m.Step == verify.StepSignature:
		got := m.BundleKey
		if got == "" {
			got = "none (the bundle carries a certificate, not a key hint)"
		}
		hint = fmt.Sprintf("the bundle was signed by key %s (its key hint); --key is %s", got, m.Key)
	case len(m.BundleLogs) == 0:
		hint = "the bundle has no transparency log entry"
	default:
		root := "has no transparency log"
		if len(m.TrustedLogs) > 0 {
			root = "has logs " + strings.Join(m.TrustedLogs, ", ")
		}
		hint = fmt.Sprintf("the bundle's log entry is from log %s, which the trusted root does not have (it %s): pass the trusted root of the Sigstore deployment that signed it (--trusted-root)", strings.Join(m.BundleLogs, ", "), root)
	}
	return &verify.StepError{Step: se.Step, Err: textsafe.WithLines(se.Err, "("+hint+")")}
}

// keySignedHint adds to err, an identity missing for method m, that the
// bundle file given (when it is one and reads) is signed by a key, not a
// certificate: the identity flags cannot fit it, 'verify key' does.
func keySignedHint(bundle string, m verify.Method, err error) error {
	if m == verify.MethodKey || bundle == "" || strings.Contains(bundle, "://") {
		return err
	}
	data, rerr := verify.ReadBundleFile(bundle)
	if rerr != nil {
		return err
	}
	b, perr := verify.ParseBundle(data, true)
	if perr != nil || b.GetVerificationMaterial().GetPublicKey() == nil {
		return err
	}
	return textsafe.WithLines(err, "(the bundle "+bundle+" is signed by a key, not a certificate: verify it with 'mcpsign verify key --key PUB.pem', or give --key to 'mcpsign verify')")
}
