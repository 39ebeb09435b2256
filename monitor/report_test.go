package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/attest"
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

// TestReporterText: a text finding says each part it has and only those
// (the registry's listing or the log's entry, the identity and its issuer,
// the key, the digest, the source, the integrated time, the detail),
// alerts as ALERT, with the server's strings escaped; the summary counts
// what the run checked; a failed write is kept.
func TestReporterText(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    Finding
		want string
	}{
		{"a log entry, everything", Finding{Kind: KindUnreleased, Alert: true, LogIndex: 0, Log: "log.example", Identity: "a@example.com", Issuer: "https://issuer.example",
			Digest: "sha256:00", Source: &attest.Source{Repository: "https://github.com/acme/x", Commit: "c0", Ref: "refs/tags/v1"}, IntegratedTime: &at, Detail: "why"},
			`ALERT unreleased-entry: log log.example index 0, signed by "a@example.com" (issuer "https://issuer.example"), artifact sha256:00, source "https://github.com/acme/x" commit "c0" ref "refs/tags/v1", integrated 2026-01-02T03:04:05Z: why`},
		{"a key", Finding{Kind: KindUnreleased, Alert: true, LogIndex: 9, Log: "log.example", KeyID: "sha256:ab", Digest: "sha256:00"},
			`ALERT unreleased-entry: log log.example index 9, signed by the key sha256:ab, artifact sha256:00`},
		{"an identity without issuer, a notice", Finding{Kind: KindUntrustedCertificate, LogIndex: 3, Log: "log.example", Identity: "a@example.com"},
			`notice untrusted-certificate: log log.example index 3, signed by "a@example.com"`},
		{"a registry's listing", Finding{Kind: KindUnverifiedRelease, Alert: true, LogIndex: -1, Log: "log.example", Registry: "https://registry.example", Server: "io.github.acme/x", Version: "1.0.0", Bundle: "https://b.example/x.json", Detail: "d"},
			`ALERT unverified-release: registry "https://registry.example" entry "io.github.acme/x" version "1.0.0", bundle "https://b.example/x.json": d`},
		{"hostile strings", Finding{Kind: KindUnknownEntry, LogIndex: 1, Log: "log\x1b[31m", Identity: "a\"\n", Detail: "x\x07"},
			`notice unknown-entry: log log\u{1B}[31m index 1, signed by "a\"\u{A}": x\u{7}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			(&Reporter{W: &b}).Finding(c.f)
			if got := strings.TrimSuffix(b.String(), "\n"); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
	var b bytes.Buffer
	r := &Reporter{W: &b, StatePath: "s.json"}
	r.Summary(&Result{Log: "log.example", From: 1, To: 8, Bundles: 2, HashTiles: 3, Watched: 4, Released: 5, Alerts: 6, Notices: 7})
	if want := "log log.example: checked entries 1 to 8 (2 entry bundles, 3 hash tiles): 4 by a watched signer, 5 of them released; 6 alerts, 7 notices; state written to s.json\n"; b.String() != want {
		t.Errorf("summary %q, want %q", b.String(), want)
	}
	failed := &Reporter{W: failWriter{}}
	failed.Finding(Finding{Kind: KindUnreleased})
	if failed.Err() == nil {
		t.Error("a failed write not kept")
	}
	failed = &Reporter{W: failWriter{}, JSON: true}
	failed.Summary(&Result{})
	if failed.Err() == nil {
		t.Error("a failed JSON write not kept")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("write failed") }
