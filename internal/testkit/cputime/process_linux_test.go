package cputime

import (
	"crypto/sha256"
	"os"
	"testing"
	"time"
)

// TestProcess: this process's CPU time read from /proc agrees with
// getrusage's to the tick, and a process that does not exist has none.
func TestProcess(t *testing.T) {
	sum := sha256.Sum256(nil)
	for start := Self(); Self()-start < 300*time.Millisecond; {
		sum = sha256.Sum256(sum[:]) // CPU, not waiting
	}
	self, proc := Self(), Process(os.Getpid())
	if proc <= 0 {
		t.Fatalf("Process(own pid) = %v, want > 0", proc)
	}
	// /proc rounds each thread's time down to the tick; the two reads are
	// moments apart.
	if d := self - proc; d < -2*clockTick || d > 10*clockTick {
		t.Errorf("Process(own pid) = %v, getrusage says %v", proc, self)
	}
	if got := Process(1 << 30); got != 0 {
		t.Errorf("Process(no such pid) = %v, want 0", got)
	}
}
