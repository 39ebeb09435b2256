package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/source"
)

const (
	rootsCaps = `{"roots":{"listChanged":true}}`
	noCaps    = `{}`
)

// lockUnder returns a tofu lock of the honest example server's snapshot
// as if read under caps (nil: unknown).
func lockUnder(t *testing.T, caps string, edits ...func(s *digest.Snapshot)) *Lock {
	t.Helper()
	s := edit(t, func(s *digest.Snapshot) {
		s.ClientCapabilities = nil
		if caps != "" {
			s.ClientCapabilities = json.RawMessage(caps)
		}
		for _, e := range edits {
			e(s)
		}
	})
	l, err := NewLock(s, Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var rootsTool = json.RawMessage(`{"name":"get-roots-list","description":"Lists the client's roots.","inputSchema":{"type":"object"}}`)

func withRootsTool(s *digest.Snapshot) { s.Tools = append(s.Tools, rootsTool) }

// TestCheckClientCapabilities: the decision of docs/LOCK.md. Under other
// client capabilities than the lock's, a locked definition that is absent
// live is an info finding after the capability finding; anything added or
// changed is still drift; with equal or unknown capabilities removal stays
// drift.
func TestCheckClientCapabilities(t *testing.T) {
	tests := []struct {
		name     string
		lockCaps string // "" unknown
		lockEdit func(*digest.Snapshot)
		liveCaps string // "" unknown
		liveEdit func(*digest.Snapshot)
		want     []string
		fail     bool
	}{
		{"locked with roots, read without, tool absent", rootsCaps, withRootsTool, noCaps, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-absent-for-client tool/get-roots-list"}, false},
		{"locked with roots, read without, nothing absent", rootsCaps, nil, noCaps, nil,
			[]string{RuleClientCapabilitiesDiffer}, false},
		{"locked without roots, read with, tool added", noCaps, nil, rootsCaps, withRootsTool,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-added tool/get-roots-list"}, true},
		{"other capabilities, a changed tool still blocks", rootsCaps, withRootsTool, noCaps, func(s *digest.Snapshot) {
			replaceRaw(t, s.Tools, 3, "Search the notes", "Search and update the notes")
		}, []string{RuleClientCapabilitiesDiffer, "pin-tool-absent-for-client tool/get-roots-list", "pin-tool-changed tool/search_notes"}, true},
		{"other capabilities, a prompt absent", rootsCaps, nil, noCaps, func(s *digest.Snapshot) { s.Prompts = s.Prompts[:1] },
			[]string{RuleClientCapabilitiesDiffer, "pin-prompt-absent-for-client prompt/summarize_notes"}, false},
		{"other capabilities, instructions changed still blocks", rootsCaps, nil, noCaps, func(s *digest.Snapshot) { s.Instructions = nil },
			[]string{RuleClientCapabilitiesDiffer, RuleInstructionsChanged}, true},
		{"fewer capabilities (roots of roots and sampling): tool absent", `{"roots":{"listChanged":true},"sampling":{}}`, withRootsTool, `{"sampling":{}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-absent-for-client tool/get-roots-list"}, false},
		{"another capability, not fewer: removal is drift", rootsCaps, withRootsTool, `{"sampling":{}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-removed tool/get-roots-list"}, true},
		{"a member of a capability fewer (roots without listChanged): tool absent", rootsCaps, withRootsTool, `{"roots":{}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-absent-for-client tool/get-roots-list"}, false},
		{"a value otherwise (listChanged false): removal is drift", rootsCaps, withRootsTool, `{"roots":{"listChanged":false}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-removed tool/get-roots-list"}, true},
		{"a member more, below the top level: removal is drift", rootsCaps, withRootsTool, `{"roots":{"listChanged":true,"x":{}}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-removed tool/get-roots-list"}, true},
		// A real host announcing every top-level capability of the default
		// profile, each with fewer members (the MCP Inspector's web client
		// with sampling and receiver tasks on), under a default lock.
		{"a host with every top-level capability, fewer below: tool absent", source.DefaultClientCapabilities, withRootsTool,
			`{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}}}},` +
				`"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/skills":{}}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-absent-for-client tool/get-roots-list"}, false},
		{"a host with another mimeTypes array: removal is drift", source.DefaultClientCapabilities, withRootsTool,
			`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}`, nil,
			[]string{RuleClientCapabilitiesDiffer, "pin-tool-removed tool/get-roots-list"}, true},
		{"equal capabilities (other spelling): removal is drift", rootsCaps, withRootsTool, `{ "roots" : { "listChanged" : true } }`, nil,
			[]string{"pin-tool-removed tool/get-roots-list"}, true},
		{"lock records none: removal is drift", "", withRootsTool, noCaps, nil,
			[]string{"pin-tool-removed tool/get-roots-list"}, true},
		{"live records none (a snapshot file without them): removal is drift", rootsCaps, withRootsTool, "", nil,
			[]string{"pin-tool-removed tool/get-roots-list"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edits []func(*digest.Snapshot)
			if tt.lockEdit != nil {
				edits = append(edits, tt.lockEdit)
			}
			l := lockUnder(t, tt.lockCaps, edits...)
			live := edit(t, func(s *digest.Snapshot) {
				s.ClientCapabilities = nil
				if tt.liveCaps != "" {
					s.ClientCapabilities = json.RawMessage(tt.liveCaps)
				}
				if tt.liveEdit != nil {
					tt.liveEdit(s)
				}
			})
			r := l.Check(live)
			if got := findingIDs(r); !slices.Equal(got, tt.want) {
				t.Fatalf("findings %q, want %q", got, tt.want)
			}
			if r.Failed(FailOnDrift) != tt.fail {
				t.Errorf("Failed(drift) = %v, want %v", r.Failed(FailOnDrift), tt.fail)
			}
			if r.Has(RuleClientCapabilitiesDiffer) {
				f := r.Findings[0]
				if f.Severity != SeverityInfo || !strings.Contains(f.Message, `: locked, not announced now`) && !strings.Contains(f.Message, `: announced otherwise`) && !strings.Contains(f.Message, `"roots": `) {
					t.Errorf("capability finding %+v: want info naming roots", f)
				}
				ids := r.FindingIDs()
				if tt.fail && (len(ids) < 2 || ids[0] != RuleClientCapabilitiesDiffer) {
					t.Errorf("FindingIDs %q: the capability finding must come first", ids)
				}
				if !tt.fail && len(ids) != 0 {
					t.Errorf("FindingIDs %q of a passing report", ids)
				}
			}
			for _, f := range r.Findings {
				if strings.HasSuffix(f.Rule, "-absent-for-client") && (f.Severity != SeverityInfo || !strings.Contains(f.Message, `: locked, not announced now`) && !strings.Contains(f.Message, `: announced otherwise`)) {
					t.Errorf("absent finding %+v", f)
				}
			}
		})
	}
}

// TestLockClientCapabilities: the lock records the snapshot's client
// capabilities in their RFC 8785 form, round-trips them, covers them by
// lockDigest, and refuses a non-object or another spelling.
func TestLockClientCapabilities(t *testing.T) {
	for _, caps := range []string{"", noCaps, rootsCaps, `{"sampling": {}, "roots": {"listChanged": true}}`} {
		l := lockUnder(t, caps)
		data := mustMarshal(t, l)
		back, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", caps, err)
		}
		if caps == "" {
			if back.ClientCapabilities != nil || bytes.Contains(data, []byte("clientCapabilities")) {
				t.Fatalf("a lock without client capabilities has %q", back.ClientCapabilities)
			}
			continue
		}
		want, _ := digest.CanonicalClientCapabilities([]byte(caps))
		if !bytes.Equal(back.ClientCapabilities, want) || !bytes.Contains(data, []byte(`"clientCapabilities": `+string(want))) {
			t.Fatalf("%s: read back %s, want %s\n%s", caps, back.ClientCapabilities, want, data)
		}
		if s := back.Snapshot(); !bytes.Equal(s.ClientCapabilities, want) {
			t.Fatalf("Snapshot() client capabilities %s", s.ClientCapabilities)
		}
	}

	good := mustMarshal(t, lockUnder(t, rootsCaps))
	member := `"clientCapabilities": {"roots":{"listChanged":true}}`
	if !bytes.Contains(good, []byte(member)) {
		t.Fatalf("no %s in\n%s", member, good)
	}
	swap := func(to string, seal bool) []byte {
		b := bytes.Replace(good, []byte(member), []byte(to), 1)
		if seal {
			b = reseal(t, b)
		}
		return b
	}
	tests := []struct {
		name  string
		data  []byte
		want  error
		match string
	}{
		{"edited (roots removed)", swap(`"clientCapabilities": {}`, false), ErrModified, "lockDigest"},
		{"not an object, resealed", swap(`"clientCapabilities": null`, true), ErrMalformed, `member "clientCapabilities": invalid client capabilities: want a JSON object`},
		{"an array, resealed", swap(`"clientCapabilities": []`, true), ErrMalformed, "want a JSON object"},
		{"not canonical, resealed", swap(`"clientCapabilities": {"roots": {"listChanged": true}}`, true), ErrMalformed, "RFC 8785"},
		{"case variant, resealed", swap(`"ClientCapabilities": {}`, true), ErrMalformed, "ClientCapabilities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.match) {
				t.Fatalf("Parse: %v, want %v containing %q", err, tt.want, tt.match)
			}
		})
	}
	// An edited member is pin-lock-modified in a report.
	_, err := Parse(swap(`"clientCapabilities": {}`, false))
	if r := LockErrorReport("mcp.lock", err); !r.Has(RuleLockModified) {
		t.Fatalf("report %+v, want pin-lock-modified", r.Findings)
	}
	// NewLock refuses a snapshot whose capabilities are not an object.
	s := edit(t, func(s *digest.Snapshot) { s.ClientCapabilities = json.RawMessage(`[]`) })
	if _, err := NewLock(s, Approval{Method: MethodTOFU}); !errors.Is(err, digest.ErrClientCapabilities) {
		t.Fatalf("NewLock: %v, want ErrClientCapabilities", err)
	}
}

// TestCompareClientCapabilitiesText: the difference names each kind of
// change only when there is one, names sorted, kinds in a fixed order, and
// "they differ" when nothing names it or a side does not read.
func TestCompareClientCapabilitiesText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		locked, observed string
		why              string
		fewer            bool
	}{
		{"one gone", `{"roots":{},"sampling":{}}`, `{"roots":{}}`, `"sampling": locked, not announced now`, true},
		{"one added", `{"roots":{}}`, `{"elicitation":{},"roots":{}}`, `"elicitation": announced now, not locked`, false},
		{"one changed, fewer below", `{"sampling":{"tools":{}}}`, `{"sampling":{}}`, `"sampling": announced otherwise`, true},
		{"all three, names sorted", `{"a":{},"b":{},"c":{"x":1}}`, `{"c":{"x":2},"e":{},"d":{}}`,
			`"a", "b": locked, not announced now; "d", "e": announced now, not locked; "c": announced otherwise`, false},
		{"the same members", `{"roots":{}}`, `{"roots":{}}`, "they differ", true},
		{"a side that does not read", `{"roots":{}}`, `[`, "they differ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, fewer := compareClientCapabilities([]byte(tc.locked), []byte(tc.observed))
			if why != tc.why || fewer != tc.fewer {
				t.Errorf("compareClientCapabilities = %q, %v; want %q, %v", why, fewer, tc.why, tc.fewer)
			}
		})
	}
}
