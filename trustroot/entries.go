package trustroot

import (
	"fmt"
	"time"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Entries are the entries of one kind of CreateOptions as files and text,
// as a command line gives them: one PEM file per entry (a chain for an
// authority, a key for a log), and the other parts by position (the
// second URL belongs to the second file); a part not given is "" (the
// default). Times are RFC 3339.
type Entries struct {
	Files   []string
	URLs    []string
	Origins []string
	Starts  []string
	Ends    []string
}

// The parts of an entry, as a PartError or a TimeError names them.
const (
	PartFile   = "file"
	PartURL    = "url"
	PartOrigin = "origin"
	PartStart  = "start"
	PartEnd    = "end"
)

// PartError is a part given more times than there are files: each belongs
// to the file at its position.
type PartError struct {
	Part       string
	Got, Files int
}

func (e *PartError) Error() string {
	return fmt.Sprintf("%s given %d times but only %d files", e.Part, e.Got, e.Files)
}

// TimeError is a start or end that is not an RFC 3339 time.
type TimeError struct {
	Part, Value string
}

func (e *TimeError) Error() string {
	return fmt.Sprintf("%s %s: want an RFC 3339 time such as 2025-01-31T00:00:00Z", e.Part, textsafe.RawQuote(e.Value))
}

// FileError is a PEM file that cannot be read.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// entry is one entry's parts after reading.
type entry struct {
	pem         []byte
	url, origin string
	start, end  time.Time
}

func (es Entries) read() ([]entry, error) {
	n := len(es.Files)
	parts := [][]string{es.URLs, es.Origins, es.Starts, es.Ends}
	for i, p := range []string{PartURL, PartOrigin, PartStart, PartEnd} {
		if len(parts[i]) > n {
			return nil, &PartError{Part: p, Got: len(parts[i]), Files: n}
		}
		parts[i] = append(parts[i][:len(parts[i]):len(parts[i])], make([]string, n-len(parts[i]))...)
	}
	out := make([]entry, n)
	for i, path := range es.Files {
		data, err := boundedfile.Read(path, MaxPEMBytes, nil)
		if err != nil {
			return nil, &FileError{Path: path, Err: err}
		}
		e := entry{pem: data, url: parts[0][i], origin: parts[1][i]}
		if e.start, err = parseTime(PartStart, parts[2][i]); err != nil {
			return nil, err
		}
		if e.end, err = parseTime(PartEnd, parts[3][i]); err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func parseTime(part, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, &TimeError{Part: part, Value: v}
	}
	return t, nil
}

// Authorities reads the entries as certificate or timestamping
// authorities: each file a PEM chain (Origins must be empty).
func (es Entries) Authorities() ([]Authority, error) {
	entries, err := es.read()
	if err != nil {
		return nil, err
	}
	var out []Authority
	for _, e := range entries {
		out = append(out, Authority{ChainPEM: e.pem, URI: e.url, Start: e.start, End: e.end})
	}
	return out, nil
}

// Logs reads the entries as transparency or CT logs: each file a PEM
// public key.
func (es Entries) Logs() ([]Log, error) {
	entries, err := es.read()
	if err != nil {
		return nil, err
	}
	var out []Log
	for _, e := range entries {
		out = append(out, Log{KeyPEM: e.pem, BaseURL: e.url, Origin: e.origin, Start: e.start, End: e.end})
	}
	return out, nil
}
