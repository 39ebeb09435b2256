package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVocabulary: one spelling for one thing across commands.
func TestVocabulary(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	t.Run("--version", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "--version")
		if code != 0 || !strings.HasPrefix(stdout, "mcpsign ") || stderr != "" {
			t.Errorf("--version: exit %d %q %q", code, stdout, stderr)
		}
		_, fromCmd, _ := runCLI(t, "version")
		if first, _, _ := strings.Cut(fromCmd, "\n"); first+"\n" != stdout {
			t.Errorf("--version %q, version %q", stdout, first)
		}
	})
	t.Run("help lists exit code 42", func(t *testing.T) {
		if code, stdout, _ := runCLI(t, "--help"); code != 0 || !strings.Contains(stdout, "42 'mcpsign proxy' blocked") {
			t.Errorf("help: exit %d\n%s", code, stdout)
		}
	})
	t.Run("every JSON output starts with reportVersion 1", func(t *testing.T) {
		dir := t.TempDir()
		snap, _ := exampleSnapshot(t, dir)
		lock := filepath.Join(dir, "l.lock")
		env := keysEnv()
		k := setupKey(t, dir, "k", sharedKeyPassword) // the subject is the output, not the key
		for _, args := range [][]string{
			{"digest", snap},
			{"pin", snap, "--lock", lock, "--tofu"},
			{"verify-pin", snap, "--lock", lock},
			{"diff", snap, lock},
			{"sign", "key", "--key", k.key, "--password-env", "PW", snap, "-o", filepath.Join(dir, "b.json")},
			{"verify", "key", "--bundle", filepath.Join(dir, "b.json"), "--key", k.pub, snap},
		} {
			code, stdout, stderr := runWith(t, env, append(args, "--format", "json")...)
			if code != 0 || !strings.HasPrefix(stdout, "{\n  \"reportVersion\": 1,") {
				t.Errorf("%s: exit %d %s\n%s", args[0], code, stderr, stdout)
			}
		}
	})
	t.Run("a key is sha256:HEX everywhere", func(t *testing.T) {
		dir := t.TempDir()
		snap, _ := exampleSnapshot(t, dir)
		env := keysEnv()
		// The id as keygen printed it ("key sha256:HEX" on stderr, which
		// sharedKeys requires): one key derivation fewer in this
		// race-instrumented process than a keygen of its own.
		alice, _ := sharedKeys(t)
		id := []string{"", alice.id}
		code, stdout, stderr := runWith(t, env, "sign", "key", "--key", alice.key, "--password-env", "PW", snap, "-o", filepath.Join(dir, "b.json"))
		if code != 0 || !regexp.MustCompile(`\n  key +`+id[1]+`\n`).MatchString(stdout) {
			t.Errorf("sign text does not name the key %s: exit %d\n%s%s", id[1], code, stdout, stderr)
		}
		code, stdout, _ = runWith(t, env, "sign", "key", "--key", alice.key, "--password-env", "PW", snap, "-o", filepath.Join(dir, "c.json"), "--format", "json")
		var js struct {
			Identity struct {
				KeyID string `json:"keyId"`
			} `json:"identity"`
		}
		if err := json.Unmarshal([]byte(stdout), &js); code != 0 || err != nil || js.Identity.KeyID != id[1] {
			t.Errorf("sign JSON keyId %q, want %s (%v)", js.Identity.KeyID, id[1], err)
		}
		code, stdout, stderr = runWith(t, env, "verify", "key", "--bundle", filepath.Join(dir, "b.json"), "--key", alice.pub, snap)
		if code != 0 || !strings.Contains(stdout, id[1]) {
			t.Errorf("verify does not name the key %s: exit %d\n%s%s", id[1], code, stdout, stderr)
		}
	})
}
