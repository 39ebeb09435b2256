package monitor

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"

	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/digest"
)

// checker matches the entries of a range against the watched signers,
// reading each entry once (docs/MONITOR.md "Reading entries"): the
// scanner takes out the artifact digest and the DER of each verifier, a
// certificate is matched on its identity view before it is parsed, a key
// on its hash. Findings wait in pending until the range is proven.
type checker struct {
	opts    *Options
	res     *Result
	sc      scanner
	needles needles
	keys    map[[sha256.Size]byte]string
	pending []Finding
}

func newChecker(opts *Options, res *Result) *checker {
	c := &checker{opts: opts, res: res}
	if opts.Identities != nil {
		c.needles = newNeedles(opts.Identities.RequiredBytes())
	}
	for _, id := range opts.KeyIDs {
		var sum [sha256.Size]byte
		if b, err := hex.DecodeString(id[len(digest.Prefix):]); len(id) > len(digest.Prefix) && err == nil && len(b) == sha256.Size {
			copy(sum[:], b)
			if c.keys == nil {
				c.keys = map[[sha256.Size]byte]string{}
			}
			c.keys[sum] = id
		}
	}
	return c
}

// read scans data, or parses it with protojson when it is not in the
// canonical form the scanner reads.
func (c *checker) read(data []byte) (*rawEntry, error) {
	if c.sc.scan(data) {
		return &c.sc.e, nil
	}
	pe, err := ParseEntry(data)
	if err != nil {
		return nil, err
	}
	e := &rawEntry{kind: pe.Kind, apiVersion: pe.APIVersion, digest: pe.Digest}
	for _, s := range pe.Signers {
		if s.Certificate != nil {
			e.signers = append(e.signers, rawSigner{cert: true, der: s.Certificate.Raw})
		} else {
			e.signers = append(e.signers, rawSigner{der: s.PublicKey})
		}
	}
	return e, nil
}

func (c *checker) emit(fd Finding) {
	if fd.Alert {
		c.res.Alerts++
	} else {
		c.res.Notices++
	}
	c.pending = append(c.pending, fd)
}

// flush reports the pending findings, once the range is proven.
func (c *checker) flush() {
	for _, fd := range c.pending {
		emit(*c.opts, fd)
	}
	c.pending = nil
}

// check reads one entry and reports it if a watched signer made it and it
// was not released.
func (c *checker) check(index int64, data []byte) error {
	e, err := c.read(data)
	if errors.Is(err, ErrUnknownKind) {
		c.emit(Finding{Kind: KindUnknownEntry, LogIndex: index, Log: c.res.Log, Detail: err.Error()})
		return nil
	}
	if err != nil {
		return &CheckError{Check: "entry", Index: index, Err: err}
	}
	for i, s := range e.signers {
		fd := Finding{LogIndex: index, Log: c.res.Log, Digest: e.digest, EntryKind: e.kind + " " + e.apiVersion}
		switch {
		case s.cert && c.opts.Identities != nil:
			if !c.needles.mayHold(s.der) {
				continue
			}
			if view, ok := identityView(s.der); ok {
				if _, err := c.opts.Identities.Match(view); err != nil {
					continue // the identity view does not match: the certificate does not
				}
			}
			cert, err := x509.ParseCertificate(s.der)
			if err != nil {
				return &CheckError{Check: "entry", Index: index, Err: fmt.Errorf("%w: signature %d: certificate: %v", ErrEntry, i, err)}
			}
			m, err := c.opts.Identities.Match(cert)
			if err != nil {
				continue // not a watched identity
			}
			fd.Identity, fd.Issuer, fd.Source = m.Identity, m.Issuer, m.Source
			c.res.Watched++
			if c.opts.Released.Contains(e.digest) {
				c.res.Released++
				continue
			}
			if _, err := sgverify.VerifyLeafCertificate(cert.NotBefore, cert, c.opts.TrustedMaterial); err != nil {
				fd.Kind, fd.Detail = KindUntrustedCertificate, "the certificate does not chain to a CA of the trusted root: "+err.Error()
				fd.Source = nil // only a trusted CA vouches for it
				c.emit(fd)
				continue
			}
			fd.Kind, fd.Alert = KindUnreleased, true
		case !s.cert && c.keys != nil:
			id, ok := c.keys[sha256.Sum256(s.der)]
			if !ok {
				continue
			}
			if _, err := x509.ParsePKIXPublicKey(s.der); err != nil {
				return &CheckError{Check: "entry", Index: index, Err: fmt.Errorf("%w: signature %d: public key: %v", ErrEntry, i, err)}
			}
			fd.KeyID = id
			c.res.Watched++
			if c.opts.Released.Contains(e.digest) {
				c.res.Released++
				continue
			}
			fd.Kind, fd.Alert = KindUnreleased, true
		default:
			continue
		}
		c.emit(fd)
	}
	return nil
}
