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

// RawQuote returns s in double quotes as it is, not escaped, for naming a
// server string (or a user's regular expression, a path) in an error or a
// message that the edge printing it escapes (Escape, EscapeKeepLayout) once.
// Not strconv.Quote nor %q: their escapes would be escaped again there
// (`\u200b` printed as `\\u200b`).
func RawQuote(s string) string { return `"` + s + `"` }

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
