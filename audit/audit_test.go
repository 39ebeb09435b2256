package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/filelock"
)

const (
	dA = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
	dB = "sha256:7b6c4c93fd95ab521fbd66a41ffb22e6615e75e126dbbc692c21142b8ce68619"
)

func event(i int) *Event {
	e := &Event{
		Time:       time.Date(2026, 12, 1, 12, 0, i, 0, time.UTC),
		Event:      Blocked,
		Server:     digest.ServerInfo{Name: "notes", Version: "1.0." + strconv.Itoa(i)},
		LockBefore: dA, LockAfter: dA,
		Sets:     &Sets{Tools: dB, Prompts: dA, ResourceTemplates: dA},
		Findings: []string{"pin-tool-changed tool/search_notes"},
	}
	if i%2 == 1 {
		e.Event = Approved
		e.Findings = nil
		e.Evidence = &Evidence{Method: "manual", Approver: "alice", Reason: "reviewed", PreviousLockDigest: dA}
	}
	return e
}

func writeLog(t *testing.T, n int) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range n {
		if err := Append(context.Background(), path, event(i)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, bytes.SplitAfter(data, []byte("\n"))[:n]
}

func TestAppendVerify(t *testing.T) {
	path, lines := writeLog(t, 5)
	n, err := Verify(path)
	if err != nil || n != 5 {
		t.Fatalf("Verify = %d, %v", n, err)
	}
	if !bytes.Contains(lines[0], []byte(`"prev":null`)) {
		t.Errorf("first line's prev is not null: %s", lines[0])
	}
	if want := `"prev":"` + LineDigest(bytes.TrimSuffix(lines[0], []byte("\n"))) + `"`; !bytes.Contains(lines[1], []byte(want)) {
		t.Errorf("second line %s lacks %s", lines[1], want)
	}
	// Member order of docs/AUDIT.md.
	if !bytes.HasPrefix(lines[0], []byte(`{"time":"2026-12-01T12:00:00Z","event":"blocked","server":{"name":"notes","version":"1.0.0"},"lockBefore":`)) {
		t.Errorf("line 1 = %s", lines[0])
	}
}

// TestTamper: deleting, editing or reordering any line is detected at that
// line (or, for the last line deleted, the log is shorter: the count says).
func TestTamper(t *testing.T) {
	const n = 5
	_, lines := writeLog(t, n)
	type tc struct {
		name    string
		lines   [][]byte
		line    int
		wantErr error
	}
	var cases []tc
	for i := range n - 1 {
		del := append(append([][]byte{}, lines[:i]...), lines[i+1:]...)
		cases = append(cases, tc{fmt.Sprintf("delete %d", i+1), del, i + 1, ErrChain})
		swapped := append([][]byte{}, lines...)
		swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
		cases = append(cases, tc{fmt.Sprintf("swap %d and %d", i+1, i+2), swapped, i + 1, ErrChain})
	}
	for i := range n {
		// An edit that stays a valid event breaks the chain at the next
		// line; the last line has no next, so an edit there is invisible to
		// the chain but its own fields are still checked.
		ed := append([][]byte{}, lines...)
		ed[i] = bytes.Replace(ed[i], []byte(`"notes"`), []byte(`"notez"`), 1)
		if i < n-1 {
			cases = append(cases, tc{fmt.Sprintf("edit %d", i+1), ed, i + 2, ErrChain})
		}
		bad := append([][]byte{}, lines...)
		bad[i] = bytes.Replace(bad[i], []byte(`"time"`), []byte(`"Time"`), 1)
		cases = append(cases, tc{fmt.Sprintf("case variant %d", i+1), bad, i + 1, ErrMalformed})
		dup := append([][]byte{}, lines...)
		dup[i] = bytes.Replace(dup[i], []byte(`{"time"`), []byte(`{"event":"warned","time"`), 1)
		cases = append(cases, tc{fmt.Sprintf("repeated member %d", i+1), dup, i + 1, ErrMalformed})
	}
	torn := append([][]byte{}, lines...)
	torn[n-1] = torn[n-1][:20]
	cases = append(cases, tc{"torn last line", torn, n, ErrTorn})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Scan(bytes.NewReader(bytes.Join(c.lines, nil)), func(Record) error { return nil })
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, c.wantErr) || le.Line != c.line {
				t.Fatalf("Scan = %v, want %v at line %d", err, c.wantErr, c.line)
			}
		})
	}
}

func TestParseLineRefuses(t *testing.T) {
	good, err := event(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLine(good); err != nil {
		t.Fatalf("good line: %v", err)
	}
	for _, c := range []struct{ name, from, to string }{
		{"unknown member", `"prev":null`, `"prev":null,"x":1`},
		{"missing prev", `,"prev":null`, ``},
		{"not UTC", `12:00:01Z`, `13:00:01+01:00`},
		{"unknown event", `"approved"`, `"approvd"`},
		{"findings on approval", `"prev":null`, `"findings":["x"],"prev":null`},
		{"bad digest", dA, "sha256:00"},
		{"empty approver", `"approver":"alice"`, `"approver":""`},
		{"nested case variant", `"approver"`, `"Approver"`},
		{"big number", `"method"`, `"logIndex":9007199254740993,"method"`},
		{"array", `{`, `[{`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := bytes.Replace(good, []byte(c.from), []byte(c.to), 1)
			if bytes.Equal(bad, good) {
				t.Fatalf("%q not in %s", c.from, good)
			}
			if _, err := ParseLine(bad); !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseLine(%s) = %v, want ErrMalformed", bad, err)
			}
		})
	}
}

func TestMarshalRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Event)
	}{
		{"no kind", func(e *Event) { e.Event = "" }},
		{"blocked without findings", func(e *Event) { e.Findings = nil }},
		{"blocked with evidence", func(e *Event) { e.Evidence = &Evidence{Method: "tofu"} }},
		{"no time", func(e *Event) { e.Time = time.Time{} }},
		{"invalid UTF-8", func(e *Event) { e.Findings = []string{"\xff"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := event(0)
			c.mod(e)
			if _, err := e.Marshal(); err == nil {
				t.Fatal("Marshal succeeded")
			}
		})
	}
}

// The helper processes: MCPSIGN_AUDIT_HELPER=append writes events, =torn
// writes a partial line under the file lock and waits to be killed.
func TestMain(m *testing.M) {
	switch os.Getenv("MCPSIGN_AUDIT_HELPER") {
	case "append":
		path := os.Getenv("MCPSIGN_AUDIT_LOG")
		id, _ := strconv.Atoi(os.Getenv("MCPSIGN_AUDIT_ID"))
		for i := range 20 {
			e := event(i)
			e.Server.Name = fmt.Sprintf("writer-%d", id)
			if err := Append(context.Background(), path, e); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		os.Exit(0)
	case "torn":
		path := os.Getenv("MCPSIGN_AUDIT_LOG")
		_ = filelock.With(context.Background(), path+FileLockSuffix, "test", func() error {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				os.Exit(3)
			}
			line, _ := event(7).Marshal()
			f.Write(line[:len(line)/2])
			f.Sync()
			os.Stdout.WriteString("written\n")
			time.Sleep(time.Minute)
			return nil
		})
		os.Exit(4)
	}
	os.Exit(m.Run())
}

func helper(t *testing.T, mode, path string, id int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPSIGN_AUDIT_HELPER="+mode, "MCPSIGN_AUDIT_LOG="+path, "MCPSIGN_AUDIT_ID="+strconv.Itoa(id))
	return cmd
}

// TestConcurrentWriters: ten processes appending to one log at once leave
// whole lines only, and the chain verifies.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var cmds []*exec.Cmd
	for i := range 10 {
		c := helper(t, "append", path, i)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer: %v: %s", err, c.Stderr)
		}
	}
	n, err := Verify(path)
	if err != nil || n != 200 {
		t.Fatalf("Verify = %d, %v; want 200 events", n, err)
	}
	per := map[string]int{}
	f, _ := os.Open(path)
	defer f.Close()
	if err := Scan(f, func(r Record) error { per[r.Event.Server.Name]++; return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if got := per[fmt.Sprintf("writer-%d", i)]; got != 20 {
			t.Errorf("writer-%d: %d events, want 20", i, got)
		}
	}
}

// TestKilledWriter: a writer killed mid-line leaves the log readable up to
// its last whole line; the next writer refuses (ErrTorn), Verify names the
// line, Repair cuts it, and writers go on from the last whole line.
func TestKilledWriter(t *testing.T) {
	path, _ := writeLog(t, 3)
	whole, _ := os.ReadFile(path)
	c := helper(t, "torn", path, 0)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()

	n := 0
	f, _ := os.Open(path)
	err = Scan(f, func(Record) error { n++; return nil })
	f.Close()
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrTorn) || le.Line != 4 || le.Offset != int64(len(whole)) || n != 3 {
		t.Fatalf("Scan: %d events, %v; want 3 and ErrTorn at line 4, byte %d", n, err, len(whole))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Append(ctx, path, event(8)); !errors.Is(err, ErrTorn) {
		t.Fatalf("Append to a torn log = %v, want ErrTorn", err)
	}
	done, err := Repair(ctx, path)
	if err != nil || done.Cut == 0 || done.Newline {
		t.Fatalf("Repair = %+v, %v", done, err)
	}
	if err := Append(ctx, path, event(8)); err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(path); err != nil || n != 4 {
		t.Fatalf("Verify after repair = %d, %v", n, err)
	}
}

// TestRepairRefusesEdits: Repair cuts only a torn last line, never an edit.
func TestRepairRefusesEdits(t *testing.T) {
	path, lines := writeLog(t, 3)
	lines[0] = bytes.Replace(lines[0], []byte(`"notes"`), []byte(`"notez"`), 1)
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(context.Background(), path); !errors.Is(err, ErrChain) {
		t.Fatalf("Repair = %v, want ErrChain", err)
	}
	if _, err := Verify(path); !errors.Is(err, ErrChain) {
		t.Fatalf("the log changed: %v", err)
	}
	// A last line that is whole but not an event: the writer refuses.
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(context.Background(), path, event(0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Append = %v, want ErrMalformed", err)
	}
}

// TestLinesAreASCII: server text outside printable ASCII is written as \u
// escapes (safe on a terminal) and reads back as the same string.
func TestLinesAreASCII(t *testing.T) {
	e := event(0)
	e.Findings = []string{"pin-tool-added tool/x\u202e\u200b\x7f😀é"}
	line, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range line {
		if c < 0x20 || c >= 0x7f {
			t.Fatalf("byte %#x in %s", c, line)
		}
	}
	if !bytes.Contains(line, []byte(`x\u202e\u200b\u007f\ud83d\ude00\u00e9`)) {
		t.Errorf("line %s", line)
	}
	back, err := ParseLine(line)
	if err != nil || back.Findings[0] != e.Findings[0] {
		t.Fatalf("ParseLine = %+v, %v", back, err)
	}
}
