package hosts

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

func (d *tomlDoc) rewrapEntry(i int, self string, prefix []string) string {
	e := d.entries[i]
	return d.rewriteArgs(e, tomlQuote(self), prefix, e.srv.Wrapped.Original)
}

// rewriteArgs writes cmd as e's command and prefix then args as its args,
// in the form wrapEntry writes them into an array that is there (an empty
// one when args is).
func (d *tomlDoc) rewriteArgs(e tomlEntry, cmd string, prefix, args []string) string {
	if e.argsOpen < 0 {
		return "it has no args array: edit it by hand"
	}
	end, ok := tomlArrayEnd(string(d.data), e.argsOpen)
	if !ok {
		return "its args array could not be read: edit it by hand"
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = tomlQuote(a)
	}
	var text string
	switch {
	case len(prefix) == 0:
		text = strings.Join(quoted, ", ")
	case len(quoted) == 1 && d.createdArgs(e, end):
		// The form wrap writes where there was no args: unwrap then
		// removes the line, as it does for the entry as it was.
		text = prefixText(prefix, quoted[0], " ")
	case len(quoted) == 1:
		text = prefixText(prefix, quoted[0], "")
	default:
		text = prefixText(prefix, quoted[0], " ") + ", " + strings.Join(quoted[1:], ", ")
	}
	d.edits = append(d.edits, edit{e.cmdStart, e.cmdEnd, cmd}, edit{e.argsOpen, end, text})
	return ""
}

// createdArgs reports whether e's args, which closes at end, is on its own
// line just after the command, as wrap writes it where there was none.
func (d *tomlDoc) createdArgs(e tomlEntry, end int) bool {
	text := string(d.data)
	return e.argsOpen-len(e.indent+"args = [") == e.cmdLineEnd && text[e.cmdLineEnd:e.argsOpen] == e.indent+"args = [" &&
		strings.HasPrefix(text[end:], "]\n")
}

// stashMark starts a line of a Codex table that wrap commented out: a
// remote entry's header settings, which Codex refuses in a stdio entry.
const stashMark = "# mcpsign: "

// codexHeaderKeys are the members of a Codex remote entry that give its
// headers (docs/HOSTS.md "Remote servers").
var codexHeaderKeys = []string{"bearer_token_env_var", "http_headers", "env_http_headers"}

var envNameRE = lazy.NewRegexp(`^` + envName + `$`)

// codexRemote reads the headers of e, a Codex remote entry decoded as t,
// and says why wrap cannot turn it into a stdio entry, "" when it can.
func codexRemote(text string, e *tomlEntry, t map[string]any) string {
	u, ok := e.keys["url"]
	if !ok || u.end < 0 {
		return "url is not a key of its table on a line of its own"
	}
	if _, ok := stringToken(text[u.value:]); !ok {
		return "url is not a one-line string"
	}
	if problem := checkRemoteURL(e.srv.URL); problem != "" {
		return problem
	}
	if len(e.stashed) > 0 {
		return fmt.Sprintf("it has a line that starts with %s, as wrap writes: unwrap would take it for one it wrote", textsafe.RawQuote(stashMark))
	}
	for k := range t {
		switch {
		case k == "url" || slices.Contains(codexHeaderKeys, k):
		case slices.Contains([]string{"bearer_token", "command", "args", "env", "env_vars", "cwd"}, k):
			return fmt.Sprintf("it has %s", textsafe.RawQuote(k))
		}
	}
	for _, k := range codexHeaderKeys {
		if _, set := t[k]; !set {
			continue
		}
		if l, ok := e.keys[k]; !ok || l.end < 0 {
			return fmt.Sprintf("%s is not a key of its table on a line of its own", k)
		}
	}
	var hs []Header
	var args []string
	add := func(name, value, arg string) string {
		if slices.ContainsFunc(hs, func(h Header) bool { return strings.EqualFold(h.Name, name) }) {
			return fmt.Sprintf("header %s is given twice", textsafe.RawQuote(name))
		}
		if !headerToken.MatchString(name) {
			return fmt.Sprintf("the header name %s is not an HTTP token", textsafe.RawQuote(name))
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return fmt.Sprintf("header %s has a line break or NUL in its value", textsafe.RawQuote(name))
		}
		hs = append(hs, Header{Name: name, Value: value, raw: value})
		args = append(args, name+": "+arg)
		return ""
	}
	envVar := func(v any, what string) (string, string) {
		name, ok := v.(string)
		if !ok || !envNameRE.MatchString(name) {
			return "", fmt.Sprintf("%s is not the name of an environment variable", what)
		}
		if !slices.Contains(e.envVars, name) {
			e.envVars = append(e.envVars, name)
		}
		return name, ""
	}
	if v, set := t["bearer_token_env_var"]; set {
		name, problem := envVar(v, "bearer_token_env_var")
		if problem == "" {
			problem = add("Authorization", "", "Bearer ${"+name+"}")
		}
		if problem != "" {
			return problem
		}
	}
	for _, k := range []string{"http_headers", "env_http_headers"} {
		m, set := t[k]
		if !set {
			continue
		}
		tab, ok := m.(map[string]any)
		if !ok {
			return k + " is not a table"
		}
		names := make([]string, 0, len(tab))
		for n := range tab {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			var problem string
			if k == "http_headers" {
				v, ok := tab[n].(string)
				switch {
				case !ok:
					problem = fmt.Sprintf("header %s is not a string", textsafe.RawQuote(n))
				default:
					// Codex sends it as it is: every $ is literal.
					problem = add(n, v, strings.ReplaceAll(v, "$", "$$"))
				}
			} else {
				var name string
				if name, problem = envVar(tab[n], fmt.Sprintf("env_http_headers %s", textsafe.RawQuote(n))); problem == "" {
					problem = add(n, "", "${"+name+"}")
				}
			}
			if problem != "" {
				return problem
			}
		}
	}
	e.srv.Headers, e.srv.headerArgs = hs, args
	return ""
}

// wrapRemote turns the url key of entry i into the command, writes the
// args after it (the URL's token last) and, when the headers need any,
// env_vars (Codex passes a stdio server only the variables it names), and
// comments out the header settings, which Codex refuses in a stdio entry.
func (d *tomlDoc) wrapRemote(i int, self string, prefix []string) string {
	e := d.entries[i]
	text := string(d.data)
	u := e.keys["url"]
	tok, _ := stringToken(text[u.value:])
	indent := text[u.start:u.key]
	for _, k := range codexHeaderKeys {
		if l, ok := e.keys[k]; ok {
			d.edits = append(d.edits, edit{l.start, l.start, stashMark})
		}
	}
	lines := indent + "args = [" + prefixText(prefix, tok, " ") + "]\n"
	if len(e.envVars) > 0 {
		q := make([]string, len(e.envVars))
		for i, v := range e.envVars {
			q[i] = tomlQuote(v)
		}
		lines += indent + "env_vars = [" + strings.Join(q, ", ") + "]\n"
	}
	d.edits = append(d.edits,
		edit{u.key, u.key + len("url"), "command"},
		edit{u.value, u.value + len(tok), tomlQuote(self)},
		edit{u.end, u.end, lines})
	return ""
}

// tomlArrayEnd returns the offset of the "]" that closes the array whose
// "[" is just before open.
func tomlArrayEnd(text string, open int) (int, bool) {
	depth := 1
	for i := open; i < len(text); i++ {
		switch c := text[i]; {
		case strings.HasPrefix(text[i:], `"""`), strings.HasPrefix(text[i:], `'''`):
			j := multiLineEnd(text[i+3:], text[i:i+3])
			if j < 0 {
				return 0, false
			}
			i += 3 + j - 1
		case c == '"' || c == '\'':
			tok, ok := stringToken(text[i:])
			if !ok {
				return 0, false
			}
			i += len(tok) - 1
		case c == '#':
			nl := strings.IndexByte(text[i:], '\n')
			if nl < 0 {
				return 0, false
			}
			i += nl
		case c == '[':
			depth++
		case c == ']':
			if depth--; depth == 0 {
				return i, true
			}
		}
	}
	return 0, false
}

// codexFront is why a Codex entry is not pointed at a front by wrap (its
// url is edited by hand: docs/HOSTS.md "Pointing an entry at a front").
const codexFront = "mcpsign points the entries of JSON hosts at a front; write the front's URL in Codex's url by hand"

// frontRemote: never called, a Codex entry has a frontProblem.
func (d *tomlDoc) frontRemote(int, string) string { return codexFront }

// unfrontRemote: a Codex entry has no Upstream (tomlDoc never reads one).
func (d *tomlDoc) unfrontRemote(int) string {
	return "mcpsign restores the entries of JSON hosts only"
}
