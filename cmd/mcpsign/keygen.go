package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/sign"
)

func newKeygenCmd(a *app) *cobra.Command {
	var o options.KeygenOptions
	cmd := &cobra.Command{
		Use:   "keygen [-o PREFIX] [--algorithm ALG]",
		Short: "Make a key pair for 'mcpsign sign key'",
		Long: `Make a new private key, encrypted with a password, and its public key:

  PREFIX.key  the private key: PEM "ENCRYPTED PRIVATE KEY" (PKCS#8, PBES2 with
              PBKDF2-HMAC-SHA256 at 600,000 iterations and AES-256-CBC), mode
              0600; OpenSSL and most libraries read it
  PREFIX.pub  the public key: PEM "PUBLIC KEY", to give to verifiers

The password comes from the environment variable named by --password-env, or is
asked for twice at the terminal (never echoed). An empty password is refused.
Existing files are kept unless --force; both files are written atomically, and
neither is left behind if the other cannot be written.

Keep the private key secret and backed up. For signing in CI without a
long-lived key, prefer 'mcpsign sign sigstore' (keyless).`,
		Example: `  mcpsign keygen -o release
  MCPSIGN_KEY_PASSWORD=... mcpsign keygen --algorithm ed25519 --password-env MCPSIGN_KEY_PASSWORD -o ci
  openssl pkey -in release.key -noout        # OpenSSL reads it too (asks the password)`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runKeygen(a, &o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runKeygen makes a key pair and writes its two files.
func runKeygen(a *app, o *options.KeygenOptions) error {
	if o.Prefix == "" {
		return errors.New("-o PREFIX is empty")
	}
	o.Password = passwordFunc(a, o.PasswordEnv, "the new key")
	res, err := sign.Keygen(o.KeygenOptions)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "mcpsign: wrote %s (private, keep it secret) and %s (public)\nmcpsign: key %s\n", res.KeyPath, res.PubPath, res.KeyID)
	return nil
}

// passwordFunc reads a key password from the environment variable envVar,
// else from the terminal without echo; what names the key in the prompt.
func passwordFunc(a *app, envVar, what string) sign.PasswordFunc {
	return func(confirm bool) ([]byte, error) {
		if envVar != "" {
			v := a.getenv(envVar)
			if v == "" {
				return nil, fmt.Errorf("--password-env %s: the variable is unset or empty", envVar)
			}
			return []byte(v), nil
		}
		f, ok := a.stdin.(*os.File)
		if !ok || !a.isTerminal() {
			if confirm {
				// A new key: nothing is encrypted yet.
				return nil, fmt.Errorf("%s needs a password to be encrypted with: pass --password-env VAR naming an environment variable that holds it, or run at a terminal to be asked", what)
			}
			return nil, fmt.Errorf("%w: pass --password-env VAR naming an environment variable that holds it, or run at a terminal to be asked", sign.ErrPasswordRequired)
		}
		return sign.PromptPassword(f, a.stderr, what, confirm)
	}
}
