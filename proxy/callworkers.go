package proxy

import (
	"context"
	"sync/atomic"
	"time"
)

// callLinger is how long a call's goroutine waits for the session's next
// call before it exits (callWorkers).
const callLinger = 100 * time.Millisecond

// callWorkers runs the calls of one upstream session, each on a goroutine
// of its own, reusing one that finished a call shortly before: a call's
// goroutine reads and checks the answer and writes it on to the client, a
// deep stack that a new goroutine grows (and the runtime copies) on every
// call (docs/PERFORMANCE.md, "HTTP front"). A goroutine waits at most
// linger for the next call, and not past ctx, so that an idle session
// holds none.
type callWorkers struct {
	ctx    context.Context
	tasks  chan func()
	linger time.Duration // callLinger; the tests' own
	// live counts the goroutines, waiting those waiting for a call.
	live, waiting atomic.Int32
}

func newCallWorkers(ctx context.Context) *callWorkers {
	return &callWorkers{ctx: ctx, tasks: make(chan func()), linger: callLinger}
}

// run runs task on a waiting goroutine, or on a new one.
func (w *callWorkers) run(task func()) {
	select {
	case w.tasks <- task:
	default:
		w.live.Add(1)
		go w.work(task)
	}
}

func (w *callWorkers) work(task func()) {
	defer w.live.Add(-1)
	t := time.NewTimer(w.linger)
	defer t.Stop()
	for {
		task()
		t.Reset(w.linger)
		w.waiting.Add(1)
		select {
		case task = <-w.tasks:
			w.waiting.Add(-1)
		case <-t.C:
			w.waiting.Add(-1)
			return
		case <-w.ctx.Done():
			w.waiting.Add(-1)
			return
		}
	}
}
