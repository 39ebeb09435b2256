package sign

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
)

func TestKeyFilesSigner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := mustECKey(t)
	// The key file as WriteKeyFiles writes it, at a small PBKDF2 count:
	// four rows decrypt it, each 600,000 iterations took seconds under
	// -race (WriteKeyFiles itself: TestWriteKeyFilesReadPrivateKey).
	encrypted, err := marshalEncrypted(key, []byte("pw"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := write("k.key", encrypted)
	pki := newTestPKI(t)
	leaf := write("leaf.pem", testpki.PEM(pki.leaf(t, key.Public(), codeSigningLeaf())))
	chain := write("chain.pem", pki.ChainPEM())
	otherLeaf := write("other.pem", testpki.PEM(pki.leaf(t, mustECKey(t).Public(), codeSigningLeaf())))
	missing := filepath.Join(dir, "missing.pem")
	pw := StaticPassword([]byte("pw"))
	for name, tc := range map[string]struct {
		files KeyFiles
		check func(Signer, error) bool
	}{
		"a key": {KeyFiles{Key: keyFile, Password: pw}, func(s Signer, err error) bool {
			_, ok := s.(*KeySigner)
			return err == nil && ok
		}},
		"a key and its certificate": {KeyFiles{Key: keyFile, Password: pw, EmbedChain: true, Certificate: CertificateFiles{Leaf: leaf, Chain: chain}},
			func(s Signer, err error) bool {
				cs, ok := s.(*CertificateSigner)
				return err == nil && ok && cs.EmbedChain
			}},
		"a wrong password": {KeyFiles{Key: keyFile, Password: StaticPassword([]byte("no"))}, func(s Signer, err error) bool {
			var fe *KeyFileError
			return s == nil && errors.As(err, &fe) && fe.Path == keyFile && !fe.Read
		}},
		"no key file": {KeyFiles{Key: missing, Password: pw}, func(s Signer, err error) bool {
			var fe *KeyFileError
			return s == nil && errors.As(err, &fe) && fe.Read && errors.Is(err, os.ErrNotExist)
		}},
		"no chain file, read before the key": {KeyFiles{Key: missing, Certificate: CertificateFiles{Leaf: leaf, Chain: missing}},
			func(s Signer, err error) bool {
				var fe *CertificateFileError
				return s == nil && errors.As(err, &fe) && fe.Which == "chain"
			}},
		"another key's certificate": {KeyFiles{Key: keyFile, Password: pw, Certificate: CertificateFiles{Leaf: otherLeaf, Chain: chain}},
			func(s Signer, err error) bool { return s == nil && errors.Is(err, ErrCertificate) }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := tc.files.Signer(time.Now())
			if !tc.check(s, err) {
				t.Errorf("Signer: %T %v", s, err)
			}
		})
	}
}
