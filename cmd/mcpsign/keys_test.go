package main

import (
	"bytes"
	"context"
	"crypto"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/youmark/pkcs8"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/sign"
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

// setupKeyIterations is the PBKDF2 iteration count of setupKey's keys:
// enough to be a PBES2 key as keygen writes one, a six-hundredth of its
// cost (sign's tests make their setup keys the same way).
const setupKeyIterations = 1000

// setupKey writes an ECDSA P-256 key pair into dir as PREFIX.key and
// PREFIX.pub, the private key a PEM "ENCRYPTED PRIVATE KEY" (PKCS#8, PBES2:
// PBKDF2-HMAC-SHA256 at setupKeyIterations, AES-256-CBC) with the password
// pw, for the tests whose subject is not the key derivation but a flag, a
// prompt or a message: keygen's keys take 600,000 iterations, seconds of
// CPU in this race-instrumented process for each 'sign key'. The tests of
// keygen and at least one 'sign key' of each test that signs with a key
// keep keygen's.
func setupKey(t *testing.T, dir, prefix, pw string) keyPair {
	t.Helper()
	k, err := sign.GenerateKey(sign.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	der, err := pkcs8.MarshalPrivateKey(k, []byte(pw), &pkcs8.Opts{
		Cipher:  pkcs8.AES256CBC,
		KDFOpts: pkcs8.PBKDF2Opts{SaltSize: 16, IterationCount: setupKeyIterations, HMACHash: crypto.SHA256},
	})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.MarshalPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	id, err := evidence.KeyID(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	p := keyPair{key: filepath.Join(dir, prefix+".key"), pub: filepath.Join(dir, prefix+".pub"), id: id}
	if err := os.WriteFile(p.key, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.pub, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
