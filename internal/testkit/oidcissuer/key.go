package oidcissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// KeyBits is the size of keys made by GenerateKey and LoadOrCreateKey.
const KeyBits = 2048

// GenerateKey makes a new RSA signing key of KeyBits bits.
func GenerateKey() (*rsa.PrivateKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: generate key: %w", err)
	}
	return k, nil
}

// LoadOrCreateKey reads an RSA private key (PEM, PKCS#8 or PKCS#1) from
// path. If the file does not exist it makes a new key and writes it there
// as PKCS#8 with mode 0600; the file is created exclusively, so two
// processes racing on the same path never overwrite each other's key.
func LoadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return parseKey(path, b)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("oidcissuer: read key: %w", err)
	}
	k, err := GenerateKey()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: encode key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadOrCreateKey(path) // lost a race: use the winner's key
	}
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: create key file: %w", err)
	}
	werr := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("oidcissuer: write key file: %w", werr)
	}
	return k, nil
}

func parseKey(path string, b []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("oidcissuer: %s: no PEM block", path)
	}
	var key any
	var err error
	switch blk.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("oidcissuer: %s: unsupported PEM type %q", path, blk.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: %s: parse key: %w", path, err)
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("oidcissuer: %s: not an RSA key", path)
	}
	return rk, nil
}
