package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// docsURL is where the documentation the help texts cite is read by
// someone who installed mcpsign with go install (no docs/ directory).
const docsURL = "https://github.com/mcpsign/mcpsign/tree/main/docs"

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpsign",
		Short: "Sign and verify what MCP servers tell models",
		Long: `mcpsign signs and verifies the definitions an MCP server serves: its tools,
prompts, resource templates and instructions.

A publisher computes a digest of every definition and signs them into an in-toto
attestation in a standard Sigstore bundle (keyless through Fulcio and Rekor, a
plain key, or an enterprise x509 certificate). A host verifies the signature,
the signer's identity, the transparency log and the digests before it first
approves a server, then pins the approved digests so that any later change
("rug pull") is blocked.

Exit codes: 0 success; 1 verification failed or drift found; 2 usage, input,
I/O or connection error; 42 'mcpsign proxy' blocked a session whose
definitions changed.

'mcpsign version' (or --version) prints the version. Every format and rule is
described at ` + docsURL + `
(docs/ of the source; help texts name its pages, e.g. docs/LOCK.md).`,
		Example: `  # Digest the definitions of a server started over stdio
  mcpsign digest -- npx -y @modelcontextprotocol/server-everything

  # Save them, byte-exact, for review or offline signing
  mcpsign snapshot -o server.snapshot.json -- ./my-server --stdio`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("mcpsign {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(
		newVersionCmd(a),
		newDigestCmd(a),
		newSnapshotCmd(a),
		newAttestCmd(a),
		newSignCmd(a),
		newKeygenCmd(a),
		newVerifyCmd(a),
		newTrustrootCmd(a),
		newProxyCmd(a),
		newProxyVerifyCmd(a),
		newDemoCmd(a),
		newExampleServerCmd(a),
		newPinCmd(a),
		newVerifyPinCmd(a),
		newDiffCmd(a),
		newApproveCmd(a),
		newAuditCmd(a),
		newHostsCmd(a),
		newPolicyCmd(a),
		newMonitorCmd(a),
		newRegistryCmd(a),
	)
	return root
}
