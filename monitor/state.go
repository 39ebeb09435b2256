package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// StateKind and StateVersion identify a monitor state file
// (docs/MONITOR.md).
const (
	StateKind    = "mcpsign.monitor-state"
	StateVersion = 1
	// maxStateFile bounds the state file.
	maxStateFile = 64 << 10
)

// State is what a run leaves for the next: the log and its last checkpoint
// checked.
type State struct {
	Kind         string   `json:"kind"`
	StateVersion int      `json:"stateVersion"`
	Log          StateLog `json:"log"`
	// Checkpoint is the signed note of the last checkpoint checked, as
	// the log served it.
	Checkpoint string `json:"checkpoint"`
}

// StateLog names the log a state is for.
type StateLog struct {
	// Origin is the checkpoint origin.
	Origin string `json:"origin"`
	// URL is where the log was read (informational).
	URL string `json:"url"`
}

// ParseState reads a state file's bytes strictly: one JSON object of kind
// StateKind and version StateVersion, no unknown or repeated member. The
// checkpoint's signature is checked later, against the log key.
func ParseState(data []byte) (*State, error) {
	if len(data) > maxStateFile {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrState, maxStateFile)
	}
	if err := strictObject(data, "", "kind", "stateVersion", "log", "checkpoint"); err != nil {
		return nil, err
	}
	_, vals, _ := digest.Members(data)
	if k, err := digest.DecodeString(vals["kind"]); err != nil || k != StateKind {
		return nil, fmt.Errorf("%w: not an mcpsign monitor state (kind must be %s)", ErrState, textsafe.RawQuote(StateKind))
	}
	if string(vals["stateVersion"]) != strconv.Itoa(StateVersion) {
		return nil, fmt.Errorf("%w: stateVersion %s, this mcpsign reads %d", ErrState, truncate(vals["stateVersion"]), StateVersion)
	}
	if err := strictObject(vals["log"], "log", "origin", "url"); err != nil {
		return nil, err
	}
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if st.Log.Origin == "" {
		return nil, fmt.Errorf("%w: log.origin is empty", ErrState)
	}
	if st.Checkpoint == "" {
		return nil, fmt.Errorf("%w: checkpoint is empty", ErrState)
	}
	return &st, nil
}

// strictObject checks that data is a JSON object whose members are all
// in known (each present, none repeated or a case variant).
func strictObject(data []byte, at string, known ...string) error {
	where := at
	if where == "" {
		where = "the state"
	}
	names, vals, err := digest.Members(data)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrState, where, err)
	}
	if err := digest.CheckCaseVariants(names, known...); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrState, where, err)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("%w: %s: unknown member %s (known: %s)", ErrState, where, textsafe.RawQuote(n), strings.Join(known, ", "))
		}
	}
	for _, k := range known {
		if _, ok := vals[k]; !ok {
			return fmt.Errorf("%w: %s: member %s is missing", ErrState, where, textsafe.RawQuote(k))
		}
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 32 {
		return textsafe.RawQuote(string(b[:32])) + "…"
	}
	return textsafe.RawQuote(string(b))
}

// ReadState reads the state file at path; a missing file is
// fs.ErrNotExist (wrapped).
func ReadState(path string) (*State, error) {
	data, err := boundedfile.Read(path, maxStateFile, ErrState)
	if err != nil {
		return nil, err
	}
	st, err := ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// Marshal returns the state file's bytes.
func (s *State) Marshal() ([]byte, error) {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// WriteState writes st to path atomically (internal/atomicfile),
// replacing the previous state.
func WriteState(path string, st *State) error {
	data, err := st.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, atomicfile.Options{Perm: 0o600, Overwrite: true})
}
