package options

import (
	"crypto"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// identityFlags are the flags that name a signer; none of them may be given
// empty (an empty regular expression would match anything).
var identityFlags = []string{
	"certificate-identity", "certificate-identity-regexp",
	"certificate-oidc-issuer", "certificate-oidc-issuer-regexp",
	"certificate-github-workflow-repository", "certificate-github-workflow-ref",
	"certificate-github-workflow-sha", "certificate-github-workflow-trigger",
	"certificate-github-workflow-name",
	"certificate-subject", "certificate-email", "certificate-uri", "certificate-dns",
	"key",
}

// VerifyIdentity returns the identity policy the flags name. A flag given
// with an empty value is refused rather than ignored. Regular expressions
// are anchored by verify (^(?:…)$).
func (o *IdentityOptions) VerifyIdentity(fs *pflag.FlagSet) (verify.Identity, error) {
	for _, name := range identityFlags {
		if f := fs.Lookup(name); f != nil && f.Changed && f.Value.String() == "" {
			return verify.Identity{}, fmt.Errorf("--%s is empty: give a value or leave the flag out", name)
		}
	}
	return o.Identity, nil
}

// PublicKey reads the --key PEM public key; nil when --key is not given.
func (o *IdentityOptions) PublicKey() (crypto.PublicKey, error) {
	if o.Key == "" {
		return nil, nil
	}
	pub, err := trustroot.ReadPublicKeyFile(o.Key)
	return pub, KeyFileFlag(err)
}

// KeyFileFlag says a *trustroot.KeyFileError of a --key file with the
// flag: the file's error alone when it cannot be read, else with its path.
func KeyFileFlag(err error) error {
	var fe *trustroot.KeyFileError
	switch {
	case errors.As(err, &fe) && fe.Read:
		return fmt.Errorf("--key: %w", fe.Err)
	case errors.As(err, &fe):
		return fmt.Errorf("--key %s: %w", fe.Path, fe.Err)
	}
	return err
}
