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

// serverJSON is one server of 'hosts list --format json' (docs/JSON.md).
type serverJSON struct {
	Name     string   `json:"name"`
	Where    string   `json:"where"`
	Kind     string   `json:"kind"`
	Argv     []string `json:"argv,omitempty"`
	URL      string   `json:"url,omitempty"`
	Headers  []string `json:"headers,omitempty"`
	Wrapped  bool     `json:"wrapped"`
	Enforced bool     `json:"enforced"`
	Reason   string   `json:"reason,omitempty"`
	Wrapper  string   `json:"wrapper,omitempty"`
	Original []string `json:"original,omitempty"`
	// Remote is the URL a wrapped remote entry reaches through the proxy.
	Remote       string `json:"remote,omitempty"`
	Policy       string `json:"policy,omitempty"`
	PolicyName   string `json:"policyName,omitempty"`
	PolicyStatus string `json:"policyStatus"`
	Lock         string `json:"lock,omitempty"`
	LockStatus   string `json:"lockStatus"`
	Problem      string `json:"problem,omitempty"`
}

type fileJSON struct {
	Path    string       `json:"path"`
	Host    string       `json:"host"`
	Error   string       `json:"error,omitempty"`
	Servers []serverJSON `json:"servers"`
}

// listJSON is the report of 'hosts list --format json' (docs/JSON.md).
type listJSON struct {
	ReportVersion int    `json:"reportVersion"`
	Mcpsign       string `json:"mcpsign"`
	Policy        string `json:"policy,omitempty"`
	// Enforced reports that every server listed is enforced.
	Enforced bool       `json:"enforced"`
	Files    []fileJSON `json:"files"`
}

// describe reports s as list prints it: enforced under want or not. Header
// values and --header values are never in it (they may be secrets).
func describe(s hosts.Server, want hosts.Want) serverJSON {
	j := serverJSON{Name: s.Name, Where: s.Where, Kind: string(s.Kind), Argv: redactArgv(s.Argv), URL: hosts.RedactURL(s.URL),
		PolicyStatus: "not checked", LockStatus: "not checked", Problem: s.Problem}
	if s.Kind == hosts.Remote {
		for _, h := range s.Headers {
			j.Headers = append(j.Headers, h.Name)
		}
	}
	j.Reason = want.Check(s)
	j.Enforced = j.Reason == ""
	if w := s.Wrapped; w != nil {
		j.Wrapped = true
		j.Wrapper, j.Original, j.Policy, j.PolicyName, j.Lock = w.Program, redactURLs(w.Original), w.Policy, w.Name, w.Lock
		if len(j.Original) == 1 && strings.Contains(j.Original[0], "://") {
			j.Remote = j.Original[0]
		}
		for _, h := range w.Headers {
			name, _, _ := strings.Cut(h, ":")
			j.Headers = append(j.Headers, strings.TrimSpace(name))
		}
		if w.Lock != "" && !strings.Contains(w.Lock, "${") {
			if _, err := os.Stat(w.Lock); err == nil {
				j.LockStatus = "present"
			} else {
				j.LockStatus = "missing"
			}
		}
	}
	if !j.Enforced {
		j.PolicyStatus, j.LockStatus = "not enforced", "not enforced"
	}
	return j
}

// redactURLs is argv with the user info of every URL in it replaced
// (hosts.RedactURL): it may be a password or a token.
func redactURLs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = hosts.RedactURL(a)
	}
	return out
}

// redactArgv is argv with the value of every --header after its name
// replaced, and the user info of every URL (redactURLs): a header value
// may be a secret.
func redactArgv(argv []string) []string {
	argv = redactURLs(argv)
	if !slices.Contains(argv, "--header") && !slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--header=") }) {
		return argv
	}
	out := slices.Clone(argv)
	for i := 0; i < len(out); i++ {
		if out[i] == "--" {
			break
		}
		if v, ok := strings.CutPrefix(out[i], "--header="); ok {
			out[i] = "--header=" + redactHeader(v)
		} else if out[i] == "--header" && i+1 < len(out) {
			out[i+1] = redactHeader(out[i+1])
			i++
		}
	}
	return out
}

func redactHeader(h string) string {
	name, _, _ := strings.Cut(h, ":")
	return name + ": <redacted>"
}

// selfPath is the mcpsign executable wrap writes and list compares with:
// the one given, or this one, with its symbolic links resolved.
func selfPath(given string) (string, error) {
	self := given
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find the path of mcpsign: %w", err)
		}
		self = exe
	}
	self, err := filepath.EvalSymlinks(self)
	if err != nil {
		return "", fmt.Errorf("the mcpsign executable: %w", err)
	}
	return filepath.Abs(self)
}

func newHostsListCmd(a *app) *cobra.Command {
	var (
		f      hostsFlags
		out    options.OutputOptions
		policy string
		self   string
		check  bool
	)
	cmd := &cobra.Command{
		Use:   "list [--host NAME] [--config FILE] [--server NAME]... [--policy FILE [--check]] [--format json]",
		Short: "List each configured server and whether it is enforced",
		Long: `List each server of the hosts' configuration files: stdio or remote, and
whether it is enforced: it runs this mcpsign executable (or --mcpsign) as
'proxy' under a policy (with --policy: that policy), for its own name, and
with no flag that weakens the policy (--tofu, --lock, --mode, …). An entry
that only looks wrapped (another program named mcpsign, another policy, a
weakening flag) is listed as wrapped but NOT ENFORCED, with the reason and
the wrapper's path. Header values are never printed.

The policy itself is not read here (policy status: not checked); a lock named
with --lock is reported present or missing.

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
			asJSON, err := out.JSON()
			if err != nil {
				return err
			}
			if check && policy == "" {
				return errors.New("--check needs --policy FILE: the policy every server must run under")
			}
			want := hosts.Want{}
			if want.Self, err = selfPath(self); err != nil {
				return err
			}
			if policy != "" {
				if want.Policy, err = policyPath(policy); err != nil {
					return err
				}
			}
			files, err := hostFiles(a, &f)
			if err != nil {
				return err
			}
			report := listJSON{ReportVersion: reportVersion, Mcpsign: want.Self, Policy: want.Policy, Enforced: true, Files: []fileJSON{}}
			failed := false
			seen := map[string]bool{}
			for _, hf := range files {
				fj := fileJSON{Path: hf.path, Host: hf.host.Name, Servers: []serverJSON{}}
				c, err := hosts.Load(cmd.Context(), hf.host, hf.path)
				if err != nil {
					// What it could not read is not enforced.
					fj.Error, failed, report.Enforced = err.Error(), true, false
					report.Files = append(report.Files, fj)
					continue
				}
				for _, s := range c.Servers() {
					if len(f.servers) > 0 && !slices.Contains(f.servers, s.Name) {
						continue
					}
					seen[s.Name] = true
					sj := describe(s, want)
					report.Enforced = report.Enforced && sj.Enforced
					fj.Servers = append(fj.Servers, sj)
				}
				report.Files = append(report.Files, fj)
			}
			// A server asked for that no file has is not enforced: it
			// may be configured under another name, or in a file not read.
			var missing []string
			for _, n := range f.servers {
				if !seen[n] && !slices.Contains(missing, n) {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				report.Enforced = false
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return err
				}
			} else {
				printList(a.stdout, report)
			}
			for _, n := range missing {
				fmt.Fprintf(a.stderr, "mcpsign: hosts list: no file read has the server %s (--server)\n", textsafe.Quote(n))
				failed = true
			}
			if failed {
				if !asJSON {
					for _, fj := range report.Files {
						if fj.Error != "" {
							fmt.Fprintf(a.stderr, "mcpsign: %s\n", textsafe.Escape(fj.Error))
						}
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
		},
	}
	f.add(cmd)
	out.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&policy, "policy", "", "the policy every wrapped server must run under to count as enforced (default: any)")
	cmd.Flags().BoolVar(&check, "check", false, "exit 1 when any server listed is not enforced under --policy")
	cmd.Flags().StringVar(&self, "mcpsign", "", "the mcpsign executable an enforced entry runs (default: this one)")
	return cmd
}

func printList(w io.Writer, report listJSON) {
	if len(report.Files) == 0 {
		fmt.Fprintln(w, "no host configuration found")
		return
	}
	for _, fj := range report.Files {
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
				fmt.Fprintf(w, "remote %s, NOT WRAPPED\n", textsafe.Quote(hosts.RedactURL(s.URL)))
				if s.Problem != "" {
					fmt.Fprintf(w, "    cannot be wrapped: %s\n", textsafe.Escape(s.Problem))
				}
			case s.Kind == "unknown":
				fmt.Fprintf(w, "NOT ENFORCED: %s\n", textsafe.Escape(s.Reason))
			case s.Wrapped:
				what := "stdio " + quoteArgv(s.Original)
				if s.Remote != "" {
					what = "remote " + textsafe.Quote(s.Remote) + " through the proxy"
				}
				if s.Enforced {
					fmt.Fprintf(w, "%s, enforced\n", what)
				} else {
					fmt.Fprintf(w, "%s, wrapped, NOT ENFORCED: %s\n", what, textsafe.Escape(s.Reason))
				}
				fmt.Fprintf(w, "    wrapper %s", textsafe.Quote(s.Wrapper))
				if s.Policy != "" {
					fmt.Fprintf(w, ", policy %s, name %s", textsafe.Quote(s.Policy), textsafe.Quote(s.PolicyName))
				} else {
					fmt.Fprint(w, ", no --policy")
				}
				fmt.Fprintln(w, "; policy status: not checked")
				if len(s.Headers) > 0 {
					fmt.Fprintf(w, "    headers %s (values not shown)\n", quoteArgv(s.Headers))
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
	long := `Restore each wrapped server's own entry: the command line that follows "--"
in its wrapped arguments, or, for a remote server wrap put behind the proxy,
its URL. It is the exact inverse of 'mcpsign hosts wrap': the file is byte
for byte what it was before.`
	example := `  # See what would change, then do it
  mcpsign hosts unwrap --config .vscode/mcp.json --dry-run
  mcpsign hosts unwrap --config .vscode/mcp.json --server notes`
	if wrap {
		verb = "wrap"
		use = "wrap --policy FILE [--host NAME] [--config FILE] [--server NAME]... [--mcpsign PATH] [--dry-run]"
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
unwrapped to its server and wrapped again (re-wrapped), with the reason.`
		example = `  # See the change first, then write it
  mcpsign hosts wrap --policy ~/.config/mcpsign/policy.json --dry-run
  mcpsign hosts wrap --policy ~/.config/mcpsign/policy.json --host claude-desktop

  # One project file, one server
  mcpsign hosts wrap --policy /etc/mcpsign/policy.json --config .vscode/mcp.json --server notes`
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
				if opts.Self, err = selfPath(self); err != nil {
					return err
				}
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
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done and the unified diff of each file; write nothing")
	if wrap {
		cmd.Flags().StringVar(&policy, "policy", "", "the policy file the proxy is started under (required)")
		cmd.Flags().StringVar(&self, "mcpsign", "", "the mcpsign executable written into entries (default: this one)")
		cmd.Flags().StringVar(&self, "mcpsign-path", "", "the mcpsign executable written into entries (old spelling of --mcpsign)")
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

// wouldDo is what --dry-run says of each action: nothing was done.
var wouldDo = map[hosts.Action]string{
	hosts.ActWrapped:   "would wrap",
	hosts.ActRewrapped: "would re-wrap",
	hosts.ActUnwrapped: "would unwrap",
}

// editFile wraps or unwraps the entries of hf. It says what it did only
// after the file is written; with dryRun it says what it would do.
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
	var backup string
	if !dryRun {
		if backup, err = c.Save(cmd.Context(), data); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stdout, "%s (%s)\n", textsafe.Escape(hf.path), hf.host.Name)
	for _, ch := range changes {
		action := string(ch.Action)
		if w, ok := wouldDo[ch.Action]; ok && dryRun {
			action = w
		}
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
	if backup != "" {
		fmt.Fprintf(a.stderr, "mcpsign: the file as it was is kept in %s\n", textsafe.Escape(backup))
	}
	if !dryRun {
		return nil
	}
	servers := c.Servers()
	if after, err := hosts.Parse(hf.host, hf.path, data); err == nil {
		servers = append(servers, after.Servers()...)
	}
	text, truncated := diff.Text(hosts.Redact(string(c.Original()), servers), hosts.Redact(string(data), servers), diff.TextOptions{})
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
