package options

import (
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/verify"
)

// IdentityOptions are the signer identity policy, named as cosign names
// them. Regular expressions are anchored by mcpsign (^(?:…)$); an empty one
// is refused. Shared by verify, pin, proxy and monitor.
type IdentityOptions struct {
	// Identity is the signer the flags name (VerifyIdentity).
	Identity verify.Identity
	// Key is a PEM public key, for the key method.
	Key string
}

// AddFlags adds the identity flags to fs.
func (o *IdentityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Identity.SAN, "certificate-identity", "", "expected signer identity: an e-mail or URI SAN as the certificate encodes it (or Fulcio's otherName, sigstore only), exact")
	fs.StringVar(&o.Identity.SANRegexp, "certificate-identity-regexp", "", "expected signer identity, as a regular expression matched against the whole of an e-mail or URI SAN (or Fulcio's otherName, sigstore only)")
	fs.StringVar(&o.Identity.Issuer, "certificate-oidc-issuer", "", "expected OIDC issuer of the signer's certificate, exact")
	fs.StringVar(&o.Identity.IssuerRegexp, "certificate-oidc-issuer-regexp", "", "expected OIDC issuer, as a regular expression matched against the whole issuer")
	fs.StringVar(&o.Identity.GitHubWorkflowRepository, "certificate-github-workflow-repository", "", "expected GitHub workflow repository (owner/name) in the certificate")
	fs.StringVar(&o.Identity.GitHubWorkflowRef, "certificate-github-workflow-ref", "", "expected GitHub workflow ref, e.g. refs/tags/v1.2.0")
	fs.StringVar(&o.Identity.GitHubWorkflowSHA, "certificate-github-workflow-sha", "", "expected GitHub workflow commit SHA")
	fs.StringVar(&o.Identity.GitHubWorkflowTrigger, "certificate-github-workflow-trigger", "", "expected GitHub workflow trigger event, e.g. push")
	fs.StringVar(&o.Identity.GitHubWorkflowName, "certificate-github-workflow-name", "", "expected GitHub workflow name")
	fs.StringVar(&o.Identity.Subject, "certificate-subject", "", "expected subject DN of an enterprise certificate exactly as 'openssl x509 -noout -subject -nameopt RFC2253' prints it, e.g. 'CN=release,O=Example'")
	fs.StringVar(&o.Identity.Email, "certificate-email", "", "expected email SAN of an enterprise certificate")
	fs.StringVar(&o.Identity.URI, "certificate-uri", "", "expected URI SAN of an enterprise certificate (scheme and host case-insensitive)")
	fs.StringVar(&o.Identity.DNS, "certificate-dns", "", "expected DNS SAN of an enterprise certificate")
	fs.StringVar(&o.Key, "key", "", "PEM public key of the signer (key method)")
}
