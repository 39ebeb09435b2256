package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// File is one configuration file of a host.
type File struct {
	Host Host
	Path string
}

// Names returns the names of the hosts of the table, comma separated, as
// help texts and errors list them.
func Names() string {
	var names []string
	for _, h := range Hosts() {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}

// UnknownHostError is a host name that is none of the table's.
type UnknownHostError struct{ Name string }

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("%s: unknown host (want one of %s)", textsafe.RawQuote(e.Name), Names())
}

// UnknownFileError is a configuration file whose host cannot be told from
// its name (Env.Infer): the caller must say which host's it is.
type UnknownFileError struct{ Path string }

func (e *UnknownFileError) Error() string {
	return fmt.Sprintf("%s: cannot tell its host from its name", e.Path)
}

// ErrNoHome reports that the user's home directory is unknown: the user
// files of the hosts cannot be found.
var ErrNoHome = errors.New("cannot find the home directory")

// ProcessEnv returns the Env of this process: the environment variables
// getenv reads ($HOME, else the OS's home directory, %APPDATA%,
// $XDG_CONFIG_HOME, $CODEX_HOME) and the current directory as the project
// directory. With no home directory it returns the Env without one and an
// error wrapping ErrNoHome: enough to read a file named by its path.
func ProcessEnv(getenv func(string) string) (Env, error) {
	env := Env{GOOS: runtime.GOOS, Home: getenv("HOME"), AppData: getenv("APPDATA"),
		XDGConfigHome: getenv("XDG_CONFIG_HOME"), CodexHome: getenv("CODEX_HOME")}
	var err error
	if env.Home == "" {
		var herr error
		if env.Home, herr = os.UserHomeDir(); herr != nil {
			err = fmt.Errorf("%w: %w", ErrNoHome, herr)
		}
	}
	if wd, werr := os.Getwd(); werr == nil {
		env.Dir = wd
	}
	return env, err
}

// Files returns the configuration files to read: config alone when it is
// not "" (as host's, or as the host its name tells: an *UnknownFileError
// when it tells none), else every existing file of host ("" for every
// host) under env. An unknown host is an *UnknownHostError.
func (env Env) Files(host, config string) ([]File, error) {
	var only *Host
	if host != "" {
		h, ok := Lookup(host)
		if !ok {
			return nil, &UnknownHostError{Name: host}
		}
		only = &h
	}
	if config != "" {
		if only != nil {
			return []File{{*only, config}}, nil
		}
		named := config
		if abs, err := filepath.Abs(named); err == nil {
			named = abs
		}
		h, ok := env.Infer(named)
		if !ok {
			return nil, &UnknownFileError{Path: config}
		}
		return []File{{h, config}}, nil
	}
	var out []File
	for _, h := range Hosts() {
		if only != nil && h.Name != only.Name {
			continue
		}
		for _, p := range h.Paths(env) {
			if _, err := os.Lstat(p); err == nil {
				out = append(out, File{h, p})
			}
		}
	}
	return out, nil
}

// FindFiles is Files under this process's Env (ProcessEnv with getenv):
// a home directory that cannot be found is an error only when no config
// file is named.
func FindFiles(getenv func(string) string, host, config string) ([]File, error) {
	env, err := ProcessEnv(getenv)
	if err != nil && config == "" {
		return nil, err
	}
	return env.Files(host, config)
}

// SelfPath returns the mcpsign executable an entry must run (Want.Self):
// given, or this process's executable, with its symbolic links resolved,
// absolute.
func SelfPath(given string) (string, error) {
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

// PolicyPath returns the policy path as entries are written with and
// compared to (Want.Policy, WrapOptions.Policy): absolute, and the file
// must exist, unless it is written with a host token
// (${workspaceFolder}/…), which is kept for the host to expand.
func PolicyPath(p string) (string, error) {
	if strings.Contains(p, "${") {
		return p, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// ServerReport is one server of a ListReport (docs/JSON.md, "mcpsign hosts
// list --format json"). Header values are never in it: they may be
// secrets.
type ServerReport struct {
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
	Remote string `json:"remote,omitempty"`
	// Upstream is, for a remote entry wrap --front pointed at a front,
	// the URL it had (URL is then the front's).
	Upstream     string `json:"upstream,omitempty"`
	Policy       string `json:"policy,omitempty"`
	PolicyName   string `json:"policyName,omitempty"`
	PolicyStatus string `json:"policyStatus"`
	Lock         string `json:"lock,omitempty"`
	LockStatus   string `json:"lockStatus"`
	Problem      string `json:"problem,omitempty"`
}

// FileReport is one file of a ListReport: its servers, or the error that
// kept it from being read.
type FileReport struct {
	Path    string         `json:"path"`
	Host    string         `json:"host"`
	Error   string         `json:"error,omitempty"`
	Servers []ServerReport `json:"servers"`
}

// ListReport says of every server of some files whether it is enforced
// (docs/JSON.md, "mcpsign hosts list --format json").
type ListReport struct {
	ReportVersion int    `json:"reportVersion"`
	Mcpsign       string `json:"mcpsign"`
	Policy        string `json:"policy,omitempty"`
	// Enforced reports that every server listed is enforced, every file
	// was read and every server asked for was found.
	Enforced bool         `json:"enforced"`
	Files    []FileReport `json:"files"`
	// Missing are the servers asked for that no file has: they may be
	// configured under another name, or in a file not read.
	Missing []string `json:"-"`
}

// Failed reports whether a file could not be read or a server asked for
// was not found.
func (r *ListReport) Failed() bool {
	return len(r.Missing) > 0 || slices.ContainsFunc(r.Files, func(f FileReport) bool { return f.Error != "" })
}

// List reads files and reports each server (only those named in servers,
// when not empty) as enforced under want or not. A file that cannot be read
// is reported with its error, and is not enforced.
func List(ctx context.Context, files []File, servers []string, want Want) *ListReport {
	report := &ListReport{ReportVersion: 1, Mcpsign: want.Self, Policy: want.Policy, Enforced: true, Files: []FileReport{}}
	seen := map[string]bool{}
	for _, f := range files {
		fr := FileReport{Path: f.Path, Host: f.Host.Name, Servers: []ServerReport{}}
		c, err := Load(ctx, f.Host, f.Path)
		if err != nil {
			fr.Error, report.Enforced = err.Error(), false
			report.Files = append(report.Files, fr)
			continue
		}
		for _, s := range c.Servers() {
			if len(servers) > 0 && !slices.Contains(servers, s.Name) {
				continue
			}
			seen[s.Name] = true
			sr := Describe(s, want)
			report.Enforced = report.Enforced && sr.Enforced
			fr.Servers = append(fr.Servers, sr)
		}
		report.Files = append(report.Files, fr)
	}
	for _, n := range servers {
		if !seen[n] && !slices.Contains(report.Missing, n) {
			report.Missing = append(report.Missing, n)
		}
	}
	if len(report.Missing) > 0 {
		report.Enforced = false
	}
	return report
}

// Describe reports s: enforced under want or not, and if not why. Header
// values, and the values of the proxy's --header, are never in it; nor is
// the user info of a URL.
func Describe(s Server, want Want) ServerReport {
	j := ServerReport{Name: s.Name, Where: s.Where, Kind: string(s.Kind), Argv: redactArgv(s.Argv), URL: RedactURL(s.URL),
		PolicyStatus: "not checked", LockStatus: "not checked", Problem: s.Problem}
	if s.Kind == Remote {
		for _, h := range s.Headers {
			j.Headers = append(j.Headers, h.Name)
		}
		j.Upstream, j.Wrapped = RedactURL(s.Upstream), s.Upstream != ""
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
// (RedactURL): it may be a password or a token.
func redactURLs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = RedactURL(a)
	}
	return out
}

// redactArgv is argv with the value of every --header after its name
// replaced, and the user info of every URL (redactURLs): a header value
// may be a secret.
func redactArgv(argv []string) []string {
	argv = redactURLs(argv)
	for i := 0; i < len(argv); i++ {
		if argv[i] == "--" {
			break
		}
		if v, ok := strings.CutPrefix(argv[i], "--header="); ok {
			argv[i] = "--header=" + redactHeader(v)
		} else if argv[i] == "--header" && i+1 < len(argv) {
			argv[i+1] = redactHeader(argv[i+1])
			i++
		}
	}
	return argv
}

func redactHeader(h string) string {
	name, _, _ := strings.Cut(h, ":")
	return name + ": <redacted>"
}

// WriteText writes the report as 'mcpsign hosts list' prints it, every
// string from a file escaped. A file's error is not in it (the caller
// says it), only that it could not be read.
func (r *ListReport) WriteText(w io.Writer) {
	if len(r.Files) == 0 {
		fmt.Fprintln(w, "no host configuration found")
		return
	}
	for _, fj := range r.Files {
		fmt.Fprintf(w, "%s (%s)\n", textsafe.Escape(fj.Path), fj.Host)
		if fj.Error != "" {
			fmt.Fprintln(w, "  cannot read: see the error below")
			continue
		}
		if len(fj.Servers) == 0 {
			fmt.Fprintln(w, "  no servers")
		}
		for _, s := range fj.Servers {
			s.writeText(w)
		}
	}
}

func (s ServerReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "  %s (%s): ", textsafe.Quote(s.Name), textsafe.Escape(s.Where))
	switch {
	case s.Kind == string(Remote) && s.Upstream != "":
		what := fmt.Sprintf("remote %s through the front %s", textsafe.Quote(s.Upstream), textsafe.Quote(s.URL))
		if s.Enforced {
			fmt.Fprintf(w, "%s, enforced\n", what)
		} else {
			fmt.Fprintf(w, "%s, NOT ENFORCED: %s\n", what, textsafe.Escape(s.Reason))
		}
	case s.Kind == string(Remote):
		fmt.Fprintf(w, "remote %s, NOT WRAPPED\n", textsafe.Quote(s.URL))
		if s.Problem != "" {
			fmt.Fprintf(w, "    cannot be wrapped: %s\n", textsafe.Escape(s.Problem))
		}
	case s.Kind == string(Unknown):
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

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = textsafe.Quote(s)
	}
	return strings.Join(q, " ")
}
