package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
)

// TestWriteResults: a text line or a JSON line per result, in order.
func TestWriteResults(t *testing.T) {
	t.Parallel()
	results := []*Result{
		{Name: "a/b", Version: "1", Verified: true, Signers: []Signer{{Method: "key", Identity: "sha256:ab"}}},
		{Name: "c/\x1bd", Version: "2", Step: StepPolicy, Reason: "no policy server matches"},
	}
	for _, asJSON := range []bool{false, true} {
		var b bytes.Buffer
		emit := WriteResults(&b, asJSON)
		for _, r := range results {
			if err := emit(r); err != nil {
				t.Fatal(err)
			}
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != len(results) {
			t.Fatalf("json %v: %d lines: %q", asJSON, len(lines), b.String())
		}
		for i, r := range results {
			if !asJSON {
				if lines[i] != r.Text() {
					t.Errorf("line %d %q, want %q", i, lines[i], r.Text())
				}
				continue
			}
			var got Result
			if err := json.Unmarshal([]byte(lines[i]), &got); err != nil || got.Name != r.Name || got.Verified != r.Verified || got.Step != r.Step {
				t.Errorf("line %d %s: %+v %v", i, lines[i], got, err)
			}
		}
	}
}

// TestRunVerifiedDump: only results that verified reach RunOptions.Verified
// (none here: no policy server names an identity), and a dump that fails
// stops the run.
func TestRunVerifiedDump(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := New(Options{Policy: pf})
	var buf bytes.Buffer
	d := NewDumpWriter(&buf)
	emitted := 0
	sum, err := v.Run(context.Background(), func(fn func([]byte) error) error {
		return fn([]byte(serverJSON("a/b", "1", pointerMeta("https://x/b", dg))))
	}, RunOptions{Verified: d, Emit: func(*Result) error { emitted++; return nil }})
	if err != nil || sum.Failed != 1 || emitted != 1 {
		t.Fatalf("%+v %v %d", sum, err, emitted)
	}
	if err := d.Close(); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Fatalf("dump %q %v", buf.String(), err)
	}
}

// TestHintFile: the file hinted, its mode kept when written in place; an
// unreadable or refused file is an error naming it.
func TestHintFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "server.json")
	in := "{\n  \"name\": \"a/b\",\n  \"version\": \"1.0.0\",\n  \"description\": \"d\"\n}\n"
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	p := []Pointer{{URL: "https://example.com/b.json", Digest: dg}}
	out, err := HintFile(path, p)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Hint([]byte(in), p); !bytes.Equal(out, want) {
		t.Fatalf("%s, want %s", out, want)
	}
	if err := WriteServerJSON(path, out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	fresh := filepath.Join(dir, "new.json")
	if err := WriteServerJSON(fresh, out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v %v", fi.Mode(), err)
	}
	if _, err := HintFile(filepath.Join(dir, "missing.json"), p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name":"a","name":"b"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HintFile(bad, p); !errors.Is(err, ErrHint) || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("refused file: %v", err)
	}
}

// TestRunSource: the dump of what verified appears only after a whole
// run; a listing that fails leaves no file; a dump that cannot be created
// is a *DumpError.
func TestRunSource(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := New(Options{Policy: pf})
	dir := t.TempDir()
	src := filepath.Join(dir, "entries.jsonl")
	if err := os.WriteFile(src, []byte(serverJSON("a/b", "1", "")+"\n"+serverJSON("c/d", "1", "")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "verified.json")
	var names []string
	sum, err := v.RunSource(context.Background(), src, SourceOptions{VerifiedOut: out,
		RunOptions: RunOptions{Emit: func(r *Result) error { names = append(names, r.Name); return nil }}})
	if err != nil || sum.Entries != 2 || strings.Join(names, " ") != "a/b c/d" {
		t.Fatalf("%+v %v %q", sum, err, names)
	}
	if data, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(data)) != "[]" {
		t.Fatalf("dump %q %v", data, err)
	}
	stdin := strings.NewReader(serverJSON("a/b", "1", ""))
	if sum, err := v.RunSource(context.Background(), "-", SourceOptions{Stdin: stdin}); err != nil || sum.Entries != 1 {
		t.Errorf("standard input: %+v %v", sum, err)
	}
	failing := filepath.Join(dir, "not-written.json")
	var de *DumpError
	if _, err := v.RunSource(context.Background(), filepath.Join(dir, "none.jsonl"), SourceOptions{VerifiedOut: failing}); err == nil || errors.As(err, &de) {
		t.Errorf("a missing source: %v", err)
	}
	if _, err := os.Stat(failing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed run wrote its dump: %v", err)
	}
	if _, err := v.RunSource(context.Background(), src, SourceOptions{VerifiedOut: filepath.Join(dir, "no", "dir.json")}); !errors.As(err, &de) {
		t.Errorf("a dump that cannot be created: %v", err)
	}
	// Interrupted after the source's last entry: still interrupted, and
	// the dump is not written.
	ctx, cancel := context.WithCancelCause(context.Background())
	late := filepath.Join(dir, "interrupted.json")
	_, err = v.RunSource(ctx, src, SourceOptions{VerifiedOut: late,
		RunOptions: RunOptions{Emit: func(r *Result) error {
			if r.Name == "c/d" {
				cancel(errors.New("interrupt signal received"))
			}
			return nil
		}}})
	if !errors.Is(err, ErrInterrupted) || strings.Count(err.Error(), "interrupt signal received") != 1 {
		t.Errorf("interrupted after the last entry: %v, want ErrInterrupted saying its cause once", err)
	}
	if _, err := os.Stat(late); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an interrupted run wrote its dump: %v", err)
	}
}
