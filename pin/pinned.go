package pin

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// WritePinnedText says, for people, that l was pinned to path: the server,
// the counts, the approval, the lockDigest, the static resources pinned
// and every tool's capabilities (server text escaped).
func WritePinnedText(w io.Writer, path string, l *Lock) error {
	counts := map[digest.Kind]int{}
	for _, d := range l.Definitions {
		counts[d.Kind]++
	}
	ins := "no instructions"
	if l.Instructions != nil {
		ins = "instructions"
	}
	fmt.Fprintf(w, "pinned %s %s to %s: %s, %s\n",
		textsafe.Quote(l.Server.Name), textsafe.Quote(l.Server.Version), textsafe.Escape(path),
		digest.CountText(func(k digest.Kind) int { return counts[k] }), ins)
	fmt.Fprintf(w, "approval: %s\nlockDigest: %s\n", pinnedApprovalText(&l.Approval), l.LockDigest)
	if l.Resources != nil {
		// No signature covers them, whatever the approval's method.
		fmt.Fprintf(w, "resources: %s pinned as listed (set %s), approved by this lock alone: no signature covers resources\n",
			digest.KindResource.Count(len(l.Resources)), l.ResourceSet)
	}
	if counts[digest.KindTool] > 0 {
		fmt.Fprintf(w, "\ncapabilities (! = can delete or execute):\n")
		return capability.WriteText(w, l.ToolCapabilities())
	}
	return nil
}

func pinnedApprovalText(a *Approval) string {
	switch a.Method {
	case MethodTOFU:
		return "tofu (trusted on first use; no signature)"
	case evidence.MethodKey:
		return "key " + textsafe.Escape(a.Identity)
	}
	s := fmt.Sprintf("%s, signed by %s", a.Method, textsafe.Quote(a.Identity))
	if a.Issuer != "" {
		s += ", issuer " + textsafe.Quote(a.Issuer)
	}
	if a.Tlog != nil {
		s += fmt.Sprintf(", log index %d", a.Tlog.LogIndex)
	}
	return s
}

// PinnedJSON is the stable JSON report of a lock pinned (docs/LOCK.md,
// docs/JSON.md).
type PinnedJSON struct {
	ReportVersion int                         `json:"reportVersion"`
	Lock          string                      `json:"lock"`
	LockDigest    string                      `json:"lockDigest"`
	Server        digest.ServerInfo           `json:"server"`
	Approval      Approval                    `json:"approval"`
	Counts        map[string]int              `json:"counts"`
	Capabilities  map[string]*capability.Tool `json:"capabilities"`
}

// WritePinnedJSON writes the PinnedJSON of l pinned to path, indented.
func WritePinnedJSON(w io.Writer, path string, l *Lock) error {
	out := PinnedJSON{ReportVersion: 1, Lock: path, LockDigest: l.LockDigest, Server: l.Server, Approval: l.Approval,
		Counts: map[string]int{}, Capabilities: l.ToolCapabilities()}
	for _, k := range digest.Kinds {
		out.Counts[k.ListMember()] = 0
	}
	for _, d := range l.Definitions {
		out.Counts[d.Kind.ListMember()]++
	}
	if l.Resources != nil {
		out.Counts[digest.KindResource.ListMember()] = len(l.Resources)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
