package options

import (
	"crypto"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/verify"
)

// VerifyOptions are the flags of the verify commands besides the source,
// trust and identity groups: the bundle, the log and time policy, and the
// hand-off to a lock.
type VerifyOptions struct {
	Bundle string
	// Bundles are every --bundle given, in order (Bundle is the last): more
	// than one is for a policy threshold (docs/POLICY.md).
	Bundles          []string
	BundleFromServer bool
	// AllowPrivateBundles lets the bundle URL a remote server advertises
	// be on any address (source.ServedAddresses).
	AllowPrivateBundles bool
	RequireTlog         bool
	RequireTimestamp    bool
	AllowCurrentTime    bool
	WriteLock           string
	Force               bool
	PackageFiles        []string
	PackageIntegrity    []string
	// Audit is --audit-log, with --write-lock.
	Audit AuditOptions
}

// AddFlags adds the flags that apply to method m. The generic bundle check
// (generic true) requires a log entry by default, as Sigstore clients do;
// the key and certificate methods make it a choice.
func (o *VerifyOptions) AddFlags(fs *pflag.FlagSet, m verify.Method, generic bool) {
	if generic {
		fs.StringVar(&o.Bundle, "bundle", "", "Sigstore bundle to verify: a file, or an https:// URL (required)")
	} else {
		fs.Var(bundleList{&o.Bundle, &o.Bundles}, "bundle", "Sigstore bundle to verify: a file, or an https:// URL (required, unless --bundle-from-server or a --policy that names one); repeat it with --policy for a threshold: one bundle per signer")
	}
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
		StringArrayVar(fs, &o.PackageFiles, "package-file", "require that the statement binds this released artifact (an npm tarball, wheel, sdist or MCP Bundle): a package entry with its digest (repeatable)")
		StringArrayVar(fs, &o.PackageIntegrity, "package-integrity", "require that the statement binds the npm package of this integrity string, as in a package-lock: sha512-BASE64 (repeatable)")
		fs.StringVar(&o.WriteLock, "write-lock", "", "on success, write the lock file (docs/LOCK.md) with the approved definitions and the approval evidence")
		fs.BoolVar(&o.Force, "force", false, "replace an existing --write-lock file")
		o.Audit.AddFlags(fs)
	}
}

// Policy returns the verification policy for method m with the signer's
// identity (none when id is empty) and key (see
// IdentityOptions.VerifyIdentity and PublicKey).
func (o *VerifyOptions) Policy(m verify.Method, id verify.Identity, key crypto.PublicKey) verify.Policy {
	p := verify.Policy{
		Method:           m,
		RequireTlog:      o.RequireTlog && m != verify.MethodSigstore,
		RequireTimestamp: o.RequireTimestamp,
		AllowCurrentTime: o.AllowCurrentTime,
		PublicKey:        key,
	}
	if id != (verify.Identity{}) {
		p.Identities = []verify.Identity{id}
	}
	return p
}

// PackageRequirements returns the released artifacts the statement must
// bind: each --package-file, read and digested, and each
// --package-integrity.
func (o *VerifyOptions) PackageRequirements() ([]verify.PackageRequirement, error) {
	if n := len(o.PackageFiles) + len(o.PackageIntegrity); n > MaxPackages {
		return nil, fmt.Errorf("--package-file and --package-integrity: at most %d packages", MaxPackages)
	}
	var out []verify.PackageRequirement
	for _, f := range o.PackageFiles {
		r, err := verify.PackageFile(f)
		if err != nil {
			return nil, fmt.Errorf("--package-file: %w", err)
		}
		out = append(out, r)
	}
	for _, in := range o.PackageIntegrity {
		r, err := verify.PackageIntegrity(in)
		if err != nil {
			return nil, fmt.Errorf("--package-integrity %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// addFromServerFlag adds --bundle-from-server and --allow-private-bundles
// (docs/DISCOVERY.md).
func (o *VerifyOptions) addFromServerFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.BundleFromServer, "bundle-from-server", false, "verify the bundle the server advertises in its hello (capabilities \"dev.mcpsign/attestation\"), exactly as a --bundle file: only the signature and the policy decide")
	fs.BoolVar(&o.AllowPrivateBundles, "allow-private-bundles", false, "fetch the bundle URL a remote server advertises from loopback, private and link-local addresses too (refused for a server on a public address; a server on a loopback or private address may name its own kind)")
}
