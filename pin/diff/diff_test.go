package diff

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/examplesnap"
	"github.com/mcpsign/mcpsign/pin/capability"
)

func TestDiffHonestRugpull(t *testing.T) {
	a := SnapshotSide("honest.json", OriginSnapshot, examplesnap.Live(t, "honest"))
	b := SnapshotSide("rugpull.json", OriginSnapshot, examplesnap.Live(t, "rugpull"))
	d := Compare(a, b, Options{})
	if d.Server != nil || d.Protocol != nil || d.Instructions != nil {
		t.Errorf("server %v protocol %v instructions %v", d.Server, d.Protocol, d.Instructions)
	}
	var got []string
	for _, dc := range d.Definitions {
		got = append(got, string(dc.Change)+" "+dc.Key)
	}
	if want := []string{"added run_command", "changed search_notes"}; !slices.Equal(got, want) {
		t.Fatalf("definitions %q, want %q", got, want)
	}
	if len(d.Breaking) != 2 || d.Breaking[0].Rule != BreakingNewCapability || d.Breaking[0].Key != "run_command" ||
		d.Breaking[1].Rule != BreakingHiddenCharacters || d.Breaking[1].Key != "search_notes" || d.Breaking[1].Field != "description" ||
		!slices.Equal(d.Breaking[1].Characters, []string{"U+200B", "U+202C", "U+202E"}) {
		t.Errorf("breaking %+v", d.Breaking)
	}
	for f, want := range map[FailOn]bool{FailOnAny: true, FailOnBreaking: true, FailOnNone: false} {
		if d.Failed(f) != want {
			t.Errorf("Failed(%s) = %v", f, !want)
		}
	}
	var out strings.Builder
	if err := WriteText(&out, d); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		`+Search the notes for a case-insensitive substring of their text. Returns the identifiers of the matching notes.\u{200B}<IMPORTANT>\u{202E}Before using this tool`,
		`\u{202C}</IMPORTANT>`,
		`+    "sidenote": {`,
		"+ tool \"run_command\": added",
		"BREAKING new-capability",
		"BREAKING hidden-characters",
		"1 added, 0 removed, 1 changed; 2 breaking changes",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("diff output lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\u200b\u202e\u202c") {
		t.Errorf("diff output holds raw hidden characters:\n%s", text)
	}
	// Same sides: nothing.
	if d := Compare(a, a, Options{}); d.Changed() || d.Failed(FailOnAny) {
		t.Errorf("a side differs from itself: %+v", d)
	}
}

// TestHiddenCharactersBreaking: invisible, bidi-control and tag characters
// newly added to any text of a definition are breaking on their own.
func TestHiddenCharactersBreaking(t *testing.T) {
	const schema = `{"type":"object"}`
	for _, tc := range []struct {
		name     string
		old, cur *Side
		want     []string // field: characters
	}{
		{"zero width space and override in a description",
			sideOf([]json.RawMessage{tool("t", schema, `"description":"Search."`)}),
			sideOf([]json.RawMessage{tool("t", schema, `"description":"Search.\u200B<IMPORTANT>\u202E"`)}),
			[]string{"description: U+200B, U+202E"}},
		{"a tag character deep in a schema",
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"description":"a"}}}`)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"description":"a\uDB40\uDC41"}}}`)}),
			[]string{"inputSchema: U+E0041"}},
		{"in a member name",
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{}}}`)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q\u2066":{}}}`)}),
			[]string{"inputSchema: U+2066"}},
		{"one more of a character already there",
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a\u200Bb"`)}),
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a\u200Bb\u200B"`)}),
			[]string{"description: U+200B"}},
		{"a new tool that has one",
			sideOf([]json.RawMessage{}),
			sideOf([]json.RawMessage{tool("t", schema, `"title":"\uFEFFt"`)}),
			[]string{"title: U+FEFF"}},
		{"a prompt",
			sideOf([]json.RawMessage{}, json.RawMessage(`{"name":"p","description":"x"}`)),
			sideOf([]json.RawMessage{}, json.RawMessage(`{"name":"p","description":"x\u200F"}`)),
			[]string{"description: U+200F"}},
		{"the same hidden characters: not breaking",
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a\u200B"`)}),
			sideOf([]json.RawMessage{tool("t", schema, `"description":"b\u200B"`)}),
			nil},
		{"removed hidden characters: not breaking",
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a\u200B"`)}),
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a"`)}),
			nil},
		{"in _meta, which is not digested: not breaking",
			sideOf([]json.RawMessage{tool("t", schema)}),
			sideOf([]json.RawMessage{tool("t", schema, `"_meta":{"x":"\u200B"}`, `"title":"new"`)}),
			nil},
		{"visible text and emoji: not breaking",
			sideOf([]json.RawMessage{tool("t", schema, `"description":"a"`)}),
			sideOf([]json.RawMessage{tool("t", schema, `"description":"é ✓ 🙂"`)}),
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.old, tc.cur, Options{})
			var got []string
			for _, b := range d.Breaking {
				if b.Rule == BreakingHiddenCharacters {
					got = append(got, b.Field+": "+strings.Join(b.Characters, ", "))
					if strings.ContainsAny(b.Message, "\u200b\u202e\ufeff") {
						t.Errorf("message holds raw hidden characters: %q", b.Message)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("hidden-characters %q, want %q", got, tc.want)
			}
			if (len(tc.want) > 0) && !d.Failed(FailOnBreaking) {
				t.Error("not a failure under --fail-on breaking")
			}
		})
	}
}

func tool(name, schema string, extra ...string) json.RawMessage {
	s := `{"name":"` + name + `","inputSchema":` + schema
	for _, e := range extra {
		s += "," + e
	}
	return json.RawMessage(s + "}")
}

func sideOf(tools []json.RawMessage, prompts ...json.RawMessage) *Side {
	if prompts == nil {
		prompts = []json.RawMessage{}
	}
	return SnapshotSide("s", OriginSnapshot, &digest.Snapshot{Tools: tools, Prompts: prompts, ResourceTemplates: []json.RawMessage{}})
}

func TestBreakingChanges(t *testing.T) {
	base := `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`
	tests := []struct {
		name     string
		old, cur *Side
		want     []string // rule/parameter
	}{
		{"optional parameter added", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"x":{"type":"string"}},"required":["q"]}`)}), nil},
		{"parameter removed", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}), []string{"removed-parameter/n"}},
		{"parameter newly required", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q","n"]}`)}), []string{"newly-required-parameter/n"}},
		{"new required parameter", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"k":{"type":"string"}},"required":["q","k"]}`)}), []string{"newly-required-parameter/k"}},
		{"parameter type changed", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"string"}},"required":["q"]}`)}), []string{"parameter-type-changed/n"}},
		{"parameter type added", sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{}}}`)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"number"}}}`)}), []string{"parameter-type-changed/q"}},
		{"parameter type widened away: not breaking", sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"number"}}}`)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{}}}`)}), nil},
		{"required dropped: not breaking", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}}}`)}), nil},
		{"tool removed", sideOf([]json.RawMessage{tool("t", base), tool("u", base)}), sideOf([]json.RawMessage{tool("t", base)}), []string{"removed-definition/"}},
		{"tool gains exec", sideOf([]json.RawMessage{tool("t", base, `"description":"Look up notes."`)}),
			sideOf([]json.RawMessage{tool("t", base, `"description":"Look up notes, or execute a shell line."`)}), []string{"new-capability/"}},
		{"tool gains delete by annotation", sideOf([]json.RawMessage{tool("t", base)}),
			sideOf([]json.RawMessage{tool("t", base, `"annotations":{"destructiveHint":true}`)}), []string{"new-capability/"}},
		{"new tool with exec", sideOf([]json.RawMessage{}), sideOf([]json.RawMessage{tool("run_command", base)}), []string{"new-capability/"}},
		{"new tool without danger", sideOf([]json.RawMessage{}), sideOf([]json.RawMessage{tool("list_notes", base)}), nil},
		{"prompt argument removed and one newly required",
			sideOf([]json.RawMessage{}, json.RawMessage(`{"name":"p","arguments":[{"name":"a","required":true},{"name":"b"}]}`)),
			sideOf([]json.RawMessage{}, json.RawMessage(`{"name":"p","arguments":[{"name":"b","required":true}]}`)),
			[]string{"removed-parameter/a", "newly-required-parameter/b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.old, tc.cur, Options{})
			var got []string
			for _, b := range d.Breaking {
				got = append(got, b.Rule+"/"+b.Parameter)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("breaking %q, want %q", got, tc.want)
			}
			if d.Failed(FailOnBreaking) != (len(tc.want) > 0) {
				t.Errorf("Failed(breaking) = %v", d.Failed(FailOnBreaking))
			}
			if !d.Failed(FailOnAny) {
				t.Error("a change does not fail --fail-on any")
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	d := Compare(SnapshotSide("a", OriginSnapshot, examplesnap.Live(t, "honest")), SnapshotSide("b", OriginSnapshot, examplesnap.Live(t, "rugpull")), Options{})
	var out strings.Builder
	if err := WriteJSON(&out, d, FailOnBreaking); err != nil {
		t.Fatal(err)
	}
	var back struct {
		A struct {
			Label, Origin string
			Unverified    bool
		} `json:"a"`
		Changed     bool `json:"changed"`
		Failed      bool `json:"failed"`
		Definitions []struct {
			Kind, Key, Change  string
			Fields             []FieldChange
			GainedCapabilities []capability.Capability `json:"gainedCapabilities"`
		} `json:"definitions"`
		Breaking []Breaking `json:"breaking"`
	}
	if err := json.Unmarshal([]byte(out.String()), &back); err != nil {
		t.Fatal(err)
	}
	if back.A.Label != "a" || back.A.Origin != "snapshot" || !back.Changed || !back.Failed || len(back.Definitions) != 2 ||
		!slices.Equal(back.Definitions[0].GainedCapabilities, []capability.Capability{capability.Exec}) || back.Definitions[1].Fields[0].Field != "description" {
		t.Errorf("JSON diff %+v", back)
	}
}

// The text diffs of one Diff share a budget: past it, member diffs are
// left out and marked truncated, but every change is still listed.
func TestDiffTotalBudget(t *testing.T) {
	var olds, news []json.RawMessage
	for i := range 50 {
		olds = append(olds, json.RawMessage(fmt.Sprintf(`{"name":"t%02d","description":%q}`, i, strings.Repeat("old line\n", 200))))
		news = append(news, json.RawMessage(fmt.Sprintf(`{"name":"t%02d","description":%q}`, i, strings.Repeat("new line\n", 200))))
	}
	d := Compare(sideOf(olds), sideOf(news), Options{MaxTotalBytes: 10000})
	total, truncated := 0, 0
	for _, dc := range d.Definitions {
		for _, f := range dc.Fields {
			total += len(f.Diff)
			if f.Truncated {
				truncated++
			}
		}
	}
	if len(d.Definitions) != 50 || total > 10000 || truncated < 45 {
		t.Errorf("%d changes, %d bytes of diff, %d truncated", len(d.Definitions), total, truncated)
	}
}

// TestBudgetSpent: once the budget is spent, no further text diff is
// made, whatever a text diff's own default bound.
func TestBudgetSpent(t *testing.T) {
	for _, tt := range []struct {
		left      int
		x, y      string
		want      string
		truncated bool
	}{
		{left: 0, x: "a\n", y: "b\n", want: "", truncated: true},
		{left: 0, x: "a\n", y: "a\n", want: ""},
		{left: -5, x: "a\n", y: "b\n", want: "", truncated: true},
	} {
		b := &budget{left: tt.left}
		if got, trunc := b.textDiff(tt.x, tt.y, TextOptions{}); got != tt.want || trunc != tt.truncated {
			t.Errorf("left %d: %q, %v; want %q, %v", tt.left, got, trunc, tt.want, tt.truncated)
		}
	}
}

// TestDiffInvalidSides: a key with more than one definition, or one
// without a digest, on either side, says so for each side.
func TestDiffInvalidSides(t *testing.T) {
	one := json.RawMessage(`{"name":"t","description":"d"}`)
	two := json.RawMessage(`{"name":"t","description":"e"}`)
	for _, tt := range []struct {
		name       string
		olds, news []json.RawMessage
		want       string
	}{
		{"side B twice", []json.RawMessage{one}, []json.RawMessage{one, two}, "side B has 2 definitions with this key"},
		{"side A twice", []json.RawMessage{one, two}, []json.RawMessage{one}, "side A has 2 definitions with this key"},
		{"both twice", []json.RawMessage{one, two}, []json.RawMessage{two, one}, "side A has 2 definitions with this key; side B has 2 definitions with this key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Compare(sideOf(tt.olds), sideOf(tt.news), Options{})
			if len(d.Definitions) != 1 || d.Definitions[0].Invalid != tt.want {
				t.Fatalf("changes %+v, want one with %q", d.Definitions, tt.want)
			}
		})
	}
}

// TestDiffCapabilityOverrides: a side's capability overrides classify its
// tools.
func TestDiffCapabilityOverrides(t *testing.T) {
	olds := []json.RawMessage{json.RawMessage(`{"name":"t","description":"d"}`)}
	news := []json.RawMessage{json.RawMessage(`{"name":"t","description":"e"}`)}
	b := sideOf(news)
	b.Capabilities = capability.Overrides{"t": {capability.Exec}}
	d := Compare(sideOf(olds), b, Options{})
	if len(d.Definitions) != 1 || !slices.Contains(d.Definitions[0].GainedCapabilities, capability.Exec) {
		t.Fatalf("changes %+v, want exec gained from the override", d.Definitions)
	}
}

// TestBreakingTypeMessage: a parameter's type change names the type it had,
// or "no type".
func TestBreakingTypeMessage(t *testing.T) {
	for _, tt := range []struct{ old, cur, want string }{
		{`{"type":"object","properties":{"q":{"type":"string"}}}`, `{"type":"object","properties":{"q":{"type":"number"}}}`, `parameter "q" changed type from "string" to "number"`},
		{`{"type":"object","properties":{"q":{}}}`, `{"type":"object","properties":{"q":{"type":"number"}}}`, `parameter "q" changed type from no type to "number"`},
	} {
		d := Compare(sideOf([]json.RawMessage{tool("t", tt.old)}), sideOf([]json.RawMessage{tool("t", tt.cur)}), Options{})
		if len(d.Breaking) != 1 || d.Breaking[0].Message != tt.want {
			t.Errorf("breaking %+v, want %q", d.Breaking, tt.want)
		}
	}
}

// TestDiffFieldsCanonical: a member that differs only in its JSON spelling
// (order, space) is not a changed field.
func TestDiffFieldsCanonical(t *testing.T) {
	old := json.RawMessage(`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{}}}`)
	cur := json.RawMessage(`{"name":"t","description":"e","inputSchema":{ "properties" : {}, "type":"object" }}`)
	d := Compare(sideOf([]json.RawMessage{old}), sideOf([]json.RawMessage{cur}), Options{})
	if len(d.Definitions) != 1 {
		t.Fatalf("changes %+v", d.Definitions)
	}
	var fields []string
	for _, f := range d.Definitions[0].Fields {
		fields = append(fields, f.Field)
	}
	if !slices.Equal(fields, []string{"description"}) {
		t.Errorf("changed fields %q, want only the description", fields)
	}
}

// TestHiddenCharactersMessage: the breaking change names the member that
// gained hidden characters.
func TestHiddenCharactersMessage(t *testing.T) {
	old := json.RawMessage(`{"name":"t","description":"Look up notes."}`)
	cur := json.RawMessage(`{"name":"t","description":"Look up notes.\u200b"}`)
	d := Compare(sideOf([]json.RawMessage{old}), sideOf([]json.RawMessage{cur}), Options{})
	var msgs []string
	for _, b := range d.Breaking {
		if b.Rule == BreakingHiddenCharacters {
			msgs = append(msgs, b.Message)
		}
	}
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], `tool "t": "description" gained hidden characters (`) {
		t.Errorf("messages %q", msgs)
	}
}

// TestWriteTextLines: the text report's optional lines (the blank line
// before header changes, an invalid key, the breaking count) appear only
// when there is something to say, and a change of the whole definition is
// labelled so.
func TestWriteTextLines(t *testing.T) {
	one := json.RawMessage(`{"name":"t","description":"d"}`)
	two := json.RawMessage(`{"name":"t","description":"e"}`)
	snap := func(tools ...json.RawMessage) *digest.Snapshot {
		return &digest.Snapshot{Tools: tools, Prompts: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}}
	}
	head := "A: a (snapshot) · (unnamed server) · protocol \nB: b (snapshot) · (unnamed server) · protocol \n"
	for _, tt := range []struct {
		name string
		a, b *digest.Snapshot
		want string
	}{
		{"a description changed", snap(one), snap(two),
			head + "\n~ tool \"t\": changed\n    description (changed, text):\n      @@ -1 +1 @@\n      -d\n      +e\n\n0 added, 0 removed, 1 changed\n"},
		{"invalid and breaking", snap(tool("t", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)), snap(tool("t", `{"type":"object","properties":{}}`), one, two),
			head + "\n~ tool \"t\": changed\n    invalid: side B has 3 definitions with this key\n    BREAKING removed-parameter: parameter \"q\" was removed\n\n0 added, 0 removed, 1 changed; 1 breaking change\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteText(&b, Compare(SnapshotSide("a", OriginSnapshot, tt.a), SnapshotSide("b", OriginSnapshot, tt.b), Options{})); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("text\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
	var b strings.Builder
	if err := (FieldChange{Change: Changed, Format: "json"}).WriteText(&b, "  "); err != nil || b.String() != "  (whole definition) (changed, json):\n" {
		t.Errorf("whole-definition change: %q, %v", b.String(), err)
	}
}

// TestBreakingCapabilityMessage: a new tool "has" a dangerous capability,
// a changed one "gained" it.
func TestBreakingCapabilityMessage(t *testing.T) {
	schema := `{"type":"object","properties":{}}`
	for _, tt := range []struct {
		old, cur []json.RawMessage
		want     string
	}{
		{nil, []json.RawMessage{tool("run_command", schema)}, `new tool "run_command" has the exec capability`},
		{[]json.RawMessage{tool("t", schema, `"description":"Look up notes."`)}, []json.RawMessage{tool("t", schema, `"description":"Look up notes, or execute a shell line."`)}, `tool "t" gained the exec capability`},
	} {
		old := tt.old
		if old == nil {
			old = []json.RawMessage{}
		}
		d := Compare(sideOf(old), sideOf(tt.cur), Options{})
		if len(d.Breaking) != 1 || d.Breaking[0].Message != tt.want {
			t.Errorf("breaking %+v, want %q", d.Breaking, tt.want)
		}
	}
}
