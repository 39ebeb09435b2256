package hosts

import "strings"

// Wrapped is what a wrapped entry's argv says besides the original argv.
type Wrapped struct {
	// Program is the wrapper's program as written: the entry's command.
	Program string
	// Policy and Name are the values of --policy and --name before "--";
	// empty when absent (an entry wrapped by hand with --lock and flags).
	Policy, Name string
	// Lock is the value of --lock, if any.
	Lock string
	// Headers are the values of --header, in order ("Name: value", as
	// written; never printed: a value may be a secret).
	Headers []string
	// OAuth are the proxy's OAuth flags (--oauth, --oauth-*, --no-browser)
	// as written, each value after its flag: they choose how the proxy signs
	// in to a remote server and change nothing it enforces, so a re-wrap
	// keeps them (docs/HOSTS.md "Remote servers").
	OAuth []string
	// Other are the arguments between "proxy" and "--" that are none of
	// the above, and a repeated --policy, --name or --lock: flags that
	// change what the policy enforces (--tofu, --mode, …), so that an entry
	// with any is not enforced (docs/HOSTS.md "What counts as enforced").
	Other []string
	// Original is the server's own argv: what follows the first "--". For
	// a wrapped remote entry it is the server's URL alone.
	Original []string
}

// WrapArgv returns the argv that starts original through the proxy:
// self proxy --policy policy --name name -- original... Every string is
// copied verbatim: host interpolation tokens are never expanded.
func WrapArgv(self, policy, name string, original []string) []string {
	out := make([]string, 0, len(original)+7)
	out = append(out, self)
	out = append(out, wrapPrefix(policy, name, nil, nil)...)
	return append(out, original...)
}

// wrapPrefix is what wrap puts between mcpsign and the original argv: the
// proxy under policy for the server name, with these --header values and
// OAuth flags (Wrapped.OAuth).
func wrapPrefix(policy, name string, headers, oauth []string) []string {
	out := []string{"proxy", "--policy", policy, "--name", name}
	for _, h := range headers {
		out = append(out, "--header", h)
	}
	out = append(out, oauth...)
	return append(out, "--")
}

// oauthFlag reports whether key is one of the proxy's OAuth flags, and
// whether it takes a value (docs/REMOTE.md "Authentication").
func oauthFlag(key string) (isOAuth, takesValue bool) {
	switch key {
	case "--oauth", "--no-browser":
		return true, false
	case "--oauth-client-id", "--oauth-client-metadata-url", "--oauth-client-secret-env",
		"--oauth-scope", "--oauth-redirect-port", "--oauth-cache-dir":
		return true, true
	}
	return false, false
}

// ParseWrapped reports whether argv has the shape of the proxy (its program
// is named mcpsign, its first argument is "proxy" and a "--" is followed by
// a command), and if so what it wraps. It is the inverse of WrapArgv, and
// also reads entries wrapped by hand (docs/HOSTS.md). The shape alone
// proves nothing: Want.Check says whether the entry is enforced.
func ParseWrapped(argv []string) (Wrapped, bool) {
	if len(argv) < 4 || !isMcpsign(argv[0]) || argv[1] != "proxy" {
		return Wrapped{}, false
	}
	dash := dashIndex(argv)
	if dash < 0 || dash == len(argv)-1 {
		return Wrapped{}, false
	}
	w := Wrapped{Program: argv[0], Original: append([]string(nil), argv[dash+1:]...)}
	seen := map[string]bool{}
	for i := 2; i < dash; i++ {
		key, val, inline := strings.Cut(argv[i], "=")
		if isOAuth, takesValue := oauthFlag(key); isOAuth {
			w.OAuth = append(w.OAuth, argv[i])
			if takesValue && !inline {
				i++
				w.OAuth = append(w.OAuth, argv[i])
			}
			continue
		}
		var dst *string
		switch key {
		case "--policy":
			dst = &w.Policy
		case "--name":
			dst = &w.Name
		case "--lock":
			dst = &w.Lock
		case "--header":
		default:
			w.Other = append(w.Other, argv[i])
			continue
		}
		if !inline {
			i++
			val = argv[i]
		}
		if dst == nil {
			w.Headers = append(w.Headers, val)
			continue
		}
		if seen[key] {
			w.Other = append(w.Other, key)
		}
		seen[key] = true
		*dst = val
	}
	if w.Lock != "" {
		// A lock given besides the policy's replaces nothing the policy
		// says, but is not what wrap writes: not enforced.
		w.Other = append(w.Other, "--lock")
	}
	return w, true
}

// isMcpsign reports whether program may name the mcpsign binary, by its
// base name on any OS: one that starts with "mcpsign" (mcpsign,
// mcpsign.exe, mcpsign-1.4). Wrap refuses to write any other (ErrSelfName),
// so that what it writes is always read as wrapped.
func isMcpsign(program string) bool {
	base := program
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	return strings.HasPrefix(strings.ToLower(base), "mcpsign")
}

// dashIndex returns the index in argv (program first) of the "--" that
// ends the proxy's flags: the first one after "proxy" that is not the value
// of --policy, --name, --lock, --header or an OAuth flag; -1 if there is
// none.
func dashIndex(argv []string) int {
	for i := 2; i < len(argv); i++ {
		switch argv[i] {
		case "--":
			return i
		case "--policy", "--name", "--lock", "--header":
			i++
		default:
			if _, takesValue := oauthFlag(argv[i]); takesValue {
				i++
			}
		}
	}
	return -1
}
