package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Status is the outcome of one definition (or the instructions) in the
// match step.
type Status string

// Match statuses. Verification passes only when every row is StatusOK.
const (
	// StatusOK: served and signed with the same digest.
	StatusOK Status = "OK"
	// StatusChanged: served and signed under the same name, different
	// digests.
	StatusChanged Status = "CHANGED"
	// StatusExtra: served but not signed.
	StatusExtra Status = "EXTRA"
	// StatusMissing: signed but not served.
	StatusMissing Status = "MISSING"
	// StatusInvalid: served but it has no digest (see digest.Compute).
	StatusInvalid Status = "INVALID"
)

// Row is the match of one definition.
type Row struct {
	Kind digest.Kind `json:"kind"`
	// Key is the definition's name (uriTemplate for a resource template);
	// "" for an invalid definition whose key could not be read.
	Key    string `json:"key"`
	Status Status `json:"status"`
	// Signed is the digest in the statement, "" when not signed.
	Signed string `json:"signedDigest,omitempty"`
	// Observed is the digest of what the server serves, "" when not
	// served or invalid.
	Observed string `json:"observedDigest,omitempty"`
	// Diff is a unified diff from the signed definition (embedded in the
	// statement) to the served one, both pretty-printed JSON, with control
	// and invisible characters escaped: safe to print. Empty unless the
	// status is CHANGED and the statement embeds definitions.
	Diff string `json:"diff,omitempty"`
	// Reason says why an INVALID definition has no digest.
	Reason string `json:"reason,omitempty"`
	// Index is the definition's position in the server's listing; -1 when
	// it is not served.
	Index int `json:"index"`
}

// InstructionsRow is the match of the server's instructions. The statement
// carries only their digest, so a change shows no diff.
type InstructionsRow struct {
	Status   Status `json:"status"`
	Signed   string `json:"signedDigest,omitempty"`
	Observed string `json:"observedDigest,omitempty"`
}

// match compares the observed snapshot with the signed statement. It
// returns every row and an error wrapping ErrMismatch unless all are OK.
func match(st *attest.Statement, snap *digest.Snapshot) ([]Row, *InstructionsRow, error) {
	obs := digest.Compute(snap)
	type kk struct {
		k   digest.Kind
		key string
	}
	signed := map[kk]string{}
	for _, d := range st.DefinitionSubjects() {
		signed[kk{d.Kind, d.Key}] = d.Digest
	}
	var rows []Row
	seen := map[kk]bool{}
	for _, d := range obs.Definitions {
		id := kk{d.Kind, d.Key}
		sd, isSigned := signed[id]
		if d.Key != "" {
			seen[id] = true
		}
		r := Row{Kind: d.Kind, Key: d.Key, Index: d.Index, Signed: sd}
		switch {
		case d.Err != nil:
			r.Status, r.Reason = StatusInvalid, d.Err.Error()
		case !isSigned:
			r.Status, r.Observed = StatusExtra, d.Digest
		case sd != d.Digest:
			r.Status, r.Observed = StatusChanged, d.Digest
		default:
			r.Status, r.Observed = StatusOK, d.Digest
		}
		rows = append(rows, r)
	}
	for _, d := range st.DefinitionSubjects() {
		if !seen[kk{d.Kind, d.Key}] {
			rows = append(rows, Row{Kind: d.Kind, Key: d.Key, Status: StatusMissing, Signed: d.Digest, Index: -1})
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return digest.CompareKeys(a.Kind, a.Key, b.Kind, b.Key) })
	addDiffs(st, snap, obs, rows)

	var ins *InstructionsRow
	signedIns := st.Digests()[attest.InstructionsSubject]
	_, hasSignedIns := st.Digests()[attest.InstructionsSubject]
	switch {
	case hasSignedIns && snap.Instructions != nil:
		ins = &InstructionsRow{Status: StatusOK, Signed: signedIns, Observed: obs.Instructions}
		if signedIns != obs.Instructions {
			ins.Status = StatusChanged
		}
	case hasSignedIns:
		ins = &InstructionsRow{Status: StatusMissing, Signed: signedIns}
	case snap.Instructions != nil:
		ins = &InstructionsRow{Status: StatusExtra, Observed: obs.Instructions}
	}

	counts := map[Status]int{}
	for _, r := range rows {
		counts[r.Status]++
	}
	if ins != nil {
		counts[ins.Status]++
	}
	var bad []string
	for _, s := range []Status{StatusChanged, StatusExtra, StatusMissing, StatusInvalid} {
		if counts[s] > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", counts[s], strings.ToLower(string(s))))
		}
	}
	if len(bad) > 0 {
		return rows, ins, fmt.Errorf("%w: %s", ErrMismatch, strings.Join(bad, ", "))
	}
	return rows, ins, nil
}

// addDiffs fills the diff of every CHANGED row whose signed definition the
// statement embeds.
func addDiffs(st *attest.Statement, snap *digest.Snapshot, obs *digest.Result, rows []Row) {
	if st.Predicate.Definitions == nil || !slices.ContainsFunc(rows, func(r Row) bool { return r.Status == StatusChanged }) {
		return
	}
	embedded := &digest.Snapshot{}
	for _, k := range digest.Kinds {
		embedded.SetDefinitions(k, st.Predicate.Definitions.Get(k))
	}
	signed := digest.Compute(embedded)
	for i := range rows {
		r := &rows[i]
		if r.Status != StatusChanged {
			continue
		}
		old, ok1 := signed.Lookup(r.Kind, r.Key)
		cur, ok2 := obs.Lookup(r.Kind, r.Key)
		if !ok1 || !ok2 {
			continue
		}
		name := attest.SubjectName(r.Kind, r.Key)
		r.Diff = textsafe.EscapeKeepLayout(unifiedDiff("signed "+name, "served "+name, pretty(old.Raw), pretty(cur.Raw)))
	}
}

// pretty indents a raw JSON definition, keeping its members' order and its
// strings exactly as sent.
func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
