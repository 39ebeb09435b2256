// Package evidence holds the two types that sign, verify and pin share
// about a signature: the Method it was made and checked by, and the Tlog
// entry that vouches for it. verify names them verify.Method and
// verify.TlogEvidence (aliases of these); pin's lock approval records them
// (docs/LOCK.md). The package links no Sigstore code, so that pin, and the
// proxy that links pin (docs/PROXY.md), need not either.
package evidence

import "time"

// Method is how a bundle was, or must have been, signed (docs/SIGNING.md).
// A lock's approval adds methods of its own that are no signature (pin's
// MethodTOFU and MethodManual).
type Method string

// The signing methods.
const (
	// MethodSigstore: a Fulcio certificate for an OIDC identity.
	MethodSigstore Method = "sigstore"
	// MethodKey: a plain public key.
	MethodKey Method = "key"
	// MethodCertificate: an enterprise x509 certificate.
	MethodCertificate Method = "certificate"
)

// Valid reports whether m is a signing method: sigstore, key or
// certificate.
func (m Method) Valid() bool {
	return m == MethodSigstore || m == MethodKey || m == MethodCertificate
}

// Tlog identifies the transparency log entry of a bundle.
type Tlog struct {
	LogIndex int64 `json:"logIndex"`
	// LogID is the hex log ID (key ID) of the log.
	LogID string `json:"logId"`
	// IntegratedTime is the entry's integrated time, when a signed entry
	// timestamp vouches for it (Rekor v1); Rekor v2 has none.
	IntegratedTime *time.Time `json:"integratedTime,omitempty"`
}

// Equal reports whether t and u are the same entry: the same log, index
// and integrated time (to the second, as logs give it; none equals none).
func (t Tlog) Equal(u Tlog) bool {
	if t.LogIndex != u.LogIndex || t.LogID != u.LogID || (t.IntegratedTime == nil) != (u.IntegratedTime == nil) {
		return false
	}
	return t.IntegratedTime == nil || t.IntegratedTime.Unix() == u.IntegratedTime.Unix()
}
