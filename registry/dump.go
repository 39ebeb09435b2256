package registry

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
}

// DumpWriter writes passing entries as a registry dump: a JSON array of
// server.json documents (the official registry's seed format), each with
// _meta[VerifiedMember]. ReadDump reads it back.
type DumpWriter struct {
	w *bufio.Writer
	n int
}

// NewDumpWriter starts a dump on w.
func NewDumpWriter(w io.Writer) *DumpWriter {
	return &DumpWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Add writes the entry of a verified result; a result that did not
// verify is refused.
func (d *DumpWriter) Add(r *Result) error {
	if !r.Verified || r.entry == nil {
		return fmt.Errorf("registry: %s %s did not verify: not written to the dump", r.Name, r.Version)
	}
	block, _ := json.Marshal(VerifiedBlock{Signers: r.Signers, Bundles: r.Bundles, Policy: r.Policy, VerifiedAt: r.VerifiedAt})
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
	_, err = d.w.Write(compact(doc))
	return err
}

// Close ends the array and flushes; an empty dump is "[]".
func (d *DumpWriter) Close() error {
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
	p *atomicfile.Pending
}

// CreateDump starts a verified dump at path (replacing a file there on
// Commit).
func CreateDump(path string) (*DumpFile, error) {
	p, err := atomicfile.Create(path, atomicfile.Options{Overwrite: true})
	if err != nil {
		return nil, err
	}
	return &DumpFile{DumpWriter: NewDumpWriter(p), p: p}, nil
}

// Commit ends the dump and moves it to its path.
func (d *DumpFile) Commit() error {
	if err := d.DumpWriter.Close(); err != nil {
		d.p.Abort()
		return err
	}
	return d.p.Commit()
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
	// was. A failure to create or commit it is a *DumpError.
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
	sum, err := v.Run(ctx, List(ctx, src, o.Client, o.Stdin), o.RunOptions)
	if err == nil && dump != nil {
		if err := dump.Commit(); err != nil {
			return sum, &DumpError{Err: err}
		}
	}
	return sum, err
}
