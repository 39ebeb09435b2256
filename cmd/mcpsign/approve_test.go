package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
)

var expectHint = regexp.MustCompile(`--expect (\S+)`)

// expects returns the --expect arguments approve's report suggests.
func expects(t *testing.T, stdout string) []string {
	t.Helper()
	var out []string
	for _, m := range expectHint.FindAllStringSubmatch(stdout, -1) {
		out = append(out, "--expect", m[1])
	}
	if len(out) == 0 {
		t.Fatalf("no --expect hint in:\n%s", stdout)
	}
	return out
}

// TestApproveRugPull: approve shows the example server's rug pull against
// a tofu lock (escaped), approves nothing without --expect, --yes without
// a terminal, or with a stale --expect, and approves exactly what was
// shown with them; every step is in the audit log.
func TestApproveRugPull(t *testing.T) {
	t.Parallel()
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "notes.mcpsign.lock")
	log := filepath.Join(dir, "audit.jsonl")
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--audit-log", log, "--", server); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	held, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if l, err := pin.Read(lock); err != nil || l.LockDigest != held.LockDigest {
			t.Fatalf("the lock changed: %v", err)
		}
	}
	base := []string{"approve", "--lock", lock, "--reason", "rug pull reviewed \u202e", "--approver", "alice"}
	rug := []string{"--", server, "--mode", fixtures.ModeRugPull}

	// The review (as documented: no --expect, no --reason): the report,
	// escaped, and the digests to expect; nothing approved, exit 0.
	code, review, stderr := runCLI(t, append([]string{"approve", "--lock", lock}, rug...)...)
	if code != 0 || !strings.Contains(review, "nothing approved (the review)") {
		t.Fatalf("review: exit %d %s\n%s", code, stderr, review)
	}
	for _, want := range []string{"pin-tool-added", "pin-capability-added", `\u{200B}<IMPORTANT>\u{202E}`, "to approve what is shown: --expect tools=sha256:"} {
		if !strings.Contains(review, want) {
			t.Errorf("review lacks %q:\n%s", want, review)
		}
	}
	if strings.ContainsAny(review, "\u200b\u202e") {
		t.Error("raw hidden characters in the report")
	}
	unchanged(t)
	exp := expects(t, review)

	// The server changed again since the review: a snapshot of the rug
	// pull with one more edit.
	snapFile := filepath.Join(dir, "changed-again.snapshot.json")
	if code, _, stderr := runCLI(t, "snapshot", "-o", snapFile, "--", server, "--mode", fixtures.ModeRugPull); code != 0 {
		t.Fatalf("snapshot: %s", stderr)
	}
	data, _ := os.ReadFile(snapFile)
	changed := bytes.Replace(data, []byte("Delete a note"), []byte("Delete all notes"), 1)
	if bytes.Equal(changed, data) {
		t.Fatal("the snapshot has no delete_note description")
	}
	os.WriteFile(snapFile, changed, 0o644)

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"stale --expect", append(append(append(append([]string{}, base...), exp...), "--yes"), snapFile), 1, "does not serve what --expect says"},
		{"an unchanged kind that changed", append(append(append([]string{}, base...), "--expect", "prompts="+held.Sets.Prompts, "--yes"), rug...), 1, "tools: the server serves"},
		{"no terminal, no --yes", append(append(append([]string{}, base...), exp...), rug...), 2, "give --yes"},
		{"bad --expect", append(append(append([]string{}, base...), "--expect", "tool=sha256:00", "--yes"), rug...), 2, "SET is one of"},
		{"repeated --expect", append(append(append(append([]string{}, base...), exp...), append(exp, "--yes")...), rug...), 2, "given twice"},
		{"no reason", append(append(append([]string{"approve", "--lock", lock}, exp...), "--yes"), rug...), 2, "--reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q:\n%s\n%s", code, tc.code, tc.stderr, stdout, stderr)
			}
			unchanged(t)
		})
	}

	// Exactly what was shown.
	code, out, stderr := runCLI(t, append(append(append(append([]string{}, base...), exp...), "--yes", "--source-revision", "v1.3.0", "--audit-log", log), rug...)...)
	if code != 0 || !strings.Contains(out, "approved into") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	l, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	a := l.Approval
	if a.Method != pin.MethodManual || a.Approver != "alice" || a.Reason != "rug pull reviewed \u202e" || a.PreviousLockDigest != held.LockDigest || a.SourceRevision != "v1.3.0" {
		t.Errorf("approval %+v", a)
	}
	if code, stdout, _ := runCLI(t, append([]string{"verify-pin", "--lock", lock}, rug...)...); code != 0 {
		t.Errorf("verify-pin after approve: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI(t, append(append([]string{"approve", "--lock", lock, "--reason", "x", "--yes"}, exp...), rug...)...); code != 0 || !strings.Contains(stdout, "nothing to approve") {
		t.Errorf("approve again: exit %d\n%s", code, stdout)
	}

	// The log: pin's approval, approve's refusals (none were given
	// --audit-log but this one) and approval; shown escaped.
	if code, stdout, stderr := runCLI(t, "audit", "verify", log); code != 0 || !strings.Contains(stdout, "2 event(s)") {
		t.Fatalf("audit verify: exit %d %s %s", code, stdout, stderr)
	}
	code, shown, _ := runCLI(t, "audit", "show", log, "--server", "mcpsign-example")
	if code != 0 || !strings.Contains(shown, "approved") || !strings.Contains(shown, `approver "alice"`) || !strings.Contains(shown, `\u{202E}`) || !strings.Contains(shown, "change: pin-capability-added tool/") || strings.Contains(shown, "\u202e") {
		t.Errorf("audit show:\n%s", shown)
	}
	if code, shown, _ := runCLI(t, "audit", "show", log, "--server", "other"); code != 0 || shown != "" {
		t.Errorf("audit show --server other: %d %q", code, shown)
	}
	code, js, _ := runCLI(t, "audit", "show", log, "--format", "json", "--since", "1h")
	if lines := strings.Split(strings.TrimSpace(js), "\n"); code != 0 || len(lines) != 2 || !strings.Contains(lines[1], `"method":"manual"`) || !strings.Contains(lines[1], `"previousLockDigest":"`+held.LockDigest+`"`) ||
		!strings.Contains(lines[1], `"changes":["pin-tool-added tool/run_command: exec`) {
		t.Errorf("audit show --format json: %d\n%s", code, js)
	}
}

// TestAuditConcurrentProxiesAndApprove: ten proxy processes blocking the
// rug pull and one approve process write to one audit log at once: every
// line is whole and the chain verifies; deleting or reordering a line is
// then found by 'audit verify' at that line.
func TestAuditConcurrentProxiesAndApprove(t *testing.T) {
	t.Parallel()
	mcpsign := fixtures.BuildMcpsign(t)
	server := fixtures.BuildExampleServerNoRace(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	log := filepath.Join(dir, "audit.jsonl")
	if code, _, stderr := runCLI(t, "pin", "--lock", lock, "--tofu", "--", server); code != 0 {
		t.Fatalf("pin: %s", stderr)
	}
	_, review, _ := runCLI(t, "approve", "--lock", lock, "--reason", "r", "--", server, "--mode", fixtures.ModeRugPull)
	exp := expects(t, review)
	// approve replaces a copy of the lock, so that every proxy blocks
	// whenever it starts.
	approved := filepath.Join(dir, "approved.lock")
	data, _ := os.ReadFile(lock)
	os.WriteFile(approved, data, 0o644)

	var wg sync.WaitGroup
	codes := make([]int, 10)
	for i := range codes {
		wg.Go(func() {
			p, _ := startProxyProcess(t, mcpsign, "proxy", "--lock", lock, "--audit-log", log, "--", server, "--mode", fixtures.ModeRugPull)
			codes[i] = p.end(t)
		})
	}
	var approveOut []byte
	var approveErr error
	wg.Go(func() {
		cmd := exec.CommandContext(context.Background(), mcpsign, append(append([]string{"approve", "--lock", approved, "--reason", "reviewed", "--approver", "bob", "--yes", "--audit-log", log}, exp...),
			"--", server, "--mode", fixtures.ModeRugPull)...)
		approveOut, approveErr = cmd.CombinedOutput()
	})
	wg.Wait()
	if approveErr != nil {
		t.Fatalf("approve: %v\n%s", approveErr, approveOut)
	}
	blocked := 0
	for _, c := range codes {
		if c != proxycmd.ExitBlocked {
			t.Errorf("a proxy exited %d, want %d", c, proxycmd.ExitBlocked)
		}
		blocked++
	}
	n, err := audit.Verify(log)
	if err != nil || n != blocked+1 {
		t.Fatalf("audit.Verify = %d, %v; want %d events (%d blocked, 1 approved)", n, err, blocked+1, blocked)
	}
	// The approved lock is anchored in the log, though ten proxies wrote
	// to it at the same time: its approval follows its head.
	if code, out, stderr := runCLI(t, "audit", "verify", log, "--lock", approved); code != 0 {
		t.Errorf("audit verify --lock: %d %s %s", code, out, stderr)
	}
	data, _ = os.ReadFile(log)
	if c := bytes.Count(data, []byte(`"event":"approved"`)); c != 1 {
		t.Errorf("%d approved events", c)
	}
	if c := bytes.Count(data, []byte(`"event":"blocked"`)); c != blocked || c == 0 {
		t.Errorf("%d blocked events, %d proxies blocked", c, blocked)
	}

	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1]
	for _, tc := range []struct {
		name  string
		lines [][]byte
		want  string
	}{
		{"line 2 deleted", append([][]byte{lines[0]}, lines[2:]...), "line 2 (byte"},
		{"lines 2 and 3 swapped", append([][]byte{lines[0], lines[2], lines[1]}, lines[3:]...), "line 2 (byte"},
		{"line 1 edited", append([][]byte{bytes.Replace(lines[0], []byte(`"time":"2`), []byte(`"time":"1`), 1)}, lines[1:]...), "line 2 (byte"},
		{"last line torn", append(append([][]byte{}, lines[:len(lines)-1]...), lines[len(lines)-1][:10]), "is not whole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "audit.jsonl")
			os.WriteFile(bad, bytes.Join(tc.lines, nil), 0o644)
			code, _, stderr := runCLI(t, "audit", "verify", bad)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("audit verify: exit %d %s, want %q", code, stderr, tc.want)
			}
		})
	}

	// A killed writer's partial line: writers refuse, repair cuts it, and
	// writers go on from the last whole line.
	f, _ := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte(`{"time":"2026-`))
	f.Close()
	pinArgs := []string{"pin", "--lock", filepath.Join(dir, "other.lock"), "--tofu", "--audit-log", log, "--", server}
	if code, _, stderr := runCLI(t, pinArgs...); code != 2 || !strings.Contains(stderr, "the last line is not whole") || !strings.Contains(stderr, "audit repair") {
		t.Errorf("pin on a torn log: exit %d %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "audit", "repair", log); code != 0 || !strings.Contains(stdout, "cut a partial last line (14 bytes)") {
		t.Fatalf("audit repair: exit %d %s %s", code, stdout, stderr)
	}
	os.Remove(filepath.Join(dir, "other.lock"))
	if code, _, stderr := runCLI(t, pinArgs...); code != 0 {
		t.Fatalf("pin after repair: %s", stderr)
	}
	if n2, err := audit.Verify(log); err != nil || n2 != n+1 {
		t.Fatalf("after repair: %d, %v", n2, err)
	}
}
