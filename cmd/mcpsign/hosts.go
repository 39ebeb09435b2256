package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/hosts"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/diff"
)

// hostsFlags are the flags every hosts subcommand takes.
type hostsFlags struct {
	host    string
	config  string
	servers []string
}

func (f *hostsFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.host, "host", "", "only this host: "+hostNames())
	cmd.Flags().StringVar(&f.config, "config", "", "this configuration file (its host is inferred from its name, or given with --host)")
	cmd.Flags().StringArrayVar(&f.servers, "server", nil, "only this server entry (repeatable)")
}

func hostNames() string {
	var names []string
	for _, h := range hosts.Hosts() {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}

func newHostsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts list|wrap|unwrap",
		Short: "List, wrap and unwrap the MCP servers configured in hosts",
		Long: `Find the MCP configuration of hosts (` + hostNames() + `),
list their servers, and put every stdio server behind 'mcpsign proxy' under a
policy file, or take it out again.

Without --config, the user files of every host (or of --host) are read, and
the project files of the current directory (.mcp.json, .vscode/mcp.json,
.vscode/settings.json, .cursor/mcp.json, .zed/settings.json,
.gemini/settings.json, .codex/config.toml); Codex's user file is
$CODEX_HOME/config.toml (~/.codex by default). Edits keep comments and
layout, are atomic and keep the file's mode; unwrap is wrap's exact inverse,
and the file as it was is kept in a timestamped backup beside it. Remote
servers are reported as not enforced. docs/HOSTS.md has the host table.`,
	}
	cmd.AddCommand(newHostsListCmd(a), newHostsEditCmd(a, true), newHostsEditCmd(a, false))
	return cmd
}

// hostFile is one configuration file to read.
type hostFile struct {
	host hosts.Host
	path string
}

// hostFiles resolves the flags to the files to read: the one of --config,
// or every existing file of the hosts selected.
func hostFiles(a *app, f *hostsFlags) ([]hostFile, error) {
	var only *hosts.Host
	if f.host != "" {
		h, ok := hosts.Lookup(f.host)
		if !ok {
			return nil, fmt.Errorf("--host %s: unknown host (want one of %s)", textsafe.Quote(f.host), hostNames())
		}
		only = &h
	}
	env := hosts.Env{GOOS: runtime.GOOS, Home: a.getenv("HOME"), AppData: a.getenv("APPDATA"),
		XDGConfigHome: a.getenv("XDG_CONFIG_HOME"), CodexHome: a.getenv("CODEX_HOME")}
	if env.Home == "" {
		home, err := os.UserHomeDir()
		if err != nil && f.config == "" {
			return nil, fmt.Errorf("cannot find the home directory: %w", err)
		}
		env.Home = home
	}
	if wd, err := os.Getwd(); err == nil {
		env.Dir = wd
	}
	if f.config != "" {
		if only != nil {
			return []hostFile{{*only, f.config}}, nil
		}
		named := f.config
		if abs, err := filepath.Abs(named); err == nil {
			named = abs
		}
		h, ok := env.Infer(named)
		if !ok {
			return nil, fmt.Errorf("--config %s: cannot tell its host from its name: add --host (%s)", textsafe.Escape(f.config), hostNames())
		}
		return []hostFile{{h, f.config}}, nil
	}
	var out []hostFile
	for _, h := range hosts.Hosts() {
		if only != nil && h.Name != only.Name {
			continue
		}
		for _, p := range h.Paths(env) {
			if _, err := os.Lstat(p); err == nil {
				out = append(out, hostFile{h, p})
			}
		}
	}
	return out, nil
}

// serverJSON is one server of 'hosts list --format json' (docs/HOSTS.md).
type serverJSON struct {
	Name         string   `json:"name"`
	Where        string   `json:"where"`
	Kind         string   `json:"kind"`
	Argv         []string `json:"argv,omitempty"`
	URL          string   `json:"url,omitempty"`
	Wrapped      bool     `json:"wrapped"`
	Enforced     bool     `json:"enforced"`
	Original     []string `json:"original,omitempty"`
	Policy       string   `json:"policy,omitempty"`
	PolicyName   string   `json:"policyName,omitempty"`
	PolicyStatus string   `json:"policyStatus"`
	Lock         string   `json:"lock,omitempty"`
	LockStatus   string   `json:"lockStatus"`
	Problem      string   `json:"problem,omitempty"`
}

type fileJSON struct {
	Path    string       `json:"path"`
	Host    string       `json:"host"`
	Error   string       `json:"error,omitempty"`
	Servers []serverJSON `json:"servers"`
}

func describe(s hosts.Server) serverJSON {
	j := serverJSON{Name: s.Name, Where: s.Where, Kind: string(s.Kind), Argv: s.Argv, URL: s.URL,
		PolicyStatus: "not checked", LockStatus: "not checked", Problem: s.Problem}
	if w := s.Wrapped; w != nil {
		j.Wrapped, j.Enforced = true, true
		j.Original, j.Policy, j.PolicyName, j.Lock = w.Original, w.Policy, w.Name, w.Lock
		if w.Lock != "" && !strings.Contains(w.Lock, "${") {
			if _, err := os.Stat(w.Lock); err == nil {
				j.LockStatus = "present"
			} else {
				j.LockStatus = "missing"
			}
		}
	}
	if s.Kind != hosts.Stdio {
		j.PolicyStatus, j.LockStatus = "not enforced", "not enforced"
	}
	return j
}

func newHostsListCmd(a *app) *cobra.Command {
	var (
		f   hostsFlags
		out options.OutputOptions
	)
	cmd := &cobra.Command{
		Use:   "list [--host NAME] [--config FILE] [--server NAME]... [--format json]",
		Short: "List each configured server: stdio or remote, wrapped or not",
		Long: `List each server of the hosts' configuration files: stdio or remote, wrapped
behind 'mcpsign proxy' or not, and for a wrapped one its policy and lock.
The policy itself is not read here (policy status: not checked); a lock named
with --lock is reported present or missing.

Exit codes: 0 listed; 2 a file that cannot be read or parsed (named with the
line), or bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.JSON()
			if err != nil {
				return err
			}
			files, err := hostFiles(a, &f)
			if err != nil {
				return err
			}
			var report []fileJSON
			failed := false
			for _, hf := range files {
				fj := fileJSON{Path: hf.path, Host: hf.host.Name, Servers: []serverJSON{}}
				c, err := hosts.Load(cmd.Context(), hf.host, hf.path)
				if err != nil {
					fj.Error, failed = err.Error(), true
					report = append(report, fj)
					continue
				}
				for _, s := range c.Servers() {
					if len(f.servers) > 0 && !slices.Contains(f.servers, s.Name) {
						continue
					}
					fj.Servers = append(fj.Servers, describe(s))
				}
				report = append(report, fj)
			}
			if asJSON {
				if report == nil {
					report = []fileJSON{}
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"files": report}); err != nil {
					return err
				}
			} else {
				printList(a.stdout, report)
			}
			if failed {
				if !asJSON {
					for _, fj := range report {
						if fj.Error != "" {
							fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.Escape(fj.Error))
						}
					}
				}
				return silentExit(exitError)
			}
			return nil
		},
	}
	f.add(cmd)
	out.AddFlags(cmd.Flags())
	return cmd
}

func printList(w io.Writer, report []fileJSON) {
	if len(report) == 0 {
		fmt.Fprintln(w, "no host configuration found")
		return
	}
	for _, fj := range report {
		fmt.Fprintf(w, "%s (%s)\n", textsafe.Escape(fj.Path), fj.Host)
		if fj.Error != "" {
			fmt.Fprintln(w, "  cannot read: see the error below")
			continue
		}
		if len(fj.Servers) == 0 {
			fmt.Fprintln(w, "  no servers")
		}
		for _, s := range fj.Servers {
			fmt.Fprintf(w, "  %s (%s): ", textsafe.Quote(s.Name), textsafe.Escape(s.Where))
			switch {
			case s.Kind == "remote":
				fmt.Fprintf(w, "remote %s, NOT ENFORCED (the proxy speaks stdio only)\n", textsafe.Quote(s.URL))
			case s.Kind == "unknown":
				fmt.Fprintln(w, "neither a command nor a URL, NOT ENFORCED")
			case s.Wrapped:
				fmt.Fprintf(w, "stdio, wrapped: %s\n", quoteArgv(s.Original))
				if s.Policy != "" {
					fmt.Fprintf(w, "    policy %s, name %s; policy status: not checked\n", textsafe.Quote(s.Policy), textsafe.Quote(s.PolicyName))
				} else {
					fmt.Fprintln(w, "    no --policy (wrapped with flags); policy status: not checked")
				}
				if s.Lock != "" {
					fmt.Fprintf(w, "    lock %s: %s\n", textsafe.Quote(s.Lock), s.LockStatus)
				}
			default:
				fmt.Fprintf(w, "stdio, NOT WRAPPED: %s\n", quoteArgv(s.Argv))
				if s.Problem != "" {
					fmt.Fprintf(w, "    cannot be wrapped: %s\n", textsafe.Escape(s.Problem))
				}
			}
		}
	}
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = textsafe.Quote(s)
	}
	return strings.Join(q, " ")
}

func newHostsEditCmd(a *app, wrap bool) *cobra.Command {
	var (
		f      hostsFlags
		policy string
		dryRun bool
		self   string
	)
	verb := "unwrap"
	use := "unwrap [--host NAME] [--config FILE] [--server NAME]... [--dry-run]"
	short := "Restore the original command of every wrapped server"
	long := `Restore each wrapped stdio server's own command line: what follows "--" in
its wrapped arguments. It is the exact inverse of 'mcpsign hosts wrap': the
file is byte for byte what it was before.`
	if wrap {
		verb = "wrap"
		use = "wrap --policy FILE [--host NAME] [--config FILE] [--server NAME]... [--dry-run]"
		short = "Put every stdio server behind 'mcpsign proxy' under a policy"
		long = `Rewrite each stdio server entry to start
  <absolute path of mcpsign> proxy --policy FILE --name NAME -- <its command line>
keeping every other member, and the command line's strings verbatim (host
tokens such as ${input:x}, ${env:X} and ${workspaceFolder} are never
expanded). An entry already wrapped is left as it is. Remote servers are
reported as NOT ENFORCED: the proxy speaks stdio only.`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: long + `

--dry-run prints the unified diff of each file and writes nothing. A file that
cannot be parsed is left untouched, with the line and the reason. A symbolic
link is not written through: edit the file it points to.

Exit codes: 0 done (or nothing to do); 2 a file that cannot be read, parsed
or written, or bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := hosts.WrapOptions{Servers: f.servers}
			if wrap {
				if policy == "" {
					return errors.New("wrap needs --policy FILE: the policy each wrapped server is started under")
				}
				p, err := policyPath(policy)
				if err != nil {
					return err
				}
				opts.Policy = p
				if self == "" {
					exe, err := os.Executable()
					if err != nil {
						return fmt.Errorf("cannot find the path of mcpsign: %w", err)
					}
					if self, err = filepath.EvalSymlinks(exe); err != nil {
						return fmt.Errorf("cannot find the path of mcpsign: %w", err)
					}
				}
				abs, err := filepath.Abs(self)
				if err != nil {
					return err
				}
				opts.Self = abs
			}
			files, err := hostFiles(a, &f)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return errors.New("no host configuration found: name one with --config")
			}
			failed := false
			for _, hf := range files {
				if err := editFile(cmd, a, hf, wrap, opts, dryRun); err != nil {
					fmt.Fprintf(a.stderr, "mcpsign: %s: %s\n", verb, textsafe.EscapeKeepLayout(err.Error()))
					failed = true
				}
			}
			if failed {
				return silentExit(exitError)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the unified diff of each file; write nothing")
	if wrap {
		cmd.Flags().StringVar(&policy, "policy", "", "the policy file the proxy is started under (required)")
		cmd.Flags().StringVar(&self, "mcpsign-path", "", "the mcpsign binary written into entries (default: this one)")
		_ = cmd.Flags().MarkHidden("mcpsign-path")
	}
	return cmd
}

// policyPath makes the policy path absolute, unless it is written with a
// host token (${workspaceFolder}/…), which is kept for the host to expand.
func policyPath(p string) (string, error) {
	if strings.Contains(p, "${") {
		return p, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--policy: %w", err)
	}
	return abs, nil
}

func editFile(cmd *cobra.Command, a *app, hf hostFile, wrap bool, opts hosts.WrapOptions, dryRun bool) error {
	c, err := hosts.Load(cmd.Context(), hf.host, hf.path)
	if err != nil {
		return fmt.Errorf("%w (file left untouched)", err)
	}
	var (
		data    []byte
		changes []hosts.Change
	)
	if wrap {
		data, changes, err = c.Wrap(opts)
	} else {
		data, changes, err = c.Unwrap(opts.Servers)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s (%s)\n", textsafe.Escape(hf.path), hf.host.Display)
	for _, ch := range changes {
		action := string(ch.Action)
		if ch.Action == hosts.ActNotEnforced || ch.Action == hosts.ActSkipped {
			action = strings.ToUpper(action)
		}
		line := fmt.Sprintf("  %s (%s): %s", textsafe.Quote(ch.Server.Name), textsafe.Escape(ch.Server.Where), action)
		if ch.Reason != "" {
			line += ": " + textsafe.Escape(ch.Reason)
		}
		fmt.Fprintln(a.stdout, line)
	}
	if len(changes) == 0 {
		fmt.Fprintln(a.stdout, "  no servers")
	}
	if dryRun {
		text, truncated := diff.Text(string(c.Original()), string(data), diff.TextOptions{})
		if text == "" {
			fmt.Fprintln(a.stdout, "  (no change)")
			return nil
		}
		fmt.Fprintf(a.stdout, "--- %s\n+++ %s\n%s", textsafe.Escape(hf.path), textsafe.Escape(hf.path), textsafe.EscapeKeepLayout(text))
		if truncated {
			fmt.Fprintln(a.stdout, "(diff truncated)")
		}
		return nil
	}
	backup, err := c.Save(cmd.Context(), data)
	if err != nil {
		return err
	}
	if backup != "" {
		fmt.Fprintf(a.stderr, "mcpsign: the file as it was is kept in %s\n", textsafe.Escape(backup))
	}
	return nil
}
