package proxy

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
)

// TestApprovedSetsShared: relays whose approved snapshots are the same
// (but for when they were captured) share one set; any other byte makes
// another set; a set no relay holds is forgotten.
func TestApprovedSetsShared(t *testing.T) {
	snap := func(mod func(*digest.Snapshot)) *digest.Snapshot {
		s := &digest.Snapshot{
			Kind: "x", SnapshotVersion: 1, Server: digest.ServerInfo{Name: "s", Version: "1"}, ProtocolVersion: "2025-11-25",
			Tools:      []json.RawMessage{json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`)},
			CapturedAt: time.Now(),
		}
		if mod != nil {
			mod(s)
		}
		return s
	}
	var c ApprovedSets
	a := c.intern(snap(nil))
	if b := c.intern(snap(func(s *digest.Snapshot) { s.CapturedAt = s.CapturedAt.Add(time.Hour) })); b != a {
		t.Fatal("the same definitions captured at another time were not shared")
	}
	instr := "hi"
	for name, mod := range map[string]func(*digest.Snapshot){
		"a tool's bytes": func(s *digest.Snapshot) {
			s.Tools[0] = json.RawMessage(`{"name":"a", "inputSchema":{"type":"object"}}`)
		},
		"instructions":        func(s *digest.Snapshot) { s.Instructions = &instr },
		"empty instructions":  func(s *digest.Snapshot) { s.Instructions = new(string) },
		"no tools":            func(s *digest.Snapshot) { s.Tools = nil },
		"empty prompts":       func(s *digest.Snapshot) { s.Prompts = []json.RawMessage{} },
		"client capabilities": func(s *digest.Snapshot) { s.ClientCapabilities = json.RawMessage(`{}`) },
		"server version":      func(s *digest.Snapshot) { s.Server.Version = "2" },
		"a tool moved":        func(s *digest.Snapshot) { s.Prompts, s.Tools = s.Tools, nil },
	} {
		if b := c.intern(snap(mod)); b == a {
			t.Errorf("%s: another snapshot got the same set", name)
		}
	}
	var none *ApprovedSets
	if none.intern(snap(nil)) == none.intern(snap(nil)) {
		t.Error("without ApprovedSets, relays shared a set")
	}
	for i := 0; i < 50 && c.len() > 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.len(); n != 0 {
		t.Errorf("%d sets remembered after no relay holds any", n)
	}
}
