package pinbundle

import (
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
		Method:       pin.Method(res.Method),
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
		a.Tlog = &pin.TlogEntry{LogIndex: t.LogIndex, LogID: t.LogID}
		if t.IntegratedTime != nil {
			a.Tlog.IntegratedTime = t.IntegratedTime.Unix()
		}
	}
	return a
}
