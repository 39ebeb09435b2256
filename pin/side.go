package pin

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
)

// Origin says what a side of a diff was read from.
type Origin string

// The origins of a side.
const (
	OriginLive     Origin = "live"     // a running server
	OriginSnapshot Origin = "snapshot" // a snapshot file
	OriginLock     Origin = "lock"     // a lock file
	OriginBundle   Origin = "bundle"   // a bundle's statement, signature not verified
)

// Side is one side of a diff: what some source says the server offers.
// Build one with SnapshotSide, LockSide or StatementSide.
type Side struct {
	// Label names the side for people (a file name, a URL, a command).
	Label  string `json:"label"`
	Origin Origin `json:"origin"`
	// Unverified is true for a bundle read without verifying its
	// signature: its content is only what the file claims.
	Unverified      bool              `json:"unverified"`
	Server          digest.ServerInfo `json:"server"`
	ProtocolVersion string            `json:"protocolVersion"`
	// Instructions is the text, when the side has it (a bundle has only
	// the digest).
	Instructions *string `json:"-"`
	// InstructionsDigest is "" when the server sends no instructions.
	InstructionsDigest string `json:"instructionsDigest,omitempty"`
	// Definitions: kind, key, digest and raw definition (Raw is nil for a
	// bundle that embeds no definitions; Err is set for a live definition
	// that has no digest).
	Definitions []digest.Definition `json:"-"`
	// Capabilities overrides that apply to this side's tools.
	Capabilities Overrides `json:"-"`
}

// SnapshotSide returns the side of a snapshot (origin OriginLive or
// OriginSnapshot).
func SnapshotSide(label string, origin Origin, s *digest.Snapshot) *Side {
	r := digest.Compute(s)
	side := &Side{
		Label:              label,
		Origin:             origin,
		Server:             s.Server,
		ProtocolVersion:    s.ProtocolVersion,
		InstructionsDigest: r.Instructions,
		Definitions:        r.Definitions,
	}
	if s.Instructions != nil {
		ins := *s.Instructions
		side.Instructions = &ins
	}
	return side
}

// LockSide returns the side of a lock, with the lock's capability
// overrides.
func LockSide(label string, l *Lock) *Side {
	side := &Side{
		Label:           label,
		Origin:          OriginLock,
		Server:          l.Server,
		ProtocolVersion: l.ProtocolVersion,
		Capabilities:    l.Capabilities,
	}
	if l.Instructions != nil {
		ins := *l.Instructions
		side.Instructions = &ins
		side.InstructionsDigest = digest.InstructionsDigest(ins)
	}
	for i, d := range l.Definitions {
		side.Definitions = append(side.Definitions, digest.Definition{Kind: d.Kind, Key: d.Key, Index: i, Digest: d.Digest, Raw: d.Definition})
	}
	return side
}

// StatementSide returns the side of a statement taken from a bundle whose
// signature was not verified: its subjects, and its embedded definitions
// when it has them. It is marked Unverified.
func StatementSide(label string, st *attest.Statement) *Side {
	side := &Side{
		Label:           label,
		Origin:          OriginBundle,
		Unverified:      true,
		Server:          st.Predicate.Server,
		ProtocolVersion: st.Predicate.ProtocolVersion,
	}
	if dg, ok := st.Digests()[attest.InstructionsSubject]; ok {
		side.InstructionsDigest = dg
	}
	for i, d := range st.DefinitionSubjects() {
		d.Index = i
		if raw, ok := st.EmbeddedDefinition(d.Kind, d.Key); ok {
			d.Raw = raw
		}
		side.Definitions = append(side.Definitions, d)
	}
	slices.SortStableFunc(side.Definitions, func(a, b digest.Definition) int {
		return compareDefinitions(Definition{Kind: a.Kind, Key: a.Key}, Definition{Kind: b.Kind, Key: b.Key})
	})
	return side
}

// FileKind is what a file given as a side holds.
type FileKind int

// The kinds of file DetectFile tells apart.
const (
	FileUnknown  FileKind = iota // none of the below
	FileLock                     // an mcpsign lock
	FileBundle                   // a Sigstore bundle
	FileSnapshot                 // a snapshot file or a bare list result
)

// DetectFile says what a file holds by its content: a JSON object whose
// "kind" is mcpsign.lock is a lock, one whose "mediaType" is a Sigstore
// bundle media type is a bundle, one whose "kind" is mcpsign.snapshot or
// that has a tools, prompts or resourceTemplates array is a snapshot. It
// reads only the top-level members; the file still has to be parsed.
func DetectFile(data []byte) FileKind {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return FileUnknown
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return FileUnknown
	}
	kind, _ := jsonString(top["kind"])
	mediaType, _ := jsonString(top["mediaType"])
	switch {
	case kind == LockKind:
		return FileLock
	case strings.HasPrefix(mediaType, "application/vnd.dev.sigstore.bundle"):
		return FileBundle
	case kind == digest.SnapshotKind:
		return FileSnapshot
	case kind == "":
		for _, k := range digest.Kinds {
			if v := bytes.TrimSpace(top[k.ListMember()]); len(v) > 0 && v[0] == '[' {
				return FileSnapshot
			}
		}
	}
	return FileUnknown
}
