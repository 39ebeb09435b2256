package main

import (
	"path/filepath"
	"regexp"
	"sync"
	"testing"

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
// process by keygen (into a fixtures.SharedDir: read only), for the tests
// that sign or verify with a keygen key and do not test keygen itself:
// each keygen and each 'sign key' derives the key's encryption key (PBKDF2,
// 600,000 iterations), over a second of CPU under -race.
func sharedKeys(t *testing.T) (alice, mallory keyPair) {
	t.Helper()
	testKeys.once.Do(func() {
		dir := fixtures.SharedDir(t, "keys")
		id := regexp.MustCompile(`key (sha256:[0-9a-f]{64})\n`)
		for i, who := range []string{"alice", "mallory"} {
			prefix := filepath.Join(dir, who)
			code, _, stderr := runWith(t, keysEnv(), "keygen", "-o", prefix, "--password-env", "PW")
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
