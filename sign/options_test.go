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
