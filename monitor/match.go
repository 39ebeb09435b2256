package monitor

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

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
	// b64 are needles as base64 (nil when some is too short).
	b64 b64Needles
	// tried and held count the certificates the needles were looked for
	// in and those that held one: needles that most certificates hold
	// (an issuer every entry has) cost more than they save, and are
	// dropped.
	tried, held int
	buf         []byte
	// view is the identity view of the certificate at hand.
	view    x509.Certificate
	keys    map[[sha256.Size]byte]string
	pending []Finding
	// logs are the IDs of the trusted root's logs of the log read (hex):
	// a digest counts as released only when proven in one of them.
	logs []string
}

func newChecker(opts *Options, res *Result) *checker {
	c := &checker{opts: opts, res: res, logs: logIDs(opts.TrustedMaterial, res.Log)}
	if opts.Identities != nil {
		c.needles = newNeedles(opts.Identities.RequiredBytes())
		c.b64 = newB64Needles(c.needles)
	}
	for _, id := range opts.KeyIDs {
		var sum [sha256.Size]byte
		// Run refused an ID of another form (ErrKeyID).
		if b, err := hex.DecodeString(strings.TrimPrefix(id, digest.Prefix)); err == nil && len(b) == sha256.Size {
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
	return c.checkEntry(index, e, err)
}

// checkEntry reports e, read with err, if a watched signer made it and it
// was not released.
func (c *checker) checkEntry(index int64, e *rawEntry, err error) error {
	if errors.Is(err, ErrUnknownKind) {
		c.emit(Finding{Kind: KindUnknownEntry, LogIndex: index, Log: c.res.Log, Detail: err.Error()})
		return nil
	}
	if err != nil {
		return &CheckError{Check: "entry", Index: index, Err: err}
	}
	c.buf = c.buf[:0]
	for i := range e.signers {
		s := &e.signers[i]
		var fd Finding
		switch {
		case s.cert && c.opts.Identities != nil:
			if !c.mayHold(s) {
				continue
			}
			if c.buf, err = s.decode(c.buf); err != nil {
				return &CheckError{Check: "entry", Index: index, Err: fmt.Errorf("%w: signature %d: certificate: %v", ErrEntry, i, err)}
			}
			if identityView(s.der, &c.view) {
				if !c.opts.Identities.MayMatch(&c.view) {
					continue // the names do not match: the certificate does not
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
			fd = e.finding(index, c.res.Log)
			fd.Identity, fd.Issuer, fd.Source = m.Identity, m.Issuer, m.Source
			c.res.Watched++
			if c.opts.Released.releasedIn(fd.Digest, c.logs) {
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
			if c.buf, err = s.decode(c.buf); err != nil {
				return &CheckError{Check: "entry", Index: index, Err: fmt.Errorf("%w: signature %d: public key: %v", ErrEntry, i, err)}
			}
			id, ok := c.keys[sha256.Sum256(s.der)]
			if !ok {
				continue
			}
			if _, err := x509.ParsePKIXPublicKey(s.der); err != nil {
				return &CheckError{Check: "entry", Index: index, Err: fmt.Errorf("%w: signature %d: public key: %v", ErrEntry, i, err)}
			}
			fd = e.finding(index, c.res.Log)
			fd.KeyID = id
			c.res.Watched++
			if c.opts.Released.releasedIn(fd.Digest, c.logs) {
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

// mayHold reports whether s may be a watched identity's certificate by
// the needles (its base64, or its DER when the needles are too short).
func (c *checker) mayHold(s *rawSigner) bool {
	if c.needles == nil {
		return true
	}
	c.tried++
	var ok bool
	if c.b64 != nil && s.der == nil {
		ok = c.b64.mayHold(s.b64)
	} else {
		if c.buf, _ = s.decode(c.buf); s.der == nil {
			return true // the caller reports the base64
		}
		ok = c.needles.mayHold(s.der)
	}
	if ok {
		c.held++
	}
	if c.tried == 256 && c.held > c.tried/2 {
		c.needles, c.b64 = nil, nil
	}
	return ok
}

// finding is a finding about e.
func (e *rawEntry) finding(index int64, log string) Finding {
	return Finding{LogIndex: index, Log: log, Digest: e.Digest(), EntryKind: e.kind + " " + e.apiVersion, IntegratedTime: e.integrated}
}
