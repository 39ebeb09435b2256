package sign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

func TestKeygen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each case has its own prefix: the map's order is random, and a
	// replaced pair would be a key "left behind" by the refused one.
	for _, f := range []string{"taken.pub", "replaced.pub"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	errNoPassword := errors.New("no password")
	for name, tc := range map[string]struct {
		o       KeygenOptions
		wantErr error
		asked   bool
	}{
		"a new pair": {KeygenOptions{Prefix: filepath.Join(dir, "new"), Algorithm: Ed25519}, nil, true},
		"an existing public key, refused before the password": {KeygenOptions{Prefix: filepath.Join(dir, "taken")},
			atomicfile.ErrExists, false},
		"an existing public key, replaced": {KeygenOptions{Prefix: filepath.Join(dir, "replaced"), Overwrite: true}, nil, true},
		"no password":                      {KeygenOptions{Prefix: filepath.Join(dir, "nopw")}, errNoPassword, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each writes and reads a 600,000-iteration key
			asked := false
			tc.o.Password = func(confirm bool) ([]byte, error) {
				asked = true
				if !confirm {
					t.Error("a new key's password asked without confirm")
				}
				if errors.Is(tc.wantErr, errNoPassword) {
					return nil, errNoPassword
				}
				return []byte("correct horse"), nil
			}
			res, err := Keygen(tc.o)
			if !errors.Is(err, tc.wantErr) || asked != tc.asked {
				t.Fatalf("err %v (asked %v), want %v (asked %v)", err, asked, tc.wantErr, tc.asked)
			}
			if err != nil {
				if _, err := os.Stat(tc.o.Prefix + ".key"); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a private key left behind: %v", err)
				}
				return
			}
			k, err := ReadPrivateKey(res.KeyPath, StaticPassword([]byte("correct horse")))
			if err != nil {
				t.Fatal(err)
			}
			hint, _ := KeyHint(k.Public())
			if res.PubPath != tc.o.Prefix+".pub" || !strings.HasPrefix(res.KeyID, "sha256:") || hint == "" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// TestKeygenNeedsPassword: no password function is an error, not a panic,
// and nothing is written.
func TestKeygenNeedsPassword(t *testing.T) {
	t.Parallel()
	prefix := filepath.Join(t.TempDir(), "k")
	if _, err := Keygen(KeygenOptions{Prefix: prefix}); !errors.Is(err, errKeygenNoPassword) {
		t.Fatalf("err = %v, want errKeygenNoPassword", err)
	}
	for _, f := range []string{prefix + ".key", prefix + ".pub"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", f, err)
		}
	}
}
