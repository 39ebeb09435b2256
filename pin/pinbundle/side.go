package pinbundle

import (
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/diff"
	"github.com/mcpsign/mcpsign/source"
)

// MaxBytes bounds a bundle file read for a diff.
const MaxBytes = attest.MaxStatementBytes + 1<<20

// ErrNotBundle is returned by Statement for a file that is not a Sigstore
// bundle with a DSSE envelope.
var ErrNotBundle = errors.New("not a Sigstore bundle with a DSSE envelope")

// Statement reads the statement out of a Sigstore bundle's DSSE envelope
// WITHOUT verifying anything but its form: the bundle must parse
// (sigstore-go), the payload type must be in-toto, and the statement must
// pass attest.Parse. Use it to show what a bundle claims (a diff); never to
// decide what to trust.
func Statement(data []byte) (*attest.Statement, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrNotBundle, MaxBytes)
	}
	b := &bundle.Bundle{}
	bundle.AllowCertificateChain()(b)
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotBundle, err)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, fmt.Errorf("%w: it signs a message, not a DSSE envelope", ErrNotBundle)
	}
	if env.GetPayloadType() != attest.PayloadType {
		return nil, fmt.Errorf("%w: payload type %s, want %s", ErrNotBundle, textsafe.RawQuote(env.GetPayloadType()), attest.PayloadType)
	}
	return attest.Parse(env.GetPayload())
}

// ReadSideFile reads path as a side of a diff when it is a file that holds
// a lock, a Sigstore bundle or a snapshot (decided by content, see
// pin.DetectFile): a lock is checked completely (pin.Parse), a bundle's
// statement is read WITHOUT verifying its signature (the side is marked
// Unverified), a snapshot is parsed strictly. ok is false, with no error,
// when path is not such a file (a missing file, a directory, a program,
// anything else): the caller then treats it as a source (a command line or
// URL). A file that is a lock, a bundle or a snapshot but is refused is an
// error.
func ReadSideFile(path string) (side *diff.Side, ok bool, err error) {
	return readSideFile(path, MaxBytes)
}

// readSideFile is ReadSideFile with the bound on the file's size given: a
// file of at most limit bytes is read (a test holds the bound inclusive at
// a size it can write quickly).
func readSideFile(path string, limit int64) (side *diff.Side, ok bool, err error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, false, nil
	}
	data, err := boundedfile.Read(path, limit, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", textsafe.RawQuote(path), err)
	}
	switch pin.DetectFile(data) {
	case pin.FileLock:
		l, err := pin.Parse(data)
		if err != nil {
			return nil, true, &pin.LockError{Path: path, Err: err}
		}
		return pin.LockSide(path, l), true, nil
	case pin.FileBundle:
		st, err := Statement(data)
		if err != nil {
			return nil, true, fmt.Errorf("bundle %s: %w", textsafe.RawQuote(path), err)
		}
		return diff.StatementSide(path, st), true, nil
	case pin.FileSnapshot:
		s, err := digest.ParseSnapshot(data)
		if err != nil {
			return nil, true, fmt.Errorf("snapshot %s: %w", textsafe.RawQuote(path), err)
		}
		return diff.SnapshotSide(path, diff.OriginSnapshot, s), true, nil
	}
	return nil, false, nil
}

// SourceSide is the side of a diff that a source (anything ReadSideFile
// does not read) served: snap, read from the source arg as given (spec its
// parse), labelled arg, or for a URL its ShownURL (a token in its user
// info or query is not shown); a snapshot when spec names a file, else a
// live listing.
func SourceSide(arg string, spec source.Spec, snap *digest.Snapshot) *diff.Side {
	origin, label := diff.OriginLive, arg
	if spec.File != "" {
		origin = diff.OriginSnapshot
	}
	if spec.URL != "" {
		label = spec.ShownURL()
	}
	return diff.SnapshotSide(label, origin, snap)
}
