package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/hosts"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
)

// hostsFlags are the flags every hosts subcommand takes.
type hostsFlags struct {
	host    string
	config  string
	servers []string
}

func (f *hostsFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.host, "host", "", "only this host: "+hosts.Names())
	cmd.Flags().StringVar(&f.config, "config", "", "this configuration file (its host is inferred from its name, or given with --host)")
	options.StringArrayVar(cmd.Flags(), &f.servers, "server", "only this server entry (repeatable)")
}

func newHostsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts list|wrap|unwrap|allowlist",
		Short: "List, wrap and unwrap the MCP servers configured in hosts",
		Long: `Find the MCP configuration of hosts (` + hosts.Names() + `),
list their servers, and put every server behind 'mcpsign proxy' under a
policy file (a remote one behind the proxy in front of its URL), or take it
out again.

Without --config, the user files of every host (or of --host) are read, and
the project files of the current directory (.mcp.json, .vscode/mcp.json,
.vscode/settings.json, .cursor/mcp.json, .zed/settings.json,
.gemini/settings.json, .codex/config.toml); Codex's user file is
$CODEX_HOME/config.toml (~/.codex by default). Edits keep comments and
layout, are atomic and keep the file's mode; unwrap is wrap's exact inverse,
and the file as it was is kept in a timestamped backup beside it. An entry is
enforced only when it runs this mcpsign executable's proxy under the policy
asked for, with no flag that weakens it. docs/HOSTS.md has the host table.`,
	}
	cmd.AddCommand(newHostsListCmd(a), newHostsEditCmd(a, true), newHostsEditCmd(a, false), newHostsAllowlistCmd(a))
	return cmd
}

// hostFiles resolves the flags to the files to read: the one of --config,
// or every existing file of the hosts selected.
func hostFiles(a *app, f *hostsFlags) ([]hosts.File, error) {
	files, err := hosts.FindFiles(a.getenv, f.host, f.config)
	var uh *hosts.UnknownHostError
	var uf *hosts.UnknownFileError
	switch {
	case errors.As(err, &uh):
		return nil, fmt.Errorf("--host %w", err)
	case errors.As(err, &uf):
		return nil, fmt.Errorf("--config %w: add --host (%s)", err, hosts.Names())
	}
	return files, err
}

// wantFlags returns what an entry must run: --mcpsign (or this
// executable) and --policy, when given.
func wantFlags(self, policy string) (hosts.Want, error) {
	var want hosts.Want
	var err error
	if want.Self, err = hosts.SelfPath(self); err != nil {
		return want, err
	}
	if policy != "" {
		if want.Policy, err = hosts.PolicyPath(policy); err != nil {
			return want, fmt.Errorf("--policy: %w", err)
		}
		if want.Admits, err = policyAdmits(want.Policy); err != nil {
			return want, err
		}
	}
	return want, nil
}

// policyAdmits reads the policy file path for hosts.Want.Admits: a server
// is admitted when 'mcpsign proxy --policy path --name NAME' would start it
// (policy.File.Resolve; docs/HOSTS.md). A policy written with a host token
// (${workspaceFolder}/…) cannot be read here: nil, every name.
func policyAdmits(path string) (func(name string) error, error) {
	if strings.Contains(path, "${") {
		return nil, nil
	}
	f, err := policy.Read(path)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	return func(name string) error {
		_, err := f.Resolve(name, policy.ResolveOptions{StateDir: "-"})
		return err
	}, nil
}

func newHostsListCmd(a *app) *cobra.Command {
	var (
		f      hostsFlags
		out    options.OutputOptions
		policy string
		self   string
		check  bool
		fronts []string
	)
	cmd := &cobra.Command{
		Use:   "list [--host NAME] [--config FILE] [--server NAME]... [--policy FILE [--check]] [--front URL]... [--format json]",
		Short: "List each configured server and whether it is enforced",
		Long: `List each server of the hosts' configuration files: stdio or remote, and
whether it is enforced: it runs this mcpsign executable (or --mcpsign) as
'proxy' under a policy (with --policy: that policy), for its own name, and
with no flag that weakens the policy (--tofu, --lock, --mode, …). An entry
that only looks wrapped (another program named mcpsign, another policy, a
weakening flag) is listed as wrapped but NOT ENFORCED, with the reason and
the wrapper's path. Header values are never printed.

The policy itself is not read here (policy status: not checked); a lock named
with --lock is reported present or missing. A remote entry that 'hosts wrap
--front' pointed at a front counts as enforced only when --front names that
front: a host's file cannot say what a URL enforces.

--check makes the exit code say it, for CI and device management: 1 when any
server listed is not enforced under --policy.

Exit codes: 0 listed (with --check: every server is enforced); 1 with
--check, a server that is not enforced; 2 a file that cannot be read or
parsed (named with the line), or bad usage.`,
		Example: `  # Every host's files, every server
  mcpsign hosts list

  # Fail (exit 1) unless every configured server runs under this policy
  mcpsign hosts list --policy /etc/mcpsign/policy.json --check

  # One file, as JSON (docs/JSON.md)
  mcpsign hosts list --config .vscode/mcp.json --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHostsList(cmd, a, &f, &out, policy, self, fronts, check)
		},
	}
	f.add(cmd)
	out.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&policy, "policy", "", "the policy every wrapped server must run under to count as enforced (default: any)")
	cmd.Flags().BoolVar(&check, "check", false, "exit 1 when any server listed is not enforced under --policy")
	cmd.Flags().StringVar(&self, "mcpsign", "", "the mcpsign executable an enforced entry runs (default: this one)")
	options.StringArrayVar(cmd.Flags(), &fronts, "front", "a front (mcpsign serve) trusted to enforce the entries pointed at its URL (repeatable)")
	return cmd
}

func runHostsList(cmd *cobra.Command, a *app, f *hostsFlags, out *options.OutputOptions, policy, self string, fronts []string, check bool) error {
	asJSON, err := out.JSON()
	if err != nil {
		return err
	}
	if check && policy == "" {
		return errors.New("--check needs --policy FILE: the policy every server must run under")
	}
	want, err := wantFlags(self, policy)
	if err != nil {
		return err
	}
	want.Fronts = fronts
	files, err := hostFiles(a, f)
	if err != nil {
		return err
	}
	report := hosts.List(cmd.Context(), files, f.servers, want)
	if asJSON {
		if err := writeJSON(a.stdout, report); err != nil {
			return err
		}
	} else {
		report.WriteText(a.stdout)
	}
	for _, n := range report.Missing {
		fmt.Fprintf(a.stderr, "mcpsign: hosts list: no file read has the server %s (--server)\n", textsafe.Quote(n))
	}
	if report.Failed() {
		for _, fr := range report.Files {
			if fr.Error != "" && !asJSON {
				fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.Escape(fr.Error))
			}
		}
		return silentExit(exitError)
	}
	if check && !report.Enforced {
		if !asJSON {
			fmt.Fprintf(a.stderr, "mcpsign: hosts list --check: a server is not enforced under %s\n", textsafe.Escape(want.Policy))
		}
		return silentExit(exitFailed)
	}
	return nil
}

func newHostsEditCmd(a *app, wrap bool) *cobra.Command {
	var (
		f      hostsFlags
		policy string
		dryRun bool
		self   string
		front  string
	)
	use := "unwrap [--host NAME] [--config FILE] [--server NAME]... [--dry-run]"
	short := "Restore the original command of every wrapped server"
	long := `Restore each wrapped server's own entry: the command line that follows "--"
in its wrapped arguments, or, for a remote server wrap put behind the proxy,
its URL, and for one wrap --front pointed at a front, the URL it had. It is
the exact inverse of 'mcpsign hosts wrap': the file is byte for byte what it
was before.`
	example := `  # See what would change, then do it
  mcpsign hosts unwrap --config .vscode/mcp.json --dry-run
  mcpsign hosts unwrap --config .vscode/mcp.json --server notes`
	if wrap {
		use = "wrap (--policy FILE | --front URL --server NAME) [--host NAME] [--config FILE] [--server NAME]... [--mcpsign PATH] [--dry-run]"
		short = "Put every server behind 'mcpsign proxy' under a policy"
		long = `Rewrite each stdio server entry to start
  <absolute path of mcpsign> proxy --policy FILE --name NAME -- <its command line>
keeping every other member, and the command line's strings verbatim (host
tokens such as ${input:x}, ${env:X} and ${workspaceFolder} are never
expanded). A remote entry (a URL, with its headers) becomes a stdio entry
that starts
  <mcpsign> proxy --policy FILE --name NAME [--header 'Name: value']... -- URL
(header variables translated for mcpsign, or the entry refused with the
reason; header values are never printed).

An entry that is enforced (this mcpsign, its proxy, this policy, its own
name, no other flag) is left as it is. One that only looks wrapped (another
program named mcpsign, another policy, --tofu, --lock, --mode, …) is
unwrapped to its server and wrapped again (re-wrapped), with the reason.

With --front URL (a running 'mcpsign serve', which enforces the lock or
policy itself), the one remote entry --server names is pointed at the front
instead: its URL becomes the front's, its headers stay (the host sends them
to the front), and the URL it had is kept beside it ("mcpsignUpstream") for
unwrap. The front's URL is https://, or http:// on loopback.`
		example = `  # See the change first, then write it
  mcpsign hosts wrap --policy ~/.config/mcpsign/policy.json --dry-run
  mcpsign hosts wrap --policy ~/.config/mcpsign/policy.json --host claude-desktop

  # One project file, one server
  mcpsign hosts wrap --policy /etc/mcpsign/policy.json --config .vscode/mcp.json --server notes

  # A remote server that a front enforces: point the entry at the front
  mcpsign hosts wrap --front https://notes-mcp.example.internal/mcp --config .vscode/mcp.json --server notes`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: long + `

What each entry became is printed after the file is written, never before.
--dry-run prints what would be done and the unified diff of each file, and
writes nothing. A file that cannot be parsed is left untouched, with the line
and the reason. A symbolic link is not written through: edit the file it
points to.

Exit codes: 0 done (or nothing to do; an entry left NOT ENFORCED or SKIPPED
is printed with the reason: 'mcpsign hosts list --policy FILE --check' exits
1 while any is); 2 a file that cannot be read, parsed or written, or bad
usage.`,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHostsEdit(cmd, a, &f, wrap, policy, self, front, dryRun)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done and the unified diff of each file; write nothing")
	if wrap {
		cmd.Flags().StringVar(&policy, "policy", "", "the policy file the proxy is started under (or --front)")
		cmd.Flags().StringVar(&front, "front", "", "point the remote entry --server names at this running front (mcpsign serve) instead of the proxy")
		cmd.Flags().StringVar(&self, "mcpsign", "", "the mcpsign executable written into entries (default: this one)")
		cmd.Flags().StringVar(&self, "mcpsign-path", "", "the mcpsign executable written into entries (old spelling of --mcpsign)")
		_ = cmd.Flags().MarkHidden("mcpsign-path")
	}
	return cmd
}

func runHostsEdit(cmd *cobra.Command, a *app, f *hostsFlags, wrap bool, policy, self, front string, dryRun bool) error {
	opts := hosts.EditOptions{Unwrap: !wrap, Wrap: hosts.WrapOptions{Servers: f.servers, Front: front}, DryRun: dryRun}
	verb := "unwrap"
	switch {
	case wrap && front != "" && policy != "":
		return errors.New("give --policy (the proxy) or --front (a front), not both")
	case wrap && front != "" && len(f.servers) != 1:
		return errors.New("--front needs --server NAME: the one remote entry the front serves")
	case wrap && front != "":
		verb = "wrap"
	case wrap:
		verb = "wrap"
		if policy == "" {
			return errors.New("wrap needs --policy FILE (the policy each wrapped server is started under), or --front URL --server NAME (a front that enforces the server)")
		}
		p, err := hosts.PolicyPath(policy)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		opts.Wrap.Policy = p
		if opts.Wrap.Admits, err = policyAdmits(p); err != nil {
			return err
		}
		if opts.Wrap.Self, err = hosts.SelfPath(self); err != nil {
			return err
		}
	}
	files, err := hostFiles(a, f)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("no host configuration found: name one with --config")
	}
	failed := false
	for _, hf := range files {
		r, err := hosts.Edit(cmd.Context(), hf, opts)
		if err != nil {
			fmt.Fprintf(a.stderr, "mcpsign: %s: %s\n", verb, textsafe.ShowError(err))
			failed = true
			continue
		}
		r.WriteText(a.stdout)
		if n := countNeedsAllowlist(r.Changes); n > 0 {
			would := ""
			if dryRun {
				would = "would "
			}
			fmt.Fprintf(a.stderr, "mcpsign: %d entries of %s %shave another command line: a host allowlist (allowedMcpServers in managed settings) needs their new entries: mcpsign hosts allowlist --config %s\n",
				n, textsafe.Escape(hf.Path), would, textsafe.Escape(hf.Path))
		}
		if r.Backup != "" {
			fmt.Fprintf(a.stderr, "mcpsign: the file as it was is kept in %s\n", textsafe.Escape(r.Backup))
		}
	}
	if failed {
		return silentExit(exitError)
	}
	return nil
}

func countNeedsAllowlist(changes []hosts.Change) int {
	n := 0
	for _, ch := range changes {
		if ch.NeedsAllowlist() {
			n++
		}
	}
	return n
}

func newHostsAllowlistCmd(a *app) *cobra.Command {
	var (
		f      hostsFlags
		policy string
		self   string
		fronts []string
	)
	cmd := &cobra.Command{
		Use:   "allowlist [--config FILE] [--host NAME] [--server NAME]... [--policy FILE] [--front URL]...",
		Short: "Print the allowlist entries of the hosts' managed settings for the wrapped servers",
		Long: `Print, as JSON, the allowedMcpServers entries that GitHub Copilot's and
Claude Code's managed settings (managed-settings.json) take for the servers
'mcpsign hosts wrap' enforces in the files read: each one's exact command line
(serverCommand: the mcpsign proxy argv, verbatim), and each --front URL
(serverUrl: an mcpsign front, 'mcpsign serve'). A host with such an allowlist
runs only what matches it: the wrapped entries, never the unwrapped ones.

A server that is not enforced (not wrapped, another policy, a weakening flag)
gets no entry, nor one whose command line carries an HTTP header value (a
secret, never printed); each is said on stderr with why. docs/HOSTS.md
("Allowlists in managed settings") says where each host reads the file.`,
		Example: `  # The entries for the servers wrapped in a file, for managed-settings.json
  mcpsign hosts allowlist --config ~/.claude.json --policy /etc/mcpsign/policy.json

  # With a shared front
  mcpsign hosts allowlist --config .vscode/mcp.json --front https://mcp.example.com/notes/mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			want, err := wantFlags(self, policy)
			if err != nil {
				return err
			}
			files, err := hostFiles(a, &f)
			if err != nil {
				return err
			}
			if len(files) == 0 && len(fronts) == 0 {
				return errors.New("no host configuration found: name one with --config")
			}
			want.Fronts = fronts
			al, err := hosts.BuildAllowlist(cmd.Context(), files, f.servers, want)
			var fe *hosts.FrontError
			if errors.As(err, &fe) {
				return fmt.Errorf("--front: %w", err)
			}
			if err != nil {
				return err
			}
			al.WriteNotes(a.stderr)
			return writeJSON(a.stdout, al)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&policy, "policy", "", "the policy a wrapped server must run under to get an entry (default: any)")
	cmd.Flags().StringVar(&self, "mcpsign", "", "the mcpsign executable an enforced entry runs (default: this one)")
	options.StringArrayVar(cmd.Flags(), &fronts, "front", "a front (mcpsign serve) the hosts reach: a serverUrl entry, and the entries wrap --front pointed at it count as enforced (repeatable)")
	return cmd
}
