package options

import (
	"context"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/trustroot"
)

// LoadTrustedMaterial returns the Sigstore trusted material the flags name
// (--trusted-root, else the TUF root with --tuf-cache, --tuf-mirror and
// --offline), wrapped in trustroot.WithChainCache: verify with it.
func (o *TrustOptions) LoadTrustedMaterial(ctx context.Context) (root.TrustedMaterial, error) {
	tm, err := trustroot.Load(ctx, o.Root)
	if err != nil {
		return nil, err
	}
	return trustroot.WithChainCache(tm), nil
}

// LoadSigningConfig returns the public-good signing configuration through
// TUF with the trust flags' cache, mirror and offline rules, or the file
// path names when not "".
func (o *TrustOptions) LoadSigningConfig(ctx context.Context, path string) (*root.SigningConfig, error) {
	opts := o.Root
	opts.SigningConfigPath = path
	return trustroot.LoadSigningConfig(ctx, opts)
}
