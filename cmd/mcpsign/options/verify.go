package options

import (
	"crypto"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/verify"
)

// VerifyOptions are the flags of the verify commands besides the source,
// trust and identity groups: the bundle, the log and time policy, and the
// hand-off to a lock.
type VerifyOptions struct {
	Bundle           string
	BundleFromServer bool
	RequireTlog      bool
	RequireTimestamp bool
	AllowCurrentTime bool
	WriteLock        string
	Force            bool
}

// AddFlags adds the flags that apply to method m. The generic bundle check
// (generic true) requires a log entry by default, as Sigstore clients do;
// the key and certificate methods make it a choice.
func (o *VerifyOptions) AddFlags(fs *pflag.FlagSet, m verify.Method, generic bool) {
	fs.StringVar(&o.Bundle, "bundle", "", "Sigstore bundle to verify: a file, or an https:// URL (required, unless --bundle-from-server)")
	if !generic {
		o.addFromServerFlag(fs)
	}
	switch {
	case generic:
		fs.BoolVar(&o.RequireTlog, "require-tlog", true, "require a verified transparency log entry (always required for keyless certificates)")
	case m != verify.MethodSigstore:
		fs.BoolVar(&o.RequireTlog, "require-tlog", false, "require a transparency log entry with an inclusion proof or signed entry timestamp from a log of the trusted root")
	}
	fs.BoolVar(&o.RequireTimestamp, "require-timestamp", false, "require an RFC 3161 timestamp from a timestamp authority of the trusted root")
	if m == verify.MethodCertificate && !generic {
		fs.BoolVar(&o.AllowCurrentTime, "allow-current-time", false, "check the certificate chain at the current time when the bundle has no timestamp (and no log entry is required), instead of failing")
	}
	if !generic {
		fs.StringVar(&o.WriteLock, "write-lock", "", "on success, write the lock file (docs/LOCK.md) with the approved definitions and the approval evidence")
		fs.BoolVar(&o.Force, "force", false, "replace an existing --write-lock file")
	}
}

// Policy returns the verification policy for method m with the signer's
// identity and key (see IdentityOptions.VerifyIdentity and PublicKey).
func (o *VerifyOptions) Policy(m verify.Method, id verify.Identity, key crypto.PublicKey) verify.Policy {
	p := verify.Policy{
		Method:           m,
		Identity:         id,
		RequireTlog:      o.RequireTlog && m != verify.MethodSigstore,
		RequireTimestamp: o.RequireTimestamp,
		AllowCurrentTime: o.AllowCurrentTime,
	}
	if key != nil {
		p.PublicKey = key
	}
	return p
}

// addFromServerFlag adds --bundle-from-server (docs/DISCOVERY.md).
func (o *VerifyOptions) addFromServerFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.BundleFromServer, "bundle-from-server", false, "verify the bundle the server advertises in its hello (capabilities \"dev.mcpsign/attestation\"), exactly as a --bundle file: only the signature and the policy decide")
}
