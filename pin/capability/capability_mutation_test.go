package capability

import (
	"encoding/json"
	"slices"
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
