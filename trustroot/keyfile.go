package trustroot

import (
	"crypto"
	"fmt"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

// MaxKeyFileBytes bounds a public key file (ReadPublicKeyFile).
const MaxKeyFileBytes = 64 << 10

// KeyFileError is a key file that cannot be read (Read) or that holds no
// key: for ReadPublicKeyFile no public key ParsePublicKeyPEM accepts (and
// for sign.ReadPrivateKey no private key it loads).
type KeyFileError struct {
	Path string
	Read bool
	Err  error
}

func (e *KeyFileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *KeyFileError) Unwrap() error { return e.Err }

// ReadPublicKeyFile reads the PEM public key (a PUBLIC KEY block, as
// LoadPublicKey accepts) in the file at path, at most MaxKeyFileBytes. Its
// errors are *KeyFileError.
func ReadPublicKeyFile(path string) (crypto.PublicKey, error) {
	data, err := boundedfile.Read(path, MaxKeyFileBytes, nil)
	if err != nil {
		return nil, &KeyFileError{Path: path, Read: true, Err: err}
	}
	v, err := ParsePublicKeyPEM(data)
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf("want a PEM public key (PUBLIC KEY block): %w", err)}
	}
	pub, err := v.PublicKey()
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	return pub, nil
}
