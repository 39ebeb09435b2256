package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/youmark/pkcs8"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Limits on key material read from files.
const (
	// MaxKeyFileBytes bounds a PEM private key or certificate file.
	MaxKeyFileBytes = 64 << 10
	// MaxPasswordBytes bounds a password.
	MaxPasswordBytes = 1024
	// MinRSABits is the smallest RSA key accepted.
	MinRSABits = 2048
)

// What loading a private key can fail for; LoadPrivateKey wraps one of
// these so that a caller can tell the cases apart.
var (
	// ErrNotPrivateKey: the file holds no PEM private key (not PEM, or a
	// public key or certificate).
	ErrNotPrivateKey = errors.New("not a PEM private key")
	// ErrUnsupportedKey: a private key of an algorithm, size or encoding
	// mcpsign does not sign with.
	ErrUnsupportedKey = errors.New("unsupported private key")
	// ErrPasswordRequired: the key is encrypted and no password is
	// available.
	ErrPasswordRequired = errors.New("the private key is encrypted and no password was given")
	// ErrWrongPassword: the key could not be decrypted with the password.
	ErrWrongPassword = errors.New("wrong password, or a damaged key file")
	// ErrInvalidPassword: a password that mcpsign refuses (empty or too
	// long).
	ErrInvalidPassword = errors.New("invalid password")
)

// PasswordFunc returns the password of an encrypted key; confirm asks for it
// twice (when a new key is encrypted). It is only called for encrypted keys.
type PasswordFunc func(confirm bool) ([]byte, error)

// StaticPassword returns a PasswordFunc that always returns pw.
func StaticPassword(pw []byte) PasswordFunc {
	return func(bool) ([]byte, error) { return pw, nil }
}

// PEM block types read by LoadPrivateKey.
const (
	pemPKCS8          = "PRIVATE KEY"
	pemEncryptedPKCS8 = "ENCRYPTED PRIVATE KEY"
	pemSEC1           = "EC PRIVATE KEY"
	pemPKCS1          = "RSA PRIVATE KEY"
	pemSigstore       = "ENCRYPTED SIGSTORE PRIVATE KEY"
	pemCosign         = "ENCRYPTED COSIGN PRIVATE KEY"
	pemECParameters   = "EC PARAMETERS"
)

// LoadPrivateKey reads a PEM private key: ECDSA P-256 or P-384, Ed25519, or
// RSA of 2048, 3072 or 4096 bits; as plain PKCS#8 ("PRIVATE KEY"), SEC 1
// ("EC PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY"), PBES2-encrypted PKCS#8
// ("ENCRYPTED PRIVATE KEY": PBKDF2 or scrypt, AES-CBC) or a cosign key
// ("ENCRYPTED SIGSTORE PRIVATE KEY"). The encryption parameters are checked
// against fixed bounds before any key derivation. Legacy PEM encryption
// (Proc-Type headers) is refused. password is called only for an encrypted
// key.
func LoadPrivateKey(pemBytes []byte, password PasswordFunc) (crypto.Signer, error) {
	if len(pemBytes) > MaxKeyFileBytes {
		return nil, fmt.Errorf("%w: %d bytes is more than a key file may have (%d)", ErrNotPrivateKey, len(pemBytes), MaxKeyFileBytes)
	}
	block, err := firstKeyBlock(pemBytes)
	if err != nil {
		return nil, err
	}
	if x509.IsEncryptedPEMBlock(block) { //nolint:staticcheck // detecting it to refuse it
		return nil, fmt.Errorf("%w: legacy PEM encryption (Proc-Type: 4,ENCRYPTED) is weak and not supported; convert the key with 'openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256 -in OLD -out NEW'", ErrUnsupportedKey)
	}
	var priv crypto.PrivateKey
	switch block.Type {
	case pemPKCS8:
		priv, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case pemSEC1:
		priv, err = x509.ParseECPrivateKey(block.Bytes)
	case pemPKCS1:
		priv, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case pemEncryptedPKCS8:
		if err := checkEncryptedPKCS8(block.Bytes); err != nil {
			return nil, err
		}
		pw, perr := readPassword(password)
		if perr != nil {
			return nil, perr
		}
		priv, err = decryptPKCS8(block.Bytes, pw)
		if err != nil {
			return nil, fmt.Errorf("decrypting the private key: %w; check the password", ErrWrongPassword)
		}
	case pemSigstore, pemCosign:
		pw, perr := readPassword(password)
		if perr != nil {
			return nil, perr
		}
		// cryptoutils decrypts with scrypt and NaCl secretbox, refusing
		// scrypt parameters other than its three fixed sets.
		priv, err = cryptoutils.UnmarshalPEMToPrivateKey(pem.EncodeToMemory(block), cryptoutils.StaticPasswordFunc(pw))
		if err != nil {
			return nil, fmt.Errorf("decrypting the cosign private key: %w; check the password", ErrWrongPassword)
		}
	default:
		return nil, unknownBlock(block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s key: %v", ErrUnsupportedKey, strings.ToLower(block.Type), err)
	}
	return checkPrivateKey(priv)
}

// firstKeyBlock returns the first PEM block of data that is not EC
// parameters (as written by 'openssl ecparam -genkey').
func firstKeyBlock(data []byte) (*pem.Block, error) {
	for i := 0; i < 4; i++ {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != pemECParameters {
			return block, nil
		}
		data = rest
	}
	return nil, fmt.Errorf("%w: no PEM block found (expected -----BEGIN PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----)", ErrNotPrivateKey)
}

func unknownBlock(typ string) error {
	switch {
	case typ == "PUBLIC KEY" || typ == "CERTIFICATE":
		return fmt.Errorf("%w: the file holds a %s; signing needs the private key", ErrNotPrivateKey, strings.ToLower(typ))
	case typ == "OPENSSH PRIVATE KEY":
		return fmt.Errorf("%w: OpenSSH key format; convert it with 'ssh-keygen -p -m PKCS8 -f KEY' (ECDSA, Ed25519 or RSA keys only)", ErrUnsupportedKey)
	case strings.Contains(typ, "DSA") && !strings.Contains(typ, "ECDSA"):
		return fmt.Errorf("%w: DSA keys are not supported; use ECDSA P-256/P-384, Ed25519 or RSA ≥ %d ('mcpsign keygen' makes one)", ErrUnsupportedKey, MinRSABits)
	}
	return fmt.Errorf("%w: PEM block type %s is not a private key mcpsign reads", ErrUnsupportedKey, textsafe.RawQuote(typ))
}

// readPassword calls password and bounds what it returns.
func readPassword(password PasswordFunc) ([]byte, error) {
	if password == nil {
		return nil, ErrPasswordRequired
	}
	pw, err := password(false)
	if err != nil {
		return nil, err
	}
	if len(pw) > MaxPasswordBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidPassword, MaxPasswordBytes)
	}
	return pw, nil
}

// decryptPKCS8 decrypts PBES2 PKCS#8 whose parameters checkEncryptedPKCS8
// accepted.
func decryptPKCS8(der, pw []byte) (priv crypto.PrivateKey, err error) {
	if len(pw) == 0 {
		// pkcs8 would read an empty password as "not encrypted".
		return nil, ErrWrongPassword
	}
	priv, _, err = pkcs8.ParsePrivateKey(der, pw)
	return priv, err
}

// checkPrivateKey accepts the algorithms and sizes mcpsign signs with.
func checkPrivateKey(priv crypto.PrivateKey) (crypto.Signer, error) {
	switch k := priv.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384():
			return k, nil
		}
		return nil, fmt.Errorf("%w: ECDSA on curve %s; use P-256 or P-384", ErrUnsupportedKey, k.Curve.Params().Name)
	case ed25519.PrivateKey:
		return k, nil
	case *rsa.PrivateKey:
		bits := k.N.BitLen()
		if bits < MinRSABits {
			return nil, fmt.Errorf("%w: RSA key of %d bits is too weak; at least %d bits are required", ErrUnsupportedKey, bits, MinRSABits)
		}
		switch bits {
		case 2048, 3072, 4096:
			return k, nil
		}
		return nil, fmt.Errorf("%w: RSA key of %d bits; Sigstore defines RSA signatures for 2048, 3072 and 4096 bits only", ErrUnsupportedKey, bits)
	case nil:
		return nil, fmt.Errorf("%w: empty key", ErrUnsupportedKey)
	}
	return nil, fmt.Errorf("%w: %T keys are not supported; use ECDSA P-256/P-384, Ed25519 or RSA ≥ %d", ErrUnsupportedKey, priv, MinRSABits)
}

// Algorithm is a key algorithm that GenerateKey makes.
type Algorithm string

// The algorithms of GenerateKey.
const (
	ECDSAP256 Algorithm = "ecdsa-p256"
	ECDSAP384 Algorithm = "ecdsa-p384"
	Ed25519   Algorithm = "ed25519"
	RSA3072   Algorithm = "rsa-3072"
)

// Algorithms lists the algorithms of GenerateKey, the default first.
var Algorithms = []Algorithm{ECDSAP256, ECDSAP384, Ed25519, RSA3072}

// GenerateKey makes a new private key.
func GenerateKey(alg Algorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSAP256, "":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ECDSAP384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case RSA3072:
		return rsa.GenerateKey(rand.Reader, 3072)
	}
	return nil, fmt.Errorf("%w: algorithm %s; choose one of %s", ErrUnsupportedKey, textsafe.RawQuote(string(alg)), algorithmList())
}

func algorithmList() string {
	s := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// PBES2 parameters of keys written by MarshalEncryptedPrivateKey: PBKDF2
// with HMAC-SHA256 (600,000 iterations, OWASP's 2023 figure for it) and
// AES-256-CBC, the most widely readable PKCS#8 encryption (OpenSSL, Go,
// Java, Python cryptography).
const (
	KeygenPBKDF2Iterations = 600_000
	keygenSaltBytes        = 16
)

// MarshalEncryptedPrivateKey returns key as a PEM "ENCRYPTED PRIVATE KEY"
// (PKCS#8, PBES2: PBKDF2-HMAC-SHA256, AES-256-CBC). An empty password is
// refused: it would leave the key unprotected.
func MarshalEncryptedPrivateKey(key crypto.Signer, password []byte) ([]byte, error) {
	return marshalEncrypted(key, password, KeygenPBKDF2Iterations)
}

func marshalEncrypted(key crypto.Signer, password []byte, iterations int) ([]byte, error) {
	if len(password) == 0 {
		return nil, fmt.Errorf("%w: empty; an encrypted key needs a password", ErrInvalidPassword)
	}
	if len(password) > MaxPasswordBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidPassword, MaxPasswordBytes)
	}
	der, err := pkcs8.MarshalPrivateKey(key, password, &pkcs8.Opts{
		Cipher: pkcs8.AES256CBC,
		KDFOpts: pkcs8.PBKDF2Opts{
			SaltSize:       keygenSaltBytes,
			IterationCount: iterations,
			HMACHash:       crypto.SHA256,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("encrypting the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemEncryptedPKCS8, Bytes: der}), nil
}

// MarshalPublicKey returns the PEM "PUBLIC KEY" (PKIX) of key.
func MarshalPublicKey(key crypto.Signer) ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(key.Public())
}
