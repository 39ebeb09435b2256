package sign

import (
	"context"
	"testing"
)

// BenchmarkSignKey is the in-process cost of 'mcpsign sign key' without a
// log or TSA: statement parse, DSSE signature, bundle JSON, self-check.
func BenchmarkSignKey(b *testing.B) {
	payload, _ := examplePayload(b)
	for _, file := range []string{"ec-p256-sec1-params.pem", "ed25519-pkcs8.pem", "rsa-2048-pkcs1.pem"} {
		key, err := LoadPrivateKey(readKey(b, file), nil)
		if err != nil {
			b.Fatal(err)
		}
		s, err := NewKeySigner(key)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(file, func(b *testing.B) {
			for b.Loop() {
				if _, err := Sign(context.Background(), payload, Options{Signer: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadEncryptedKey is the key derivation of each encrypted format.
func BenchmarkLoadEncryptedKey(b *testing.B) {
	k, _ := GenerateKey(ECDSAP256)
	keygen, err := MarshalEncryptedPrivateKey(k, []byte(testPassword))
	if err != nil {
		b.Fatal(err)
	}
	for name, pemBytes := range map[string][]byte{
		"keygen PBKDF2-SHA256 600k":  keygen,
		"openssl PBKDF2-SHA256 2048": readKey(b, "ec-p384-pkcs8-pbkdf2.pem"),
		"cosign scrypt N=2^16":       readKey(b, "cosign-ecdsa.key.pem"),
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadPrivateKey(pemBytes, StaticPassword([]byte(testPassword))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
