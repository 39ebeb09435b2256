package proxy

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSideQueueGoroutine: the side queue delivers what is pushed in order,
// from any number of goroutines at once, runs a goroutine only while
// something is queued (an idle relay of the HTTP front holds none), and
// close waits for what is queued (at most its grace), then nothing more
// is delivered.
func TestSideQueueGoroutine(t *testing.T) {
	q := newSideQueue()
	before := runtime.NumGoroutine()
	var mu sync.Mutex
	got := map[int][]int{}
	var wg sync.WaitGroup
	const pushers, each = 8, 200
	for p := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.push(func() {
					mu.Lock()
					got[p] = append(got[p], i)
					mu.Unlock()
				}, true)
			}
		}()
	}
	wg.Wait()
	idle := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.running
	}
	for deadline := time.Now().Add(testTimeout); !idle() && time.Now().Before(deadline); { // a hang bound
		time.Sleep(time.Millisecond)
	}
	if !idle() {
		t.Fatal("the side queue's goroutine still runs with nothing queued")
	}
	for deadline := time.Now().Add(testTimeout); runtime.NumGoroutine() > before && time.Now().Before(deadline); { // a leak stays
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("goroutines: %d after delivering, %d before", n, before)
	}
	mu.Lock()
	for p := range pushers {
		if len(got[p]) != each {
			t.Fatalf("pusher %d: %d delivered, want %d", p, len(got[p]), each)
		}
		for i, v := range got[p] {
			if v != i {
				t.Fatalf("pusher %d: delivered out of order at %d: %d", p, i, v)
			}
		}
	}
	mu.Unlock()
	// close waits for what is queued, then drops what comes after.
	var late atomic.Int32
	release := make(chan struct{})
	q.push(func() { <-release }, true)
	q.push(func() { late.Add(1) }, true)
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	q.close(5 * time.Second)
	if late.Load() != 1 {
		t.Errorf("close returned before what was queued was delivered")
	}
	q.push(func() { late.Add(1) }, true)
	time.Sleep(20 * time.Millisecond)
	if late.Load() != 1 {
		t.Errorf("a push after close was delivered")
	}
	if !idle() {
		t.Error("the side queue's goroutine runs after close")
	}
}

// TestSideQueueBound: behind a slow handler, at most maxSideItems stderr
// lines wait, the next is dropped and counted, an event never is; at the
// end the count is said on stderr, and nothing is said when none was
// dropped.
func TestSideQueueBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		notices int
		dropped int
	}{
		{"none", 0, 0},
		{"at the bound", maxSideItems, 0},
		{"one past it", maxSideItems + 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			r := &relay{o: &Options{Stderr: &stderr, ShutdownGrace: 10 * time.Second}, side: newSideQueue()}
			gate, started := make(chan struct{}), make(chan struct{})
			events := 0
			r.side.push(func() { close(started); <-gate }, true)
			<-started // the handler runs: what follows waits behind it
			for range tc.notices {
				r.stderr("n\n", false)
			}
			r.side.push(func() { events++ }, true)
			close(gate)
			r.closeSide()
			want := strings.Repeat("n\n", tc.notices-tc.dropped)
			if tc.dropped > 0 {
				want += "mcpsign proxy: " + strconv.Itoa(tc.dropped) + " notices dropped: stderr was not read fast enough\n"
			}
			if stderr.String() != want {
				t.Errorf("stderr has %d bytes, want %d: it ends %q", stderr.Len(), len(want), stderr.String()[max(0, stderr.Len()-80):])
			}
			if events != 1 {
				t.Errorf("%d events delivered, want 1", events)
			}
		})
	}
}
