package proxy

import (
	"context"
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
// callLinger for the next call, and not past ctx, so that an idle session
// holds none.
type callWorkers struct {
	ctx    context.Context
	tasks  chan func()
	linger time.Duration // callLinger; the tests' own
}

func newCallWorkers(ctx context.Context) *callWorkers {
	return &callWorkers{ctx: ctx, tasks: make(chan func()), linger: callLinger}
}

// run runs task on a waiting goroutine, or on a new one.
func (w *callWorkers) run(task func()) {
	select {
	case w.tasks <- task:
	default:
		go w.work(task)
	}
}

func (w *callWorkers) work(task func()) {
	t := time.NewTimer(w.linger)
	defer t.Stop()
	for {
		task()
		t.Reset(w.linger)
		select {
		case task = <-w.tasks:
		case <-t.C:
			return
		case <-w.ctx.Done():
			return
		}
	}
}
