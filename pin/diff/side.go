package diff

import (
	"slices"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin/capability"
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
// Build one with SnapshotSide, StatementSide or pin.LockSide.
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
	// Resources says the side holds a listing of the static resources
	// (Definitions of kind digest.KindResource, possibly none): a lock that
	// records them, a snapshot that listed them. Resources are compared
	// only when both sides hold them.
	Resources bool `json:"resources,omitempty"`
	// Capabilities overrides that apply to this side's tools.
	Capabilities capability.Overrides `json:"-"`
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
	if rr := digest.ComputeResources(s); rr != nil {
		side.Definitions = append(side.Definitions, rr.Definitions...)
		side.Resources = true
	}
	if s.Instructions != nil {
		ins := *s.Instructions
		side.Instructions = &ins
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
		return digest.CompareKeys(a.Kind, a.Key, b.Kind, b.Key)
	})
	return side
}
