package exampleserver

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestHelp: --help is a usage text (what the server is, its modes, its
// flags written --name), not the flag package's raw "Usage of
// exampleserver"; it exits 0, and a bad flag exits 2.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--help"}, 0, []string{"Usage: mcpsign example-server [--mode MODE] [flags]", "\n  rugpull  ", "\n  --drift-after duration\n", "\n  --root string\n"}},
		{[]string{"-h"}, 0, []string{"Usage: mcpsign example-server"}},
		{[]string{"--nope"}, 2, []string{"flag provided but not defined: -nope", "Usage: mcpsign example-server"}},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), tc.args, func(string) string { return "" }, io.NopCloser(strings.NewReader("")), &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%v: the usage lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		if strings.Contains(stderr.String(), "Usage of exampleserver") || strings.Contains(stderr.String(), "\n  -mode") {
			t.Errorf("%v: raw flag output:\n%s", tc.args, stderr.String())
		}
	}
}
