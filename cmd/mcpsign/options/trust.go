package options

import (
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/verify"
)

// TrustOptions say which trusted material to verify against: a Sigstore
// trusted_root.json, the public-good root through TUF (cached), or
// enterprise PKI roots. Shared by sign (self-check), verify, pin and proxy.
type TrustOptions struct {
	// TrustSources are what the flags name: Root.TrustedRootPath, a
	// trusted_root.json file (empty: the public-good root through TUF);
	// Root.CacheDir, the TUF metadata cache directory (empty: the default
	// under the user cache directory); Root.Mirror, the TUF repository URL
	// (empty: public-good); Root.Offline, which refuses any network fetch
	// (the cached TUF root is used if it is still valid, else the command
	// fails); and CARoots and CAIntermediates, PEM files of enterprise x509
	// trust for the certificate method.
	verify.TrustSources
}

// AddFlags adds the trust flags to fs.
func (o *TrustOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Root.TrustedRootPath, "trusted-root", "", "Sigstore trusted_root.json to verify against (default: the public-good root through TUF)")
	fs.StringVar(&o.Root.CacheDir, "tuf-cache", "", "TUF metadata cache directory (default: mcpsign/tuf under the user cache directory)")
	fs.StringVar(&o.Root.Mirror, "tuf-mirror", "", "TUF repository URL (default: the Sigstore public-good repository)")
	fs.BoolVar(&o.Root.Offline, "offline", false, "never use the network: use the cached TUF root, and fail if nothing usable is cached")
	fs.StringVar(&o.CARoots, "ca-roots", "", "PEM file of trusted root CA certificates (certificate method)")
	fs.StringVar(&o.CAIntermediates, "ca-intermediates", "", "PEM file of intermediate CA certificates (certificate method)")
}
