package proxy

import (
	"runtime"
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
