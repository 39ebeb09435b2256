package hosts

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// isRemoteOriginal reports whether a wrapped entry's original argv is a
// remote server's URL: what wrap writes after "--" for a remote entry.
func isRemoteOriginal(original []string) bool {
	if len(original) != 1 {
		return false
	}
	l := strings.ToLower(original[0])
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// checkRemoteURL says why u is no URL the proxy can reach, "" when it is.
// It never repeats the URL (its query may hold a token).
func checkRemoteURL(u string) string {
	p, err := url.Parse(u)
	switch {
	case strings.Contains(u, "${"):
		return "the URL is written with a host variable, which mcpsign cannot fill in"
	case err != nil:
		return "the URL does not parse"
	case p.Scheme != "https" && p.Scheme != "http":
		return "the URL is not http:// or https://"
	case p.Host == "":
		return "the URL has no host"
	}
	return ""
}

const envName = `[A-Za-z_][A-Za-z0-9_]*`

var (
	headerToken = lazy.NewRegexp("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// dollar is a $ of a header value: alone, before a {…}, or before a
	// name.
	dollar = lazy.NewRegexp(`\$(\{[^}]*\}|` + envName + `)?`)
	// vscodeEnv is VS Code's (and Cursor's, Windsurf's) ${env:NAME}.
	vscodeEnv = lazy.NewRegexp(`^\$\{env:(` + envName + `)\}$`)
	// shellVar is Claude Code's ${NAME} and ${NAME:-default}.
	shellVar = lazy.NewRegexp(`^\$\{` + envName + `(:-[^}]*)?\}$`)
	// bracedVar is ${NAME}.
	bracedVar = lazy.NewRegexp(`^\$\{` + envName + `\}$`)
)

// headerArg returns the --header value wrap writes for h, a header of a
// remote entry of host, or why it cannot (docs/HOSTS.md "Remote servers").
// mcpsign fills in ${NAME} from its environment and reads $$ as $, every
// other $ being an error. A variable the host fills in from the
// environment is written so that mcpsign, or the host in args, fills it in
// from the same environment: VS Code's, Cursor's and Windsurf's
// ${env:NAME} becomes ${NAME}; Claude Code fills in ${NAME} and
// ${NAME:-default}, Gemini CLI ${NAME} and $NAME, in args as in headers,
// so they are kept. Any other host variable (${input:…},
// ${workspaceFolder}, …) is refused: only the host can fill it in. Every
// other $ is written $$.
func headerArg(host Host, h Header) (string, string) {
	if !headerToken.MatchString(h.Name) {
		return "", fmt.Sprintf("the header name %s is not an HTTP token", textsafe.RawQuote(h.Name))
	}
	if strings.ContainsAny(h.Value, "\r\n\x00") {
		return "", fmt.Sprintf("header %s has a line break or NUL in its value", textsafe.RawQuote(h.Name))
	}
	problem := ""
	value := dollar.Get().ReplaceAllStringFunc(h.Value, func(v string) string {
		braced := strings.HasPrefix(v, "${")
		switch host.Name {
		case "vscode", "cursor", "windsurf":
			if m := vscodeEnv.Get().FindStringSubmatch(v); m != nil {
				return "${" + m[1] + "}"
			}
		case "claude-code":
			if shellVar.MatchString(v) {
				return v
			}
		case "gemini":
			if !braced && v != "$" || bracedVar.MatchString(v) {
				return v
			}
		default:
			// A host that fills in nothing: every $ is literal.
			return strings.ReplaceAll(v, "$", "$$")
		}
		if braced && problem == "" {
			name, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(v, "${"), "}"), ":")
			problem = fmt.Sprintf("header %s uses the %s variable ${%s…}, which only the host can fill in: give the value in an environment variable instead", textsafe.RawQuote(h.Name), host.Display, name)
		}
		return strings.ReplaceAll(v, "$", "$$") // literal text to the host: $$ to mcpsign
	})
	if problem != "" {
		return "", problem
	}
	return h.Name + ": " + value, ""
}

// userinfo returns the user info of the URL in s (what comes between its
// "://" and the last "@" of its authority, as written), "" when it has
// none. s may be any string: an argument that holds a URL too.
func userinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	auth := s[i+3:]
	if end := strings.IndexAny(auth, "/?#"); end >= 0 {
		auth = auth[:end]
	}
	at := strings.LastIndexByte(auth, '@')
	if at <= 0 {
		return ""
	}
	return auth[:at]
}

// RedactURL returns s with the secrets its URL may carry replaced by
// "<redacted>": the user info (a password, or a token given as the user
// name) and the value of every query parameter (`?api_key=…`, `?token=…`):
// a URL as it may be printed. The parameter names stay, so that a reader
// still sees which URL it is.
func RedactURL(s string) string {
	if ui := userinfo(s); ui != "" {
		s = strings.Replace(s, "://"+ui+"@", "://<redacted>@", 1)
	}
	for _, v := range queryValues(s) {
		s = strings.Replace(s, "="+v, "=<redacted>", 1)
	}
	return s
}

// queryValues returns the values, as written, of the query parameters of the
// URL in s ("" values left out). s may be any string: an argument that holds
// a URL too.
func queryValues(s string) []string {
	if !strings.Contains(s, "://") {
		return nil
	}
	_, q, ok := strings.Cut(s, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	var vals []string
	for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			vals = append(vals, v)
		}
	}
	return vals
}

// Redact replaces, in text, every header value of the remote entries of
// servers, every value of a wrapped entry's --header, and the user info of
// every URL of an entry and its query values (RedactURL), with
// "<redacted>": for a diff of a configuration file, which must not print
// a secret.
func Redact(text string, servers []Server) string {
	var secrets []string
	for _, s := range servers {
		for _, h := range s.Headers {
			secrets = append(secrets, h.Value, h.raw)
		}
		for _, a := range append([]string{s.URL, s.Upstream}, s.Argv...) {
			secrets = append(secrets, userinfo(a))
			secrets = append(secrets, queryValues(a)...)
		}
		if s.Wrapped != nil {
			for _, h := range s.Wrapped.Headers {
				_, v, _ := strings.Cut(h, ":")
				v = strings.TrimSpace(v)
				secrets = append(secrets, v, strings.ReplaceAll(v, "$$", "$"))
			}
		}
	}
	for _, v := range secrets {
		if v == "" {
			continue
		}
		j, t := string(hujson.String(v)), tomlQuote(v)
		for _, form := range []string{v, j[1 : len(j)-1], t[1 : len(t)-1]} {
			if form != "" {
				text = strings.ReplaceAll(text, form, "<redacted>")
			}
		}
	}
	return text
}
