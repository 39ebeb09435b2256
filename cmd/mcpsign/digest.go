package main

import (
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/source"
)

func newDigestCmd(a *app) *cobra.Command {
	var (
		src       options.SourceOptions
		out       options.OutputOptions
		checksums bool
	)
	cmd := &cobra.Command{
		Use:   "digest SOURCE | digest -- CMD [ARGS...]",
		Short: "Compute the Definition Digest of every tool, prompt and resource template",
		Long: `Compute the Definition Digest v1 of every tool, prompt and resource template a
server offers, the Set Digest of each kind, and the digest of its instructions.

SOURCE is a snapshot file (from 'mcpsign snapshot', or a bare tools/list,
prompts/list or resources/templates/list result), a command line that starts a
stdio server (split like a POSIX shell, never run through one), a Streamable
HTTP URL, or the words after --.

Definition Digest v1: the definition object exactly as received, read strictly
(invalid UTF-8, lone surrogates, repeated member names, non-RFC 8259 numbers
and numbers of magnitude 2^53 or more are refused), top-level "_meta" removed,
RFC 8785 (JCS), SHA-256. See docs/DIGEST.md.

A definition that cannot be digested is listed with its reason and the command
exits 1: a partial set is never reported as complete.`,
		Example: `  # A stdio server, its command after --
  mcpsign digest -- node server.js --stdio

  # The same, as one quoted command line
  mcpsign digest 'node server.js --stdio'

  # A Streamable HTTP server, with a bearer token mcpsign reads from the
  # environment (single quotes: the token is in no argument; $$ is a $)
  mcpsign digest https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'

  # A Streamable HTTP server behind OAuth: sign in in the browser once, then the cached token
  mcpsign digest https://mcp.example.com/mcp --oauth

  # A saved snapshot, as JSON for scripts
  mcpsign digest server.snapshot.json --format json

  # The statement's subjects as a checksums file, for actions/attest
  mcpsign digest server.snapshot.json --checksums > subjects.sha256`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDigest(cmd, a, args, &src, &out, checksums)
		},
	}
	src.AddFlags(cmd.Flags())
	out.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&checksums, "checksums", false, "print the statement's subjects (one per definition, and the instructions) as a sha256sum checksums file, for actions/attest (docs/PUBLISHING.md)")
	cmd.MarkFlagsMutuallyExclusive("checksums", "format")
	return cmd
}

// runDigest prints the digests of the source.
func runDigest(cmd *cobra.Command, a *app, args []string, src *options.SourceOptions, out *options.OutputOptions, checksums bool) error {
	asJSON, err := out.JSON()
	if err != nil {
		return err
	}
	snap, err := loadSource(cmd, a, src, args)
	if err != nil {
		return err
	}
	if checksums {
		return writeChecksums(a.stdout, snap)
	}
	r := digest.Compute(snap)
	if asJSON {
		err = writeJSON(a.stdout, r.Report(snap))
	} else {
		err = r.WriteText(a.stdout, snap)
	}
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return failed(err)
	}
	return nil
}

// writeChecksums writes the subjects of the statement 'mcpsign sign' would
// sign in sha256sum format. Invalid definitions fail with exit 1, writing
// nothing: a partial set is never attested.
func writeChecksums(w io.Writer, snap *digest.Snapshot) error {
	st, _, err := buildStatement(snap, attest.Options{})
	if err != nil {
		return err
	}
	b, err := st.Checksums()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// loadSource reads the snapshot that the arguments name.
func loadSource(cmd *cobra.Command, a *app, src *options.SourceOptions, args []string) (*digest.Snapshot, error) {
	spec, err := src.Spec(cmd, args)
	if err != nil {
		return nil, err
	}
	return loadSpec(cmd, a, src, spec, true)
}

// loadSpec reads spec: with signIn, first the OAuth sign-in of --oauth
// (which waits for the user, outside --timeout and the progress display).
func loadSpec(cmd *cobra.Command, a *app, src *options.SourceOptions, spec source.Spec, signIn bool) (*digest.Snapshot, error) {
	if spec.File == "" {
		a.interruptible() // a server to stop, or to sign in to
	}
	var client *http.Client
	var err error
	if signIn {
		if client, err = src.Authorize(cmd.Context(), spec, a.openURL, a.stderr); err != nil {
			return nil, err
		}
	}
	opts, done, err := src.Options(a.stderr, a.stderrTerminal())
	if err != nil {
		return nil, err
	}
	defer done()
	if client != nil {
		opts.HTTPClient = client
	}
	return source.Load(cmd.Context(), spec, opts)
}
