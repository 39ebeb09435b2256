package hosts

import (
	"path/filepath"
	"strings"
)

// Wrapped is what a wrapped entry's argv says besides the original argv.
type Wrapped struct {
	// Policy and Name are the values of --policy and --name before "--";
	// empty when absent (an entry wrapped by hand with --lock and flags).
	Policy, Name string
	// Lock is the value of --lock, if any.
	Lock string
	// Original is the server's own argv: what follows the first "--".
	Original []string
}

// WrapArgv returns the argv that starts original through the proxy:
// self proxy --policy policy --name name -- original... Every string is
// copied verbatim: host interpolation tokens are never expanded.
func WrapArgv(self, policy, name string, original []string) []string {
	out := make([]string, 0, len(original)+7)
	out = append(out, self)
	out = append(out, wrapPrefix(policy, name)...)
	return append(out, original...)
}

// wrapPrefix is what wrap puts between mcpsign and the original argv.
func wrapPrefix(policy, name string) []string {
	return []string{"proxy", "--policy", policy, "--name", name, "--"}
}

// ParseWrapped reports whether argv starts the proxy (its program is named
// mcpsign, its first argument is "proxy" and a "--" is followed by a
// command), and if so what it wraps. It is the inverse of WrapArgv, and
// also reads entries wrapped by hand (docs/HOSTS.md).
func ParseWrapped(argv []string) (Wrapped, bool) {
	if len(argv) < 4 || !isMcpsign(argv[0]) || argv[1] != "proxy" {
		return Wrapped{}, false
	}
	dash := dashIndex(argv)
	if dash < 0 || dash == len(argv)-1 {
		return Wrapped{}, false
	}
	w := Wrapped{Original: append([]string(nil), argv[dash+1:]...)}
	for i := 2; i < dash; i++ {
		key, val, inline := strings.Cut(argv[i], "=")
		var dst *string
		switch key {
		case "--policy":
			dst = &w.Policy
		case "--name":
			dst = &w.Name
		case "--lock":
			dst = &w.Lock
		default:
			continue
		}
		if !inline {
			i++
			val = argv[i]
		}
		*dst = val
	}
	return w, true
}

// isMcpsign reports whether program names the mcpsign binary, by its base
// name, on any OS.
func isMcpsign(program string) bool {
	base := program
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".exe"), ".EXE")
	return base == "mcpsign" || filepath.Base(program) == "mcpsign"
}

// dashIndex returns the index in argv (program first) of the "--" that
// ends the proxy's flags: the first one after "proxy" that is not the value
// of --policy, --name or --lock; -1 if there is none.
func dashIndex(argv []string) int {
	for i := 2; i < len(argv); i++ {
		switch argv[i] {
		case "--":
			return i
		case "--policy", "--name", "--lock":
			i++
		}
	}
	return -1
}
