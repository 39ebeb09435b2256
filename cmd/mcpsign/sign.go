package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/sign"
)

// signFlags are the flags every sign method has.
type signFlags struct {
	src   options.SourceOptions
	stmt  options.StatementOptions
	out   options.BundleOutputOptions
	trust options.TrustOptions
	fmt   options.OutputOptions
}

func (f *signFlags) addFlags(fs *pflag.FlagSet, caRoots bool) {
	f.src.AddFlags(fs)
	f.stmt.AddFlags(fs)
	f.out.AddFlags(fs)
	f.trust.AddSigstoreFlags(fs, caRoots)
	f.fmt.AddFlags(fs)
}

const signLongCommon = `
SOURCE is what 'mcpsign digest' reads: a snapshot file, a stdio server command
(or the words after --), or a Streamable HTTP URL. Its definitions become an
in-toto statement (see 'mcpsign attest' and docs/STATEMENT.md) signed into a
Sigstore bundle v0.3: a DSSE envelope with payload type
application/vnd.in-toto+json, which cosign and every Sigstore client can verify.

Before the bundle is written it is verified with sigstore-go's verifier (the
signature, the certificate chain, the log entry and the timestamps), and the
signer is shown. The bundle is written atomically, to -o/--bundle (default
mcp-definitions.sigstore.json); an existing file is kept unless --force. On any
error nothing is written.

A definition that cannot be digested is listed and nothing is signed (exit 1).
Bad input, a bad key or password, or a service that fails: exit 2.`

func newSignCmd(a *app) *cobra.Command {
	cmd := newSignSigstoreCmd(a, "sign")
	cmd.Short = "Sign a server's definitions into a Sigstore bundle (keyless by default)"
	cmd.Long = `Sign what an MCP server serves with one of three methods:

  mcpsign sign sigstore SOURCE      keyless: a Fulcio certificate for your OIDC
                                    identity, a Rekor entry and a timestamp
                                    (the default: 'mcpsign sign SOURCE')
  mcpsign sign key SOURCE           a private key you hold ('mcpsign keygen')
  mcpsign sign certificate SOURCE   a key and an x509 certificate from your CA
` + signLongCommon + `

Without a method, 'mcpsign sign' signs keylessly and takes the flags of
'mcpsign sign sigstore'. See docs/SIGNING.md.`
	cmd.AddCommand(newSignSigstoreCmd(a, "sigstore"), newSignKeyCmd(a), newSignCertificateCmd(a))
	refuseMethodTypo(cmd, "sign", "sign a server command of that name keylessly")
	return cmd
}

// refuseMethodTypo makes cmd refuse a first word, before any --, that is a
// mistyped method (sub-command) of it: 'mcpsign sign kye' and 'mcpsign
// verify kye --bundle B -- SERVER' are typos, not a server command named
// kye. A word with '.', '/', ':' or a space (a file, a URL, a command line)
// is a source as before.
func refuseMethodTypo(cmd *cobra.Command, verb, asSource string) {
	cmd.SuggestionsMinimumDistance = 2
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 && c.ArgsLenAtDash() != 0 && !strings.ContainsAny(args[0], "./: ") {
			if sug := c.SuggestionsFor(args[0]); len(sug) > 0 {
				return fmt.Errorf("unknown %s method %s: did you mean %s? (to %s, put it after --)", verb, textsafe.RawQuote(args[0]), textsafe.RawQuote(sug[0]), asSource)
			}
		}
		return run(c, args)
	}
}

func newSignSigstoreCmd(a *app, use string) *cobra.Command {
	var (
		f  signFlags
		kl options.KeylessOptions
	)
	cmd := &cobra.Command{
		Use:   use + " SOURCE | " + use + " -- CMD [ARGS...]",
		Short: "Sign keylessly: ephemeral key, Fulcio certificate, Rekor entry, timestamp",
		Long: `Sign keylessly with Sigstore: an ephemeral ECDSA P-256 key, a short-lived Fulcio
certificate binding it to your OIDC identity (an e-mail address, or a CI
workflow), an entry in the Rekor transparency log, and RFC 3161 timestamps.
The private key is never written anywhere.

The identity token comes from, in order: --identity-token (a token, or a file
holding one), $SIGSTORE_ID_TOKEN, the GitHub Actions ambient token (the job
needs 'permissions: id-token: write'), or a browser login when you run it at a
terminal. Its audience must be the Fulcio client ID (--oidc-client-id, default
sigstore). The token is never printed.

The services come from --signing-config (a Sigstore signing_config.json v0.2),
else from the public-good Sigstore through TUF; the bundle is verified against
--trusted-root, else the public-good trusted root through TUF.
` + signLongCommon,
		Example: `  # At a terminal: log in with a browser, sign with the public-good Sigstore
  mcpsign sign -- node server.js --stdio

  # In GitHub Actions (permissions: id-token: write)
  # (the package entry, purl and sha512, read from npm pack's tarball)
  mcpsign sign sigstore server.snapshot.json -o notes.sigstore.json \
    --package acme-notes-mcp-1.2.0.tgz

  # A private Sigstore deployment
  mcpsign sign sigstore server.snapshot.json --signing-config signing_config.json \
    --trusted-root trusted_root.json --identity-token /run/secrets/id_token`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignSigstore(cmd, a, args, &f, &kl)
		},
	}
	f.addFlags(cmd.Flags(), false)
	kl.AddFlags(cmd.Flags())
	return cmd
}

// runSignSigstore signs keylessly.
func runSignSigstore(cmd *cobra.Command, a *app, args []string, f *signFlags, kl *options.KeylessOptions) error {
	return runSign(cmd, a, f, args, func(ctx context.Context) (sign.Options, error) {
		sc, err := f.trust.LoadSigningConfig(ctx, kl.SigningConfig)
		if err != nil {
			return sign.Options{}, err
		}
		tm, err := f.trust.LoadTrustedMaterial(ctx)
		if err != nil {
			return sign.Options{}, err
		}
		opts, err := sign.NewKeyless(ctx, sc, tm, sign.TokenOptions{
			Flag: kl.IdentityToken, Getenv: a.getenv, ClientID: kl.OIDCClientID,
			Interactive: a.isTerminal(), In: a.stdin, Out: a.stderr,
		}, time.Now())
		if errors.As(err, new(*sign.TokenError)) && kl.IdentityToken != "" {
			// The flag's token is the one tried, and the one at fault.
			return sign.Options{}, fmt.Errorf("--identity-token: %w", err)
		}
		return opts, err
	})
}

func newSignKeyCmd(a *app) *cobra.Command {
	var (
		f  signFlags
		ko options.KeySignOptions
	)
	cmd := &cobra.Command{
		Use:   "key --key KEY SOURCE | key --key KEY -- CMD [ARGS...]",
		Short: "Sign with a private key you hold",
		Long: `Sign with a private key: ECDSA P-256 or P-384, Ed25519, or RSA of 2048, 3072 or
4096 bits, in PEM: PKCS#8 (plain or encrypted with PBES2), SEC 1, PKCS#1, or a
cosign key. 'mcpsign keygen' makes one. The password of an encrypted key comes
from the environment variable named by --password-env, or is asked for at the
terminal. Verifiers pin the public key. mcpsign names a key by the SHA-256 of
its DER SubjectPublicKeyInfo, as sha256:HEX (what 'keygen', 'sign' and
'verify' print); the bundle carries the same digest in base64 as its key hint.

By default nothing leaves the machine. --tlog-upload logs the signature in
Rekor (--rekor-url, or the Rekor of --signing-config); --tsa-url (or the
timestamp authorities of --signing-config) adds a signed timestamp. Rekor v2
cannot log an Ed25519 DSSE signature: use ECDSA or RSA with it.
` + signLongCommon,
		Example: `  mcpsign keygen -o release
  mcpsign sign key --key release.key server.snapshot.json -o notes.sigstore.json
  mcpsign trustroot fetch -o trusted_root.json   # cosign needs a trusted root with a bundle
  cosign verify-blob-attestation --new-bundle-format --bundle notes.sigstore.json \
    --key release.pub --insecure-ignore-tlog --trusted-root trusted_root.json \
    --type https://mcpsign.dev/definitions/v1 --digest <a subject's sha256> --digestAlg sha256

  # In CI, logged and timestamped
  MCPSIGN_KEY_PASSWORD=... mcpsign sign key --key release.key --password-env MCPSIGN_KEY_PASSWORD \
    --tlog-upload --rekor-url https://rekor.sigstore.dev \
    --tsa-url https://timestamp.sigstore.dev/api/v1/timestamp -- ./server --stdio`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignKey(cmd, a, args, &f, &ko, false)
		},
	}
	f.addFlags(cmd.Flags(), false)
	ko.AddFlags(cmd.Flags())
	return cmd
}

// runSignKey signs with the --key private key, and with certificate its
// --certificate.
func runSignKey(cmd *cobra.Command, a *app, args []string, f *signFlags, ko *options.KeySignOptions, certificate bool) error {
	switch {
	case certificate && (ko.Key == "" || ko.Certificate == ""):
		return fmt.Errorf("missing --key or --certificate: the private key and its PEM certificate")
	case ko.Key == "":
		return fmt.Errorf("missing --key: the PEM private key to sign with ('mcpsign keygen' makes one)")
	}
	if err := ko.Log.Validate(); err != nil {
		return err
	}
	return runSign(cmd, a, f, args, func(ctx context.Context) (sign.Options, error) {
		s, err := sign.KeyFiles{
			Key: ko.Key, Password: passwordFunc(a, ko.PasswordEnv, ko.Key), EmbedChain: ko.EmbedChain,
			Certificate: sign.CertificateFiles{Leaf: ko.Certificate, Chain: ko.Chain, Roots: f.trust.CARoots},
		}.Signer(time.Now())
		var fe *sign.CertificateFileError
		if errors.As(err, &fe) {
			flag := map[string]string{"leaf": "--certificate", "chain": "--certificate-chain", "roots": "--ca-roots"}[fe.Which]
			return sign.Options{}, fmt.Errorf("%s %s: %w", flag, fe.Path, fe.Err)
		} else if err != nil {
			return sign.Options{}, options.KeyFileFlag(err)
		}
		return withLogs(ctx, sign.Options{Signer: s}, f, &ko.Log)
	})
}

func newSignCertificateCmd(a *app) *cobra.Command {
	var (
		f  signFlags
		ko options.KeySignOptions
	)
	cmd := &cobra.Command{
		Use:   "certificate --key KEY --certificate CERT [--certificate-chain CHAIN] SOURCE",
		Short: "Sign with a private key and an x509 certificate from your CA",
		Long: `Sign with a private key and its x509 certificate from an enterprise CA.

Before anything is signed, the certificate is refused if its public key is not
the key's, if it is expired or not yet valid, if it lacks the digitalSignature
key usage, if it has an extended key usage other than codeSigning (no EKU at all
is accepted), or if --certificate-chain (the issuing intermediates in order,
then the root) does not link it to a root. Give the root last in the chain or
with --ca-roots.

The bundle holds the leaf certificate only (as Sigstore bundle v0.3
recommends); verifiers trust your roots and intermediates ('mcpsign verify
--ca-roots --ca-intermediates', cosign '--certificate-chain'). --embed-chain
puts the intermediates into the bundle instead (x509CertificateChain), which
only verifiers told to accept a chain in a v0.3 bundle read.

--tlog-upload and --tsa-url (or --signing-config) work as for 'sign key'.
` + signLongCommon,
		Example: `  mcpsign sign certificate --key release.key --certificate release.crt \
    --certificate-chain ca-chain.pem server.snapshot.json -o notes.sigstore.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignKey(cmd, a, args, &f, &ko, true)
		},
	}
	f.addFlags(cmd.Flags(), true)
	ko.AddFlags(cmd.Flags())
	ko.AddCertificateFlags(cmd.Flags())
	return cmd
}

// withLogs adds the transparency log, timestamp authorities and trusted
// root that the log flags ask for.
func withLogs(ctx context.Context, opts sign.Options, f *signFlags, lg *options.LogOptions) (sign.Options, error) {
	l := sign.LogServices{Upload: lg.TlogUpload, RekorURL: lg.RekorURL, RekorVersion: lg.RekorVersion, TSAURL: lg.TSAURL}
	if lg.SigningConfig != "" {
		sc, err := f.trust.LoadSigningConfig(ctx, lg.SigningConfig)
		if err != nil {
			return opts, err
		}
		l.SigningConfig = sc
	}
	needsTrust, err := l.Apply(&opts, time.Now())
	if err != nil || !needsTrust {
		return opts, err
	}
	opts.TrustedMaterial, err = f.trust.LoadTrustedMaterial(ctx)
	return opts, err
}

// runSign is the common course of every sign method: refuse an existing
// output early, build the statement, sign (mk makes the signer and its
// services), write, report.
func runSign(cmd *cobra.Command, a *app, f *signFlags, args []string, mk func(context.Context) (sign.Options, error)) error {
	asJSON, err := f.fmt.JSON()
	if err != nil {
		return err
	}
	out := f.out.Bundle
	if out == "" {
		return fmt.Errorf("-o/--bundle is empty")
	}
	// Before any network call (a log entry for nothing): the directory
	// exists and is writable, the target is no directory, and it is new
	// unless --force. Checked again when writing.
	if err := atomicfile.Check(out, atomicfile.Options{Overwrite: f.out.Force}); err != nil {
		return err
	}
	st, payload, err := loadStatement(cmd, a, &f.src, &f.stmt, args)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	opts, err := mk(ctx)
	if err != nil {
		return err
	}
	opts.Retries = sign.DefaultRetries
	res, err := sign.Sign(ctx, payload, opts)
	if err != nil {
		return rekorVersionHint(ctx, a, opts, err)
	}
	if err := atomicfile.Write(out, res.Bundle, atomicfile.Options{Overwrite: f.out.Force}); err != nil {
		return err
	}
	if f.src.Verbose {
		fmt.Fprintf(a.stderr, "mcpsign: timings: %s\n", res.Timings)
	}
	if asJSON {
		return writeJSON(a.stdout, res.Report(out, st))
	}
	return res.WriteText(a.stdout, out, st)
}

// rekorVersionHint adds to a failure of a Rekor v1 log the likely cause
// when its URL serves no Rekor v1 API (GET /api/v1/log is 404, as a Rekor
// v2 log answers): it is a Rekor v2 log, signed to with --rekor-version 2.
// Any other failure, or a probe that does not get a 404, is returned as
// it was.
func rekorVersionHint(ctx context.Context, a *app, opts sign.Options, err error) error {
	var se *sign.ServiceError
	if !errors.As(err, &se) || se.Service != sign.ServiceRekor || ctx.Err() != nil {
		return err
	}
	i := slices.IndexFunc(opts.TransparencyLogs, func(l sign.RekorService) bool { return l.URL == se.URL })
	if i < 0 || opts.TransparencyLogs[i].Version != 1 {
		return err
	}
	u, perr := url.JoinPath(se.URL, "api/v1/log")
	if perr != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, perr := http.NewRequestWithContext(pctx, http.MethodGet, u, nil)
	if perr != nil {
		return err
	}
	client := a.httpClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, perr := client.Do(req)
	if perr != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		return err
	}
	return textsafe.WithLines(err, fmt.Sprintf("this looks like a Rekor v2 log (GET %s is 404: it serves no Rekor v1 API): pass --rekor-version 2", u))
}
