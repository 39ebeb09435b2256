package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/badserver"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// hostileOnce is badserver.Hostile escaped exactly once, as
// internal/textsafe escapes it where it is printed: the zero-width space and
// the bidi override as \u{…}, the backslash doubled, the quotes as they are.
const hostileOnce = `zero\u{200B}width bidi\u{202E}override back\\slash "quote"`

// TestOneEscaping feeds every path that prints a server's text (the
// verify-pin report, its findings and diff's breaking changes as text and
// as JSON, a refused lock's error and finding, the proxy's block report, its
// warn-mode notice and its roll-forward notice, an error quoting what the
// server wrote or answered, an identity mismatch naming a regular
// expression) a string
// with a zero-width space, a bidi override, a backslash and quotes, and
// checks the bytes printed: escaped once, at the edge (docs/PROXY.md,
// docs/JSON.md), never twice, never not at all.
func TestOneEscaping(t *testing.T) {
	if got := textsafe.Escape(badserver.Hostile); got != hostileOnce {
		t.Fatalf("textsafe.Escape(badserver.Hostile) = %s, want %s", got, hostileOnce)
	}
	bad := fixtures.BuildBadServer(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "bad.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, "--", bad, "--behavior", "good"); code != 0 {
		t.Fatalf("pin: exit %d %s", code, stderr)
	}
	// check says whether out holds want, and nothing escaped twice or not
	// at all.
	check := func(t *testing.T, what, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", what, w, out)
			}
		}
		for _, never := range []string{`\\u{200B}`, `\\u{202E}`, `\\\\`, `\"`, "\u200b", "\u202e"} {
			if strings.Contains(out, never) {
				t.Errorf("%s holds %q (escaped twice, or not at all):\n%s", what, never, out)
			}
		}
	}

	t.Run("verify-pin report", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "verify-pin", "--lock", lock, "--", bad, "--behavior", "hostile-text")
		if code != 1 {
			t.Errorf("exit %d", code)
		}
		check(t, "the report", stdout, "      +"+hostileOnce+"\n")
	})
	t.Run("block report", func(t *testing.T) {
		s := startCLI(t, nil, "proxy", "--lock", lock, "--", bad, "--behavior", "hostile-text")
		if _, _, err := s.client(t); err == nil {
			t.Error("not blocked")
		}
		s.exit(t)
		check(t, "the block report", s.stderr.String(), "        +"+hostileOnce+"\n")
	})
	t.Run("warn-mode notice", func(t *testing.T) {
		pol := vtWrite(t, dir, "warn.json", []byte(`{"kind":"mcpsign.policy","policyVersion":1,
		  "servers":{"bad":{"unsigned":"tofu","lock":"bad.lock","mode":"warn"}}}`))
		s := startCLI(t, nil, "proxy", "--policy", pol, "--name", "bad", "--", bad, "--behavior", "hostile-text")
		cs, _, err := s.client(t)
		if err != nil {
			t.Fatalf("mode warn: %v", err)
		}
		cs.Close()
		s.exit(t)
		check(t, "the warn notice", s.stderr.String(), "drift relayed", "      +"+hostileOnce+"\n")
	})
	t.Run("roll-forward notice", func(t *testing.T) {
		env := keysEnv()
		publisher, _ := sharedKeys(t)
		bundle := filepath.Join(dir, "bad.sigstore.json")
		signed := filepath.Join(dir, "signed.lock")
		proxy := func(behavior string) string {
			t.Helper()
			if code, _, stderr := runSetup(t, env, "sign", "key", "--key", publisher.key, "--password-env", "PW", "-o", bundle, "--force", "--", bad, "--behavior", behavior); code != 0 {
				t.Fatalf("sign %s: %s", behavior, stderr)
			}
			s := startCLI(t, nil, "proxy", "--lock", signed, "--bundle", bundle, "--key", publisher.pub, "--", bad, "--behavior", behavior)
			cs, _, err := s.client(t)
			if err != nil {
				t.Fatalf("%s: %v", behavior, err)
			}
			cs.Close()
			if code := s.exit(t); code != 0 {
				t.Fatalf("%s: exit %d", behavior, code)
			}
			return s.stderr.String()
		}
		proxy("good")
		check(t, "the roll-forward notice", proxy("hostile-text"), "rolled forward", "        +"+hostileOnce+"\n")
	})
	// The names of hostile-names land in drift findings (pin.Finding.Message)
	// and breaking changes (diff.Breaking.Message): the text report shows
	// them escaped once, the JSON report carries them raw, JSON-escaped by
	// encoding/json only (docs/JSON.md).
	h, hOnce := badserver.Hostile, hostileOnce
	findings := []struct{ rule, raw, text string }{
		{"pin-tool-changed", `tool "good" changed: inputSchema, ` + h, `tool "good" changed: inputSchema, ` + hOnce},
		{"pin-hidden-characters", `tool "good": "` + h + `" gained hidden characters (U+200B, U+202E)`,
			`tool "good": "` + hOnce + `" gained hidden characters (U+200B, U+202E)`},
		{"pin-tool-added", `tool "` + h + `" is not in the lock (capabilities: delete)`,
			`tool "` + hOnce + `" is not in the lock (capabilities: delete)`},
		{"pin-capability-added", `new tool "` + h + `" has delete (description "deletes")`,
			`new tool "` + hOnce + `" has delete (description "deletes")`},
		{"pin-hidden-characters", `tool "` + h + `": "name" gained hidden characters (U+200B, U+202E)`,
			`tool "` + hOnce + `": "name" gained hidden characters (U+200B, U+202E)`},
	}
	breaking := []struct{ rule, raw, text string }{
		{"newly-required-parameter", `new parameter "` + h + `" is required`, `new parameter "` + hOnce + `" is required`},
		{"new-capability", `new tool "` + h + `" has the delete capability`, `new tool "` + hOnce + `" has the delete capability`},
		{"hidden-characters", `tool "` + h + `": "name" gained hidden characters (U+200B, U+202E)`,
			`tool "` + hOnce + `": "name" gained hidden characters (U+200B, U+202E)`},
	}
	// lines are the lines of out that start with one of the prefixes
	// (after indentation): the messages, not the member diffs, whose JSON
	// text of the hostile-names schema holds JSON's own escapes.
	lines := func(out string, prefixes ...string) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(out, "\n") {
			for _, p := range prefixes {
				if strings.HasPrefix(strings.TrimLeft(l, " "), p) {
					b.WriteString(l)
					break
				}
			}
		}
		return b.String()
	}
	// checkJSON says whether out holds each message, encoded by
	// encoding/json from the raw text, and no message holds anything
	// terminal-escaped.
	checkJSON := func(t *testing.T, what, out string, raw ...string) {
		t.Helper()
		for _, r := range raw {
			enc, _ := json.Marshal(r)
			if want := `"message": ` + string(enc) + ",\n"; !strings.Contains(out, want) && !strings.Contains(out, strings.TrimSuffix(want, ",\n")+"\n") {
				t.Errorf("%s lacks %s:\n%s", what, want, out)
			}
		}
		msgs := lines(out, `"message": `)
		for _, never := range []string{`\\u{200B}`, `\\u{202E}`, `\\\\`} {
			if strings.Contains(msgs, never) {
				t.Errorf("%s holds %q in a message (terminal-escaped inside JSON):\n%s", what, never, msgs)
			}
		}
	}
	t.Run("verify-pin findings", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--", bad, "--behavior", "hostile-names")
		if code != 1 {
			t.Errorf("exit %d %s", code, stderr)
		}
		var want []string
		for _, f := range findings {
			want = append(want, fmt.Sprintf("error  %s  %s\n", f.rule, f.text))
		}
		check(t, "the text report's findings", lines(stdout, "error  ", "info   "), want...)
		code, stdout, stderr = runCLI(t, "verify-pin", "--lock", lock, "--format", "json", "--", bad, "--behavior", "hostile-names")
		if code != 1 {
			t.Errorf("--format json: exit %d %s", code, stderr)
		}
		var raw []string
		for _, f := range findings {
			raw = append(raw, f.raw)
		}
		checkJSON(t, "the JSON report", stdout, raw...)
	})
	t.Run("diff breaking", func(t *testing.T) {
		snap := filepath.Join(dir, "hostile-names.snapshot.json")
		if code, _, stderr := runCLI(t, "snapshot", "-o", snap, "--", bad, "--behavior", "hostile-names"); code != 0 {
			t.Fatalf("snapshot: exit %d %s", code, stderr)
		}
		code, stdout, stderr := runCLI(t, "diff", lock, snap)
		if code != 0 {
			t.Errorf("exit %d %s", code, stderr)
		}
		var want []string
		for _, b := range breaking {
			want = append(want, fmt.Sprintf("    BREAKING %s: %s\n", b.rule, b.text))
		}
		check(t, "the text diff's breaking changes", lines(stdout, "BREAKING ", "capabilities: "), append(want, `    capabilities: delete (description "deletes")`+"\n")...)
		code, stdout, stderr = runCLI(t, "diff", lock, snap, "--format", "json")
		if code != 0 {
			t.Errorf("--format json: exit %d %s", code, stderr)
		}
		var raw []string
		for _, b := range breaking {
			raw = append(raw, b.raw)
		}
		checkJSON(t, "the JSON diff", stdout, raw...)
	})
	t.Run("lock error", func(t *testing.T) {
		// A lock refused at a hostile path: pin.LockError quotes the path
		// raw, the error line escapes it once, and the pin-lock-unreadable
		// finding of the JSON report carries it raw.
		missing := filepath.Join(dir, h+".lock")
		code, _, stderr := runCLI(t, "verify-pin", "--lock", missing, "--", bad, "--behavior", "good")
		if code != 2 {
			t.Errorf("exit %d", code)
		}
		once := textsafe.Escape(missing)
		check(t, "the error", stderr, `mcpsign: lock file "`+once+`": stat `+once+": ")
		code, stdout, stderr := runCLI(t, "verify-pin", "--lock", missing, "--format", "json", "--", bad, "--behavior", "good")
		if code != 2 {
			t.Errorf("--format json: exit %d %s", code, stderr)
		}
		enc, _ := json.Marshal(`lock file "` + missing + `": stat ` + missing + ": ")
		if want := `"message": ` + strings.TrimSuffix(string(enc), `"`); !strings.Contains(stdout, want) {
			t.Errorf("the JSON report lacks %s:\n%s", want, stdout)
		}
		checkJSON(t, "the JSON report", stdout)
	})
	t.Run("server output in an error", func(t *testing.T) {
		_, _, stderr := runCLI(t, "digest", "--", bad, "--behavior", "hostile-jsonrpc")
		check(t, "the error", stderr, `the server wrote "{"jsonrpc":"2.0",`+hostileOnce+`"`)
		_, _, stderr = runCLI(t, "digest", "--", bad, "--behavior", "hostile-error")
		check(t, "the error", stderr, `with error -32603: "`+hostileOnce+`"`)
		_, _, stderr = runCLI(t, "digest", "--", bad, "--behavior", "hostile-exit")
		check(t, "the error", stderr, `before answering; stderr: "`+hostileOnce+`"`)
	})
	t.Run("identity regexp", func(t *testing.T) {
		snap, _ := exampleSnapshot(t, dir)
		ca := newTestCA(t)
		key, cert := ca.issue(t, "good", nil)
		bundle := filepath.Join(dir, "c.sigstore.json")
		if code, _, stderr := runWith(t, nil, "sign", "certificate", "--key", key, "--certificate", cert, "--certificate-chain", ca.chainFile, snap, "-o", bundle); code != 0 {
			t.Fatalf("sign: %s", stderr)
		}
		code, stdout, stderr := runCLI(t, "verify", "certificate", snap, "--bundle", bundle, "--ca-roots", ca.rootPEM, "--ca-intermediates", ca.chainFile,
			"--certificate-identity-regexp", `release@acme\.example\.org`, "--allow-current-time")
		if code != 1 {
			t.Errorf("exit %d %s", code, stderr)
		}
		if want := `matching "^(?:release@acme\\.example\\.org)$"`; !strings.Contains(stdout, want) || strings.Contains(stdout, `\\\\`) {
			t.Errorf("the identity failure lacks %q (escaped once):\n%s", want, stdout)
		}
	})
}

// TestOneEscapingPaths feeds text a server, a registry, a log or a file
// controls (erasserver.Hostile: a bidi override, a zero-width space, a
// terminal escape sequence, a backslash, quotes and a newline that would
// start a line "mcpsign: verified") through each path that names it in an
// error, a problem or a result line, and checks the bytes printed: escaped
// once, by internal/textsafe, at the edge (docs/PROXY.md "Hostile text"):
// never raw, never twice, never with Go's escapes (strconv.Quote, %q).
func TestOneEscapingPaths(t *testing.T) {
	t.Parallel()
	h := erasserver.Hostile
	once := textsafe.Escape(h)
	if want := `b\u{202E}b\u{200B}\u{1B}[31m\\ "q"\u{A}mcpsign: verified`; once != want {
		t.Fatalf("textsafe.Escape(erasserver.Hostile) = %s, want %s", once, want)
	}
	js := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	regPolicy := write("registry-policy.json", `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{"repositorySigner":{}}}}`)
	eras := fixtures.Executable(t, erasserver.Program)
	rekorKey := write("rekor.pem", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAu0Ej7oUMGd1e+Vy0mlgdybpa1LzqGYmqC5+43G4btXc=\n-----END PUBLIC KEY-----\n")
	released := filepath.Join(dir, "released-"+h)
	hostPolicy := write("host-policy.json", `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu"}}}`)
	hostFile := func(name string, server string) string {
		return write(name+"/.cursor/mcp.json", `{"mcpServers": {`+js(h)+`: `+server+`}}`)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		// want is what the output says around the text escaped once (%s).
		want string
	}{
		{"registry verify, an entry's name", []string{"registry", "verify", write("name.jsonl", `{"name":"io.github.other/x`+strings.Trim(js(h), `"`)+`","version":"1"}`+"\n"), "--policy", regPolicy},
			1, `no policy server is "io.github.other/x%s" or "io.github.other/*"`},
		{"registry verify, an entry's status", []string{"registry", "verify", write("status.jsonl", `{"name":"io.github.acme/x","version":"1","status":`+js(h)+`}`+"\n"), "--policy", regPolicy},
			1, `status "%s" is none of active, deprecated, deleted`},
		{"policy check, a server's name", []string{"policy", "check", write("policy-name.json", `{"kind":"mcpsign.policy","policyVersion":1,"servers":{`+js(h)+`:{"unsigned":"tofu"}}}`)},
			2, `/servers/%s: invalid server name "%s"`},
		{"policy, a member's value", []string{"policy", "check", write("policy-mode.json", `{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a":{"unsigned":"tofu","mode":`+js(h)+`}}}`)},
			2, `"%s": want one of`},
		{"hosts list, a problem naming the host file's value", []string{"hosts", "list", "--config", hostFile("list", `{"command": "/bin/srv", "type": `+js(h)+`}`)},
			0, `its type is "%s", not "stdio"`},
		{"hosts wrap, a server the policy does not name", []string{"hosts", "wrap", "--dry-run", "--mcpsign-path", fakeMcpsign(t), "--policy", hostPolicy, "--config", hostFile("wrap", `{"command": "/bin/srv"}`)},
			0, `SKIPPED: the proxy would refuse to start it: invalid server name "%s"`},
		{"monitor, a --released directory", []string{"monitor", "--init", "--state", filepath.Join(dir, "state.json"), "--log", "http://127.0.0.1:1", "--certificate-identity", "a@example.com", "--certificate-oidc-issuer", "https://issuer.example", "--released", released},
			2, `--released "` + textsafe.Escape(dir) + `/released-%s": not a directory`},
		{"eras, a tool only one era serves", []string{"digest", "--", eras, "hostile-extra"},
			2, `tool "%s" is served only under initialize`},
		{"trustroot create, a start time", []string{"trustroot", "create", "-o", filepath.Join(dir, "tr.json"), "--rekor-key", rekorKey, "--rekor-start", h},
			2, `--rekor-start "%s": want an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			out := stdout + stderr
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			if want := strings.ReplaceAll(tc.want, "%s", once); !strings.Contains(out, want) {
				t.Errorf("the output lacks %s (escaped once):\n%s", want, out)
			}
			for _, never := range []string{"\u202e", "\u200b", "\x1b", "\nmcpsign: verified", `\\u{`, `\u202e`, `\u200b`, `\x1b`, `\\\\`, `\\"q`} {
				if strings.Contains(out, never) {
					t.Errorf("the output holds %q (raw, escaped twice, or with Go's escapes):\n%s", never, out)
				}
			}
		})
	}
}
