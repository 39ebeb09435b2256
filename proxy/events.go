package proxy

import (
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// maxSideItems bounds the events and stderr lines waiting for a slow
// handler or a slow stderr; beyond it, stderr lines are counted and
// dropped (events are few: one per check).
const maxSideItems = 4096

// sideQueue delivers what the relay tells its caller (Options.OnEvent, the
// lines it writes to Options.Stderr) on a goroutine of its own, in order,
// never under the relay's mutex: a slow handler or a slow stderr stalls
// neither direction of the session (docs/PROXY.md, "Lifetimes"). The
// goroutine runs only while something is queued: an idle session keeps
// none (the HTTP front holds a relay per client session,
// docs/PERFORMANCE.md "HTTP front").
type sideQueue struct {
	mu      sync.Mutex
	items   []func()
	dropped int
	closed  bool
	// idle is closed when no delivering goroutine runs; a push that finds
	// none starts one with a new channel.
	idle chan struct{}
	// running: a delivering goroutine runs (idle is open).
	running bool
}

func newSideQueue() *sideQueue {
	return &sideQueue{}
}

// push queues f (called with or without the relay's mutex held).
// A stderr line beyond the bound is dropped (event false); an event is
// always queued.
func (q *sideQueue) push(f func(), event bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if !event && len(q.items) >= maxSideItems {
		q.dropped++
		return
	}
	q.items = append(q.items, f)
	if !q.running {
		q.running = true
		q.idle = make(chan struct{})
		go q.loop(q.idle)
	}
}

// loop delivers what is queued, in order, and returns once nothing is.
func (q *sideQueue) loop(idle chan struct{}) {
	for {
		q.mu.Lock()
		items := q.items
		q.items = nil
		if len(items) == 0 {
			q.running = false
			q.mu.Unlock()
			close(idle)
			return
		}
		q.mu.Unlock()
		for _, f := range items {
			f()
		}
	}
}

// close delivers what is queued and stops, waiting at most grace for a
// slow handler; what is pushed afterwards is dropped. It returns the
// number of stderr lines dropped on the way.
func (q *sideQueue) close(grace time.Duration) int {
	q.mu.Lock()
	q.closed = true
	dropped := q.dropped
	running, idle := q.running, q.idle
	q.mu.Unlock()
	if !running {
		return dropped
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	return dropped
}

// event queues an event for Options.OnEvent.
func (r *relay) event(e Event) {
	r.side.push(func() { r.o.OnEvent(e) }, true)
}

// stderr queues text (whole lines, escaped by the caller) for
// Options.Stderr; the block report is queued as an event so that it is
// never dropped.
func (r *relay) stderr(text string, report bool) {
	r.side.push(func() { io.WriteString(r.o.Stderr, text) }, report)
}

// notice queues one line of the proxy's own for Options.Stderr: "mcpsign
// proxy: " and s escaped.
func (r *relay) notice(s string) {
	r.stderr("mcpsign proxy: "+textsafe.Escape(s)+"\n", false)
}

// closeSide ends the side queue before Run returns, and says on stderr
// (directly: the queue is closed) how many lines a slow stderr cost.
func (r *relay) closeSide() {
	if n := r.side.close(r.o.ShutdownGrace); n > 0 {
		io.WriteString(r.o.Stderr, "mcpsign proxy: "+strconv.Itoa(n)+" notices dropped: stderr was not read fast enough\n")
	}
}
