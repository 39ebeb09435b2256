// Package audit is the hash-chained audit log (docs/AUDIT.md): one JSON
// object per line recording an approval, a roll-forward, a block, a warning
// or a refused lock, each carrying the SHA-256 of the line before it, so that
// a removed, edited or reordered line breaks the chain.
//
// Append adds an event under an exclusive file lock and fsyncs it (AppendAt
// hands the log's head to a lock writer, which records it); Scan and Verify
// read a log strictly and check its chain, its order and its anchors;
// Repair mends the last line a killed writer left.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Kind is what an event records.
type Kind string

// Event kinds (docs/AUDIT.md).
const (
	// Approved: a lock was written that approves definitions it did not
	// hold before (pin, verify --write-lock, approve, a proxy's first use).
	Approved Kind = "approved"
	// RolledForward: a signed update replaced the lock (proxy).
	RolledForward Kind = "rolled-forward"
	// Blocked: definitions that the lock does not approve were refused.
	Blocked Kind = "blocked"
	// Warned: drift was found and let through (a warn mode).
	Warned Kind = "warned"
	// LockRefused: a lock could not be used (unreadable, modified, changed
	// by another process) or a requested approval was refused.
	LockRefused Kind = "lock-refused"
)

// Valid reports whether k is a known event kind.
func (k Kind) Valid() bool {
	switch k {
	case Approved, RolledForward, Blocked, Warned, LockRefused:
		return true
	}
	return false
}

// approval reports whether an event of kind k carries evidence (otherwise
// it carries findings).
func (k Kind) approval() bool { return k == Approved || k == RolledForward }

// MaxLineBytes bounds one line of the log, its newline included: a writer
// refuses a longer event and a reader a longer line.
const MaxLineBytes = 1 << 20

// Sets are the Set Digests of the definitions an event is about.
type Sets struct {
	Tools             string `json:"tools"`
	Prompts           string `json:"prompts"`
	ResourceTemplates string `json:"resourceTemplates"`
}

// Evidence is what an approval rested on: the lock's approval (docs/LOCK.md).
type Evidence struct {
	// Method is the approval method: sigstore, key, certificate, tofu or
	// manual.
	Method string `json:"method"`
	// Identity, Issuer and BundleDigest are the verified signer, its OIDC
	// issuer and the bundle's digest; "" when there is none.
	Identity     string `json:"identity"`
	Issuer       string `json:"issuer"`
	BundleDigest string `json:"bundleDigest"`
	// LogIndex is the verified transparency log entry's index, when any.
	LogIndex *int64 `json:"logIndex,omitempty"`
	// Approver, Reason, SourceRevision and PreviousLockDigest are those of
	// a manual approval.
	Approver           string `json:"approver,omitempty"`
	Reason             string `json:"reason,omitempty"`
	SourceRevision     string `json:"sourceRevision,omitempty"`
	PreviousLockDigest string `json:"previousLockDigest,omitempty"`
}

// Event is one line of the log.
type Event struct {
	// Time is when the event happened; written in UTC.
	Time  time.Time
	Event Kind
	// Server is the server's name and version (as the lock or the server
	// says).
	Server digest.ServerInfo
	// LockBefore and LockAfter are the lockDigest of the lock before and
	// after the event; "" when there was none (written as null).
	LockBefore, LockAfter string
	// Sets are the Set Digests of the definitions seen; nil when they have
	// none (a definition that cannot be digested) or none were read.
	Sets *Sets
	// Instructions is the Instructions Digest; "" when the server sent none.
	Instructions string
	// Evidence is set for Approved and RolledForward, Findings (at least
	// one) for the other kinds.
	Evidence *Evidence
	Findings []string
	// Changes, of an Approved or RolledForward event that replaced a lock,
	// say what changed from it: the drift findings ("pin-tool-added
	// tool/x"), a capability gained with the capabilities
	// ("pin-capability-added tool/x: exec"); nil when nothing was replaced.
	Changes []string
	// Prev is the digest of the previous line ("" for the first line),
	// set by Append and by the reader.
	Prev string
}

// wire is an event as written: members in the order of docs/AUDIT.md.
type wire struct {
	Time         string            `json:"time"`
	Event        Kind              `json:"event"`
	Server       digest.ServerInfo `json:"server"`
	LockBefore   *string           `json:"lockBefore"`
	LockAfter    *string           `json:"lockAfter"`
	Sets         *Sets             `json:"sets"`
	Instructions *string           `json:"instructions"`
	Evidence     *Evidence         `json:"evidence,omitempty"`
	Findings     []string          `json:"findings,omitempty"`
	Changes      []string          `json:"changes,omitempty"`
	Prev         *string           `json:"prev"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Errors of reading and writing a log; a *LineError wraps one of them.
var (
	// ErrMalformed: a line is not an event of docs/AUDIT.md.
	ErrMalformed = errors.New("not an audit event")
	// ErrChain: a line's prev is not the digest of the line before it.
	ErrChain = errors.New("the hash chain is broken")
	// ErrTorn: the last line has no newline: a writer was killed while
	// writing it.
	ErrTorn = errors.New("the last line is not whole")
	// ErrOrder: a line's time is before the line before it, or its
	// lockBefore is no lock an earlier event names (and it is not the first
	// event about its server).
	ErrOrder = errors.New("the events are out of order")
	// ErrAnchor: the log does not reach an anchor (Check): a head a lock
	// recorded or one kept elsewhere.
	ErrAnchor = errors.New("the log does not reach its anchor")
)

// LineError names the line of a log that is malformed, torn or breaks the
// chain. Line counts from 1 (0: the last line, when
// a writer read only the end of the log); Offset is the byte offset where it
// starts.
type LineError struct {
	Line   int
	Offset int64
	Err    error
	Reason string
}

func (e *LineError) Error() string {
	s := fmt.Sprintf("line %d (byte %d): %v", e.Line, e.Offset, e.Err)
	if e.Line <= 0 {
		s = fmt.Sprintf("the last line (byte %d): %v", e.Offset, e.Err)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func (e *LineError) Unwrap() error { return e.Err }

// LineDigest is the digest a next line's prev holds: "sha256:" and the
// lowercase hex SHA-256 of the line's bytes without its newline.
func LineDigest(line []byte) string {
	h := sha256.Sum256(line)
	return digest.Prefix + hex.EncodeToString(h[:])
}

// Marshal returns e as one line of the log, without its newline, with prev
// as its prev member ("" for null). It checks what ParseLine checks.
func (e *Event) Marshal() ([]byte, error) {
	w := wire{
		Time:         e.Time.UTC().Format(time.RFC3339Nano),
		Event:        e.Event,
		Server:       e.Server,
		LockBefore:   orNull(e.LockBefore),
		LockAfter:    orNull(e.LockAfter),
		Sets:         e.Sets,
		Instructions: orNull(e.Instructions),
		Evidence:     e.Evidence,
		Findings:     e.Findings,
		Changes:      e.Changes,
		Prev:         orNull(e.Prev),
	}
	if err := w.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	line := ASCII(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	if len(line)+1 > MaxLineBytes {
		return nil, fmt.Errorf("the event is %d bytes, more than a line may hold (%d)", len(line)+1, MaxLineBytes)
	}
	return line, nil
}

// ASCII returns the JSON text line with every character outside printable
// ASCII (U+0080 and above, and DEL) written as a \u escape (a UTF-16
// surrogate pair above U+FFFF): the same JSON values, safe to print on a
// terminal. encoding/json has already escaped the other control
// characters; outside strings a JSON text is ASCII, so only string contents
// change. Invalid UTF-8 becomes U+FFFD (a line that reads has none).
func ASCII(line []byte) []byte {
	ascii := true
	for _, c := range line {
		if c >= 0x7f {
			ascii = false
			break
		}
	}
	if ascii {
		return line
	}
	out := make([]byte, 0, len(line)+32)
	for _, r := range string(line) {
		switch {
		case r < 0x7f:
			out = append(out, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		default:
			out = fmt.Appendf(out, "\\u%04x", r)
		}
	}
	return out
}

func (w *wire) validate() error {
	if !w.Event.Valid() {
		return fmt.Errorf("event %s is not approved, rolled-forward, blocked, warned or lock-refused", textsafe.RawQuote(string(w.Event)))
	}
	if w.Time == "" || w.Time == (time.Time{}).Format(time.RFC3339Nano) {
		return errors.New("time is missing")
	}
	for name, p := range map[string]*string{"lockBefore": w.LockBefore, "lockAfter": w.LockAfter, "instructions": w.Instructions, "prev": w.Prev} {
		if p != nil && !digest.ValidDigest(*p) {
			return fmt.Errorf("%s %s is not sha256: and 64 lowercase hex digits", name, textsafe.RawQuote(*p))
		}
	}
	if s := w.Sets; s != nil {
		for _, d := range []string{s.Tools, s.Prompts, s.ResourceTemplates} {
			if !digest.ValidDigest(d) {
				return fmt.Errorf("sets: %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(d))
			}
		}
	}
	strs := []string{w.Server.Name, w.Server.Version}
	switch {
	case w.Event.approval() && (w.Evidence == nil || w.Findings != nil):
		return fmt.Errorf("a %s event has evidence and no findings", w.Event)
	case !w.Event.approval() && (w.Evidence != nil || len(w.Findings) == 0):
		return fmt.Errorf("a %s event has findings (at least one) and no evidence", w.Event)
	case w.Changes != nil && (!w.Event.approval() || len(w.Changes) == 0):
		return errors.New("changes are those of an approval, and never empty (left out when none)")
	case w.Evidence != nil:
		v := w.Evidence
		if v.Method == "" {
			return errors.New("evidence method is missing")
		}
		if v.BundleDigest != "" && !digest.ValidDigest(v.BundleDigest) {
			return fmt.Errorf("evidence bundleDigest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(v.BundleDigest))
		}
		if v.PreviousLockDigest != "" && !digest.ValidDigest(v.PreviousLockDigest) {
			return fmt.Errorf("evidence previousLockDigest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(v.PreviousLockDigest))
		}
		if v.LogIndex != nil && (*v.LogIndex < 0 || *v.LogIndex >= 1<<53) {
			return errors.New("evidence logIndex must be an integer from 0 to 2^53-1")
		}
		strs = append(strs, v.Method, v.Identity, v.Issuer, v.Approver, v.Reason, v.SourceRevision)
	}
	strs = append(strs, w.Findings...)
	strs = append(strs, w.Changes...)
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return errors.New("a string is not valid UTF-8")
		}
	}
	return nil
}

// ParseLine reads one line of the log (without its newline) strictly: a JSON
// object read by the strict reader of DIGEST.md (no repeated member names,
// valid UTF-8, RFC 8259 numbers below 2^53), with exactly the members of
// docs/AUDIT.md spelled exactly, of the right types and forms, in the one
// spelling Marshal writes for the values (so that a line has one form).
// Errors wrap ErrMalformed.
func ParseLine(line []byte) (*Event, error) {
	e, err := parseLine(line)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return e, nil
}

func parseLine(line []byte) (*Event, error) {
	canon, err := digest.Canonicalize(line)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 || line[0] != '{' {
		return nil, errors.New("a line is one JSON object")
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	if err := w.validate(); err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return nil, fmt.Errorf("time is not RFC 3339: %w", err)
	}
	if t.UTC().Format(time.RFC3339Nano) != w.Time {
		return nil, fmt.Errorf("time %s is not written in UTC as RFC 3339 (%s)", textsafe.RawQuote(w.Time), t.UTC().Format(time.RFC3339Nano))
	}
	// encoding/json matches member names case-insensitively, takes null
	// for an empty value and lets members be missing: compare what was
	// read, written again, with the line, both in RFC 8785 form.
	again, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if canon2, err := digest.Canonicalize(again); err != nil || !bytes.Equal(canon, canon2) {
		return nil, errors.New("members are missing, misspelled, of the wrong type or not in their one form (docs/AUDIT.md)")
	}
	return &Event{
		Time: t.UTC(), Event: w.Event, Server: w.Server,
		LockBefore: deref(w.LockBefore), LockAfter: deref(w.LockAfter),
		Sets: w.Sets, Instructions: deref(w.Instructions),
		Evidence: w.Evidence, Findings: w.Findings, Changes: w.Changes, Prev: deref(w.Prev),
	}, nil
}
