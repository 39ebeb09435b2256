// Package boundedfile reads the files whose size mcpsign bounds (bundles,
// locks, keys, certificates, trusted roots, tokens), so that a huge or
// endless file is refused after at most limit+1 bytes instead of filling
// memory.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by the error of a file larger than its limit when
// the caller names no error of its own.
var ErrTooLarge = errors.New("file too large")

// Read reads the file at path, refusing one of more than limit bytes. The
// error of a file too large says the path and the limit and wraps tooLarge
// (ErrTooLarge when nil), so that callers keep their own typed errors; an
// error opening the file is os.Open's (it names the path), an error reading
// it is wrapped with the path.
//
// A named pipe is opened without waiting for its writer (openFlags), so that
// a path to a FIFO nobody writes reads as empty instead of hanging; a pipe
// with a writer, such as a shell's /dev/fd/N, is read to its end.
func Read(path string, limit int64, tooLarge error) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit, tooLarge)
}

// Open opens the file at path for reading as Read does, a named pipe
// without waiting for its writer, for a caller that streams a file too
// large to read whole (a registry dump) and bounds what it reads itself.
func Open(path string) (*os.File, error) {
	return os.OpenFile(path, openFlags, 0)
}

// MaxBundleBytes bounds a Sigstore bundle, wherever it comes from (a file, a
// server's hello, an HTTPS URL): larger ones are refused before parsing.
const MaxBundleBytes = 16 << 20

// ReadAll reads r to its end, refusing more than limit bytes after reading
// at most limit+1. The error of a stream too large wraps tooLarge
// (ErrTooLarge when nil); what names the stream in errors.
func ReadAll(r io.Reader, what string, limit int64, tooLarge error) ([]byte, error) {
	if tooLarge == nil {
		tooLarge = ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", what, tooLarge, limit)
	}
	return data, nil
}
