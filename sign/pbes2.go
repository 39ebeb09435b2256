package sign

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
)

// Bounds on the PBES2 parameters of an encrypted PKCS#8 key, checked before
// any key derivation: a key file must not be able to make mcpsign spend
// minutes or gigabytes deriving a key.
const (
	maxPBKDF2Iterations = 10_000_000
	maxScryptMemory     = 256 << 20 // 128·r·N bytes
	maxScryptR          = 32
	maxScryptP          = 16
	maxSaltBytes        = 1024
)

var (
	oidPBES2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidScrypt        = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}
	oidHMACWithSHA1  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACWithSHA25 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidAES128CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

type scryptParams struct {
	Salt                     []byte
	CostParameter            int
	BlockSize                int
	ParallelizationParameter int
	KeyLength                int `asn1:"optional"`
}

// checkEncryptedPKCS8 validates the structure and bounds the parameters of
// a PBES2-encrypted PKCS#8 key (RFC 8018): PBKDF2 (HMAC-SHA1 or -SHA256) or
// scrypt (RFC 7914), AES-128/192/256-CBC with a 16-byte IV, ciphertext a
// whole number of blocks. Anything else is refused, with a way out.
func checkEncryptedPKCS8(der []byte) error {
	var info encryptedPrivateKeyInfo
	if err := unmarshalExact(der, &info); err != nil {
		return fmt.Errorf("%w: encrypted PKCS#8 structure: %v", ErrUnsupportedKey, err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return fmt.Errorf("%w: encrypted with %s; only PBES2 is supported (re-encrypt with 'openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256')", ErrUnsupportedKey, info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if err := unmarshalExact(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return fmt.Errorf("%w: PBES2 parameters: %v", ErrUnsupportedKey, err)
	}
	keySize, err := checkCipher(params.EncryptionScheme, len(info.EncryptedData))
	if err != nil {
		return err
	}
	return checkKDF(params.KeyDerivationFunc, keySize)
}

func checkCipher(scheme pkix.AlgorithmIdentifier, dataLen int) (keySize int, err error) {
	switch {
	case scheme.Algorithm.Equal(oidAES128CBC):
		keySize = 16
	case scheme.Algorithm.Equal(oidAES192CBC):
		keySize = 24
	case scheme.Algorithm.Equal(oidAES256CBC):
		keySize = 32
	default:
		return 0, fmt.Errorf("%w: PKCS#8 cipher %s; only AES-CBC is supported (re-encrypt with 'openssl pkcs8 -topk8 -v2 aes-256-cbc')", ErrUnsupportedKey, scheme.Algorithm)
	}
	var iv []byte
	if err := unmarshalExact(scheme.Parameters.FullBytes, &iv); err != nil || len(iv) != 16 {
		return 0, fmt.Errorf("%w: AES-CBC needs a 16-byte IV", ErrUnsupportedKey)
	}
	if dataLen == 0 || dataLen%16 != 0 {
		return 0, fmt.Errorf("%w: the encrypted key is %d bytes, not a whole number of AES blocks (damaged file?)", ErrUnsupportedKey, dataLen)
	}
	return keySize, nil
}

func checkKDF(kdf pkix.AlgorithmIdentifier, keySize int) error {
	switch {
	case kdf.Algorithm.Equal(oidPBKDF2):
		var p pbkdf2Params
		if err := unmarshalExact(kdf.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("%w: PBKDF2 parameters: %v", ErrUnsupportedKey, err)
		}
		if len(p.Salt) == 0 || len(p.Salt) > maxSaltBytes {
			return fmt.Errorf("%w: PBKDF2 salt of %d bytes", ErrUnsupportedKey, len(p.Salt))
		}
		if p.IterationCount < 1 || p.IterationCount > maxPBKDF2Iterations {
			return fmt.Errorf("%w: PBKDF2 iteration count %d is outside 1..%d", ErrUnsupportedKey, p.IterationCount, maxPBKDF2Iterations)
		}
		// The decoder mcpsign uses does not read keyLength; accept it only
		// when it is absent.
		if p.KeyLength != 0 {
			return fmt.Errorf("%w: PBKDF2 keyLength parameter present; re-encrypt with 'openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256'", ErrUnsupportedKey)
		}
		if len(p.PRF.Algorithm) != 0 && !p.PRF.Algorithm.Equal(oidHMACWithSHA1) && !p.PRF.Algorithm.Equal(oidHMACWithSHA25) {
			return fmt.Errorf("%w: PBKDF2 PRF %s; only HMAC-SHA256 and HMAC-SHA1 are supported", ErrUnsupportedKey, p.PRF.Algorithm)
		}
		return nil
	case kdf.Algorithm.Equal(oidScrypt):
		var p scryptParams
		if err := unmarshalExact(kdf.Parameters.FullBytes, &p); err != nil {
			return fmt.Errorf("%w: scrypt parameters: %v", ErrUnsupportedKey, err)
		}
		n, r, par := p.CostParameter, p.BlockSize, p.ParallelizationParameter
		switch {
		case len(p.Salt) == 0 || len(p.Salt) > maxSaltBytes:
			return fmt.Errorf("%w: scrypt salt of %d bytes", ErrUnsupportedKey, len(p.Salt))
		case n < 2 || n&(n-1) != 0:
			return fmt.Errorf("%w: scrypt N=%d is not a power of two", ErrUnsupportedKey, n)
		case r < 1 || r > maxScryptR || par < 1 || par > maxScryptP:
			return fmt.Errorf("%w: scrypt r=%d p=%d out of bounds (r ≤ %d, p ≤ %d)", ErrUnsupportedKey, r, par, maxScryptR, maxScryptP)
		case n > maxScryptMemory/(128*r):
			return fmt.Errorf("%w: scrypt N=%d r=%d needs more than %d MiB", ErrUnsupportedKey, n, r, maxScryptMemory>>20)
		case p.KeyLength != 0 && p.KeyLength != keySize:
			return fmt.Errorf("%w: scrypt keyLength %d does not fit the cipher", ErrUnsupportedKey, p.KeyLength)
		}
		return nil
	}
	return fmt.Errorf("%w: PBES2 key derivation %s; only PBKDF2 and scrypt are supported", ErrUnsupportedKey, kdf.Algorithm)
}

// unmarshalExact is asn1.Unmarshal that refuses trailing bytes.
func unmarshalExact(der []byte, v any) error {
	rest, err := asn1.Unmarshal(der, v)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("trailing data")
	}
	return nil
}
