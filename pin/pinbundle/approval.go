package pinbundle

import (
	"time"

	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// ApprovalOf returns the approval a successful verification stands for:
// the method, the verified signer (the certificate SAN; for an enterprise
// certificate without one, its subject DN; the key's ID for a key), the OIDC
// issuer of a keyless certificate, the bundle digest and the transparency
// log entry. It records evidence only; it does not check that
// res is verified: callers pass the Result of a Verify that returned no
// error.
func ApprovalOf(res *verify.Result) pin.Approval {
	a := pin.Approval{
		Method:       res.Method,
		Identity:     res.Identity,
		BundleDigest: res.BundleDigest,
	}
	switch res.Method {
	case verify.MethodSigstore:
		a.Issuer = res.Issuer
	case verify.MethodCertificate:
		if a.Identity == "" {
			a.Identity = res.Subject
		}
	}
	if t := res.Tlog; t != nil {
		a.Tlog = &verify.TlogEvidence{LogIndex: t.LogIndex, LogID: t.LogID}
		if t.IntegratedTime != nil && t.IntegratedTime.Unix() != 0 {
			// As a lock holds it: whole seconds, UTC.
			at := time.Unix(t.IntegratedTime.Unix(), 0).UTC()
			a.Tlog.IntegratedTime = &at
		}
	}
	return a
}

// VerifiedOf returns what a successful verification established: the
// approval (ApprovalOf), the server name and version of the signed
// statement, and the verified signing time, the earliest of the
// transparency log and timestamp authority times that verified (a check at
// the current time is no evidence of when the bundle was signed: zero
// then). Like ApprovalOf it does not check that res is verified.
func VerifiedOf(res *verify.Result) pin.Verified {
	v := pin.Verified{Approval: ApprovalOf(res), Server: res.Server}
	for _, ts := range res.Timestamps {
		if ts.Type != "Tlog" && ts.Type != "TimestampAuthority" {
			continue
		}
		if t := ts.Timestamp.UTC(); v.SignedAt.IsZero() || t.Before(v.SignedAt) {
			v.SignedAt = t
		}
	}
	return v
}
