package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// FuzzReadLock feeds Parse (what Read runs on a file's bytes) arbitrary
// input, as is and resealed (its lockDigest recomputed, as a forger would),
// so that the checks behind the digest are reached too. A refusal must wrap
// one of the documented errors; a lock accepted must write back to a lock
// that reads again with the same lockDigest.
func FuzzReadLock(f *testing.F) {
	// A synthetic server, so that fuzz workers start no process.
	snap := &digest.Snapshot{
		Server:          digest.ServerInfo{Name: "fuzz", Version: "1"},
		ProtocolVersion: "2025-11-25",
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"search_notes","description":"Search.\u200b<IMPORTANT>\u202ehidden</IMPORTANT>","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"annotations":{"readOnlyHint":true}}`),
			json.RawMessage(`{"name":"run_command","description":"Run a shell command.","inputSchema":{"type":"object"},"_meta":{"x":[1,2.5,-3e5]}}`),
		},
		Prompts:           []json.RawMessage{json.RawMessage(`{"name":"p","arguments":[{"name":"a","required":true}]}`)},
		ResourceTemplates: []json.RawMessage{json.RawMessage(`{"uriTemplate":"notes://{id}","name":"note"}`)},
	}
	ins := "Use the tools.\n"
	snap.Instructions = &ins
	honest, err := NewLock(snap, Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	rug, err := NewLock(snap, Approval{
		Method: evidence.MethodSigstore, Identity: "a@example.com", Issuer: "https://issuer.example", BundleDigest: digest.InstructionsDigest("b"),
		Tlog: &evidence.Tlog{LogIndex: 7, LogID: "0a1b", IntegratedTime: new(time.Unix(1767225600, 0).UTC())}, ApprovedAt: time.Unix(1767225600, 5),
	})
	if err != nil {
		f.Fatal(err)
	}
	if err := rug.SetCapabilities(capability.Overrides{"run_command": {capability.Exec}, "search_notes": {capability.Read, capability.Network}}); err != nil {
		f.Fatal(err)
	}
	small, err := NewLock(&digest.Snapshot{Tools: []json.RawMessage{json.RawMessage(`{"name":"t"}`)}}, Approval{Method: MethodTOFU, ApprovedAt: time.Unix(0, 0)})
	if err != nil {
		f.Fatal(err)
	}
	snap.ClientCapabilities = json.RawMessage(`{"roots":{"listChanged":true},"sampling":{"x":[1,2.5]}}`)
	withCaps, err := NewLock(snap, Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	snap.Resources = []json.RawMessage{
		json.RawMessage(`{"uri":"file:///b.txt","name":"b","description":"File b.\u200b","_meta":{"y":true}}`),
		json.RawMessage(`{"uri":"file:///a.txt","name":"a","mimeType":"text/plain","size":12}`),
	}
	withResources, err := NewLock(snap, Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	snap.Resources = []json.RawMessage{}
	noResources, err := NewLock(snap, Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	snap.Resources = nil
	anchored := *small
	anchored.AuditHead = digest.InstructionsDigest("the log's last line")
	proven, err := NewLock(snap, Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: evidence.BundleDigest([]byte(`{"b":1}`)), ApprovedAt: time.Unix(0, 0)})
	if err != nil {
		f.Fatal(err)
	}
	if err := proven.SetProof([][]byte{[]byte(`{"b":1}`), []byte("second")}); err != nil {
		f.Fatal(err)
	}
	for _, l := range []*Lock{honest, rug, small, withCaps, withResources, noResources, &anchored, proven} {
		f.Add(mustMarshal(f, l))
	}
	f.Add(bytes.Replace(mustMarshal(f, withResources), []byte(`"kind": "resource"`), []byte(`"kind": "resourceTemplate"`), 1))
	f.Add(bytes.Replace(mustMarshal(f, withResources), []byte(`"resources": {"set"`), []byte(`"Resources": {}, "resources": {"set"`), 1))
	f.Add(bytes.Replace(mustMarshal(f, withCaps), []byte(`"clientCapabilities": {`), []byte(`"clientCapabilities": null, "x": {`), 1))
	f.Add([]byte(`{"kind":"mcpsign.lock","lockVersion":1}`))
	f.Add([]byte(`{"kind":"mcpsign.lock","lockVersion":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		if resealed, ok := resealFuzz(data); ok {
			check(t, resealed)
		}
	})
}

func check(t *testing.T, data []byte) {
	l, err := Parse(data)
	if err != nil {
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrModified) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("Parse error %v wraps no documented error", err)
		}
		return
	}
	recorded := l.LockDigest
	out, err := l.Marshal()
	if err != nil {
		t.Fatalf("an accepted lock does not marshal: %v", err)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("a written lock does not read: %v\n%s", err, out)
	}
	if again.LockDigest != recorded {
		t.Fatalf("lockDigest %s after a round trip, was %s:\n%s\n---\n%s", again.LockDigest, recorded, data, out)
	}
	if strings.Contains(string(out), "\ufffd") && !bytes.Contains(data, []byte("\ufffd")) && !bytes.Contains(data, []byte(`\ufffd`)) && !bytes.Contains(data, []byte(`\uFFFD`)) {
		t.Fatalf("marshal introduced U+FFFD")
	}
}

// resealFuzz replaces the lockDigest of a JSON object by the digest of the
// rest, when the input has that shape.
func resealFuzz(data []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return nil, false
	}
	if _, ok := m["lockDigest"]; !ok {
		return nil, false
	}
	dg, err := digestWithout(m, "lockDigest")
	if err != nil {
		return nil, false
	}
	m["lockDigest"] = json.RawMessage(`"` + dg + `"`)
	out, err := json.Marshal(m)
	return out, err == nil
}

// FuzzSplitObject checks the one-pass member splitter against
// encoding/json on valid JSON: the same members, the same value bytes.
func FuzzSplitObject(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,{"c":"}"}],"d":"\"x\\"}`))
	f.Add([]byte(` { } `))
	f.Add([]byte(`{"a":{"a":{"a":[]}}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		members, err := splitObject(data)
		if !json.Valid(data) {
			return // splitObject delimits only: the strict reader runs too
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			if err == nil {
				t.Fatalf("split a non-object: %q", data)
			}
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "repeated") || strings.Contains(err.Error(), "nesting deeper") {
				return
			}
			t.Fatalf("valid object refused: %v: %q", err, data)
		}
		if len(members) != len(m) {
			t.Fatalf("%d members, encoding/json has %d", len(members), len(m))
		}
		for _, mb := range members {
			if !bytes.Equal(mb.value, bytes.TrimSpace(m[mb.name])) {
				t.Fatalf("member %q: %q, encoding/json %q", mb.name, mb.value, m[mb.name])
			}
		}
		if arr, err := splitArray([]byte("[" + strings.TrimPrefix(string(data), "") + "]")); err != nil || len(arr) != 1 {
			t.Fatalf("splitArray of a one-element array: %v %v", arr, err)
		}
	})
}
