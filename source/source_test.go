package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
)

func TestParseSpec(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snap := write("snap.json", `{"tools":[]}`, 0o644)
	noExt := write("listing", "\n  {\"tools\":[]}", 0o644)
	script := write("server.sh", "#!/bin/sh\nexec true\n", 0o755)
	jsonExec := write("exec.json", `{"tools":[]}`, 0o755) // a file system that marks all files executable
	spaced := write("my server", "#!/bin/sh\n", 0o755)

	tests := []struct {
		arg   string
		after []string
		want  Spec
		err   string
	}{
		{after: []string{"node", "index.js", "a b"}, want: Spec{Command: []string{"node", "index.js", "a b"}}},
		{arg: "x", after: []string{"node"}, err: "not both"},
		{arg: "", err: "no SOURCE given"},
		{arg: "  ", err: "no SOURCE given"},
		{arg: "http://127.0.0.1:3000/mcp", want: Spec{URL: "http://127.0.0.1:3000/mcp"}},
		{arg: "HTTPS://example.com/mcp?x=1", want: Spec{URL: "HTTPS://example.com/mcp?x=1"}},
		{arg: "http:///mcp", err: "has no host"},
		{arg: snap, want: Spec{File: snap}},
		{arg: noExt, want: Spec{File: noExt}},
		{arg: jsonExec, want: Spec{File: jsonExec}},
		{arg: script, want: Spec{Command: []string{script}}},
		{arg: spaced, want: Spec{Command: []string{spaced}}},
		{arg: dir, err: "is a directory"},
		{arg: `node dist/index.js --root '/tmp/a b'`, want: Spec{Command: []string{"node", "dist/index.js", "--root", "/tmp/a b"}}},
		{arg: "npx -y @modelcontextprotocol/server-memory", want: Spec{Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}}},
		{arg: filepath.Join(dir, "missing.json"), err: "file does not exist"},
		{arg: "server > log", err: "unquoted '>'"},
		{arg: `node 'unterminated`, err: "unterminated single quote"},
	}
	for _, tt := range tests {
		got, err := ParseSpec(tt.arg, tt.after)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSpec(%q, %q) = %+v, %v; want error containing %q", tt.arg, tt.after, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSpec(%q, %q) = %+v, %v; want %+v", tt.arg, tt.after, got, err, tt.want)
		}
	}
}

func TestSpecString(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		want string
	}{
		{Spec{File: "a.json"}, "snapshot file a.json"},
		{Spec{Command: []string{"node", "a b"}}, "command node 'a b'"},
		{Spec{URL: "https://user:pw@host/mcp?key=secret"}, "URL https://host/mcp"},
	} {
		if got := tt.spec.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.json", `{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"s","version":"1"},`+
		`"protocolVersion":"2025-11-25","instructions":"hi","tools":[`+toolA+`],"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-02T03:04:05Z"}`)
	snap, err := Load(context.Background(), Spec{File: full}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Server.Name != "s" || len(snap.Tools) != 1 || string(snap.Tools[0]) != toolA || *snap.Instructions != "hi" ||
		!snap.CapturedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("snapshot %+v", snap)
	}
	bare := write("bare.json", `{"prompts":[{"name":"p"}]}`)
	if snap, err := Load(context.Background(), Spec{File: bare}, Options{}); err != nil || len(snap.Prompts) != 1 || snap.Tools == nil {
		t.Errorf("bare list: %+v, %v", snap, err)
	}

	for _, tt := range []struct {
		name string
		path string
		opts Options
		is   error
		msg  string
	}{
		{name: "too large", path: full, opts: Options{MaxFileBytes: 100}, is: ErrFileTooLarge, msg: "larger than 100 bytes"},
		{name: "missing", path: filepath.Join(dir, "nope.json"), is: os.ErrNotExist},
		{name: "not JSON", path: write("bad.json", `{"tools":[`), msg: "bad.json"},
		{name: "one page of many", path: write("page.json", `{"tools":[],"nextCursor":"x"}`), msg: "nextCursor"},
	} {
		_, err := Load(context.Background(), Spec{File: tt.path}, tt.opts)
		var se *StageError
		if !errors.As(err, &se) || se.Stage != StageFile {
			t.Errorf("%s: error %v is not a file StageError", tt.name, err)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: error %v is not %v", tt.name, err, tt.is)
		}
		if err != nil && !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: error %q does not contain %q", tt.name, err, tt.msg)
		}
	}
}

func TestLoadValidates(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		opts Options
		msg  string
	}{
		{Spec{}, Options{}, "exactly one"},
		{Spec{File: "a", URL: "http://h/"}, Options{}, "exactly one"},
		{Spec{File: "a"}, Options{ProtocolVersion: "2099-01-01"}, `protocol version "2099-01-01" is not supported`},
		{Spec{File: "a"}, Options{ClientCapabilities: json.RawMessage(`[]`)}, "want a JSON object"},
		{Spec{File: "a"}, Options{ClientCapabilities: json.RawMessage(`null`)}, "want a JSON object"},
		{Spec{File: "a"}, Options{ClientCapabilities: json.RawMessage(`{"roots":{},"roots":{}}`)}, `repeated member name "roots"`},
	} {
		if _, err := Load(context.Background(), tt.spec, tt.opts); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Load(%+v, %+v) = %v; want an error containing %q", tt.spec, tt.opts, err, tt.msg)
		}
	}
}

// TestClientCapabilities: the capabilities announced are the ones given,
// in the initialize handshake and in the per-request _meta.
func TestClientCapabilities(t *testing.T) {
	const caps = `{"sampling":{}}`
	conn, seen := scriptedConn(t, legacy(map[string][]string{
		"tools/list":               {result(`{"tools":[]}`)},
		"prompts/list":             {result(`{"prompts":[]}`)},
		"resources/templates/list": {result(`{"resourceTemplates":[]}`)},
	}))
	snap, err := runSession(t, conn, Options{ClientCapabilities: json.RawMessage(caps)})
	if err != nil {
		t.Fatal(err)
	}
	if string(snap.ClientCapabilities) != caps {
		t.Errorf("snapshot records client capabilities %s, want %s", snap.ClientCapabilities, caps)
	}
	reqs := seen()
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].Params["_meta"], &meta); err != nil || string(meta["io.modelcontextprotocol/clientCapabilities"]) != caps {
		t.Errorf("server/discover _meta %s", reqs[0].Params["_meta"])
	}
	if reqs[1].Method != "initialize" || string(reqs[1].Params["capabilities"]) != caps {
		t.Errorf("initialize params %s", reqs[1].Params)
	}
}

func TestTailAndEscape(t *testing.T) {
	tb := tailBuffer{max: 8}
	for _, s := range []string{"hello ", "wide ", "world\n\n"} {
		tb.Write([]byte(s))
	}
	if got := tb.String(); got != " world" {
		t.Errorf("tail %q", got)
	}
	e := &ExitError{Status: "exit status 1", Stderr: "bad\x1b[2J\u202eevil\u200b\xff"}
	// Raw: escaped once, where it is printed.
	if got, want := e.Error(), "server exited (exit status 1) before answering; stderr: \"bad\x1b[2J\u202eevil\u200b\xff\""; got != want {
		t.Errorf("ExitError = %s, want %s", got, want)
	}
	long := strings.Repeat("é", 1000) + "END"
	if got := escapeText(long, 100); !strings.HasPrefix(got, `…"é`) || !strings.HasSuffix(got, `END"`) {
		t.Errorf("escapeText keeps the end: %s", got)
	}
}

// TestDefaultClientCapabilities: the default profile is written in the one
// form snapshots and locks record (RFC 8785), and announces every client
// capability the specification defines and the extensions hosts announce
// (docs/SNAPSHOT.md): a superset of what the MCP Inspector 2.12's CLI and
// go-sdk announce, top level and below.
func TestDefaultClientCapabilities(t *testing.T) {
	canon, err := digest.CanonicalClientCapabilities([]byte(DefaultClientCapabilities))
	if err != nil || string(canon) != DefaultClientCapabilities {
		t.Fatalf("DefaultClientCapabilities is not in its RFC 8785 form: %s, %v", canon, err)
	}
	var full map[string]any
	if err := json.Unmarshal([]byte(DefaultClientCapabilities), &full); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{
		// mcpdo 2.12.0 (captured from its initialize request).
		`{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/skills":{}}}`,
		`{"roots":{"listChanged":true}}`,
		`{"sampling":{"context":{},"tools":{}},"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`,
	} {
		var h map[string]any
		if err := json.Unmarshal([]byte(host), &h); err != nil {
			t.Fatal(err)
		}
		if !within(h, full) {
			t.Errorf("the default profile does not cover %s", host)
		}
	}
}

// within reports whether every member of a, at every depth, is in b with
// the same value.
func within(a, b map[string]any) bool {
	for k, v := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		if am, ok := v.(map[string]any); ok {
			bm, ok := bv.(map[string]any)
			if !ok || !within(am, bm) {
				return false
			}
			continue
		}
		if fmt.Sprint(v) != fmt.Sprint(bv) {
			return false
		}
	}
	return true
}
