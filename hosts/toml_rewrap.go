package hosts

import "strings"

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

// wrapRemote is never called: Codex's remote entries get a Problem when
// read (fill).
func (d *tomlDoc) wrapRemote(int, string, []string) string {
	return "Codex's remote entries are not wrapped"
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
