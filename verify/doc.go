// Package verify checks a Sigstore bundle of an mcpsign statement against
// the definitions an MCP server serves now, before a host first approves
// the server: the bundle, the signature, the certificate chain (or the
// public key), the transparency log, the signing time, the signer's
// identity, the statement, and the match of every definition name and
// digest, in that order (docs/VERIFY.md). It fails closed: every failure is
// a *StepError naming the step that failed, and a Result is Verified only
// when every step passed.
//
// The cryptographic checks are sigstore-go's (pkg/verify), configured per
// signing method as cosign configures them; this package adds what
// sigstore-go leaves to its callers: anchored identity regular expressions,
// the digitalSignature key usage, enterprise (PKI) identities, the DSSE
// payload type, binding every subject name to its digest, the predicate's
// claims against the certificate's source extensions, and the per-definition
// match with diffs.
//
// A host loads the trust a policy needs with LoadTrust, builds one Verifier
// per trusted root and policy and reuses it (the package's Example goes
// from a trusted root and a live server to a written lock):
//
//	p := verify.Policy{
//		Method: verify.MethodSigstore,
//		Identities: []verify.Identity{{ // any of them
//			SAN:    "https://github.com/acme/notes-mcp/.github/workflows/release.yml@refs/tags/v1.2.0",
//			Issuer: "https://token.actions.githubusercontent.com",
//		}},
//	}
//	trust, err := verify.LoadTrust(ctx, verify.TrustSources{Root: trustroot.Options{TrustedRootPath: "trusted_root.json"}}, p)
//	…
//	v, err := verify.New(trust, p)
//	…
//	res, err := v.Verify(ctx, bundleJSON, snapshot)
package verify
