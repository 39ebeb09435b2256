package service

import (
	"strings"
	"testing"
)

// FuzzParseTokens: what ParseTokens accepts is a valid token set, and its
// error never repeats a line of the input.
func FuzzParseTokens(f *testing.F) {
	f.Add("# c\n" + tokA + "\r\n\n  " + tokB + "  \n")
	f.Add("short\n")
	f.Add(tokA + " " + tokB)
	f.Fuzz(func(t *testing.T, text string) {
		toks, err := ParseTokens("f", []byte(text))
		if err != nil {
			for _, line := range strings.Split(text, "\n") {
				if l := strings.TrimSpace(line); len(l) >= 8 && strings.Contains(err.Error(), l) {
					t.Fatalf("the error %q repeats the line %q", err, l)
				}
			}
			return
		}
		if _, err := NewTokens(toks); err != nil {
			t.Fatalf("ParseTokens gave tokens NewTokens refuses: %v", err)
		}
	})
}

// FuzzOrigin: an origin CheckOrigin accepts normalizes to itself, and a
// request with that origin, as given, passes.
func FuzzOrigin(f *testing.F) {
	for _, o := range []string{"https://app.example.com", "HTTP://LOCALHOST:80", "http://[::1]:8080", "https://a:443", "null", "https://x/y"} {
		f.Add(o)
	}
	f.Fuzz(func(t *testing.T, o string) {
		n, reason := normalizeOrigin(o)
		if reason != "" {
			return
		}
		if again, reason := normalizeOrigin(n); reason != "" || again != n {
			t.Fatalf("%q normalizes to %q, then to %q (%s)", o, n, again, reason)
		}
		if _, err := CheckOrigin([]string{o}); err != nil {
			t.Fatalf("CheckOrigin(%q): %v", o, err)
		}
	})
}
