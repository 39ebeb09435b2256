package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// A keyPair is a key pair that 'mcpsign keygen' wrote: key (encrypted with
// sharedKeyPassword, ECDSA P-256) and pub, with the key's id as keygen
// printed it (sha256:HEX).
type keyPair struct {
	key, pub, id string
}

// sharedKeyPassword encrypts the shared keys; keysEnv passes it as $PW.
const sharedKeyPassword = "shared-test-keys"

// keysEnv is the environment of a command given --password-env PW for a
// shared key.
func keysEnv() map[string]string { return map[string]string{"PW": sharedKeyPassword} }

// sharedKeys returns alice's and mallory's key pairs, made once per test
// process by keygen (runSetup, into a fixtures.SharedDir: read only), for
// the tests that sign or verify with a keygen key and do not test keygen
// itself: each keygen and each 'sign key' derives the key's encryption key
// (PBKDF2, 600,000 iterations), over a second of CPU under -race.
func sharedKeys(t *testing.T) (alice, mallory keyPair) {
	t.Helper()
	testKeys.once.Do(func() {
		dir := fixtures.SharedDir(t, "keys")
		id := regexp.MustCompile(`key (sha256:[0-9a-f]{64})\n`)
		for i, who := range []string{"alice", "mallory"} {
			prefix := filepath.Join(dir, who)
			code, _, stderr := runSetup(t, keysEnv(), "keygen", "-o", prefix, "--password-env", "PW")
			m := id.FindStringSubmatch(stderr)
			if code != 0 || m == nil {
				t.Fatalf("keygen %s: exit %d: %s", who, code, stderr)
			}
			testKeys.pairs[i] = keyPair{key: prefix + ".key", pub: prefix + ".pub", id: m[1]}
		}
		testKeys.ok = true
	})
	if !testKeys.ok {
		t.Fatal("the shared keys could not be made (see the first test that used them)")
	}
	return testKeys.pairs[0], testKeys.pairs[1]
}

var testKeys struct {
	once  sync.Once
	pairs [2]keyPair
	ok    bool
}

// runSetup runs mcpsign with the environment env (and nothing else but
// GORACE) to make
// a test's fixtures (keys, bundles), not to test it: as a process of
// fixtures.BuildMcpsignNoRace, where a key derivation (PBKDF2, 600,000
// iterations) takes a tenth of its CPU under -race in this process. It
// returns the exit code and the output.
func runSetup(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fixtures.BuildMcpsignNoRace(t), args...)
	cmd.Env = []string{}
	if g, ok := os.LookupEnv("GORACE"); ok { // for a race-built server it starts (fixtures.Main)
		cmd.Env = append(cmd.Env, "GORACE="+g)
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running mcpsign %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}
