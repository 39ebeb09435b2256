package hosts

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

// tomlDoc is Codex's config.toml. go-toml reads it; the edits are made on
// the text itself, at the "command" and "args" keys of each
// [mcp_servers.NAME] table, so that everything else (comments, layout,
// other tables) stays as written.
type tomlDoc struct {
	host    Host
	data    []byte
	entries []tomlEntry
	edits   []edit
}

type tomlEntry struct {
	srv Server
	// cmdStart and cmdEnd delimit the command's value; cmdLineEnd is the
	// offset after the command line's newline.
	cmdStart, cmdEnd, cmdLineEnd int
	indent                       string
	// argsOpen is the offset just after the args array's "[", -1 if the
	// table has no args.
	argsOpen int
	// argsEmpty reports an empty args array.
	argsEmpty bool
	// lastNoNL reports a command line that ends the file without a newline.
	lastNoNL bool
	problem  string
	// cmdKey is the offset of the command's key.
	cmdKey int
	// keys are the table's other keys written on a line of their own.
	keys map[string]tomlLine
	// stashed are the offsets of the table's lines that wrap commented
	// out (stashMark), for unwrap to restore.
	stashed []int
	// envVars are the variables a wrapped remote entry needs from Codex's
	// environment (env_vars).
	envVars []string
}

// tomlLine is a key's line: where it starts and ends (after its newline),
// where its key and value start.
type tomlLine struct{ start, end, key, value int }

type edit struct {
	start, end int
	text       string
}

var (
	tomlHeader = lazy.NewRegexp(`^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)[ \t]*\][ \t]*(#.*)?$`)
	tomlKey    = lazy.NewRegexp(`^([ \t]*)([A-Za-z0-9_-]+)[ \t]*=[ \t]*`)
)

func parseTOML(h Host, data []byte) (document, error) {
	var doc struct {
		Servers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("line %d, column %d: %s", row, col, de.Error())
		}
		return nil, err
	}
	d := &tomlDoc{host: h, data: data}
	seen := map[string]bool{}
	text := string(data)
	var cur *tomlEntry
	off := 0
	open := "" // the multi-line string open at the line's start
	for off < len(text) {
		end := strings.IndexByte(text[off:], '\n')
		next := len(text)
		if end >= 0 {
			next = off + end + 1
		}
		line := strings.TrimRight(text[off:next], "\r\n")
		inString := open != ""
		open = tomlStrings(line, open)
		if inString {
			// Text of a multi-line string, not a header nor a key.
		} else if strings.HasPrefix(strings.TrimLeft(line, " \t"), "[") {
			cur = nil
			if m := tomlHeader.Get().FindStringSubmatch(line); m != nil {
				name := unquoteKey(m[1])
				d.entries = append(d.entries, tomlEntry{srv: Server{Name: name, Where: "mcp_servers"}, argsOpen: -1, cmdStart: -1})
				cur = &d.entries[len(d.entries)-1]
				seen[name] = true
			}
		} else if cur != nil {
			if strings.HasPrefix(line, stashMark) {
				cur.stashed = append(cur.stashed, off)
			}
			if m := tomlKey.Get().FindStringSubmatch(line); m != nil {
				vstart := off + len(m[0])
				switch m[2] {
				case "command":
					tok, ok := stringToken(text[vstart:])
					if !ok {
						cur.problem = "command is not a one-line string"
						break
					}
					cur.cmdStart, cur.cmdEnd, cur.cmdLineEnd, cur.indent = vstart, vstart+len(tok), next, m[1]
					cur.lastNoNL = end < 0
					cur.cmdKey = off + len(m[1])
				case "args":
					if !strings.HasPrefix(text[vstart:], "[") {
						cur.problem = "args is not an array"
						break
					}
					cur.argsOpen = vstart + 1
					cur.argsEmpty = strings.HasPrefix(strings.TrimLeft(text[vstart+1:], " \t"), "]")
				default:
					if cur.keys == nil {
						cur.keys = map[string]tomlLine{}
					}
					lineEnd := next
					if end < 0 {
						lineEnd = -1 // the file's last line, without a newline
					}
					cur.keys[m[2]] = tomlLine{start: off, end: lineEnd, key: off + len(m[1]), value: vstart}
				}
			}
		}
		off = next
	}
	for i := range d.entries {
		e := &d.entries[i]
		fill(h, text, e, doc.Servers[e.srv.Name])
	}
	// Servers written another way (inline tables, dotted keys) are listed
	// but not edited.
	var other []string
	for name := range doc.Servers {
		if !seen[name] {
			other = append(other, name)
		}
	}
	sort.Strings(other)
	for _, name := range other {
		e := tomlEntry{srv: Server{Name: name, Where: "mcp_servers"}, argsOpen: -1, cmdStart: -1,
			problem: "not written as a [mcp_servers.NAME] table"}
		fill(h, text, &e, doc.Servers[name])
		d.entries = append(d.entries, e)
	}
	return d, nil
}

// fill sets the entry's server from the decoded table.
func fill(h Host, text string, e *tomlEntry, t map[string]any) {
	e.srv.Kind = Unknown
	if cmd, ok := t["command"]; ok {
		e.srv.Kind = Stdio
		s, ok := cmd.(string)
		if !ok {
			e.srv.Problem = `"command" is not a string`
			return
		}
		e.srv.Argv = []string{s}
		if env, ok := t["env"].(map[string]any); ok {
			for k := range env {
				e.srv.Env = append(e.srv.Env, k)
			}
			sort.Strings(e.srv.Env)
		}
		if args, ok := t["args"]; ok {
			list, ok := args.([]any)
			if !ok {
				e.srv.Problem = `"args" is not an array`
				return
			}
			for _, a := range list {
				as, ok := a.(string)
				if !ok {
					e.srv.Problem = `"args" has a member that is not a string`
					return
				}
				e.srv.Argv = append(e.srv.Argv, as)
			}
		}
		if e.problem == "" && e.cmdStart < 0 {
			e.problem = "command is not a key of its table"
		}
		if e.problem == "" && e.argsOpen < 0 && len(e.srv.Argv) > 1 {
			e.problem = "args is not a key of its table"
		}
		if _, ok := t["url"]; ok && e.problem == "" {
			e.problem = "it has a url besides its command: Codex refuses the entry"
		}
		e.srv.Problem = e.problem
		classify(&e.srv)
		if e.srv.Problem == "" && e.srv.Wrapped == nil && e.argsOpen < 0 && e.lastNoNL {
			e.srv.Problem = "command is the file's last line and has no newline"
		}
		return
	}
	for _, k := range h.RemoteKeys {
		if u, ok := t[k].(string); ok {
			e.srv.Kind, e.srv.URL = Remote, u
			e.srv.Problem = codexRemote(text, e, t)
			e.srv.frontProblem = codexFront
			return
		}
	}
}

func (d *tomlDoc) servers() []Server {
	out := make([]Server, len(d.entries))
	for i, e := range d.entries {
		out[i] = e.srv
	}
	return out
}

func (d *tomlDoc) bytes() []byte {
	edits := append([]edit(nil), d.edits...)
	// Applied from the end; of two at one offset the one appended first is
	// applied first, so that the one appended later comes before it.
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := string(d.data)
	for _, e := range edits {
		out = out[:e.start] + e.text + out[e.end:]
	}
	return []byte(out)
}

// prefixText is wrap's prefix and the command's token as TOML array
// elements joined by ","+sep.
func prefixText(prefix []string, tok, sep string) string {
	parts := make([]string, 0, len(prefix)+1)
	for _, p := range prefix {
		parts = append(parts, tomlQuote(p))
	}
	return strings.Join(append(parts, tok), ","+sep)
}

func (d *tomlDoc) wrapEntry(i int, self string, prefix []string) {
	e := d.entries[i]
	tok := string(d.data[e.cmdStart:e.cmdEnd])
	d.edits = append(d.edits, edit{e.cmdStart, e.cmdEnd, tomlQuote(self)})
	switch {
	case e.argsOpen < 0:
		line := e.indent + "args = [" + prefixText(prefix, tok, " ") + "]\n"
		d.edits = append(d.edits, edit{e.cmdLineEnd, e.cmdLineEnd, line})
	case e.argsEmpty:
		d.edits = append(d.edits, edit{e.argsOpen, e.argsOpen, prefixText(prefix, tok, "")})
	default:
		d.edits = append(d.edits, edit{e.argsOpen, e.argsOpen, prefixText(prefix, tok, " ") + ", "})
	}
}

// unwrapEntry undoes what wrapEntry wrote: the prefix, written in one of
// wrapEntry's three forms, at the front of args.
func (d *tomlDoc) unwrapEntry(i int) string {
	e := d.entries[i]
	text := string(d.data)
	w := e.srv.Wrapped
	prefix := wrapPrefix(w.Policy, w.Name, w.Headers, w.OAuth)
	p := prefixText(prefix, "", " ")
	pc := prefixText(prefix, "", "")
	after := text[e.argsOpen:]
	var tok string
	var edits []edit
	switch {
	case strings.HasPrefix(after, p):
		t, ok := stringToken(after[len(p):])
		if !ok {
			break
		}
		tok = t
		rest := after[len(p)+len(t):]
		switch {
		case strings.HasPrefix(rest, ", "):
			edits = append(edits, edit{e.argsOpen, e.argsOpen + len(p) + len(t) + 2, ""})
		case strings.HasPrefix(rest, "]") && e.argsOpen-len(e.indent+"args = [") == e.cmdLineEnd &&
			text[e.cmdLineEnd:e.argsOpen] == e.indent+"args = [" && strings.HasPrefix(rest, "]\n"):
			edits = append(edits, edit{e.cmdLineEnd, e.argsOpen + len(p) + len(t) + 2, ""})
		default:
			tok = ""
		}
	case strings.HasPrefix(after, pc):
		t, ok := stringToken(after[len(pc):])
		if ok && strings.HasPrefix(strings.TrimLeft(after[len(pc)+len(t):], " \t"), "]") {
			tok = t
			edits = append(edits, edit{e.argsOpen, e.argsOpen + len(pc) + len(t), ""})
		}
	}
	remote := isRemoteOriginal(w.Original)
	if tok == "" && remote {
		return "a remote server wrapped in a form mcpsign does not write: unwrap it by hand"
	}
	if tok == "" {
		// Wrapped by hand or by another program: its args are rewritten
		// as the server's own, the values kept, the layout not.
		return d.rewriteArgs(e, tomlQuote(w.Original[0]), nil, w.Original[1:])
	}
	if remote {
		if len(edits) != 1 || edits[0].start != e.cmdLineEnd {
			return "a remote server wrapped in a form mcpsign does not write: unwrap it by hand"
		}
		// What wrapRemote wrote: the key back to url, the args and
		// env_vars lines out, the stashed lines back.
		d.edits = append(d.edits, edit{e.cmdKey, e.cmdKey + len("command"), "url"})
		if ev, ok := e.keys["env_vars"]; ok && ev.start == edits[0].end && ev.end > 0 {
			d.edits = append(d.edits, edit{ev.start, ev.end, ""})
		}
		for _, off := range e.stashed {
			d.edits = append(d.edits, edit{off, off + len(stashMark), ""})
		}
	}
	d.edits = append(d.edits, edits...)
	d.edits = append(d.edits, edit{e.cmdStart, e.cmdEnd, tok})
	return ""
}

// stringToken returns the one-line TOML string (basic or literal) at the
// start of s.
func stringToken(s string) (string, bool) {
	if strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, "'''") || s == "" {
		return "", false
	}
	switch s[0] {
	case '\'':
		if i := strings.IndexAny(s[1:], "'\n"); i >= 0 && s[1+i] == '\'' {
			return s[:i+2], true
		}
	case '"':
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\n':
				return "", false
			case '"':
				return s[:i+1], true
			}
		}
	}
	return "", false
}

// tomlStrings reads line's strings and comment, from inside the multi-line
// string open (its delimiter, three double or three single quotes; "" for
// none), and returns the multi-line string open at its end: what the next
// line starts inside.
func tomlStrings(line, open string) string {
	i := 0
	for i <= len(line) {
		if open != "" {
			j := multiLineEnd(line[i:], open)
			if j < 0 {
				return open
			}
			i, open = i+j, ""
			continue
		}
		if i == len(line) {
			return ""
		}
		switch c := line[i]; {
		case c == '#':
			return ""
		case strings.HasPrefix(line[i:], `"""`), strings.HasPrefix(line[i:], "'''"):
			open, i = line[i:i+3], i+3
		case c == '"' || c == '\'':
			i++
			for i < len(line) && line[i] != c {
				if c == '"' && line[i] == '\\' {
					i++
				}
				i++
			}
			i++
		default:
			i++
		}
	}
	return open
}

// multiLineEnd returns the offset in s just after the delimiter that closes
// the multi-line string open (with up to two more quotes, which are its
// content), or -1 when s does not close it.
func multiLineEnd(s, open string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case open == `"""` && s[i] == '\\':
			i++
		case strings.HasPrefix(s[i:], open):
			j := i + 3
			for k := 0; k < 2 && j < len(s) && s[j] == open[0]; k++ {
				j++
			}
			return j
		}
	}
	return -1
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func unquoteKey(k string) string {
	switch {
	case strings.HasPrefix(k, `"`):
		if s, err := strconv.Unquote(k); err == nil {
			return s
		}
		return strings.Trim(k, `"`)
	case strings.HasPrefix(k, "'"):
		return strings.Trim(k, "'")
	}
	return k
}
