package trustroot

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPublicKeyFile(t *testing.T) {
	dir := t.TempDir()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	priv := write("priv.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}))
	big := write("big.pem", make([]byte, MaxKeyFileBytes+1))
	for _, tc := range []struct {
		name, path string
		read       bool
		want       string // "" for a key
	}{
		{"key", good, false, ""},
		{"missing", filepath.Join(dir, "none.pem"), true, "no such file"},
		{"too large", big, true, ""},
		{"private key", priv, false, "want a PEM public key (PUBLIC KEY block): PEM block is \"PRIVATE KEY\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, err := ReadPublicKeyFile(tc.path)
			if tc.name == "key" {
				if err != nil || !k.PublicKey.Equal(pub) {
					t.Fatalf("got %v, %v", pub, err)
				}
				return
			}
			var fe *KeyFileError
			if !errors.As(err, &fe) || fe.Read != tc.read || fe.Path != tc.path {
				t.Fatalf("error %#v, want a KeyFileError (read %v)", err, tc.read)
			}
			if !strings.Contains(fe.Err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path+": ") {
				t.Errorf("error %q, want %q in it after the path", err, tc.want)
			}
		})
	}
}
