package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
	"github.com/mcpsign/mcpsign/pin"
)

// TestListingBothEras: no era stands for the other, and no version of the
// initialize handshake for another (docs/DISCOVERY.md, "Both eras"). Every
// listing command reads both eras of a server that speaks both, and every
// version of the initialize handshake, and refuses, with exit 2 and nothing
// written, one that serves different instructions or definitions under
// two of them, naming both and the item; a server/discover answer the
// TypeScript SDK v2 client refuses is
// not taken for the hello, so the lock holds what that client holds.
func TestListingBothEras(t *testing.T) {
	t.Parallel()
	server := fixtures.Executable(t, erasserver.Program)
	dir := t.TempDir()
	approved := filepath.Join(dir, "approved.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", approved, "--", server, "same"); code != 0 {
		t.Fatalf("pin of a server whose eras agree: exit %d: %s", code, stderr)
	}
	for _, tt := range []struct {
		name, mode string
		args       []string
		item       string
	}{
		{"digest, instructions poisoned under initialize", "poison-instructions", []string{"digest"}, "the instructions differ"},
		{"pin, a tool poisoned under initialize", "poison-tool", []string{"pin", "--tofu", "--lock", filepath.Join(dir, "never.lock")}, `tool "a" differs`},
		{"verify-pin, a tool only under initialize", "extra-tool", []string{"verify-pin", "--lock", approved}, `tool "b" is served only under initialize`},
		{"snapshot, a tool only under server/discover", "modern-extra", []string{"snapshot", "-o", filepath.Join(dir, "never.json")}, `tool "b" is served only under server/discover`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(tt.args, "--", server, tt.mode)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range []string{tt.item, `server/discover, protocol "2026-07-28"`, `initialize, protocol "2025-11-25"`, "--protocol-version"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %s:\n%s", want, stderr)
				}
			}
		})
	}
	// Another face under an older version of the initialize handshake
	// (2025-06-18, 2025-03-26), which a client may ask for and the proxy
	// relays: pin and verify-pin read every version and refuse, naming
	// both versions and the definition.
	for _, tt := range []struct {
		name, mode  string
		args        []string
		first, item string
		other       string
	}{
		{"pin, a tool changed under 2025-06-18", "old-face", []string{"pin", "--tofu", "--lock", filepath.Join(dir, "never.lock")},
			`server/discover, protocol "2026-07-28"`, `tool "a" differs`, `initialize, protocol "2025-06-18"`},
		{"verify-pin, a tool changed under 2025-06-18", "old-face", []string{"verify-pin", "--lock", approved},
			`server/discover, protocol "2026-07-28"`, `tool "a" differs`, `initialize, protocol "2025-06-18"`},
		{"pin, an initialize-only server with other instructions under 2025-03-26", "old-instructions", []string{"pin", "--tofu", "--lock", filepath.Join(dir, "never.lock")},
			`initialize, protocol "2025-11-25"`, "the instructions differ", `initialize, protocol "2025-03-26"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(tt.args, "--", server, tt.mode)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range []string{tt.item, tt.first, tt.other, "--protocol-version"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %s:\n%s", want, stderr)
				}
			}
		})
	}
	// verify (with a bundle of the server's agreeing face) and sign read
	// every version too.
	env := keysEnv()
	k := setupKey(t, dir, "k", sharedKeyPassword) // the subject is the listing, not the key
	bundle := filepath.Join(dir, "same.sigstore.json")
	if code, _, stderr := runWith(t, env, "sign", "key", "--key", k.key, "--password-env", "PW", "-o", bundle, "--", server, "same"); code != 0 {
		t.Fatalf("sign of a server whose versions agree: %s", stderr)
	}
	for _, args := range [][]string{
		{"verify", "key", "--bundle", bundle, "--key", k.pub, "--write-lock", filepath.Join(dir, "never.lock")},
		{"sign", "key", "--key", k.key, "--password-env", "PW", "-o", filepath.Join(dir, "never.json")},
	} {
		code, stdout, stderr := runWith(t, env, append(args, "--", server, "old-face")...)
		if code != 2 || !strings.Contains(stderr, `tool "a" differs`) || !strings.Contains(stderr, `initialize, protocol "2025-06-18"`) {
			t.Errorf("%s of a server with another face under 2025-06-18: exit %d, want 2 naming the tool and the version\n%s\n%s", args[0], code, stdout, stderr)
		}
	}
	// A server that refuses the older versions with an error answer shows
	// their clients nothing: it pins, as a server whose versions agree.
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", filepath.Join(dir, "refused.lock"), "--", server, "old-refused"); code != 0 {
		t.Fatalf("pin of a server that refuses older versions: exit %d: %s", code, stderr)
	}
	// A normal server (the example server, both eras, every version the
	// same) pins as before: the lock of reading every version holds the
	// digests of reading server/discover alone, as the first listing.
	example := fixtures.BuildExampleServerNoRace(t)
	var locks []*pin.Lock
	for _, extra := range [][]string{nil, {"--protocol-version", "2026-07-28"}} {
		lock := filepath.Join(dir, "example"+strconv.Itoa(len(locks))+".lock")
		code, _, stderr := runCLI(t, append(append([]string{"pin", "--tofu", "--lock", lock}, extra...), "--", example)...)
		if code != 0 {
			t.Fatalf("pin of the example server %v: exit %d: %s", extra, code, stderr)
		}
		l, err := pin.Read(lock)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	if a, b := locks[0], locks[1]; a.ProtocolVersion != b.ProtocolVersion || a.Sets != b.Sets || len(a.Definitions) != len(b.Definitions) || len(a.Definitions) == 0 {
		t.Errorf("example server locks: every version read %s %+v (%d definitions), server/discover alone %s %+v (%d)",
			a.ProtocolVersion, a.Sets, len(a.Definitions), b.ProtocolVersion, b.Sets, len(b.Definitions))
	}
	for _, f := range []string{"never.lock", "never.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written for a server whose eras differ", f)
		}
	}

	// capabilities.tools: true in server/discover: the TypeScript SDK v2
	// client, even in its server/discover-first mode, refuses the answer
	// and holds what initialize serves; the lock holds the same.
	lock := filepath.Join(dir, "caps-true.lock")
	if code, _, stderr := runCLI(t, "pin", "--tofu", "--lock", lock, "--", server, "caps-true"); code != 0 {
		t.Fatalf("pin: exit %d: %s", code, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	if l.ProtocolVersion != "2025-11-25" || l.Instructions == nil || *l.Instructions != erasserver.Poison {
		t.Fatalf("lock protocol %s, instructions %v: want the initialize era's", l.ProtocolVersion, l.Instructions)
	}
	held := runTSClient2Config(t, map[string]any{"command": server, "args": []string{"caps-true"}, "mode": "auto", "timeoutMs": 20000})
	if held.Instructions == nil || *held.Instructions != erasserver.Poison || held.ProtocolVersion != "2025-11-25" {
		t.Fatalf("the TypeScript SDK v2 client holds %+v", held)
	}
	if code, stdout, stderr := runCLI(t, "verify-pin", "--lock", lock, "--", server, "caps-true"); code != 0 {
		t.Fatalf("verify-pin of what the client holds: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// A repeated instructions member in server/discover, the last one
	// poisoned (and a poisoned tool in that era): the TypeScript SDK v2
	// client reads it (the last member wins) and holds the poison, so it is
	// no fallback to the clean initialize face: exit 2, naming
	// server/discover and why, nothing written (docs/DISCOVERY.md, "How a
	// hello is read").
	for _, args := range [][]string{{"digest"}, {"pin", "--tofu", "--lock", filepath.Join(dir, "dup.lock")}} {
		code, stdout, stderr := runCLI(t, append(args, "--", server, "dup-instructions")...)
		if code != 2 || !strings.Contains(stderr, "server/discover") || !strings.Contains(stderr, `repeated member "instructions"`) {
			t.Errorf("%s of a server/discover answer with a repeated member: exit %d, want 2 naming server/discover and the member\n%s\n%s", args[0], code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dup.lock")); err == nil {
		t.Errorf("dup.lock written for a server/discover answer with a repeated member")
	}
	if held := runTSClient2Config(t, map[string]any{"command": server, "args": []string{"dup-instructions"}, "mode": "auto", "timeoutMs": 20000}); held.Instructions == nil || *held.Instructions != erasserver.Poison || held.ProtocolVersion != "2026-07-28" {
		t.Fatalf("the TypeScript SDK v2 client holds %+v; the row assumes it reads the repeated member, last wins", held)
	}

	// A server/discover answer without resultType: the TypeScript SDK v2
	// client's probe reads it all the same (its schema of the answer has no
	// resultType) and holds that era, while the initialize face is another:
	// no fallback either, exit 2 (found by the review pass).
	code, stdout, stderr := runCLI(t, "pin", "--tofu", "--lock", filepath.Join(dir, "nort.lock"), "--", server, "no-result-type")
	if code != 2 || !strings.Contains(stderr, "resultType") {
		t.Errorf("pin of a server/discover answer without resultType: exit %d, want 2 naming resultType\n%s\n%s", code, stdout, stderr)
	}
	if held := runTSClient2Config(t, map[string]any{"command": server, "args": []string{"no-result-type"}, "mode": "auto", "timeoutMs": 20000}); held.ProtocolVersion != "2026-07-28" {
		t.Fatalf("the TypeScript SDK v2 client holds %+v; the row assumes it takes a server/discover answer without resultType", held)
	}
}
