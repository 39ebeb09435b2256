package hosts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Want is what an entry must run to count as enforced (docs/HOSTS.md "What
// counts as enforced"): this mcpsign executable, its proxy subcommand, under
// this policy, for the entry's own name, and no flag besides --policy,
// --name and --header.
type Want struct {
	// Self is the path of the mcpsign executable.
	Self string
	// Policy is the policy file's path: absolute, or written with a host
	// token (kept as written, and then compared as written). Empty means
	// any policy (list without --policy).
	Policy string
	// IsSelf reports whether an entry's program, resolved as its host
	// resolves it, is the executable Self: nil when it is, else why not.
	// Nil means SameExecutable(Self).
	IsSelf func(program string) error
	// Admits reports whether the policy Policy has rules the proxy starts
	// the server of this name under: nil when it does, else why not (the
	// policy does not name it, or would refuse it at every start). An entry
	// it does not admit is not enforced, and wrap leaves it alone
	// (docs/HOSTS.md). Nil means the policy is not read (list without
	// --policy, a policy written with a host token).
	Admits func(name string) error
	// Fronts are the URLs of fronts (mcpsign serve) an entry pointed at
	// by wrap --front may reach to count as enforced: mcpsign cannot tell
	// from a host's file what a URL enforces, so the user names the fronts
	// it trusts (list --front).
	Fronts []string
}

// Check returns why s is not enforced under w, or "" when it is.
func (w Want) Check(s Server) string {
	switch {
	case s.Kind == Remote && s.Upstream != "" && s.frontProblem == "":
		if slices.Contains(w.Fronts, s.URL) {
			return ""
		}
		return "pointed at a front that was not named as trusted: mcpsign cannot tell from a host's file what a URL enforces"
	case s.Kind == Remote:
		if s.Problem != "" {
			return "not wrapped, and cannot be: " + s.Problem
		}
		return "not wrapped"
	case s.Kind == Unknown:
		return "neither a command nor a URL"
	case s.Problem != "":
		return "cannot be wrapped: " + s.Problem
	case s.Wrapped == nil:
		return "not wrapped"
	}
	wr := s.Wrapped
	isSelf := w.IsSelf
	if isSelf == nil {
		isSelf = SameExecutable(w.Self)
	}
	if !strings.ContainsAny(wr.Program, `/\`) && slices.ContainsFunc(s.Env, func(n string) bool { return envVar(n) == "PATH" }) {
		// The host looks a bare name up in the PATH it gives the entry.
		return fmt.Sprintf("its command %s is a bare name and its env sets PATH, where the host looks it up: mcpsign cannot tell what it runs; write the absolute path", textsafe.RawQuote(wr.Program))
	}
	if err := isSelf(wr.Program); err != nil {
		return fmt.Sprintf("its command is not this mcpsign (%s): %v", w.Self, err)
	}
	if len(wr.Other) > 0 {
		return fmt.Sprintf("the proxy is given %s, which wrap does not write: it may weaken or replace what the policy enforces", strings.Join(wr.Other, " "))
	}
	if wr.Policy == "" {
		return "the proxy is given no policy file"
	}
	if w.Policy != "" && !samePolicy(wr.Policy, w.Policy) {
		return fmt.Sprintf("it runs under the policy %s, not %s", wr.Policy, w.Policy)
	}
	if w.Policy == "" && !strings.Contains(wr.Policy, "${") && !filepath.IsAbs(wr.Policy) {
		return "its policy file is a relative path: what it names depends on the host's working directory"
	}
	if wr.Name != s.Name {
		return fmt.Sprintf("it names the server %s to the policy, not the entry's name: the policy's rules for another server apply", textsafe.RawQuote(wr.Name))
	}
	if why := envProblem(s); why != "" {
		return why
	}
	if why := w.admits(s.Name); why != "" {
		return why
	}
	return ""
}

// admits is why the policy does not admit the server name (Admits), or "".
func (w Want) admits(name string) string {
	if w.Admits == nil {
		return ""
	}
	if err := w.Admits(name); err != nil {
		return "the proxy would refuse to start it: " + err.Error()
	}
	return ""
}

// envProblem says why the environment the host gives s may change how the
// proxy itself runs, "" when it cannot: an entry wrap neither wraps nor
// counts as enforced.
func envProblem(s Server) string {
	if bad := slices.IndexFunc(s.Env, runtimeVar); bad >= 0 {
		return fmt.Sprintf("its env sets %s, which changes how mcpsign itself runs: remove it", s.Env[bad])
	}
	if s.EnvFile {
		return "its envFile may set variables that change how mcpsign itself runs (LD_PRELOAD, …): give its variables in env"
	}
	return ""
}

// runtimeVar reports an environment variable that changes how the proxy
// itself runs (the dynamic loader's, Go's runtime's, mcpsign's own), or
// where it finds what it trusts: the home and per-user directories its
// default lock and TUF cache are under (a cloned repository's config could
// point them at a lock or trusted root of its own), and the TLS roots.
func runtimeVar(name string) bool {
	u := envVar(name)
	for _, p := range []string{"LD_", "DYLD_", "MCPSIGN", "XDG_"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	switch u {
	case "GODEBUG", "GOFIPS140",
		"HOME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
		"SSL_CERT_FILE", "SSL_CERT_DIR":
		return true
	}
	return false
}

// envVar is the variable an env member named name sets, in upper case (as
// Windows compares them): a host writes each member as NAME=VALUE, so a
// name that holds a "=" sets the variable before it.
func envVar(name string) string {
	name, _, _ = strings.Cut(name, "=")
	return strings.ToUpper(name)
}

// samePolicy reports whether the policy an entry names is want: the same
// string when either is written with a host token, else the same absolute
// path or the same file.
func samePolicy(got, want string) bool {
	if strings.Contains(got, "${") || strings.Contains(want, "${") {
		return got == want
	}
	if !filepath.IsAbs(got) {
		return false
	}
	if filepath.Clean(got) == filepath.Clean(want) {
		return true
	}
	a, err1 := os.Stat(got)
	b, err2 := os.Stat(want)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// ErrNotSelf reports an entry's program that is not the mcpsign executable.
var ErrNotSelf = errors.New("another program")

// SameExecutable returns the IsSelf of Want for the executable at self: a
// program is self when it resolves to the same file, an absolute path as
// it is, a bare name looked up on PATH (the PATH of this process: set it as
// the host's is set). A relative path, or one written with a host token,
// resolves to what the host's working directory or variables say, which
// mcpsign cannot know: it is not self.
//
// On Windows a bare name is not self either: a host's spawn
// (CreateProcess, Node's) looks for it in the host's working directory
// before PATH, and that directory may be a cloned repository holding a
// mcpsign.exe.
func SameExecutable(self string) func(program string) error {
	return sameExecutable(self, runtime.GOOS)
}

// sameExecutable is SameExecutable as it is on goos.
func sameExecutable(self, goos string) func(program string) error {
	return func(program string) error {
		var path string
		switch {
		case strings.Contains(program, "${") || strings.HasPrefix(program, "~"):
			return fmt.Errorf("%w: %s is written with a host token, which mcpsign cannot resolve", ErrNotSelf, textsafe.RawQuote(program))
		case filepath.IsAbs(program):
			path = program
		case strings.ContainsAny(program, `/\`):
			return fmt.Errorf("%w: %s is a relative path: what it runs depends on the host's working directory", ErrNotSelf, textsafe.RawQuote(program))
		case goos == "windows":
			return fmt.Errorf("%w: %s is a bare name: on Windows the host looks for it in its working directory before PATH; write the absolute path", ErrNotSelf, textsafe.RawQuote(program))
		default:
			p, err := exec.LookPath(program)
			if err != nil {
				return fmt.Errorf("%w: %s is not found on PATH: %w", ErrNotSelf, textsafe.RawQuote(program), err)
			}
			path = p
		}
		a, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNotSelf, err)
		}
		b, err := os.Stat(self)
		if err != nil {
			return fmt.Errorf("the mcpsign executable: %w", err)
		}
		if !os.SameFile(a, b) {
			return fmt.Errorf("%w: %s is another file", ErrNotSelf, path)
		}
		return nil
	}
}
