package pin

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin/diff"
)

// LockSide returns the side of a lock for a diff (package pin/diff), with
// the lock's capability overrides.
func LockSide(label string, l *Lock) *diff.Side {
	side := &diff.Side{
		Label:           label,
		Origin:          diff.OriginLock,
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
	for i, d := range l.Resources {
		side.Definitions = append(side.Definitions, digest.Definition{Kind: d.Kind, Key: d.Key, Index: i, Digest: d.Digest, Raw: d.Definition})
	}
	side.Resources = l.Resources != nil
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
	kind, _ := decodeString(top["kind"])
	mediaType, _ := decodeString(top["mediaType"])
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
