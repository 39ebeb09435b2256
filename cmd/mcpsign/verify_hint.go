package main

import (
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/verify"
)

// explainFailure adds to a failed verification what did not match, where
// sigstore-go's own words do not say it: the bundle's key hint against the
// given key ("accepted signatures do not match threshold"), and the
// bundle's log ids against the trusted root's ("0 < 1"), and the flags that
// fix a failure (withFlagHint). Other errors are returned as they are; the
// step stays the same. key gives the --key public key, read only for a
// failed signature.
func explainFailure(verr error, bundleJSON []byte, key func() crypto.PublicKey, tm root.TrustedMaterial) error {
	if hinted := withFlagHint(verr); hinted != verr {
		return hinted
	}
	var se *verify.StepError
	if !errors.As(verr, &se) || se.Step != verify.StepSignature && se.Step != verify.StepTlog {
		return verr
	}
	b, err := verify.ParseBundle(bundleJSON, true)
	if err != nil {
		return verr
	}
	var hint string
	switch se.Step {
	case verify.StepSignature:
		k := key()
		if k == nil {
			return verr
		}
		want, err := evidence.KeyID(k)
		if err != nil {
			return verr
		}
		got := "none (the bundle carries a certificate, not a key hint)"
		if pk := b.GetVerificationMaterial().GetPublicKey(); pk != nil {
			got = keyIDOfHint(pk.GetHint())
		}
		if got == want {
			hint = fmt.Sprintf("the bundle names --key %s (its key hint), but the signature does not verify with it: the bundle was changed after it was signed", want)
		} else {
			hint = fmt.Sprintf("the bundle was signed by key %s (its key hint); --key is %s", got, want)
		}
	case verify.StepTlog:
		var logs []string
		for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
			logs = append(logs, hex.EncodeToString(e.GetLogId().GetKeyId()))
		}
		var trusted []string
		if tm != nil {
			for id := range tm.RekorLogs() {
				trusted = append(trusted, id)
			}
		}
		slices.Sort(trusted)
		if len(logs) == 0 {
			hint = "the bundle has no transparency log entry"
			break
		}
		for _, l := range logs {
			if slices.Contains(trusted, l) {
				return verr // a trusted log: the failure is something else
			}
		}
		root := "has no transparency log"
		if len(trusted) > 0 {
			root = "has logs " + strings.Join(trusted, ", ")
		}
		hint = fmt.Sprintf("the bundle's log entry is from log %s, which the trusted root does not have (it %s): pass the trusted root of the Sigstore deployment that signed it (--trusted-root)", strings.Join(logs, ", "), root)
	default:
		return verr
	}
	return &verify.StepError{Step: se.Step, Err: fmt.Errorf("%w\n(%s)", se.Err, hint)}
}

// keyIDOfHint spells a bundle's key hint (base64 of the key's SHA-256) as
// mcpsign names keys, sha256:HEX; a hint of another form is shown quoted.
func keyIDOfHint(hint string) string {
	if id, ok := evidence.KeyIDOfHint(hint); ok {
		return id
	}
	return fmt.Sprintf("%q", hint)
}
