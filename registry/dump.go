package registry

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// VerifiedBlock is the value of _meta[VerifiedMember] in a verified dump
// (docs/REGISTRY.md, "Verified dump").
type VerifiedBlock struct {
	// Signers are who signed, as Result.Signers.
	Signers []Signer `json:"signers"`
	// Bundles are the digests of the bundles that verified.
	Bundles []string `json:"bundles"`
	// Policy is the policy server name that governed the entry.
	Policy string `json:"policy"`
	// VerifiedAt is when, RFC 3339 UTC.
	VerifiedAt string `json:"verifiedAt"`
	// Status is the registry's status of the entry when it was verified
	// (active, deprecated), when the source gave one.
	Status string `json:"status,omitempty"`
	// Bound are the JSON Pointers (in the server.json of the dump) of the
	// members the signed statement binds; every other member is
	// informational (docs/REGISTRY.md, "What each member of server.json
	// is").
	Bound []string `json:"bound"`
}

// DumpWriter writes passing entries as a registry dump: a JSON array of
// server.json documents (the official registry's seed format), each with
// _meta[VerifiedMember]. ReadDump reads it back.
type DumpWriter struct {
	w *bufio.Writer
	n int
	// off is the number of bytes written; spans where each entry is, for
	// a withdrawal (withdraw) before DumpFile.Commit.
	off   int64
	spans []dumpSpan
	drop  map[[16]byte]bool
}

type dumpSpan struct {
	key        [16]byte
	start, end int64
}

// withdraw marks the entries of key (a name and version listed twice)
// to be left out: DumpFile.Commit writes the dump without them; Close of
// a DumpWriter over another writer, where the bytes are gone, fails.
func (d *DumpWriter) withdraw(key [16]byte) {
	if d.drop == nil {
		d.drop = map[[16]byte]bool{}
	}
	d.drop[key] = true
}

// NewDumpWriter starts a dump on w.
func NewDumpWriter(w io.Writer) *DumpWriter {
	return &DumpWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Add writes the entry of a verified result; a result that did not
// verify is refused.
func (d *DumpWriter) Add(r *Result) error {
	return d.add(r, dupKey(r.Name, r.Version))
}

func (d *DumpWriter) add(r *Result, key [16]byte) error {
	if !r.Verified || r.entry == nil {
		return fmt.Errorf("registry: %s %s did not verify: not written to the dump", r.Name, r.Version)
	}
	block, _ := json.Marshal(VerifiedBlock{Signers: r.Signers, Bundles: r.Bundles, Policy: r.Policy, VerifiedAt: r.VerifiedAt,
		Status: r.Status, Bound: r.entry.Bound})
	doc, err := WithVerified(r.entry.Server, block)
	if err != nil {
		return err
	}
	sep := ",\n"
	if d.n == 0 {
		sep = "[\n"
	}
	d.n++
	if _, err := d.w.WriteString(sep); err != nil {
		return err
	}
	c := compact(doc)
	start := d.off + int64(len(sep))
	d.off = start + int64(len(c))
	d.spans = append(d.spans, dumpSpan{key: key, start: start, end: d.off})
	_, err = d.w.Write(c)
	return err
}

// Close ends the array and flushes; an empty dump is "[]".
func (d *DumpWriter) Close() error {
	if len(d.drop) > 0 {
		return errors.New("registry: an entry written to the dump was withdrawn (its name and version listed twice): the dump is not valid")
	}
	end := "\n]\n"
	if d.n == 0 {
		end = "[]\n"
	}
	if _, err := d.w.WriteString(end); err != nil {
		return err
	}
	return d.w.Flush()
}

// DumpFile is a verified dump written to a file: it appears at its path
// only whole, on Commit (internal/atomicfile); Abort, or any failure,
// leaves the path as it was.
type DumpFile struct {
	*DumpWriter
	p    *atomicfile.Pending
	path string
}

// CreateDump starts a verified dump at path (replacing a file there on
// Commit).
func CreateDump(path string) (*DumpFile, error) {
	p, err := atomicfile.Create(path, atomicfile.Options{Overwrite: true})
	if err != nil {
		return nil, err
	}
	return &DumpFile{DumpWriter: NewDumpWriter(p), p: p, path: path}, nil
}

// Commit ends the dump and moves it to its path. Entries withdrawn
// (their name and version listed twice) are left out: the dump is then
// written again without them.
func (d *DumpFile) Commit() error {
	if len(d.drop) > 0 {
		return d.rewrite()
	}
	if err := d.DumpWriter.Close(); err != nil {
		d.p.Abort()
		return err
	}
	return d.p.Commit()
}

// rewrite writes the dump anew without the withdrawn entries.
func (d *DumpFile) rewrite() error {
	defer d.p.Abort()
	if err := d.w.Flush(); err != nil {
		return err
	}
	np, err := atomicfile.Create(d.path, atomicfile.Options{Overwrite: true})
	if err != nil {
		return err
	}
	defer np.Abort()
	out := NewDumpWriter(np)
	for _, sp := range d.spans {
		if d.drop[sp.key] {
			continue
		}
		sep := ",\n"
		if out.n == 0 {
			sep = "[\n"
		}
		out.n++
		if _, err := out.w.WriteString(sep); err != nil {
			return err
		}
		if _, err := io.Copy(out.w, io.NewSectionReader(d.p.ReaderAt(), sp.start, sp.end-sp.start)); err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	return np.Commit()
}

// Abort drops the dump; after Commit it does nothing.
func (d *DumpFile) Abort() { d.p.Abort() }

// PointerDigest is the bundleDigest of a bundle's bytes: "sha256:" and
// the lowercase hex SHA-256.
func PointerDigest(bundle []byte) string {
	h := sha256.Sum256(bundle)
	return "sha256:" + hex.EncodeToString(h[:])
}

// SourceOptions configure Verifier.RunSource.
type SourceOptions struct {
	RunOptions
	// Client reads a registry base URL, Stdin the source "-" (List).
	Client Client
	Stdin  io.Reader
	// VerifiedOut, when not "", is the file the entries that verified are
	// written to as a dump (CreateDump, RunOptions.Verified). It appears
	// only when the whole run succeeded: any failure leaves the path as it
	// was, an interrupted run (ErrInterrupted) too. A failure to create or
	// commit it is a *DumpError.
	VerifiedOut string
}

// DumpError is RunSource's failure to create or commit the verified dump.
type DumpError struct{ Err error }

func (e *DumpError) Error() string { return e.Err.Error() }
func (e *DumpError) Unwrap() error { return e.Err }

// RunSource is Run over the listing of src (List), as a sub-registry's
// ingest runs it: the entries that verified are written to
// o.VerifiedOut, whole or not at all.
func (v *Verifier) RunSource(ctx context.Context, src string, o SourceOptions) (Summary, error) {
	var dump *DumpFile
	if o.VerifiedOut != "" {
		var err error
		if dump, err = CreateDump(o.VerifiedOut); err != nil {
			return Summary{}, &DumpError{Err: err}
		}
		defer dump.Abort() // nothing half-written on any failure
		o.Verified = dump.DumpWriter
	}
	sum, err := v.RunAt(ctx, ListAt(ctx, src, o.Client, o.Stdin), o.RunOptions)
	if err == nil && ctx.Err() != nil {
		// Stopped after the source's last entry: still interrupted.
		err = fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	if err == nil && dump != nil {
		if err := dump.Commit(); err != nil {
			return sum, &DumpError{Err: err}
		}
	}
	return sum, err
}
