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
	case len(quoted) == 1:
		text = prefixText(prefix, quoted[0], "")
	default:
		text = prefixText(prefix, quoted[0], " ") + ", " + strings.Join(quoted[1:], ", ")
	}
	d.edits = append(d.edits, edit{e.cmdStart, e.cmdEnd, cmd}, edit{e.argsOpen, end, text})
	return ""
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
