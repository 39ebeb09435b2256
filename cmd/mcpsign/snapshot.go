package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

func newSnapshotCmd(a *app) *cobra.Command {
	var (
		src    options.SourceOptions
		output string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "snapshot SOURCE -o FILE | snapshot -o FILE -- CMD [ARGS...]",
		Short: "Save a server's definitions byte-exact to a snapshot file",
		Long: `Save everything a server offers (server info, protocol version, instructions,
and every tool, prompt and resource template definition as the exact bytes
received) to a snapshot file. The digest of the snapshot equals the digest of
the live server, so a snapshot can be reviewed, signed or verified later,
offline. The format is documented in docs/SNAPSHOT.md.

The file is written atomically; an existing file is kept unless --force. When
a definition cannot be digested the snapshot is still written (it is
evidence), the culprits are listed, and the command exits 1.

--resources also lists the static resources (resources/list) into the
member "resources", for a lock that pins them (docs/POLICY.md, "resources");
they are part of no signed digest.`,
		Example: `  # The example server built into mcpsign
  mcpsign snapshot -o example.snapshot.json -- mcpsign example-server
  mcpsign snapshot https://mcp.example.com/mcp -o remote.snapshot.json
  mcpsign digest example.snapshot.json
  mcpsign snapshot --resources -o with-resources.snapshot.json -- ./notes-server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSnapshot(cmd, a, args, &src, output, force)
		},
	}
	src.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "snapshot file to write")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing output file")
	cmd.Flags().BoolVar(&src.Listing.Resources, "resources", false, "also list the static resources (resources/list), for a lock that pins them")
	return cmd
}

// runSnapshot writes the snapshot of the source.
func runSnapshot(cmd *cobra.Command, a *app, args []string, src *options.SourceOptions, output string, force bool) error {
	if output == "" {
		return errors.New("missing -o FILE: where to write the snapshot")
	}
	snap, err := loadSource(cmd, a, src, args)
	if err != nil {
		return err
	}
	data, err := snap.MarshalFile()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(output, data, atomicfile.Options{Overwrite: force}); err != nil {
		return err
	}
	counts, err := digest.Summary(snap)
	fmt.Fprintf(a.stderr, "mcpsign: wrote %s: %s %s, %s\n",
		output, textsafe.Escape(snap.Server.Name), textsafe.Escape(snap.Server.Version), counts)
	if err != nil {
		return failed(err)
	}
	return nil
}
