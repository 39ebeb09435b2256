package front

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
