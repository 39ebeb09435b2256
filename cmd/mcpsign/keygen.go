package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKeygen(cmd, a, &o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runKeygen makes a key pair and writes its two files.
func runKeygen(cmd *cobra.Command, a *app, o *options.KeygenOptions) error {
	if o.Output == "" {
		return errors.New("-o PREFIX is empty")
	}
	keyPath, pubPath := o.Output+".key", o.Output+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if err := atomicfile.Check(p, atomicfile.Options{Overwrite: o.Force}); err != nil {
			return err
		}
	}
	key, err := sign.GenerateKey(sign.Algorithm(o.Algorithm))
	if err != nil {
		return err
	}
	pw, err := passwordFunc(a, o.PasswordEnv, "the new key")(true)
	if err != nil {
		return err
	}
	err = sign.WriteKeyFiles(keyPath, pubPath, key, pw, o.Force)
	clear(pw)
	if err != nil {
		return err
	}
	id, _ := evidence.KeyID(key.Public())
	fmt.Fprintf(a.stderr, "mcpsign: wrote %s (private, keep it secret) and %s (public)\nmcpsign: key %s\n", keyPath, pubPath, id)
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
		fmt.Fprintf(a.stderr, "Password for %s: ", what)
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
		if !confirm {
			return pw, nil
		}
		fmt.Fprintf(a.stderr, "Password again: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
		same := bytes.Equal(pw, again)
		clear(again)
		if !same {
			clear(pw)
			return nil, errors.New("the passwords do not match")
		}
		return pw, nil
	}
}
