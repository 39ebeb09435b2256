package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// within waits up to 5 s for cond.
func within(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestCallWorkers: calls one after another reuse a goroutine; calls at
// once each get one (none waits for another); a goroutine without a call
// exits after the linger, and at once when the session's context ends.
func TestCallWorkers(t *testing.T) {
	t.Run("one after another", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := newCallWorkers(ctx)
		w.linger = time.Hour // every goroutine started stays: live counts them
		for i := range 50 {
			done := make(chan struct{})
			w.run(func() { close(done) })
			<-done
			if !within(func() bool { return w.waiting.Load() >= 1 }) {
				t.Fatalf("call %d: no goroutine waiting for the next call", i)
			}
		}
		// One, reused; a second only if a call came in the instant between
		// the waiting count and the wait itself.
		if n := w.live.Load(); n > 2 {
			t.Errorf("50 calls one after another started %d goroutines, want 1", n)
		}
		cancel()
		if !within(func() bool { return w.live.Load() == 0 }) {
			t.Errorf("%d goroutines left after the context ended", w.live.Load())
		}
	})
	t.Run("at once", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := newCallWorkers(ctx)
		const n = 8
		var started atomic.Int32
		release := make(chan struct{})
		var finished sync.WaitGroup
		for range n {
			finished.Add(1)
			w.run(func() {
				defer finished.Done()
				started.Add(1)
				<-release
			})
		}
		if !within(func() bool { return started.Load() == n }) {
			t.Errorf("%d calls at once: %d started while the others ran", n, started.Load())
		}
		close(release)
		finished.Wait()
	})
	t.Run("linger", func(t *testing.T) {
		w := newCallWorkers(context.Background())
		w.linger = 10 * time.Millisecond
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		if !within(func() bool { return w.live.Load() == 0 }) {
			t.Errorf("a goroutine without a call still there 5 s after a linger of %v", w.linger)
		}
	})
	t.Run("the session's end", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		w := newCallWorkers(ctx)
		w.linger = time.Hour
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		if !within(func() bool { return w.waiting.Load() == 1 }) {
			t.Fatal("no goroutine waiting for a call")
		}
		cancel()
		if !within(func() bool { return w.live.Load() == 0 }) {
			t.Error("the waiting goroutine outlived the session's context")
		}
	})
}
