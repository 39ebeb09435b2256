package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

func newAttestCmd(a *app) *cobra.Command {
	var (
		src    options.SourceOptions
		stmt   options.StatementOptions
		output string
		force  bool
		onlyP  bool
	)
	cmd := &cobra.Command{
		Use:   "attest SOURCE -o FILE | attest -o FILE -- CMD [ARGS...]",
		Short: "Write the unsigned in-toto statement that 'mcpsign sign' would sign",
		Long: `Write the in-toto Statement v1 that 'mcpsign sign' signs, unsigned, for review.

The statement has one subject per definition, named tool/<name>,
prompt/<name> or resourceTemplate/<uriTemplate> (plus "instructions"), with its
Definition Digest as sha256; and the predicate
https://mcpsign.dev/definitions/v1: the server name and version, the protocol
version, the Set Digest of each kind, optionally the packages and the source
revision the definitions belong to, and by default the definitions themselves
(so that a verifier can show what changed). The format is docs/STATEMENT.md.

In GitHub Actions the source revision defaults to the workflow's repository,
commit and ref; --source-* override each part.

A definition that cannot be digested is listed and nothing is written (exit 1):
a partial set is never signed. A statement holds at most 1024 subjects.`,
		Example: `  mcpsign attest -o statement.json -- node server.js --stdio
  mcpsign attest server.snapshot.json -o statement.json \
    --package-purl pkg:npm/%40acme/notes-mcp@1.2.0 --package-digest sha512:3b1f… \
    --source-repository https://github.com/acme/notes-mcp --source-ref refs/tags/v1.2.0
  mcpsign attest server.snapshot.json -o - | jq .predicate.sets`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttest(cmd, a, args, &src, &stmt, output, force, onlyP)
		},
	}
	src.AddFlags(cmd.Flags())
	stmt.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "statement file to write ('-' for standard output)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing output file")
	cmd.Flags().BoolVar(&onlyP, "predicate-only", false, "write the predicate alone (type https://mcpsign.dev/definitions/v1), for tools that build the statement themselves, e.g. actions/attest with 'mcpsign digest --checksums' (docs/PUBLISHING.md)")
	return cmd
}

// runAttest writes the unsigned statement of the source.
func runAttest(cmd *cobra.Command, a *app, args []string, src *options.SourceOptions, stmt *options.StatementOptions, output string, force bool, onlyP bool) error {
	if output == "" {
		return errors.New("missing -o FILE: where to write the statement ('-' for standard output)")
	}
	st, payload, err := loadStatement(cmd, a, src, stmt, args)
	if err != nil {
		return err
	}
	if onlyP {
		if payload, err = st.MarshalPredicate(); err != nil {
			return err
		}
	}
	if output == "-" {
		_, err = a.stdout.Write(payload)
		return err
	}
	if err := atomicfile.Write(output, payload, atomicfile.Options{Overwrite: force}); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "mcpsign: wrote %s: %s\n", output, st.Summary())
	return nil
}

// loadStatement reads the source of args (loadSource) and makes its
// statement (buildStatement), the statement flags checked first.
func loadStatement(cmd *cobra.Command, a *app, src *options.SourceOptions, stmt *options.StatementOptions, args []string) (*attest.Statement, []byte, error) {
	aopts, err := stmt.AttestOptions(a.getenv)
	if err != nil {
		return nil, nil, err
	}
	snap, err := loadSource(cmd, a, src, args)
	if err != nil {
		return nil, nil, err
	}
	return buildStatement(snap, aopts)
}

// buildStatement makes and serializes the statement of snap
// (attest.BuildPayload). Invalid definitions fail with exit 1 (the error
// lists them).
func buildStatement(snap *digest.Snapshot, opts attest.Options) (*attest.Statement, []byte, error) {
	st, payload, err := attest.BuildPayload(snap, opts)
	if errors.As(err, new(*digest.InvalidDefinitionsError)) {
		return nil, nil, failed(fmt.Errorf("nothing signed or written: %w", err))
	}
	return st, payload, err
}
