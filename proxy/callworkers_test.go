package proxy

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutinesBack waits up to 5 s for the goroutine count to fall to n,
// and returns it as it is then.
func goroutinesBack(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// TestCallWorkers: calls one after another reuse a goroutine; calls at
// once each get one (none waits for another); no goroutine outlives
// callLinger without a call, nor the session's context.
func TestCallWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newCallWorkers(ctx)

	// One after another: one goroutine, reused.
	most := 0
	for range 50 {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		time.Sleep(time.Millisecond) // the goroutine back to waiting
		most = max(most, runtime.NumGoroutine()-before)
	}
	if most > 1 {
		t.Errorf("50 calls one after another held up to %d goroutines, want 1", most)
	}

	// At once: each call runs while the others are blocked.
	const n = 8
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var finished sync.WaitGroup
	for range n {
		finished.Add(1)
		w.run(func() {
			defer finished.Done()
			started.Done()
			<-release
		})
	}
	waited := make(chan struct{})
	go func() { started.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d calls at once: not all started while the others ran", n)
	}
	close(release)
	finished.Wait()

	// Idle: gone after the linger.
	if got := goroutinesBack(before); got > before {
		t.Errorf("%d goroutines %v after the last call, want %d", got, w.linger, before)
	}

	// The session's end ends a waiting goroutine, however long it would
	// linger.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w = newCallWorkers(ctx)
	w.linger = time.Hour
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
	time.Sleep(time.Millisecond)
	if got := runtime.NumGoroutine(); got != before+1 {
		t.Errorf("%d goroutines waiting for a call, want %d", got-before, 1)
	}
	cancel()
	if got := goroutinesBack(before); got > before {
		t.Errorf("%d goroutines after the context ended, want %d", got, before)
	}
}
