package proxy

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// outQueue holds the messages for one peer, in the order the relay decided
// to send them, and writes them from whichever goroutine calls flush: the
// reader that forwarded a message writes it itself, with no hand-off to
// another goroutine (that is what keeps the relay's latency low). enqueue
// never blocks, so it may be called under the relay's lock; flush is
// called without it, and only one goroutine writes at a time. A peer that
// does not read blocks only the goroutine flushing to it: the reader of the
// other peer, which is the backpressure it should get.
type outQueue struct {
	mu      sync.Mutex
	drained sync.Cond // signalled when the queue empties or writing fails
	q       [][]byte
	spare   [][]byte // the other slice of flush's two (see flush)
	size    int
	max     int
	busy    bool   // a goroutine is writing
	err     error  // the first write error; later messages are dropped
	onEmpty func() // called once, by the flusher, when closed and empty
	closed  bool
	w       io.Writer
}

func newOutQueue(w io.Writer, max int) *outQueue {
	o := &outQueue{w: w, max: max}
	o.drained.L = &o.mu
	return o
}

// enqueue adds one message. It reports false when the queue is over its
// cap (the peer has not read for a long time): the caller fails closed.
func (o *outQueue) enqueue(b []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil || o.closed {
		return true // dropped: the peer is gone
	}
	o.q = append(o.q, b)
	o.size += len(b)
	return o.size <= o.max
}

// flush writes what is queued, unless another goroutine is writing (it will
// write this too).
func (o *outQueue) flush() {
	o.mu.Lock()
	if o.busy {
		o.mu.Unlock()
		return
	}
	o.busy = true
	// Two slices take turns as the queue and the batch being written, so
	// that a busy session does not allocate one per message.
	batch := o.spare
	o.spare = nil
	for {
		if len(o.q) == 0 || o.err != nil {
			o.spare = batch[:0]
			o.busy = false
			done := o.closed && o.onEmpty != nil
			fn := o.onEmpty
			if done {
				o.onEmpty = nil
			}
			o.drained.Broadcast()
			o.mu.Unlock()
			if done {
				fn()
			}
			return
		}
		batch, o.q = o.q, batch[:0]
		o.mu.Unlock()
		n := 0
		var err error
		for _, b := range batch {
			if _, err = o.w.Write(b); err != nil {
				err = fmt.Errorf("writing: %w", err)
				break
			}
			n += len(b)
		}
		clear(batch)
		o.mu.Lock()
		o.size = max(0, o.size-n) // drop may have emptied the queue meanwhile
		if err != nil && o.err == nil {
			o.err = err
			o.q, o.size = nil, 0
		}
	}
}

// drop discards what is queued and refuses later messages: nothing more
// reaches this peer (a write already under way completes).
func (o *outQueue) drop() {
	o.mu.Lock()
	o.closed = true
	o.q, o.size = nil, 0
	o.drained.Broadcast()
	o.mu.Unlock()
}

// closeWhenDrained refuses later messages and calls fn once everything
// queued was written (or writing failed).
func (o *outQueue) closeWhenDrained(fn func()) {
	o.mu.Lock()
	o.closed = true
	o.onEmpty = fn
	o.mu.Unlock()
	o.flush()
}

// wait blocks until the queue is empty and nobody writes, or d passed.
func (o *outQueue) wait(d time.Duration) {
	deadline := time.Now().Add(d)
	timer := time.AfterFunc(d, func() {
		o.mu.Lock()
		o.drained.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for (len(o.q) > 0 || o.busy) && o.err == nil && time.Now().Before(deadline) {
		o.drained.Wait()
	}
}

// failed reports the first write error, if any.
func (o *outQueue) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
