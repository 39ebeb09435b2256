package main

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/internal/app/demo"
	"github.com/mcpsign/mcpsign/internal/app/exampleserver"
)

func newDemoCmd(a *app) *cobra.Command {
	var (
		dir     string
		timeout time.Duration
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "demo [--keep DIR [--force]]",
		Short: "See mcpsign work end to end in a few seconds: sign, verify, pin, and block a rug pull",
		Long: `Run the whole story on a small example MCP server built into mcpsign, offline
and without any account, in a temporary directory:

` + demo.StepList() + `

Each step shows the command that does the same by hand. The demo exits 0 when
everything behaved as expected, 1 otherwise.`,
		Example: `  mcpsign demo

  # Keep the files (key, snapshot, bundle, lock) to try the commands shown
  mcpsign demo --keep ./mcpsign-demo
  mcpsign demo --keep ./mcpsign-demo --force   # again, replacing that demo's files`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, err := demo.ServerCommand(a.getenv)
			if err != nil {
				return err
			}
			err = demo.Run(cmd.Context(), demo.Options{Out: a.stdout, Server: server, Dir: dir, Force: force, Timeout: timeout})
			if errors.Is(err, demo.ErrUnexpected) {
				return silentExit(exitFailed) // the narration said what went wrong
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "keep", "", "write the files to this directory and keep them, instead of a temporary directory")
	cmd.Flags().BoolVar(&force, "force", false, "with --keep, replace the files of an earlier demo in DIR (others are left alone)")
	options.PositiveDurationVar(cmd.Flags(), &timeout, "timeout", time.Minute, "time limit for the whole demo")
	return cmd
}

// newExampleServerCmd is the hidden command that runs the example server
// (internal/app/exampleserver) over stdio, for the demo and the documentation.
func newExampleServerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "example-server [--mode MODE] [flags]",
		Short:              "Run the example MCP server (for the demo and the documentation)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code := exampleserver.Main(cmd.Context(), args, a.getenv, io.NopCloser(a.stdin), a.stdout, a.stderr)
			if code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}
