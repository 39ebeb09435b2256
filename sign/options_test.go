package sign

import (
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCertificateFilesRead(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	leaf := pki.leaf(t, mustECKey(t).Public(), codeSigningLeaf())
	dir := t.TempDir()
	write := func(name string, certs ...[]byte) string {
		var b []byte
		for _, c := range certs {
			b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := write("both.pem", leaf.Raw, pki.inter.Raw, pki.root.Raw)
	alone := write("leaf.pem", leaf.Raw)
	chain := write("chain.pem", pki.inter.Raw)
	roots := write("roots.pem", pki.root.Raw)

	l, c, r, err := CertificateFiles{Leaf: both}.Read()
	if err != nil || !l.Equal(leaf) || len(c) != 2 || r != nil {
		t.Errorf("leaf then chain in one file: %v %d %d %v", l.Subject, len(c), len(r), err)
	}
	l, c, r, err = CertificateFiles{Leaf: alone, Chain: chain, Roots: roots}.Read()
	if err != nil || !l.Equal(leaf) || len(c) != 1 || !c[0].Equal(pki.inter) || len(r) != 1 {
		t.Errorf("three files: %d %d %v", len(c), len(r), err)
	}
	if _, c, _, err := (CertificateFiles{Leaf: alone}).Read(); err != nil || c != nil {
		t.Errorf("a leaf alone: chain %v, %v", c, err)
	}
	missing := filepath.Join(dir, "none.pem")
	for which, f := range map[string]CertificateFiles{
		"leaf":  {Leaf: missing},
		"chain": {Leaf: alone, Chain: missing},
		"roots": {Leaf: alone, Roots: missing},
	} {
		var fe *CertificateFileError
		if _, _, _, err := f.Read(); !errors.As(err, &fe) || fe.Which != which || fe.Path != missing || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", which, err)
		}
	}
}

func TestWriteKeyFilesReadPrivateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyPath, pubPath := filepath.Join(dir, "k.key"), filepath.Join(dir, "k.pub")
	key := mustECKey(t)
	if err := WriteKeyFiles(keyPath, pubPath, key, []byte("pw"), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("private key file: %v %v", fi.Mode(), err)
	}
	if err := WriteKeyFiles(keyPath, pubPath, key, []byte("pw"), false); err == nil {
		t.Error("an existing key pair was replaced without overwrite")
	}
	k, err := ReadPrivateKey(keyPath, StaticPassword([]byte("pw")))
	if err != nil || !key.PublicKey.Equal(k.Public()) {
		t.Fatalf("read back: %v", err)
	}
	var fe *KeyFileError
	if _, err := ReadPrivateKey(keyPath, StaticPassword([]byte("other"))); !errors.As(err, &fe) || fe.Read || !errors.Is(err, ErrWrongPassword) {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := ReadPrivateKey(filepath.Join(dir, "none.key"), nil); !errors.As(err, &fe) || !fe.Read || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no file: %v", err)
	}
}
