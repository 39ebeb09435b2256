package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The keys under testdata/keys were made with OpenSSL 3.0:
//
//	openssl ecparam -genkey -name prime256v1 -out ec-p256-sec1-params.pem
//	openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256 -passout pass:test-password …  ec-p384-pkcs8-pbkdf2.pem
//	openssl pkcs8 -topk8 -scrypt -scrypt_N 1024 -scrypt_r 8 -scrypt_p 1 …                     ed25519-pkcs8-scrypt.pem
//	openssl pkcs8 -topk8 -v2 aes-128-cbc -v2prf hmacWithSHA1 -iter 2048 …                      rsa-2048-pkcs8-aes128-sha1.pem
//	openssl genrsa -traditional 2048 / genrsa 1024, genpkey DSA, ec -aes256 (legacy),
//	genpkey P-521 / secp256k1, pkcs8 -v2 des3, pkcs8 -v1 PBE-SHA1-3DES
//
// and cosign-ecdsa.key.pem with cosign v2.6.5 generate-key-pair.
const testPassword = "test-password"

func readKey(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadPrivateKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		password string // "" means no password function
		want     error  // nil: loads
		wantType string
		wantMsg  string
	}{
		{file: "ec-p256-sec1-params.pem", wantType: "ecdsa"},
		{file: "ec-p384-pkcs8-pbkdf2.pem", password: testPassword, wantType: "ecdsa"},
		{file: "ed25519-pkcs8-scrypt.pem", password: testPassword, wantType: "ed25519"},
		{file: "ed25519-pkcs8.pem", wantType: "ed25519"},
		{file: "rsa-2048-pkcs1.pem", wantType: "rsa"},
		{file: "rsa-2048-pkcs8-aes128-sha1.pem", password: testPassword, wantType: "rsa"},
		{file: "cosign-ecdsa.key.pem", password: testPassword, wantType: "ecdsa"},
		{file: "cosign-ecdsa.key.pem", password: "Tr0ub4dor&3", want: ErrWrongPassword},

		{file: "ec-p384-pkcs8-pbkdf2.pem", password: "Tr0ub4dor&3", want: ErrWrongPassword},
		{file: "ed25519-pkcs8-scrypt.pem", password: "Tr0ub4dor&3", want: ErrWrongPassword},
		{file: "ec-p384-pkcs8-pbkdf2.pem", want: ErrPasswordRequired},
		{file: "rsa-1024.pem", want: ErrUnsupportedKey, wantMsg: "1024 bits is too weak"},
		{file: "dsa-pkcs8.pem", want: ErrUnsupportedKey},
		{file: "ec-legacy-encrypted.pem", password: testPassword, want: ErrUnsupportedKey, wantMsg: "legacy PEM encryption"},
		{file: "ec-p521.pem", want: ErrUnsupportedKey, wantMsg: "P-521"},
		{file: "ec-secp256k1.pem", want: ErrUnsupportedKey},
		{file: "pkcs8-3des.pem", password: testPassword, want: ErrUnsupportedKey, wantMsg: "only AES-CBC"},
		{file: "pkcs8-pbes1.pem", password: testPassword, want: ErrUnsupportedKey, wantMsg: "only PBES2"},
		{file: "ec-p384-public.pem", want: ErrNotPrivateKey, wantMsg: "public key"},
		{file: "README.md", want: ErrNotPrivateKey},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.password, func(t *testing.T) {
			t.Parallel() // the cosign rows' scrypt takes seconds under -race
			var pf PasswordFunc
			if tt.password != "" {
				pf = StaticPassword([]byte(tt.password))
			}
			k, err := LoadPrivateKey(readKey(t, tt.file), pf)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("want %v, got %v", tt.want, err)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("message %q does not say %q", err, tt.wantMsg)
				}
				if tt.password != "" && strings.Contains(err.Error(), tt.password) {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var typ string
			switch k.(type) {
			case *ecdsa.PrivateKey:
				typ = "ecdsa"
			case ed25519.PrivateKey:
				typ = "ed25519"
			case *rsa.PrivateKey:
				typ = "rsa"
			}
			if typ != tt.wantType {
				t.Errorf("got %T, want %s", k, tt.wantType)
			}
		})
	}
}

func TestLoadPrivateKeyPasswordOnlyWhenEncrypted(t *testing.T) {
	called := false
	pf := func(bool) ([]byte, error) { called = true; return nil, errors.New("no") }
	if _, err := LoadPrivateKey(readKey(t, "ed25519-pkcs8.pem"), pf); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("password asked for a plain key")
	}
}

func TestKeygenRoundTrip(t *testing.T) {
	t.Parallel()
	for _, alg := range Algorithms {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			k, err := GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			// The real iteration count once; a small one for the other
			// algorithms (the test runs under -race too).
			marshal := func(k crypto.Signer, pw []byte) ([]byte, error) { return marshalEncrypted(k, pw, 1000) }
			if alg == ECDSAP256 {
				marshal = MarshalEncryptedPrivateKey
			}
			pemBytes, err := marshal(k, []byte("correct horse"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(pemBytes), "-----BEGIN ENCRYPTED PRIVATE KEY-----") {
				t.Fatalf("not an encrypted PKCS#8 PEM:\n%s", pemBytes)
			}
			block, _ := pem.Decode(pemBytes)
			if err := checkEncryptedPKCS8(block.Bytes); err != nil {
				t.Fatalf("our own key fails our bounds: %v", err)
			}
			back, err := LoadPrivateKey(pemBytes, StaticPassword([]byte("correct horse")))
			if err != nil {
				t.Fatal(err)
			}
			if !back.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(k.Public()) {
				t.Error("decrypted key differs")
			}
			if alg == ECDSAP256 {
				var info encryptedPrivateKeyInfo
				var params pbes2Params
				var kdf pbkdf2Params
				if unmarshalExact(block.Bytes, &info) != nil || unmarshalExact(info.Algorithm.Parameters.FullBytes, &params) != nil ||
					unmarshalExact(params.KeyDerivationFunc.Parameters.FullBytes, &kdf) != nil {
					t.Fatal("cannot read back the PBES2 parameters")
				}
				if kdf.IterationCount != KeygenPBKDF2Iterations || !kdf.PRF.Algorithm.Equal(oidHMACWithSHA25) || len(kdf.Salt) != 16 ||
					!params.EncryptionScheme.Algorithm.Equal(oidAES256CBC) {
					t.Errorf("keygen parameters %+v %+v", kdf, params.EncryptionScheme)
				}
				return // the slow derivation once is enough
			}
			if _, err := LoadPrivateKey(pemBytes, StaticPassword([]byte("correct horse."))); !errors.Is(err, ErrWrongPassword) {
				t.Errorf("wrong password: got %v", err)
			}
			if _, err := LoadPrivateKey(pemBytes, StaticPassword(nil)); !errors.Is(err, ErrWrongPassword) {
				t.Errorf("empty password: got %v", err)
			}
			pub, err := MarshalPublicKey(k)
			if err != nil || !strings.Contains(string(pub), "PUBLIC KEY") {
				t.Errorf("public key: %v %s", err, pub)
			}
		})
	}
	if _, err := MarshalEncryptedPrivateKey(mustKey(t), nil); !errors.Is(err, ErrInvalidPassword) {
		t.Errorf("empty password accepted for a new key: %v", err)
	}
	if _, err := GenerateKey("dsa-1024"); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("unknown algorithm: %v", err)
	}
}

func mustKey(t *testing.T) crypto.Signer {
	k, err := GenerateKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEncryptedPKCS8Bounds feeds hostile PBES2 parameters: each is refused
// before any key derivation (the test would take minutes otherwise).
func TestEncryptedPKCS8Bounds(t *testing.T) {
	iv16 := make([]byte, 16)
	mk := func(kdf pkixAlg, cipherOID []int, iv []byte, data []byte) []byte {
		return mustMarshalEncrypted(t, kdf, cipherOID, iv, data)
	}
	aes256 := []int{2, 16, 840, 1, 101, 3, 4, 1, 42}
	tests := []struct {
		name string
		der  []byte
		msg  string
	}{
		{"huge pbkdf2 iterations", mk(pbkdf2Alg(t, 1<<30, nil), aes256, iv16, make([]byte, 32)), "iteration count"},
		{"zero iterations", mk(pbkdf2Alg(t, 0, nil), aes256, iv16, make([]byte, 32)), "iteration count"},
		{"huge scrypt N", mk(scryptAlg(t, 1<<24, 8, 1), aes256, iv16, make([]byte, 32)), "MiB"},
		{"scrypt N not power of two", mk(scryptAlg(t, 1000, 8, 1), aes256, iv16, make([]byte, 32)), "power of two"},
		{"scrypt huge p", mk(scryptAlg(t, 1024, 8, 1<<20), aes256, iv16, make([]byte, 32)), "out of bounds"},
		{"short IV", mk(pbkdf2Alg(t, 1000, nil), aes256, make([]byte, 8), make([]byte, 32)), "16-byte IV"},
		{"partial block", mk(pbkdf2Alg(t, 1000, nil), aes256, iv16, make([]byte, 33)), "whole number"},
		{"empty data", mk(pbkdf2Alg(t, 1000, nil), aes256, iv16, nil), "whole number"},
		{"AES-GCM", mk(pbkdf2Alg(t, 1000, nil), []int{2, 16, 840, 1, 101, 3, 4, 1, 46}, iv16, make([]byte, 32)), "only AES-CBC"},
		{"SHA-512 PRF", mk(pbkdf2Alg(t, 1000, []int{1, 2, 840, 113549, 2, 11}), aes256, iv16, make([]byte, 32)), "PRF"},
		{"trailing garbage", append(mk(pbkdf2Alg(t, 1000, nil), aes256, iv16, make([]byte, 32)), 0), "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: tt.der})
			called := false
			_, err := LoadPrivateKey(p, func(bool) ([]byte, error) { called = true; return []byte("x"), nil })
			if !errors.Is(err, ErrUnsupportedKey) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("want ErrUnsupportedKey saying %q, got %v", tt.msg, err)
			}
			if called {
				t.Error("password asked before the parameters were checked")
			}
		})
	}
}

func TestLoadPrivateKeyTooLarge(t *testing.T) {
	big := make([]byte, MaxKeyFileBytes+1)
	if _, err := LoadPrivateKey(big, nil); !errors.Is(err, ErrNotPrivateKey) {
		t.Fatal(err)
	}
}

func TestKeyHint(t *testing.T) {
	k, err := LoadPrivateKey(readKey(t, "ed25519-pkcs8.pem"), nil)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(k.Public())
	h, err := KeyHint(k.Public())
	if err != nil || len(h) != 44 || len(der) == 0 {
		t.Fatalf("hint %q %v", h, err)
	}
}

func FuzzLoadPrivateKey(f *testing.F) {
	for _, name := range []string{"ec-p256-sec1-params.pem", "ec-p384-pkcs8-pbkdf2.pem", "ed25519-pkcs8-scrypt.pem", "rsa-2048-pkcs1.pem", "ec-legacy-encrypted.pem", "pkcs8-3des.pem"} {
		b, err := os.ReadFile(filepath.Join("testdata", "keys", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		// The DER alone, re-wrapped, so that mutations reach the ASN.1.
		if block, _ := pem.Decode(b); block != nil {
			f.Add(block.Bytes)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		pw := StaticPassword([]byte(testPassword))
		for _, data := range [][]byte{in, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: in})} {
			k, err := LoadPrivateKey(data, pw)
			if err == nil {
				if _, err := NewKeypair(k); err != nil {
					t.Fatalf("LoadPrivateKey accepted a key NewKeypair refuses: %v", err)
				}
			}
		}
	})
}

type pkixAlg = pkix.AlgorithmIdentifier

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pbkdf2Alg(t *testing.T, iter int, prf []int) pkixAlg {
	p := pbkdf2Params{Salt: []byte("saltsalt"), IterationCount: iter}
	if prf != nil {
		p.PRF = pkix.AlgorithmIdentifier{Algorithm: prf, Parameters: asn1.NullRawValue}
	}
	return pkixAlg{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, p)}}
}

func scryptAlg(t *testing.T, n, r, p int) pkixAlg {
	sp := scryptParams{Salt: []byte("saltsalt"), CostParameter: n, BlockSize: r, ParallelizationParameter: p}
	return pkixAlg{Algorithm: oidScrypt, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, sp)}}
}

func mustMarshalEncrypted(t *testing.T, kdf pkixAlg, cipherOID []int, iv, data []byte) []byte {
	enc := pkixAlg{Algorithm: cipherOID, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, iv)}}
	params := pbes2Params{KeyDerivationFunc: kdf, EncryptionScheme: enc}
	info := encryptedPrivateKeyInfo{
		Algorithm:     pkixAlg{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: mustMarshal(t, params)}},
		EncryptedData: data,
	}
	return mustMarshal(t, info)
}
