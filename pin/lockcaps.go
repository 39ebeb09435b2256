package pin

import (
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// ToolCapabilities returns the capabilities of every pinned tool by name,
// with the lock's overrides applied.
func (l *Lock) ToolCapabilities() map[string]*capability.Tool {
	out := map[string]*capability.Tool{}
	for _, d := range l.Definitions {
		if d.Kind == digest.KindTool {
			out[d.Key] = capability.Classify(d.Definition, l.Capabilities[d.Key])
		}
	}
	return out
}

// CarryOverrides sets on l the capability overrides of prev for the tools
// whose definition did not change (same key and digest): an override
// approves a pinned definition only.
func (l *Lock) CarryOverrides(prev *Lock) {
	if len(prev.Capabilities) == 0 {
		return
	}
	keep := capability.Overrides{}
	for name, caps := range prev.Capabilities {
		old, ok1 := prev.Lookup(digest.KindTool, name)
		cur, ok2 := l.Lookup(digest.KindTool, name)
		if ok1 && ok2 && old.Digest == cur.Digest {
			keep[name] = caps
		}
	}
	_ = l.SetCapabilities(keep) // every name is a tool of l
}
