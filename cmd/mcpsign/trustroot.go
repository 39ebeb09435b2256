package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/trustroot"
)

func newTrustrootCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trustroot",
		Short: "Fetch, create and inspect Sigstore trusted roots",
		Long: `A trusted root (trusted_root.json, a Sigstore format) lists what a verifier
trusts: certificate authorities (Fulcio or your own), transparency logs (Rekor),
certificate transparency logs and RFC 3161 timestamp authorities, each with the
period it is trusted for.

Verification commands take one with --trusted-root FILE, or get the public-good
one through TUF (cached under the user cache directory, or --tuf-cache; with
--offline only the cache is used, and nothing usable cached is an error).

  fetch   get the public-good (or another TUF repository's) trusted root
  create  write one for a private deployment from PEM files
  show    print what one trusts, and for how long

See docs/TRUSTROOT.md.`,
		Example: `  mcpsign trustroot fetch -o trusted_root.json
  mcpsign trustroot show trusted_root.json
  mcpsign trustroot create --certificate-chain fulcio-chain.pem \
    --rekor-key rekor.pub --rekor-url https://rekor.example --rekor-origin rekor.example \
    --ctfe-key ct.pub --tsa-certificate-chain tsa-chain.pem -o trusted_root.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTrustrootFetchCmd(a), newTrustrootCreateCmd(a), newTrustrootShowCmd(a))
	return cmd
}

func newTrustrootFetchCmd(a *app) *cobra.Command {
	var (
		opts    = trustroot.Options{Refresh: true}
		files   = trustroot.FetchFilesOptions{Written: a.wroteTrustFile}
		tufRoot string
	)
	cmd := &cobra.Command{
		Use:   "fetch -o FILE",
		Short: "Fetch the trusted root of a TUF repository (public-good by default)",
		Long: `Update the TUF metadata of the Sigstore public-good repository (or --tuf-mirror)
over the network, verify it with sigstore-go's TUF client starting from the
TUF root embedded in mcpsign (or --tuf-root, or a newer one already cached),
and write its trusted_root.json target to FILE atomically.

This is always an online fetch; it also refreshes the TUF cache, so that later
commands with --offline can use it. Pin the written file and pass it with
--trusted-root to verify without TUF at all (air-gapped hosts).

--signing-config-output also writes the repository's signing configuration
(signing_config.v0.2.json: the Fulcio, Rekor and TSA services to sign with).`,
		Example: `  # Pin today's public-good trusted root
  mcpsign trustroot fetch -o trusted_root.json

  # A private TUF repository, first use: its initial root.json is needed once
  mcpsign trustroot fetch --tuf-mirror https://tuf.example.com --tuf-root root.json -o trusted_root.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrustrootFetch(cmd, &opts, &files, tufRoot)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&files.TrustedRoot, "output", "o", "", "file to write the trusted root to")
	fs.StringVar(&files.SigningConfig, "signing-config-output", "", "also write the repository's signing configuration to this file")
	fs.BoolVar(&files.Overwrite, "force", false, "replace existing output files")
	fs.StringVar(&opts.CacheDir, "tuf-cache", "", "TUF metadata cache directory (default: mcpsign/tuf under the user cache directory)")
	fs.StringVar(&opts.Mirror, "tuf-mirror", "", "TUF repository URL (default: the Sigstore public-good repository)")
	fs.StringVar(&tufRoot, "tuf-root", "", "initial TUF root.json of --tuf-mirror (needed once for a repository other than public-good or staging)")
	options.PositiveDurationVar(fs, &opts.Timeout, "timeout", trustroot.DefaultTimeout, "time limit for the TUF update")
	return cmd
}

// runTrustrootFetch fetches the trusted root (and the signing configuration) and writes them.
func runTrustrootFetch(cmd *cobra.Command, opts *trustroot.Options, files *trustroot.FetchFilesOptions, tufRoot string) error {
	if files.TrustedRoot == "" {
		return errors.New("missing -o FILE: where to write the trusted root")
	}
	if tufRoot != "" {
		data, err := boundedfile.Read(tufRoot, trustroot.MaxTrustedRootBytes, nil)
		if err != nil {
			return fmt.Errorf("--tuf-root: %w", err)
		}
		opts.TUFRoot = data
	}
	return trustroot.FetchFiles(cmd.Context(), *opts, *files)
}

// wroteTrustFile says on stderr that a trust file was written, with its
// digest.
func (a *app) wroteTrustFile(path, sha256Hex string) {
	fmt.Fprintf(a.stderr, "mcpsign: wrote %s (sha256:%s)\n", textsafe.Escape(path), sha256Hex)
}

func newTrustrootCreateCmd(a *app) *cobra.Command {
	var (
		output string
		force  bool
		set    trustroot.EntrySet
	)
	cmd := &cobra.Command{
		Use:   "create -o FILE [--certificate-chain PEM]... [--rekor-key PEM]... [--ctfe-key PEM]... [--tsa-certificate-chain PEM]...",
		Short: "Write a trusted root for a private Sigstore deployment from PEM files",
		Long: `Write a Sigstore trusted_root.json from PEM files, for a private deployment (or a
test stack). cosign ('--trusted-root'), sigstore-go and mcpsign verify with it.

Each repeatable key or chain flag starts one entry; the URL, origin, start and
end flags that follow it by position belong to it (the second --rekor-url to
the second --rekor-key).

  --certificate-chain PEM      a code-signing CA: intermediates first, root last
                               (a leaf-issuing Fulcio with its root). Trusted from
                               --certificate-chain-start (default: the root's
                               NotBefore) to --certificate-chain-end (default: open).
  --rekor-key PEM              a Rekor log's public key. For Rekor v2 give
                               --rekor-origin (the checkpoint origin, which must be
                               the host name of --rekor-url): the log id is then the
                               C2SP signed-note key hash of (origin, key), as
                               Rekor v2 entries carry it; without an origin it is
                               the SHA-256 of the DER key (Rekor v1).
  --ctfe-key PEM               a certificate transparency log's public key.
  --tsa-certificate-chain PEM  an RFC 3161 TSA: its signing certificate first,
                               root last. Trusted from --tsa-start (default: the
                               signing certificate's NotBefore) to --tsa-end.

Log keys are trusted from --rekor-start/--ctfe-start (default: the Unix epoch,
as cosign does) to --rekor-end/--ctfe-end (default: open). Times are RFC 3339.

Every chain is checked (each certificate signed by the next); the output is
checked by parsing it back, and written atomically. See docs/TRUSTROOT.md.`,
		Example: `  # The local test stack (scripts/sigstore-local), as start.sh builds it with cosign
  S=/tmp/mcpsign-sigstore
  mcpsign trustroot create -o trusted_root.json \
    --certificate-chain $S/fulcio-chain.pem --certificate-chain-url http://127.0.0.1:5555 \
    --rekor-key $S/keys/rekor-pub.pem --rekor-url http://127.0.0.1:3003 --rekor-origin 127.0.0.1 \
    --rekor-start 2020-01-01T00:00:00Z \
    --ctfe-key $S/keys/ct-pub.pem --ctfe-url http://127.0.0.1:6962 --ctfe-start 2020-01-01T00:00:00Z \
    --tsa-certificate-chain $S/tsa-chain.pem --tsa-url http://127.0.0.1:3004/api/v1/timestamp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrustrootCreate(a, output, force, &set)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "", "file to write the trusted root to, or - for standard output")
	fs.BoolVar(&force, "force", false, "replace an existing output file")
	options.StringArrayVar(fs, &set.CertificateAuthorities.Files, "certificate-chain", "PEM file of a certificate authority chain, intermediates first, root last (repeatable)")
	options.StringArrayVar(fs, &set.CertificateAuthorities.URLs, "certificate-chain-url", "URL of the certificate authority (by position)")
	options.StringArrayVar(fs, &set.CertificateAuthorities.Starts, "certificate-chain-start", "RFC 3339 time the certificate authority is trusted from (by position; default: its root's NotBefore)")
	options.StringArrayVar(fs, &set.CertificateAuthorities.Ends, "certificate-chain-end", "RFC 3339 time the certificate authority is trusted until (by position; default: open)")
	options.StringArrayVar(fs, &set.TransparencyLogs.Files, "rekor-key", "PEM public key of a Rekor transparency log (repeatable)")
	options.StringArrayVar(fs, &set.TransparencyLogs.URLs, "rekor-url", "URL of the Rekor log (by position)")
	options.StringArrayVar(fs, &set.TransparencyLogs.Origins, "rekor-origin", "checkpoint origin of a Rekor v2 log, the host name of its URL (by position)")
	options.StringArrayVar(fs, &set.TransparencyLogs.Starts, "rekor-start", "RFC 3339 time the Rekor key is trusted from (by position; default: the Unix epoch)")
	options.StringArrayVar(fs, &set.TransparencyLogs.Ends, "rekor-end", "RFC 3339 time the Rekor key is trusted until (by position; default: open)")
	options.StringArrayVar(fs, &set.CTLogs.Files, "ctfe-key", "PEM public key of a certificate transparency log (repeatable)")
	options.StringArrayVar(fs, &set.CTLogs.URLs, "ctfe-url", "URL of the CT log (by position)")
	options.StringArrayVar(fs, &set.CTLogs.Starts, "ctfe-start", "RFC 3339 time the CT key is trusted from (by position; default: the Unix epoch)")
	options.StringArrayVar(fs, &set.CTLogs.Ends, "ctfe-end", "RFC 3339 time the CT key is trusted until (by position; default: open)")
	options.StringArrayVar(fs, &set.TimestampAuthorities.Files, "tsa-certificate-chain", "PEM file of a timestamp authority chain, signing certificate first, root last (repeatable)")
	options.StringArrayVar(fs, &set.TimestampAuthorities.URLs, "tsa-url", "URL of the timestamp authority (by position)")
	options.StringArrayVar(fs, &set.TimestampAuthorities.Starts, "tsa-start", "RFC 3339 time the timestamp authority is trusted from (by position; default: its signing certificate's NotBefore)")
	options.StringArrayVar(fs, &set.TimestampAuthorities.Ends, "tsa-end", "RFC 3339 time the timestamp authority is trusted until (by position; default: open)")
	return cmd
}

// runTrustrootCreate builds a trusted root from the entries of the flags and writes it.
func runTrustrootCreate(a *app, output string, force bool, set *trustroot.EntrySet) error {
	if output == "" {
		return errors.New("missing -o FILE: where to write the trusted root (- for standard output)")
	}
	opts, err := set.CreateOptions()
	if err != nil {
		return trEntryError(err)
	}
	data, warnings, err := trustroot.Create(opts)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "mcpsign: warning: %s\n", textsafe.Escape(w))
	}
	if output == "-" {
		_, err := a.stdout.Write(data)
		return err
	}
	return trustroot.WriteFile(output, data, force, a.wroteTrustFile)
}

// trEntryFlags name the flags of one entry kind of 'trustroot create': the
// file's (primary) and, prefix and a part (trustroot.PartURL, …), those of
// the other parts.
type trEntryFlags struct{ primary, prefix string }

// trEntryFlagsOf returns the flags of a kind of trustroot.EntriesError.
func trEntryFlagsOf(kind string) trEntryFlags {
	switch kind {
	case trustroot.KindCertificateAuthority:
		return trEntryFlags{"--certificate-chain", "--certificate-chain-"}
	case trustroot.KindTimestampAuthority:
		return trEntryFlags{"--tsa-certificate-chain", "--tsa-"}
	case trustroot.KindTransparencyLog:
		return trEntryFlags{"--rekor-key", "--rekor-"}
	}
	return trEntryFlags{"--ctfe-key", "--ctfe-"}
}

// flag names the flag of an entry's part.
func (f trEntryFlags) flag(part string) string {
	if part == trustroot.PartFile {
		return f.primary
	}
	return f.prefix + part
}

// trEntryError says err of trustroot.EntrySet with the flags of its kind.
func trEntryError(err error) error {
	var ee *trustroot.EntriesError
	if !errors.As(err, &ee) {
		return err
	}
	f := trEntryFlagsOf(ee.Kind)
	var pe *trustroot.PartError
	var te *trustroot.TimeError
	var fe *trustroot.FileError
	primary := f.primary
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%s given %d times but %s only %d: each belongs to the %s at its position", f.flag(pe.Part), pe.Got, primary, pe.Files, primary)
	case errors.As(err, &te):
		return fmt.Errorf("%s %s: want an RFC 3339 time such as 2025-01-31T00:00:00Z", f.flag(te.Part), textsafe.RawQuote(te.Value))
	case errors.As(err, &fe):
		return fmt.Errorf("%s: %w", primary, fe.Err)
	}
	return ee.Err
}

func newTrustrootShowCmd(a *app) *cobra.Command {
	var out options.OutputOptions
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print what a trusted root trusts, and for how long",
		Long: `Print what a Sigstore trusted_root.json trusts: every certificate authority with
its certificates (subject, key, validity) and the period it is trusted for;
every transparency log and CT log with its URL, key type, log id and period;
every timestamp authority with its chain. Each entry says whether it is active,
ended or not yet valid now. Text from the file and its certificates is escaped.

--format json prints the same as a stable document (docs/TRUSTROOT.md).`,
		Example: `  mcpsign trustroot show trusted_root.json
  mcpsign trustroot show trusted_root.json --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrustrootShow(cmd, a, args, &out)
		},
	}
	out.AddFlags(cmd.Flags())
	return cmd
}

// runTrustrootShow prints what a trusted root trusts.
func runTrustrootShow(cmd *cobra.Command, a *app, args []string, out *options.OutputOptions) error {
	asJSON, err := out.JSON()
	if err != nil {
		return err
	}
	rep, err := trustroot.ReadFileReport(args[0], time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, rep)
	}
	rep.WriteText(a.stdout)
	return nil
}
