//go:build linux

package proctree

import (
	"io"
	"testing"
	"time"
)

// TestStartAndKillGroup starts a shell that leaves a grandchild behind and
// checks that killing the group (the package functions, without Piped.Stop)
// leaves nobody.
func TestStartAndKillGroup(t *testing.T) {
	p, err := Start([]string{"sh", "-c", "sleep 60 & echo started; exec sleep 60"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(p.Stdout, buf); err != nil || string(buf) != "started\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	pgid := p.Cmd.Process.Pid
	defer p.Stop(time.Second, func(time.Duration) bool { return true })
	if n := len(Members(pgid)); n != 2 {
		t.Fatalf("want the shell's sleep and the grandchild in the group, found %d", n)
	}
	Terminate(pgid)
	p.Cmd.Wait()
	deadline := time.Now().Add(30 * time.Second) // a hang bound
	for Alive(pgid) {
		if time.Now().After(deadline) {
			Kill(pgid)
			t.Fatal("group still alive after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Start(nil, nil, ""); err == nil {
		t.Error("an empty command must be refused")
	}
}

// BenchmarkAliveGone asks Alive about a process group that is gone, as
// Stop does once a server exited: kill(-pgid, 0) answers, /proc is not
// read (docs/TESTING.md, "Test run time").
func BenchmarkAliveGone(b *testing.B) {
	p, err := Start([]string{"true"}, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	pgid := p.Cmd.Process.Pid
	p.Stdin.Close()
	_ = p.Cmd.Wait()
	p.Stop(time.Second, func(time.Duration) bool { return true })
	for b.Loop() {
		if Alive(pgid) {
			b.Fatal("a gone group is alive")
		}
	}
}
