package source

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string // substring of the error; "" means no error
	}{
		{in: "server", want: []string{"server"}},
		{in: "  node  dist/index.js\t--port 3\n", want: []string{"node", "dist/index.js", "--port", "3"}},
		{in: `a 'b c' d`, want: []string{"a", "b c", "d"}},
		{in: `a "b c" d`, want: []string{"a", "b c", "d"}},
		{in: `'it''s'`, want: []string{"its"}},
		{in: `'it'\''s'`, want: []string{"it's"}},
		{in: `"a"'b'c`, want: []string{"abc"}},
		{in: `x '' y ""`, want: []string{"x", "", "y", ""}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: `a\\b`, want: []string{`a\b`}},
		{in: `\'x\"`, want: []string{`'x"`}},
		{in: `"say \"hi\" \\ \$HOME \` + "`" + `x\` + "`" + ` \n"`, want: []string{"say \"hi\" \\ $HOME `x` \\n"}},
		{in: `'single \ keeps "all" $x'`, want: []string{`single \ keeps "all" $x`}},
		{in: "a \\\nb", want: []string{"a", "b"}},
		{in: "a\\\nb", want: []string{"ab"}},
		{in: "\"a\\\nb\"", want: []string{"ab"}},
		{in: "'a\nb'", want: []string{"a\nb"}},
		{in: `--header='Authorization: Bearer x'`, want: []string{"--header=Authorization: Bearer x"}},
		{in: `path/with#hash`, want: []string{"path/with#hash"}},
		{in: `a '#b' "#c" \#d`, want: []string{"a", "#b", "#c", "#d"}},
		{in: `a '|' "&;" \>`, want: []string{"a", "|", "&;", ">"}},
		{in: `é "ü ß"`, want: []string{"é", "ü ß"}},
		{in: "", err: "empty command line"},
		{in: " \t\n", err: "empty command line"},
		{in: `a 'b`, err: "unterminated single quote at offset 2"},
		{in: `a "b`, err: "unterminated double quote at offset 2"},
		{in: `a "b\"`, err: "unterminated double quote"},
		{in: `a\`, err: "ends with a backslash"},
		{in: `server > log`, err: `unquoted '>' at offset 7`},
		{in: `a|b`, err: `unquoted '|'`},
		{in: `a && b`, err: `unquoted '&'`},
		{in: `a; b`, err: `unquoted ';'`},
		{in: `server $TOKEN`, err: `unquoted '$'`},
		{in: "a `b`", err: "unquoted '`'"},
		{in: `(a)`, err: `unquoted '('`},
		{in: `server # comment`, err: "would start a comment"},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("SplitCommand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestQuoteCommand(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"node", "dist/index.js", "--port=3"}, "node dist/index.js --port=3"},
		{[]string{"a b", "", "it's", "$x"}, `'a b' '' 'it'\''s' '$x'`},
	}
	for _, tt := range tests {
		if got := QuoteCommand(tt.words); got != tt.want {
			t.Errorf("QuoteCommand(%q) = %s, want %s", tt.words, got, tt.want)
		}
		back, err := SplitCommand(tt.want)
		if err != nil || !slices.Equal(back, tt.words) {
			t.Errorf("SplitCommand(%s) = %q, %v; want %q", tt.want, back, err, tt.words)
		}
	}
}

// FuzzSplitCommand checks that SplitCommand never panics, that what it
// splits quotes back to the same words, and that any list of words (the
// input cut at NUL bytes) survives QuoteCommand then SplitCommand.
func FuzzSplitCommand(f *testing.F) {
	for _, seed := range []string{
		"server", `a 'b c' "d \" e" f\ g`, `'it'\''s'`, "a \\\nb", `x '' ""`, "é\x00ü ß\x00", "a\x00\x00'b\x00\"",
		"'unterminated", `a\`, "server > log", "# x", "\xff\xfe", "a\tb\nc",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		words, err := SplitCommand(in)
		if err == nil {
			if len(words) == 0 {
				t.Fatalf("SplitCommand(%q) = no words and no error", in)
			}
			line := QuoteCommand(words)
			again, err := SplitCommand(line)
			if err != nil || !slices.Equal(again, words) {
				t.Fatalf("round trip of %q: SplitCommand(%q) = %q, %v; want %q", in, line, again, err, words)
			}
		}
		given := strings.Split(in, "\x00")
		line := QuoteCommand(given)
		back, err := SplitCommand(line)
		if err != nil || !slices.Equal(back, given) {
			t.Fatalf("SplitCommand(QuoteCommand(%q)) = SplitCommand(%q) = %q, %v", given, line, back, err)
		}
	})
}
