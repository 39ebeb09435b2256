package front

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// PendingCalls is the number of client requests the open sessions of f
// hold as not answered yet (session.pending), for the tests.
func PendingCalls(f *Front) int {
	n := 0
	for _, s := range f.allSessions() {
		s.mu.Lock()
		n += len(s.pending)
		s.mu.Unlock()
	}
	return n
}

// PostEnded ends, for the tests, the POST of the request id of the session
// as if the transport had answered it status (session.postEnded): the end
// of a POST whose call the front took as its own, as a duplicate's POST
// is when it races another POST with the same id.
func PostEnded(f *Front, session string, id int64, status int) {
	for _, s := range f.allSessions() {
		if s.id == session {
			if call, err := jsonrpc.MakeID(float64(id)); err == nil {
				s.postEnded(call, status)
			}
		}
	}
}

// RelayedCalls is the number of client requests the open sessions of f
// hold as read by the relay and not answered yet.
func RelayedCalls(f *Front) int { return callsIn(f, callRelayed) }

// Draining reports whether Drain started on f, for the tests (without the
// probe Ready may run).
func Draining(f *Front) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.draining
}

// AbandonedCalls is the number of client requests the open sessions of f
// hold as abandoned before the relay read them (their POST ended), for
// the tests.
func AbandonedCalls(f *Front) int { return callsIn(f, callAbandoned) }

// callsIn is the number of client requests the open sessions of f hold in
// state st.
func callsIn(f *Front, st callState) int {
	n := 0
	for _, s := range f.allSessions() {
		s.mu.Lock()
		for _, got := range s.pending {
			if got == st {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// Relays is the number of relays f counts against MaxSessions (open
// sessions, stateless requests, and closed ones whose upstream is still
// being stopped), for the tests.
func Relays(f *Front) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.relays
}
