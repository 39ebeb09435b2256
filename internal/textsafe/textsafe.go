// Package textsafe makes strings that came from a server safe to show at a
// terminal or in a log: control, bidirectional and invisible characters are
// escaped so that a hostile description cannot hide text, reorder what is
// shown, or send terminal escape sequences.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that could mislead a reader written
// as an escape: C0 and C1 controls (but for newline and tab when keepLayout),
// bidirectional controls (U+061C, U+200E-U+200F, U+202A-U+202E,
// U+2066-U+2069), invisible format characters (Unicode category Cf, such as
// U+200B and U+FEFF), other non-printing characters (unassigned, private
// use, separators other than the space), and invalid UTF-8 bytes. Printable
// text, accented letters and emoji are kept.
func Escape(s string) string { return escape(s, false) }

// EscapeKeepLayout is Escape but keeps newlines and tabs, for multi-line text
// such as descriptions in a diff.
func EscapeKeepLayout(s string) string { return escape(s, true) }

func escape(s string, keepLayout bool) string {
	if clean(s, keepLayout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i]), 16))
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case unsafeRune(r):
			b.WriteString(`\u{`)
			b.WriteString(strings.ToUpper(strconv.FormatInt(int64(r), 16)))
			b.WriteString(`}`)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func clean(s string, keepLayout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return cleanSlow(s[i:], keepLayout)
		}
		if c == '\\' || c == 0x7f || (c < 0x20 && !(keepLayout && (c == '\n' || c == '\t'))) {
			return false
		}
	}
	return true
}

func cleanSlow(s string, keepLayout bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || (unsafeRune(r) && !(keepLayout && (r == '\n' || r == '\t'))) {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r must be escaped before it is shown.
func unsafeRune(r rune) bool {
	if r == ' ' {
		return false
	}
	if r < 0x20 || (r >= 0x7f && r < 0xa0) {
		return true
	}
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F,
		r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls
	case unicode.Is(unicode.Cf, r):
		return true // invisible format characters: U+200B, U+2060, U+FEFF, tags…
	case unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r), unicode.Is(unicode.Zs, r):
		return true // line/paragraph separators and spaces other than U+0020
	case unicode.Is(unicode.Co, r), !unicode.IsPrint(r) && !unicode.IsGraphic(r):
		return true // private use and unassigned
	case r >= 0xE0000 && r <= 0xE007F:
		return true // tag characters
	}
	return false
}

// Quote returns s escaped and in double quotes, for naming a server string
// in text written where it is printed (a report writer). A message or error
// that is printed later, and escaped there, names it with RawQuote: text is
// escaped exactly once, at the edge where it is printed.
func Quote(s string) string {
	return `"` + strings.ReplaceAll(Escape(s), `"`, `\"`) + `"`
}

// RawQuote returns s in double quotes as it is, not escaped: the one way a
// message or an error names a value from outside mcpsign (a server's text, a
// registry entry's member, a log's or a bundle's field, a file's content,
// a user's regular expression, a path). The message stays raw (a JSON report
// carries it so, errors.Is still sees it), and the edge that prints it
// escapes it once: ShowError for an error, Escape for a message. Not
// strconv.Quote, %q nor Quote: their escapes would be escaped again there
// (`\u200b` printed as `\\u200b`), and Go's escapes are not these.
func RawQuote(s string) string { return `"` + s + `"` }

// Escaped is text that Escape (or EscapeKeepLayout) already made safe, on
// its way to an edge that escapes everything else it prints: such an edge
// writes an Escaped as it is, so that it is escaped once (a line the proxy
// wrote to its stderr, relayed into a service's log).
type Escaped string

// WithLines returns err with lines added below its message, each on a line
// of its own: a hint, a list, the usage line. Its Error is err's message and
// the lines joined by "\n"; ShowError keeps those line breaks and no
// other, so a newline inside a quoted value is shown escaped (\u{A}), never
// as a line that seems to be mcpsign's own. A line itself holds no newline.
func WithLines(err error, lines ...string) error {
	return &linesError{err: err, lines: lines}
}

type linesError struct {
	err   error
	lines []string
}

func (e *linesError) Error() string {
	return e.err.Error() + "\n" + strings.Join(e.lines, "\n")
}

func (e *linesError) Unwrap() error { return e.err }

// Lines is an error whose message is several lines (a count, then one line
// per item): its Error is ErrorLines joined by "\n", and ShowError escapes
// each line once and keeps the line breaks between them.
type Lines interface {
	error
	ErrorLines() []string
}

// ShowError returns err's message escaped once for a terminal or a log:
// every character Escape escapes is escaped, newlines and tabs too (a value
// a server chose cannot start a line of its own), but for the line breaks
// WithLines, errors.Join and a Lines error put between lines, which are
// kept. This is the
// edge where an error that quotes outside text raw (RawQuote) is printed.
func ShowError(err error) string {
	if err == nil {
		return ""
	}
	return show(err, err.Error())
}

// show escapes msg, the message of err, keeping the line breaks of the
// WithLines and errors.Join errors in err's chain, found where their
// message stands in msg; every other byte is escaped with Escape.
func show(err error, msg string) string {
	switch e := err.(type) {
	case *linesError:
		inner := e.err.Error()
		if msg == e.Error() {
			var b strings.Builder
			b.WriteString(show(e.err, inner))
			for _, l := range e.lines {
				b.WriteString("\n")
				b.WriteString(Escape(l))
			}
			return b.String()
		}
	case Lines:
		if lines := e.ErrorLines(); msg == strings.Join(lines, "\n") {
			shown := make([]string, len(lines))
			for i, l := range lines {
				shown[i] = Escape(l)
			}
			return strings.Join(shown, "\n")
		}
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		msgs := make([]string, 0, len(errs))
		for _, x := range errs {
			if x != nil {
				msgs = append(msgs, x.Error())
			}
		}
		if msg == strings.Join(msgs, "\n") { // errors.Join
			shown := make([]string, 0, len(errs))
			i := 0
			for _, x := range errs {
				if x != nil {
					shown = append(shown, show(x, msgs[i]))
					i++
				}
			}
			return strings.Join(shown, "\n")
		}
		for i, x := range errs {
			if x != nil && hasLayout(x) {
				if at := strings.Index(msg, msgs[i]); at >= 0 {
					return Escape(msg[:at]) + show(x, msgs[i]) + show(err, msg[at+len(msgs[i]):])
				}
			}
		}
		return Escape(msg)
	}
	if u, ok := err.(interface{ Unwrap() error }); ok {
		if x := u.Unwrap(); x != nil && hasLayout(x) {
			inner := x.Error()
			if at := strings.Index(msg, inner); at >= 0 {
				return Escape(msg[:at]) + show(x, inner) + Escape(msg[at+len(inner):])
			}
		}
	}
	return Escape(msg)
}

// hasLayout reports whether err's chain holds an error whose line breaks
// ShowError keeps.
func hasLayout(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case *linesError, Lines:
			return true
		case interface{ Unwrap() []error }:
			if len(e.Unwrap()) > 1 {
				return true // errors.Join, or fmt.Errorf with several %w: show tells them apart
			}
			for _, x := range e.Unwrap() {
				if hasLayout(x) {
					return true
				}
			}
			return false
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Hidden reports whether r is a character a reader cannot see but a model
// reads: an invisible format character (Unicode category Cf, such as U+200B
// and U+FEFF), a bidirectional control (U+061C, U+200E-U+200F,
// U+202A-U+202E, U+2066-U+2069) or a tag character (U+E0000-U+E007F).
// docs/DRIFT.md: text of a definition that gains one is a finding of its
// own.
func Hidden(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F,
		r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Cut returns s cut to at most max bytes at a UTF-8 boundary, with "…"
// when something was cut: a server's text kept short in a message.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}
