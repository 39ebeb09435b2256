package sign

import (
	"context"
	"crypto"
	"crypto/x509"
	"os"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

// TokenError is the failure to get an identity token (IDToken) for a
// keyless signature.
type TokenError struct{ Err error }

func (e *TokenError) Error() string { return e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }

// NewKeyless returns the Options of a keyless signature: the Fulcio, Rekor
// and timestamp authorities sc selects at now (SelectServices), an
// identity token as tok finds it (IDToken; the browser flow's issuer is
// sc's), and tm to verify the bundle against before it is returned. A
// token that cannot be had is a *TokenError.
func NewKeyless(ctx context.Context, sc *root.SigningConfig, tm root.TrustedMaterial, tok TokenOptions, now time.Time) (Options, error) {
	svc, err := SelectServices(sc, ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, now)
	if err != nil {
		return Options{}, err
	}
	tok.Issuer = svc.OIDCIssuer
	t, err := IDToken(ctx, tok)
	if err != nil {
		return Options{}, &TokenError{Err: err}
	}
	s, err := NewSigstoreSigner(t, svc.FulcioURL)
	if err != nil {
		return Options{}, err
	}
	return Options{Signer: s, TransparencyLogs: svc.TransparencyLogs,
		TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: tm}, nil
}

// LogServices say which transparency log and timestamp authorities a key
// or certificate signature uses (none by default: nothing leaves the
// machine).
type LogServices struct {
	// SigningConfig, when not nil, names the services: its Rekor (with
	// Upload) and its timestamp authorities. RekorURL and TSAURL are then
	// not used.
	SigningConfig *root.SigningConfig
	// Upload logs the signature: in the Rekor of SigningConfig, else at
	// RekorURL (API version RekorVersion, 1 or 2).
	Upload       bool
	RekorURL     string
	RekorVersion uint32
	// TSAURL is an RFC 3161 timestamp authority, when not "".
	TSAURL string
}

// Apply sets the transparency logs and timestamp authorities of opts, the
// ones valid at now, and reports whether opts now needs trusted material
// (Options.TrustedMaterial) to verify the bundle with.
func (l LogServices) Apply(opts *Options, now time.Time) (needsTrust bool, err error) {
	if l.SigningConfig != nil {
		svc, err := SelectServices(l.SigningConfig, ServiceNeeds{Rekor: l.Upload, TSA: true}, now)
		if err != nil {
			return false, err
		}
		opts.TransparencyLogs, opts.TimestampAuthorities = svc.TransparencyLogs, svc.TimestampAuthorities
	} else {
		if l.Upload {
			opts.TransparencyLogs = []RekorService{{URL: l.RekorURL, Version: l.RekorVersion}}
		}
		if l.TSAURL != "" {
			opts.TimestampAuthorities = []string{l.TSAURL}
		}
	}
	return len(opts.TransparencyLogs) > 0 || len(opts.TimestampAuthorities) > 0, nil
}

// ReadCertificates reads a PEM file of certificates (at most
// MaxKeyFileBytes): a leaf, a chain, or roots.
func ReadCertificates(path string) ([]*x509.Certificate, error) {
	b, err := boundedfile.Read(path, MaxKeyFileBytes, nil)
	if err != nil {
		return nil, err
	}
	return ParseCertificates(b)
}

// WriteKeyFiles writes key as a key pair, each file atomically: its
// private key encrypted with password (PKCS#8 PBES2,
// MarshalEncryptedPrivateKey) to keyPath with mode 0600, and its public
// key to pubPath. An existing file is replaced only with overwrite; when
// the public key cannot be written the private key is removed again.
func WriteKeyFiles(keyPath, pubPath string, key crypto.Signer, password []byte, overwrite bool) error {
	priv, err := MarshalEncryptedPrivateKey(key, password)
	if err != nil {
		return err
	}
	pub, err := MarshalPublicKey(key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(keyPath, priv, atomicfile.Options{Perm: 0o600, Overwrite: overwrite}); err != nil {
		return err
	}
	if err := atomicfile.Write(pubPath, pub, atomicfile.Options{Perm: 0o644, Overwrite: overwrite}); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

// CertificateFiles name the PEM files of a certificate signature.
type CertificateFiles struct {
	// Leaf holds the signing certificate first; the certificates after it
	// in the same file are its chain when Chain is "".
	Leaf string
	// Chain holds the issuing intermediates in order, then the root; ""
	// for none (or the rest of Leaf's file).
	Chain string
	// Roots holds more trusted root certificates; "" for none.
	Roots string
}

// CertificateFileError is a file of CertificateFiles that cannot be read:
// Which is "leaf", "chain" or "roots".
type CertificateFileError struct {
	Which, Path string
	Err         error
}

func (e *CertificateFileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *CertificateFileError) Unwrap() error { return e.Err }

// Read reads the files, for NewCertificateSigner.
func (f CertificateFiles) Read() (leaf *x509.Certificate, chain, roots []*x509.Certificate, err error) {
	certs, err := ReadCertificates(f.Leaf)
	if err != nil {
		return nil, nil, nil, &CertificateFileError{"leaf", f.Leaf, err}
	}
	if f.Chain != "" {
		if chain, err = ReadCertificates(f.Chain); err != nil {
			return nil, nil, nil, &CertificateFileError{"chain", f.Chain, err}
		}
	} else if len(certs) > 1 {
		chain = certs[1:]
	}
	if f.Roots != "" {
		if roots, err = ReadCertificates(f.Roots); err != nil {
			return nil, nil, nil, &CertificateFileError{"roots", f.Roots, err}
		}
	}
	return certs[0], chain, roots, nil
}

// KeyFileError is a private key file that cannot be read (Read) or whose
// key cannot be loaded (LoadPrivateKey).
type KeyFileError struct {
	Path string
	Read bool
	Err  error
}

func (e *KeyFileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *KeyFileError) Unwrap() error { return e.Err }

// ReadPrivateKey reads the PEM private key file at path (at most
// MaxKeyFileBytes) and loads it (LoadPrivateKey, password for an
// encrypted one); the file's bytes are cleared after. Its errors are
// *KeyFileError.
func ReadPrivateKey(path string, password PasswordFunc) (crypto.Signer, error) {
	b, err := boundedfile.Read(path, MaxKeyFileBytes, nil)
	if err != nil {
		return nil, &KeyFileError{Path: path, Read: true, Err: err}
	}
	k, err := LoadPrivateKey(b, password)
	clear(b)
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	return k, nil
}
