package options

import (
	"context"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// TrustRootOptions returns the trustroot.Options the trust flags name.
func (o *TrustOptions) TrustRootOptions() trustroot.Options {
	return trustroot.Options{
		TrustedRootPath: o.TrustedRoot,
		CacheDir:        o.TUFCache,
		Mirror:          o.TUFMirror,
		Offline:         o.Offline,
	}
}

// TrustSources returns the verify.TrustSources the trust flags name: the
// trusted root of TrustRootOptions and --ca-roots, --ca-intermediates.
func (o *TrustOptions) TrustSources() verify.TrustSources {
	return verify.TrustSources{Root: o.TrustRootOptions(), CARoots: o.CARoots, CAIntermediates: o.CAIntermediates}
}

// LoadTrustedMaterial returns the Sigstore trusted material the flags name
// (--trusted-root, else the TUF root with --tuf-cache, --tuf-mirror and
// --offline), wrapped in trustroot.WithChainCache: verify with it.
func (o *TrustOptions) LoadTrustedMaterial(ctx context.Context) (root.TrustedMaterial, error) {
	tm, err := trustroot.Load(ctx, o.TrustRootOptions())
	if err != nil {
		return nil, err
	}
	return trustroot.WithChainCache(tm), nil
}

// LoadSigningConfig returns the public-good signing configuration through
// TUF with the trust flags' cache, mirror and offline rules, or the file
// path names when not "".
func (o *TrustOptions) LoadSigningConfig(ctx context.Context, path string) (*root.SigningConfig, error) {
	opts := o.TrustRootOptions()
	opts.SigningConfigPath = path
	return trustroot.LoadSigningConfig(ctx, opts)
}
