package monitor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestReporterTime: with Now (a --follow), each text line begins with the
// time, RFC 3339 in UTC, and each JSON line has it as "time"; without,
// the lines are as they were.
func TestReporterTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 6, 5, 4, 3, 999, time.FixedZone("X", 3600))
	fd := Finding{Kind: KindUnreleased, Alert: true, LogIndex: 7, Log: "log.example", Digest: "sha256:00"}
	res := &Result{Log: "log.example", From: 1, To: 8}
	for _, c := range []struct {
		name   string
		json   bool
		now    func() time.Time
		prefix string
	}{
		{"text, follow", false, func() time.Time { return at }, "2026-12-06T04:04:03Z "},
		{"text, once", false, nil, ""},
		{"json, follow", true, func() time.Time { return at }, ""},
		{"json, once", true, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			r := &Reporter{W: &b, JSON: c.json, ReportVersion: 1, StatePath: "s.json", Now: c.now}
			r.Finding(fd)
			r.Summary(res)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("%q", b.String())
			}
			for _, l := range lines {
				if !c.json {
					if c.prefix != "" && !strings.HasPrefix(l, c.prefix) || c.prefix == "" && !strings.HasPrefix(l, "ALERT") && !strings.HasPrefix(l, "log ") {
						t.Errorf("line %q, want it to begin with %q", l, c.prefix)
					}
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				if got, want := m["time"], map[bool]any{true: "2026-12-06T04:04:03Z", false: nil}[c.now != nil]; got != want {
					t.Errorf("%s: time %v, want %v", l, got, want)
				}
			}
		})
	}
}
