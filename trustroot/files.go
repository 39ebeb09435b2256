package trustroot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

// WrittenFunc is told of each file WriteFile and FetchFiles write: its
// path and the SHA-256 of its contents, in hex.
type WrittenFunc func(path, sha256Hex string)

// WriteFile writes data to path atomically, an existing file replaced only
// with overwrite, and then tells written (when not nil).
func WriteFile(path string, data []byte, overwrite bool, written WrittenFunc) error {
	if err := atomicfile.Write(path, data, atomicfile.Options{Overwrite: overwrite}); err != nil {
		return err
	}
	if written != nil {
		sum := sha256.Sum256(data)
		written(path, hex.EncodeToString(sum[:]))
	}
	return nil
}

// FetchFilesOptions name the files FetchFiles writes.
type FetchFilesOptions struct {
	// TrustedRoot is the file of the trusted root (required).
	TrustedRoot string
	// SigningConfig, when not "", is the file of the repository's signing
	// configuration.
	SigningConfig string
	// Overwrite replaces existing files.
	Overwrite bool
	// Written is told of each file written (WriteFile).
	Written WrittenFunc
}

// FetchFiles fetches the trusted root (FetchTrustedRootJSON) and, when
// files.SigningConfig is set, the signing configuration
// (FetchSigningConfigJSON) of the TUF repository opts name, and writes
// them (WriteFile). The files are checked to be writable before anything
// is fetched, and nothing is written unless both were fetched.
func FetchFiles(ctx context.Context, opts Options, files FetchFilesOptions) error {
	for _, p := range []string{files.TrustedRoot, files.SigningConfig} {
		if p == "" {
			continue
		}
		if err := atomicfile.Check(p, atomicfile.Options{Overwrite: files.Overwrite}); err != nil {
			return err
		}
	}
	data, err := FetchTrustedRootJSON(ctx, opts)
	if err != nil {
		return err
	}
	var sc []byte
	if files.SigningConfig != "" {
		if sc, err = FetchSigningConfigJSON(ctx, opts); err != nil {
			return err
		}
	}
	if err := WriteFile(files.TrustedRoot, data, files.Overwrite, files.Written); err != nil || files.SigningConfig == "" {
		return err
	}
	return WriteFile(files.SigningConfig, sc, files.Overwrite, files.Written)
}

// ReadFileReport reads the trusted root file at path (at most
// MaxTrustedRootBytes) and describes it at now (DescribeFile). A file that
// does not parse is an error that names it, escaped.
func ReadFileReport(path string, now time.Time) (*FileReport, error) {
	data, err := boundedfile.Read(path, MaxTrustedRootBytes, nil)
	if err != nil {
		return nil, err
	}
	tr, err := ParseTrustedRoot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return DescribeFile(path, data, tr, now), nil
}

// The kinds of entries of a trusted root, as an EntriesError names them.
const (
	KindCertificateAuthority = "certificate authority"
	KindTimestampAuthority   = "timestamp authority"
	KindTransparencyLog      = "transparency log"
	KindCTLog                = "CT log"
)

// EntriesError is the error of the Entries of one kind (a *PartError,
// *TimeError or *FileError) in EntrySet.CreateOptions.
type EntriesError struct {
	// Kind is KindCertificateAuthority, KindTimestampAuthority,
	// KindTransparencyLog or KindCTLog.
	Kind string
	Err  error
}

func (e *EntriesError) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *EntriesError) Unwrap() error { return e.Err }

// EntrySet are the entries of a trusted root, each kind as Entries (what a
// command line gives).
type EntrySet struct {
	CertificateAuthorities Entries
	TimestampAuthorities   Entries
	TransparencyLogs       Entries
	CTLogs                 Entries
}

// CreateOptions reads the entries into the CreateOptions of Create; an
// entry that cannot be read is an *EntriesError.
func (s *EntrySet) CreateOptions() (CreateOptions, error) {
	var opts CreateOptions
	var err error
	if opts.CertificateAuthorities, err = s.CertificateAuthorities.Authorities(); err != nil {
		return opts, &EntriesError{KindCertificateAuthority, err}
	}
	if opts.TimestampAuthorities, err = s.TimestampAuthorities.Authorities(); err != nil {
		return opts, &EntriesError{KindTimestampAuthority, err}
	}
	if opts.TransparencyLogs, err = s.TransparencyLogs.Logs(); err != nil {
		return opts, &EntriesError{KindTransparencyLog, err}
	}
	if opts.CTLogs, err = s.CTLogs.Logs(); err != nil {
		return opts, &EntriesError{KindCTLog, err}
	}
	return opts, nil
}
