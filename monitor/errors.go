package monitor

import (
	"errors"
	"fmt"
)

// Sentinel errors; a *CheckError wraps one of them with where it happened.
var (
	// ErrCheckpoint: the log's checkpoint is malformed, not signed by the
	// log key of the trusted root, or for another origin.
	ErrCheckpoint = errors.New("checkpoint not verified")
	// ErrTileHash: an entry bundle does not hash to the tree the
	// checkpoint commits to.
	ErrTileHash = errors.New("entry bundle does not hash to the tree")
	// ErrInclusion: a Rekor v1 entry is not proven part of the tree the
	// checkpoint commits to.
	ErrInclusion = errors.New("entry not proven in the tree")
	// ErrBundleFormat: an entry bundle is not tlog-tiles framing, or holds
	// more or fewer entries than the tree says.
	ErrBundleFormat = errors.New("malformed entry bundle")
	// ErrEntry: a log entry does not parse as a Rekor v2 entry.
	ErrEntry = errors.New("malformed log entry")
	// ErrFetch: the log could not be read.
	ErrFetch = errors.New("reading the log failed")
	// ErrNotLog: the URL serves no log this monitor reads: neither a
	// tlog-tiles checkpoint nor the Rekor v1 API (e.g. a Rekor v2 log's
	// write API, which serves no tiles; docs/MONITOR.md).
	ErrNotLog = errors.New("no transparency log to read at this URL")
	// ErrState: the state file is not an mcpsign monitor state, or is for
	// another log.
	ErrState = errors.New("invalid monitor state")
	// ErrNoLog: the trusted root has no log that signs the checkpoint.
	ErrNoLog = errors.New("no log of the trusted root for this checkpoint")
	// ErrKeyID: a watched key ID (Options.KeyIDs) is not "sha256:" and 64
	// lowercase hex digits, as verify.KeyID writes it.
	ErrKeyID = errors.New("invalid watched key ID")
	// ErrInconsistent: the log's checkpoint is not consistent with the
	// stored one: the log forked or rewrote its history. It is also
	// reported as a finding.
	ErrInconsistent = errors.New("the log is not consistent with the stored checkpoint")
)

// CheckError is a failed check: which one, at which log index (or tile),
// and why.
type CheckError struct {
	// Check names the check ("checkpoint", "consistency", "entry bundle",
	// "tile hash", "inclusion", "entry", "fetch").
	Check string
	// Index is the log index concerned, -1 when none.
	Index int64
	// Err wraps one of the sentinel errors.
	Err error
}

func (e *CheckError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("monitor: %s: %v", e.Check, e.Err)
	}
	return fmt.Sprintf("monitor: %s at log index %d: %v", e.Check, e.Index, e.Err)
}

func (e *CheckError) Unwrap() error { return e.Err }

func checkErr(check string, index int64, sentinel error, format string, args ...any) *CheckError {
	return &CheckError{Check: check, Index: index, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
