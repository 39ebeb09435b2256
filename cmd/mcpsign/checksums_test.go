package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestChecksumsAndPredicate: 'digest --checksums' lists exactly the
// statement's subjects in sha256sum format and 'attest --predicate-only'
// is exactly its predicate, so that actions/attest signs what 'mcpsign
// sign' would (docs/PUBLISHING.md).
func TestChecksumsAndPredicate(t *testing.T) {
	t.Parallel()
	snap, _ := exampleSnapshot(t, t.TempDir())
	code, stmtOut, stderr := runCLI(t, "attest", snap, "-o", "-")
	if code != 0 {
		t.Fatalf("attest: exit %d %s", code, stderr)
	}
	var st struct {
		Subject []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal([]byte(stmtOut), &st); err != nil {
		t.Fatal(err)
	}

	code, sums, stderr := runCLI(t, "digest", snap, "--checksums")
	if code != 0 {
		t.Fatalf("digest --checksums: exit %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(sums, "\n"), "\n")
	if len(lines) != len(st.Subject) {
		t.Fatalf("%d checksum lines, %d subjects", len(lines), len(st.Subject))
	}
	for i, s := range st.Subject {
		if want := s.Digest["sha256"] + "  " + s.Name; lines[i] != want {
			t.Errorf("line %d: %q, want %q", i+1, lines[i], want)
		}
	}

	code, pred, stderr := runCLI(t, "attest", snap, "-o", "-", "--predicate-only")
	if code != 0 {
		t.Fatalf("attest --predicate-only: exit %d %s", code, stderr)
	}
	var got, want any
	if err := json.Unmarshal([]byte(pred), &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(st.Predicate, &want)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("--predicate-only is not the statement's predicate:\n%s\n%s", g, w)
	}

	if code, _, stderr := runCLI(t, "digest", snap, "--checksums", "--format", "json"); code != 2 || !strings.Contains(stderr, "checksums") {
		t.Errorf("--checksums with --format: exit %d %s, want a usage error", code, stderr)
	}
}
