package main

import (
	"strings"
	"testing"
)

// TestUsageMessages: what a new user mistypes is refused (exit 2) with a
// message that says what to do, and never what did not happen.
func TestUsageMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		want   []string
		unwant []string
	}{
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Run 'mcpsign --help' for usage."}, nil},
		{"missing argument", []string{"trustroot", "show"}, []string{"accepts 1 arg(s), received 0", "Run 'mcpsign trustroot show --help' for usage."}, nil},
		{"flag error, one hint", []string{"digest", "--nope"}, []string{"unknown flag: --nope"}, nil},
		{"verify method typo before a server", []string{"verify", "kye", "--bundle", "b.json", "--", "server"}, []string{`unknown verify method "kye": did you mean "key"?`, "put it after --"}, []string{"identity"}},
		{"verify method typo alone", []string{"verify", "sigstor", "--bundle", "b.json"}, []string{`did you mean "sigstore"?`}, nil},
		{"sign method typo", []string{"sign", "kye"}, []string{`unknown sign method "kye": did you mean "key"?`}, nil},
		{"keygen without a password", []string{"keygen", "-o", dir + "/new"}, []string{"the new key needs a password", "--password-env"}, []string{"encrypted and no password", "private key is encrypted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.unwant {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, stderr)
				}
			}
			if n := strings.Count(stderr, "--help' for usage."); n > 1 {
				t.Errorf("the usage hint is given %d times:\n%s", n, stderr)
			}
		})
	}
}
