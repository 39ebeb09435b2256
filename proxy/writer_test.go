package proxy

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowWriter records writes; each can be made to wait.
type slowWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	gate  chan struct{}
	fails bool
	// entered, when set, gets one value each time a Write starts waiting
	// at gate.
	entered chan struct{}
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if w.gate != nil {
		if w.entered != nil {
			w.entered <- struct{}{}
		}
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fails {
		return 0, errors.New("broken pipe")
	}
	return w.buf.Write(p)
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestOutQueue(t *testing.T) {
	t.Run("order from many goroutines", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 1<<20)
		var mu sync.Mutex // stands for the relay's lock: it orders enqueues
		var wg sync.WaitGroup
		next := 0
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					mu.Lock()
					o.enqueue([]byte(strings.Repeat("x", next%7) + "\n"))
					next++
					mu.Unlock()
					o.flush()
				}
			}()
		}
		wg.Wait()
		o.wait(testTimeout) // returns once drained: a bound for a hang
		want := ""
		for i := 0; i < 1600; i++ {
			want += strings.Repeat("x", i%7) + "\n"
		}
		if w.String() != want {
			t.Error("messages out of order or lost")
		}
	})
	t.Run("a slow peer blocks only its flusher", func(t *testing.T) {
		w := &slowWriter{gate: make(chan struct{}), entered: make(chan struct{}, 2)}
		o := newOutQueue(w, 1<<20)
		o.enqueue([]byte("a\n"))
		go o.flush()
		<-w.entered // the first flush blocks in Write (a sleep was not always long enough)
		done := make(chan struct{})
		go func() { o.enqueue([]byte("b\n")); o.flush(); close(done) }()
		select {
		case <-done: // returned at once: the busy flusher writes it
		case <-time.After(testTimeout): // a hang bound: the gate opens only below
			t.Fatal("a second flush waited for the slow write")
		}
		close(w.gate)
		o.wait(testTimeout)
		if w.String() != "a\nb\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("cap", func(t *testing.T) {
		o := newOutQueue(&slowWriter{}, 4)
		if !o.enqueue([]byte("abc\n")) || o.enqueue([]byte("d")) {
			t.Error("the cap is not enforced")
		}
	})
	t.Run("the cap counts only what waits", func(t *testing.T) {
		// What was written no longer counts: a session's traffic is
		// bounded per moment, not in total.
		w := &slowWriter{}
		o := newOutQueue(w, 4)
		for i := range 3 {
			if !o.enqueue([]byte("abc\n")) {
				t.Fatalf("message %d refused after %q was written", i, w.String())
			}
			o.flush()
		}
		if w.String() != "abc\nabc\nabc\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("wait ends when the queue is written", func(t *testing.T) {
		// Not before (a message queued, nobody writing yet), and not only
		// at its bound.
		w := &slowWriter{gate: make(chan struct{})}
		o := newOutQueue(w, 1<<20)
		o.enqueue([]byte("a\n"))
		done := make(chan struct{})
		go func() { o.wait(time.Hour); close(done) }()
		select {
		case <-done:
			t.Fatal("wait returned while a message was queued")
		case <-time.After(50 * time.Millisecond):
		}
		go o.flush()
		close(w.gate)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return once the queue was written")
		}
		if w.String() != "a\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("drop", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		o.drop()
		o.enqueue([]byte("b\n"))
		o.flush()
		if w.String() != "" {
			t.Errorf("wrote %q after drop", w.String())
		}
	})
	t.Run("close when drained", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		closed := make(chan struct{})
		o.closeWhenDrained(func() { close(closed) })
		<-closed
		o.enqueue([]byte("b\n"))
		o.flush()
		if w.String() != "a\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("write error", func(t *testing.T) {
		w := &slowWriter{fails: true}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		o.flush()
		if o.failed() == nil {
			t.Error("no error")
		}
	})
}
