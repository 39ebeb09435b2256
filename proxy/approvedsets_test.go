package proxy

import (
	"encoding/json"
	"reflect"
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
	// Every snapshot below gets a set of its own, none shared with another
	// or with a's. The last two hold the same items in the same order, the
	// lists split otherwise: a key that did not count each list's items
	// would read one list's item as the next list's.
	sets := map[*approvedSet]string{a: "the first"}
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
		"a tool 0, no prompts": func(s *digest.Snapshot) {
			s.Tools, s.Prompts = []json.RawMessage{json.RawMessage(`0`)}, []json.RawMessage{}
		},
		"no tools, a template 0": func(s *digest.Snapshot) {
			s.Tools, s.ResourceTemplates = []json.RawMessage{}, []json.RawMessage{json.RawMessage(`0`)}
		},
	} {
		b := c.intern(snap(mod))
		if other, ok := sets[b]; ok {
			t.Errorf("%s: got the set of %s", name, other)
		}
		sets[b] = name
	}
	clear(sets)
	var none *ApprovedSets
	if none.intern(snap(nil)) == none.intern(snap(nil)) {
		t.Error("without ApprovedSets, relays shared a set")
	}
	// The weak pointers' cleanups run on the runtime's goroutine after a
	// collection: waited for up to testTimeout (not 50 rounds of 10 ms, which
	// a loaded machine may not give it).
	for deadline := time.Now().Add(testTimeout); c.len() > 0 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.len(); n != 0 {
		t.Errorf("%d sets remembered after no relay holds any", n)
	}
}

// TestSnapshotKeyCoversEveryMember: snapshotKey reads every member of
// digest.Snapshot but CapturedAt. A member added to the snapshot and not to
// the key would let two relays that approved different definitions share
// one set, so each member is changed in turn, by reflection, and the key
// must change with it.
func TestSnapshotKeyCoversEveryMember(t *testing.T) {
	base := func() *digest.Snapshot {
		instr := "i"
		return &digest.Snapshot{
			Kind: "k", SnapshotVersion: 1, Server: digest.ServerInfo{Name: "s", Version: "1"}, ProtocolVersion: "p",
			Instructions:       &instr,
			Tools:              []json.RawMessage{json.RawMessage(`{"name":"t"}`)},
			Prompts:            []json.RawMessage{json.RawMessage(`{"name":"p"}`)},
			ResourceTemplates:  []json.RawMessage{json.RawMessage(`{"name":"r"}`)},
			Resources:          []json.RawMessage{json.RawMessage(`{"uri":"u"}`)},
			CapturedAt:         time.Unix(1, 0),
			ClientCapabilities: json.RawMessage(`{"a":1}`),
			Advertised:         json.RawMessage(`{"b":2}`),
		}
	}
	want := snapshotKey(base())
	typ := reflect.TypeFor[digest.Snapshot]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		s := base()
		v := reflect.ValueOf(s).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Unix(2, 0)))
		case v.Kind() == reflect.String:
			v.SetString(v.String() + "x")
		case v.Kind() == reflect.Int:
			v.SetInt(v.Int() + 1)
		case v.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			v.Set(reflect.ValueOf(new(string)))
		case f.Type == reflect.TypeFor[json.RawMessage]():
			v.SetBytes([]byte(`{"c":3}`))
		case f.Type == reflect.TypeFor[[]json.RawMessage]():
			v.Set(reflect.ValueOf([]json.RawMessage{json.RawMessage(`{"name":"other"}`)}))
		case f.Type == reflect.TypeFor[digest.ServerInfo]():
			v.Set(reflect.ValueOf(digest.ServerInfo{Name: "other", Version: "1"}))
		default:
			t.Fatalf("digest.Snapshot.%s (%s): a member this test does not know; key it in snapshotKey and change it here", f.Name, f.Type)
		}
		got := snapshotKey(s)
		if f.Name == "CapturedAt" {
			if got != want {
				t.Errorf("CapturedAt changed the key: snapshots captured at two times would not share a set")
			}
			continue
		}
		if got == want {
			t.Errorf("digest.Snapshot.%s is not in snapshotKey: relays that approved different %s would share one set", f.Name, f.Name)
		}
	}
}
