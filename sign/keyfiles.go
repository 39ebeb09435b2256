package sign

import "time"

// KeyFiles are the files of a key or a certificate signature.
type KeyFiles struct {
	// Key is the PEM private key file (ReadPrivateKey); Password gives
	// the password of an encrypted one.
	Key      string
	Password PasswordFunc
	// Certificate, when its Leaf is set, makes the signature a
	// certificate signature (NewCertificateSigner); else it is a key
	// signature (NewKeySigner).
	Certificate CertificateFiles
	// EmbedChain puts the intermediates into the bundle
	// (CertificateSigner.EmbedChain).
	EmbedChain bool
}

// Signer reads the files (the certificates first, then the key, whose
// password may be asked for) and returns a *KeySigner, or a
// *CertificateSigner checked at now. A file that cannot be read is a
// *CertificateFileError or a *KeyFileError.
func (k KeyFiles) Signer(now time.Time) (Signer, error) {
	if k.Certificate.Leaf == "" {
		priv, err := ReadPrivateKey(k.Key, k.Password)
		if err != nil {
			return nil, err
		}
		s, err := NewKeySigner(priv)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	leaf, chain, roots, err := k.Certificate.Read()
	if err != nil {
		return nil, err
	}
	priv, err := ReadPrivateKey(k.Key, k.Password)
	if err != nil {
		return nil, err
	}
	s, err := NewCertificateSigner(priv, leaf, chain, roots, now)
	if err != nil {
		return nil, err
	}
	s.EmbedChain = k.EmbedChain
	return s, nil
}
