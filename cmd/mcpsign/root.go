package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// docsURL is where the documentation the help texts cite is read by
// someone who installed mcpsign with go install (no docs/ directory).
const docsURL = "https://github.com/mcpsign/mcpsign/tree/main/docs"

// commands are mcpsign's commands, in the order of the tree: each with the
// name its constructor gives it (TestRootCommandNames checks it), so that a
// command line can build only the command it runs.
var commands = [...]struct {
	name string
	new  func(*app) *cobra.Command
}{
	{"version", newVersionCmd},
	{"digest", newDigestCmd},
	{"snapshot", newSnapshotCmd},
	{"attest", newAttestCmd},
	{"sign", newSignCmd},
	{"keygen", newKeygenCmd},
	{"verify", newVerifyCmd},
	{"trustroot", newTrustrootCmd},
	{"proxy", newProxyCmd},
	{"serve", newServeCmd},
	{proxyVerifyCommand, newProxyVerifyCmd},
	{"demo", newDemoCmd},
	{"example-server", newExampleServerCmd},
	{"pin", newPinCmd},
	{"verify-pin", newVerifyPinCmd},
	{"diff", newDiffCmd},
	{"approve", newApproveCmd},
	{"audit", newAuditCmd},
	{"hosts", newHostsCmd},
	{"policy", newPolicyCmd},
	{"monitor", newMonitorCmd},
	{"registry", newRegistryCmd},
}

// newRootCmd builds the command tree for the command line args: when its
// first word names a command, only that command's subtree (one
// verification does not build the other twenty commands and their flags:
// docs/PERFORMANCE.md, "One offline verification, whole process"); else,
// and with no args, the whole tree (the root's help, help, completion and
// the suggestions for an unknown command read it all). Either way what the
// command line prints is the same: a command's help, errors and
// completions come from its own subtree.
func newRootCmd(a *app, args ...string) *cobra.Command {
	if len(args) > 0 {
		for _, c := range commands {
			if c.name == args[0] {
				// The root itself does not run: no --version flag, no
				// version read from the build information.
				root := newRoot("")
				root.AddCommand(c.new(a))
				return root
			}
		}
	}
	root := newRoot(proxycmd.BuildVersion())
	for _, c := range commands {
		root.AddCommand(c.new(a))
	}
	return root
}

// newRoot is the root command without its subcommands; version "" leaves
// out its --version flag.
func newRoot(version string) *cobra.Command {
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
		Version:       version,
	}
	root.SetVersionTemplate("mcpsign {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return textsafe.WithLines(err, fmt.Sprintf("Run '%s --help' for usage.", c.CommandPath()))
	})
	return root
}
