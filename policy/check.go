package policy

import (
	"fmt"
	"io"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// BlockedError is Check's error for a policy that reads but blocks
// servers: each names no identity and refuses unsigned servers.
type BlockedError struct {
	// Servers is how many servers are blocked.
	Servers int
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%d server(s) blocked by the policy", e.Servers)
}

// Check reads the policy file at path as verification reads it (Read, and
// CheckFiles: every file it names) and writes what each server would
// require (WriteCheckText), as 'mcpsign policy check' does. A policy that
// blocks servers is a *BlockedError, after the text that says why.
func Check(path string, w io.Writer) error {
	f, err := Read(path)
	if err != nil {
		return err
	}
	if err := f.CheckFiles(); err != nil {
		return err
	}
	if blocked := f.WriteCheckText(w); blocked > 0 {
		return &BlockedError{Servers: blocked}
	}
	return nil
}

// WriteInit writes the starting-point policy (InitTemplate) to path,
// atomically, replacing a file there only with overwrite (else an error
// wrapping atomicfile.ErrExists).
func WriteInit(path string, overwrite bool) error {
	return atomicfile.Write(path, InitTemplate(), atomicfile.Options{Perm: 0o644, Overwrite: overwrite})
}
