package capability

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDescriptionScanBound: a description of exactly MaxDescriptionScan
// bytes is read to its end (no "unknown" for a truncated read); one byte
// more is not, and says so.
func TestDescriptionScanBound(t *testing.T) {
	t.Parallel()
	for n, want := range map[int][]Capability{
		MaxDescriptionScan:     {Delete},
		MaxDescriptionScan + 1: {Delete, Unknown},
	} {
		desc := "Deletes " + strings.Repeat("a", n-len("Deletes "))
		def, _ := json.Marshal(map[string]string{"name": "x", "description": desc})
		if got := Classify(def, nil); !slices.Equal(got.Capabilities, Sort(want)) {
			t.Errorf("a description of %d bytes: %v, want %v", n, got.Capabilities, Sort(want))
		}
	}
}

// TestInflectVowels: "a" is a vowel for the inflection rules like the
// others: a consonant after it doubles ("planning"), and a "y" after it
// takes no "-ies" ("plays", not "plaies").
func TestInflectVowels(t *testing.T) {
	t.Parallel()
	if got := inflect("plan"); !slices.Contains(got, "planning") {
		t.Errorf("inflect(plan) = %q, lacks planning", got)
	}
	if got := inflect("play"); slices.Contains(got, "plaies") {
		t.Errorf("inflect(play) = %q, has plaies", got)
	}
	for _, b := range []byte("aeiou") {
		if !isVowel(b) {
			t.Errorf("%c is not a vowel", b)
		}
	}
}

// TestNameOnlyRunVerb: "start" is a run verb in a name only: start_process
// is exec, "Starts the process." in a description is not.
func TestNameOnlyRunVerb(t *testing.T) {
	t.Parallel()
	if got := Classify([]byte(`{"name":"start_process"}`), nil); !slices.Contains(got.Capabilities, Exec) {
		t.Errorf("start_process: %v, want exec", got.Capabilities)
	}
	if got := Classify([]byte(`{"name":"x","description":"Starts the process."}`), nil); slices.Contains(got.Capabilities, Exec) {
		t.Errorf("a description starting a process: %v, want no exec", got.Capabilities)
	}
}

// TestOverridesSizeBound: a caps.json of exactly MaxOverridesBytes is
// read; one byte more is refused for its size.
func TestOverridesSizeBound(t *testing.T) {
	t.Parallel()
	doc := func(n int) []byte {
		head := `{"tools":{"x":["read"]}}`
		return []byte(head + strings.Repeat(" ", n-len(head)))
	}
	if _, err := ParseOverrides(doc(MaxOverridesBytes)); err != nil {
		t.Errorf("%d bytes: %v", MaxOverridesBytes, err)
	}
	if _, err := ParseOverrides(doc(MaxOverridesBytes + 1)); err == nil || !strings.Contains(err.Error(), "bytes is more than") {
		t.Errorf("%d bytes: %v", MaxOverridesBytes+1, err)
	}
}

// TestOverridesCountBounds: exactly MaxOverrideTools tools are read, one
// more refused; five unknown members are all named, a sixth is cut to "…".
func TestOverridesCountBounds(t *testing.T) {
	t.Parallel()
	tools := func(n int) json.RawMessage {
		m := make(map[string][]string, n)
		for i := range n {
			m["t"+strconv.Itoa(i)] = []string{"read"}
		}
		b, _ := json.Marshal(m)
		return b
	}
	if _, err := ParseOverrideTools(tools(MaxOverrideTools), false); err != nil {
		t.Errorf("%d tools: %v", MaxOverrideTools, err)
	}
	if _, err := ParseOverrideTools(tools(MaxOverrideTools+1), false); err == nil {
		t.Errorf("%d tools: accepted", MaxOverrideTools+1)
	}
	five := `{"tools":{},"a":1,"b":1,"c":1,"d":1,"e":1}`
	if _, err := ParseOverrides([]byte(five)); err == nil || strings.Contains(err.Error(), "…") || !strings.Contains(err.Error(), `"e"`) {
		t.Errorf("five unknown members: %v", err)
	}
	six := `{"tools":{},"a":1,"b":1,"c":1,"d":1,"e":1,"f":1}`
	if _, err := ParseOverrides([]byte(six)); err == nil || !strings.Contains(err.Error(), `"e", …`) || strings.Contains(err.Error(), `"f"`) {
		t.Errorf("six unknown members: %v", err)
	}
}
