package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/nofollow"
)

// lock digests of a server's successive locks in the tests below.
const (
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	dD = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
)

// history is a genuine log of one server: approved (none → dA), blocked
// under dA, approved dA → dC, approved dC → dD, a warning under dD.
func history() []*Event {
	approve := func(sec int, before, after string) *Event {
		return &Event{Time: time.Date(2026, 12, 1, 12, 0, sec, 0, time.UTC), Event: Approved,
			Server: digest.ServerInfo{Name: "notes", Version: "1"}, LockBefore: before, LockAfter: after,
			Evidence: &Evidence{Method: "tofu"}}
	}
	refuse := func(sec int, kind Kind, lock string) *Event {
		return &Event{Time: time.Date(2026, 12, 1, 12, 0, sec, 0, time.UTC), Event: kind,
			Server: digest.ServerInfo{Name: "notes", Version: "1"}, LockBefore: lock, LockAfter: lock,
			Findings: []string{"pin-tool-changed tool/x"}}
	}
	return []*Event{approve(1, "", dA), refuse(2, Blocked, dA), approve(3, dA, dC), approve(4, dC, dD), refuse(5, Warned, dD)}
}

// rechain writes events as a log, each prev the digest of the line before:
// what someone who can write the file can always do. It returns the lines'
// digests.
func rechain(t *testing.T, path string, events []*Event) []string {
	t.Helper()
	var b bytes.Buffer
	var digests []string
	prev := ""
	for _, e := range events {
		e.Prev = prev
		line, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		prev = LineDigest(line)
		digests = append(digests, prev)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return digests
}

// TestOrder: events removed or reordered with the chain computed again
// are found: time going backwards, or a lockBefore that is not the
// lockAfter of the event before it about the same server; the line is
// named.
func TestOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		edit func([]*Event) []*Event
		line string
	}{
		{"genuine", func(e []*Event) []*Event { return e }, ""},
		{"a middle approval removed", func(e []*Event) []*Event { return append(e[:2:2], e[3:]...) }, "line 3 "},
		{"two lines swapped", func(e []*Event) []*Event { e[2], e[3] = e[3], e[2]; return e }, "line 3 (byte"},
		{"swapped, times too", func(e []*Event) []*Event {
			e[2], e[3] = e[3], e[2]
			e[2].Time, e[3].Time = e[3].Time, e[2].Time
			return e
		}, "line 3 (byte"},
		{"time going backwards", func(e []*Event) []*Event { e[3].Time = e[1].Time; return e }, "line 4 (byte"},
		{"refusals under the served name, approvals under the signed one", func(e []*Event) []*Event {
			e[1].Server.Name, e[4].Server.Name = "notes-server", "notes-server"
			return e
		}, ""},
		{"another server in between", func(e []*Event) []*Event {
			other := *e[1]
			other.Server.Name = "other"
			other.LockBefore, other.LockAfter = dB, dB
			return append(e[:2:2], append([]*Event{&other}, e[2:]...)...)
		}, ""},
	}
	for i, tc := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
		rechain(t, path, tc.edit(history()))
		_, err := Check(path, CheckOptions{})
		if tc.line == "" {
			if err != nil {
				t.Errorf("%d %s: %v", i, tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrOrder) || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%s: Verify = %v, want ErrOrder at %s", tc.name, err, tc.line)
		}
	}
}

// TestAnchor: a log cut at its end passes the chain but not an anchor
// beyond the cut: the head a lock recorded, or one kept elsewhere. What
// follows an anchor is allowed.
func TestAnchor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	ev := history()
	d := rechain(t, path, ev)
	// The lock dC was written after line 2 (its approval is line 3);
	// dA on the empty log (line 1).
	lockC := Anchor{Name: "the lock C", Head: d[1], LockDigest: dC}
	lockD := Anchor{Name: "the lock D", Head: d[2], LockDigest: dD}
	lockA := Anchor{Name: "the lock A", Head: EmptyHead, LockDigest: dA}
	expectEnd := Anchor{Name: "the expected head", Head: d[4]}

	sum, err := Check(path, CheckOptions{Anchors: []Anchor{lockD, expectEnd}})
	if err != nil || sum.Events != 5 || sum.Head != d[4] {
		t.Fatalf("genuine: %+v, %v", sum, err)
	}
	for _, tc := range []struct {
		name   string
		keep   int
		anchor Anchor
		want   string
	}{
		{"cut after the lock's approval: what followed is not anchored by it", 3, lockC, ""},
		{"cut after the approval of the lock in force", 4, lockD, ""},
		{"the last event cut, the expected head kept elsewhere", 4, expectEnd, "no line of the log"},
		{"the lock's approval cut", 2, lockC, "no line follows it"},
		{"the lock's approval replaced by another line", 5, Anchor{Name: "the lock X", Head: d[1], LockDigest: dD}, "not the approval"},
		{"everything after its head cut", 3, lockD, "no line follows it"},
		{"cut before the lock's head", 1, lockD, "no line of the log"},
		{"a replaced lock", 5, lockC, "line 4 approves a lock that replaced"},
		{"the first lock on the empty log, replaced", 5, lockA, "line 3 approves"},
		{"the first lock on the empty log", 2, lockA, ""},
		{"an empty log", 0, Anchor{Name: "x", Head: EmptyHead}, ""},
	} {
		p := filepath.Join(t.TempDir(), "cut.jsonl")
		rechain(t, p, history()[:tc.keep])
		_, err := Check(p, CheckOptions{Anchors: []Anchor{tc.anchor}})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrAnchor) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Verify = %v, want ErrAnchor %q", tc.name, err, tc.want)
		}
	}
}

// TestAppendAt: the head build gets is the last line's digest (EmptyHead
// on an empty log), the event follows it, and an error of build writes
// nothing. A clock set back does not write time backwards.
func TestAppendAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var heads []string
	for i, e := range history() {
		err := AppendAt(ctx, path, func(head string) (*Event, error) {
			heads = append(heads, head)
			if i == 1 {
				e.Time = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // a clock set back
			}
			return e, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if heads[0] != EmptyHead || EmptyHead != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("head of the empty log %s", heads[0])
	}
	sum, err := Check(path, CheckOptions{Anchors: []Anchor{{Name: "l", Head: heads[3], LockDigest: dD}}})
	if err != nil || sum.Events != 5 {
		t.Fatalf("Verify = %+v, %v", sum, err)
	}
	before, _ := os.ReadFile(path)
	want := errors.New("no")
	if err := AppendAt(ctx, path, func(string) (*Event, error) { return nil, want }); err != want {
		t.Fatalf("AppendAt = %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a failed build wrote")
	}
}

// TestRepairNewline: a whole last event that lost only its newline gets it
// back (nothing cut); a partial one is cut.
func TestRepairNewline(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rechain(t, path, history())
	whole, _ := os.ReadFile(path)
	if err := os.WriteFile(path, whole[:len(whole)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(path, CheckOptions{}); !errors.Is(err, ErrTorn) {
		t.Fatalf("Verify = %v, want ErrTorn", err)
	}
	done, err := Repair(context.Background(), path)
	if err != nil || !done.Newline || done.Cut != 0 {
		t.Fatalf("Repair = %+v, %v", done, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, whole) {
		t.Fatalf("repaired log differs:\n%s", got)
	}
	// The last line's newline gone and its prev broken: not a genuine
	// event; cut.
	lines := bytes.SplitAfter(whole, []byte("\n"))
	for _, last := range [][]byte{
		lines[4][:len(lines[4])/2], // partial
		bytes.Replace(lines[4], []byte(`"prev":"sha256:`), []byte(`"prev":"sha256:0`), 1)[:len(lines[4])-1], // does not chain
	} {
		torn := append(bytes.Join(lines[:4], nil), last...)
		if err := os.WriteFile(path, torn, 0o644); err != nil {
			t.Fatal(err)
		}
		done, err = Repair(context.Background(), path)
		if err != nil || done.Newline || done.Cut != int64(len(last)) {
			t.Fatalf("Repair of a partial line = %+v, %v", done, err)
		}
		if n, err := Verify(path); err != nil || n != 4 {
			t.Fatalf("after the cut: %d, %v", n, err)
		}
	}
}

// TestNoSymlinks: neither the log nor its sidecar is opened through a
// symbolic link, dangling or not; the error names the path, and nothing
// is written through it.
func TestNoSymlinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jsonl")
	rechain(t, real, history()[:1])
	orig, _ := os.ReadFile(real)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	dangling := filepath.Join(dir, "dangling.jsonl")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	sidecar := filepath.Join(dir, "side.jsonl")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), sidecar+FileLockSuffix); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling, sidecar} {
		named := p
		if p == sidecar {
			named = p + FileLockSuffix
		}
		for name, err := range map[string]error{
			"Append":        Append(ctx, p, history()[1]),
			"Repair":        func() error { _, err := Repair(ctx, p); return err }(),
			"CheckWritable": CheckWritable(p),
		} {
			if !errors.Is(err, nofollow.ErrSymlink) || !strings.Contains(err.Error(), named) {
				t.Errorf("%s(%s) = %v, want ErrSymlink naming %s", name, p, err, named)
			}
		}
		if p != sidecar {
			if _, err := Check(p, CheckOptions{}); !errors.Is(err, nofollow.ErrSymlink) {
				t.Errorf("Verify(%s) = %v", p, err)
			}
		}
	}
	if got, _ := os.ReadFile(real); !bytes.Equal(got, orig) {
		t.Error("written through the link")
	}
	for _, p := range []string{"nowhere", "elsewhere", "side.jsonl"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}
