package textsafe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want, layout string }{
		{"plain text", "plain text", "plain text"},
		{"Résumé € 😀", "Résumé € 😀", "Résumé € 😀"},
		{"a\x1b[31mred", `a\u{1B}[31mred`, `a\u{1B}[31mred`},
		{"zero\u200bwidth", `zero\u{200B}width`, `zero\u{200B}width`},
		{"bidi \u202eevil", `bidi \u{202E}evil`, `bidi \u{202E}evil`},
		{"isolate \u2066x\u2069", `isolate \u{2066}x\u{2069}`, `isolate \u{2066}x\u{2069}`},
		{"bom\ufeff", `bom\u{FEFF}`, `bom\u{FEFF}`},
		{"line\nbreak\ttab", `line\u{A}break\u{9}tab`, "line\nbreak\ttab"},
		{"cr\rx", `cr\u{D}x`, `cr\u{D}x`},
		{"sep\u2028x", `sep\u{2028}x`, `sep\u{2028}x`},
		{"nbsp\u00a0x", `nbsp\u{A0}x`, `nbsp\u{A0}x`},
		{"c1\u0085x", `c1\u{85}x`, `c1\u{85}x`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{`back\slash`, `back\\slash`, `back\\slash`},
		{"tag\U000E0041", `tag\u{E0041}`, `tag\u{E0041}`},
		{"private\ue000", `private\u{E000}`, `private\u{E000}`},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := EscapeKeepLayout(tt.in); got != tt.layout {
			t.Errorf("EscapeKeepLayout(%q) = %q, want %q", tt.in, got, tt.layout)
		}
	}
	if got := Quote(`say "hi"` + "\u200b"); got != `"say \"hi\"\u{200B}"` {
		t.Errorf("Quote: %s", got)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\u202eb\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		for _, r := range out {
			if unsafeRune(r) {
				t.Fatalf("Escape(%q) left %U", s, r)
			}
		}
	})
}

func TestHidden(t *testing.T) {
	for r, want := range map[rune]bool{
		0x200B: true, 0x202E: true, 0x2066: true, 0x061C: true, 0xFEFF: true, 0xE0041: true, 0x200D: true,
		'a': false, ' ': false, '\n': false, 'é': false, 0x1F642: false, 0x00A0: false,
	} {
		if got := Hidden(r); got != want {
			t.Errorf("Hidden(%U) = %v, want %v", r, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"too long", 3, "too…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: not split
		{"", 0, ""},
	} {
		if got := Cut(tc.s, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

// TestShowError: an error quoting outside text raw (RawQuote) is shown
// escaped once, a newline or a tab inside a value too; the line breaks of
// WithLines and errors.Join are kept, wherever they stand in the chain.
func TestShowError(t *testing.T) {
	hostile := "a\u202eb\u200bc\x1b[31m\nmcpsign: verified\t\\"
	once := `a\u{202E}b\u{200B}c\u{1B}[31m\u{A}mcpsign: verified\u{9}\\`
	leaf := fmt.Errorf("entry %s: %w", RawQuote(hostile), errors.New("refused"))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"value", leaf, `entry "` + once + `": refused`},
		{"lines", WithLines(leaf, "Run 'mcpsign --help' for usage.", "  "+hostile),
			`entry "` + once + `": refused` + "\nRun 'mcpsign --help' for usage.\n  " + once},
		{"lines wrapped", fmt.Errorf("registry %s: %w (hint)", RawQuote(hostile), WithLines(leaf, "second")),
			`registry "` + once + `": entry "` + once + `": refused` + "\nsecond (hint)"},
		{"join", errors.Join(leaf, fmt.Errorf("audit log: %s", hostile)),
			`entry "` + once + `": refused` + "\naudit log: " + once},
		{"join wrapped", fmt.Errorf("x: %w", errors.Join(leaf, errors.New(hostile))),
			`x: entry "` + once + `": refused` + "\n" + once},
		{"Lines", fmt.Errorf("snapshot: %w", testLines{"2 cannot", "  " + hostile, "  b"}),
			"snapshot: 2 cannot\n  " + once + "\n  b"},
		{"two %w", fmt.Errorf("%w; %w", errors.New(hostile), WithLines(errors.New("a"), "b")),
			once + "; a\nb"},
	}
	for _, tt := range tests {
		got := ShowError(tt.err)
		if got != tt.want {
			t.Errorf("%s: ShowError = %q, want %q", tt.name, got, tt.want)
		}
		if tt.err != nil && !strings.Contains(tt.err.Error(), hostile) {
			t.Errorf("%s: Error() does not carry the raw text: %q", tt.name, tt.err.Error())
		}
	}
	if e := WithLines(leaf, "x"); !errors.Is(e, leaf) {
		t.Error("WithLines does not wrap")
	}
}

func FuzzShowError(f *testing.F) {
	f.Add("a\u202eb\n\x00\xff", "hint")
	f.Fuzz(func(t *testing.T, v, line string) {
		line = strings.ReplaceAll(line, "\n", "")
		err := WithLines(fmt.Errorf("value %s: %w", RawQuote(v), errors.Join(errors.New(v), errors.New(line))), line)
		out := ShowError(err)
		if n, want := strings.Count(out, "\n"), 2; n != want {
			t.Fatalf("ShowError(%q) has %d line breaks, want %d: %q", err.Error(), n, want, out)
		}
		for _, r := range strings.ReplaceAll(out, "\n", "") {
			if unsafeRune(r) {
				t.Fatalf("ShowError left %U: %q", r, out)
			}
		}
	})
}

type testLines []string

func (l testLines) Error() string        { return strings.Join(l, "\n") }
func (l testLines) ErrorLines() []string { return l }
