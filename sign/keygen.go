package sign

import (
	"errors"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// KeygenOptions say what Keygen makes, and where.
type KeygenOptions struct {
	// Prefix names the files: Prefix.key, the private key, and Prefix.pub.
	Prefix string
	// Algorithm of the key (GenerateKey).
	Algorithm Algorithm
	// Password gives the new key's password; it is called with confirm
	// true. Required: every key Keygen writes is encrypted.
	Password PasswordFunc
	// Overwrite replaces existing files.
	Overwrite bool
}

// errKeygenNoPassword: Keygen was called without KeygenOptions.Password.
var errKeygenNoPassword = errors.New("sign: Keygen needs KeygenOptions.Password: every key it writes is encrypted")

// KeygenResult is what Keygen wrote.
type KeygenResult struct {
	KeyPath, PubPath string
	// KeyID names the key: sha256:HEX of its DER SubjectPublicKeyInfo
	// (evidence.KeyID).
	KeyID string
}

// Keygen makes a key pair and writes its files (WriteKeyFiles): the
// files are checked to be writable before the key is made and its
// password asked for, and the password is cleared after.
func Keygen(o KeygenOptions) (*KeygenResult, error) {
	if o.Password == nil {
		return nil, errKeygenNoPassword
	}
	res := &KeygenResult{KeyPath: o.Prefix + ".key", PubPath: o.Prefix + ".pub"}
	for _, p := range []string{res.KeyPath, res.PubPath} {
		if err := atomicfile.Check(p, atomicfile.Options{Overwrite: o.Overwrite}); err != nil {
			return nil, err
		}
	}
	key, err := GenerateKey(o.Algorithm)
	if err != nil {
		return nil, err
	}
	pw, err := o.Password(true)
	if err != nil {
		return nil, err
	}
	err = WriteKeyFiles(res.KeyPath, res.PubPath, key, pw, o.Overwrite)
	clear(pw)
	if err != nil {
		return nil, err
	}
	res.KeyID, _ = evidence.KeyID(key.Public())
	return res, nil
}
