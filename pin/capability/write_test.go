package capability

import (
	"strings"
	"testing"
)

// TestWriteText: one line per tool in name order, delete and exec marked,
// names and matched words escaped.
func TestWriteText(t *testing.T) {
	tools := map[string]*Tool{
		"search_notes":     Classify([]byte(`{"name":"search_notes","annotations":{"readOnlyHint":true}}`), nil),
		"delete\u202enote": Classify([]byte(`{"name":"delete\u202enote"}`), nil),
		"run":              Classify([]byte(`{"name":"run"}`), []Capability{Exec}),
	}
	var b strings.Builder
	if err := WriteText(&b, tools); err != nil {
		t.Fatal(err)
	}
	want := `  ! delete\u{202E}note       delete (name "delete")
  ! run                      exec (capabilities override)
    search_notes             read (annotation "readOnlyHint"; name "search")
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if got := Names([]Capability{Read, Network}); got != "read, network" {
		t.Errorf("Names: %q", got)
	}
}
