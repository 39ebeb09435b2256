package front_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestSessionsLeaveNoGoroutines: a client session that ended (its client
// DELETEd it) leaves no goroutine behind: its relay's readers, the side
// queue's goroutine, the upstream's answer and GET stream readers and
// whatever hands the relay its messages all return. Two rounds of
// sessions: the second must end where the first did (the connection
// pools are warm by then), within a small slack.
func TestSessionsLeaveNoGoroutines(t *testing.T) {
	const perRound, slack = 12, 8
	for _, tc := range []struct {
		name string
		u    func(t *testing.T) upstream
	}{
		{"go-sdk over HTTP", func(t *testing.T) upstream { return startGoSDKServer(t, 0).upstream() }},
		{"example over HTTP", func(t *testing.T) upstream { return httpExample(t, fixtures.ModeListChanged) }},
		{"example over stdio", func(t *testing.T) upstream { return stdioExample(t, fixtures.ModeHonest) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.u(t)
			s := serve(t, u, lockOf(t, u), nil)
			ctx := testContext(t)
			round := func() int {
				for range perRound {
					cs, err := connect(ctx, s.url, "2025-11-25")
					if err != nil {
						t.Fatal(err)
					}
					_ = toolNames(t, ctx, cs)
					cs.Close()
				}
				for deadline := time.Now().Add(10 * time.Second); ; {
					if counterSum(t, s.f, "mcpsign_front_sessions_open") == 0 || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond) // what a session's end started returns
				return runtime.NumGoroutine()
			}
			first := round()
			var second int
			// Rounds until the count holds (a leak grows it every round),
			// for 20 s (within testContext's bound): a loaded machine ends a
			// round's goroutines late.
			for deadline := time.Now().Add(20 * time.Second); ; {
				second = round()
				if second <= first+slack || time.Now().After(deadline) {
					break
				}
			}
			if second > first+slack {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines after %d more sessions: %d, after the first %d: %d (slack %d)\n%s", perRound, second, perRound, first, slack, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TestIdleSessionGoroutines: an idle session of an HTTP upstream holds
// four goroutines in the front (docs/PERFORMANCE.md, "HTTP front": the
// client's GET stream on net/http's server, two; the upstream GET
// stream's reader; the relay's run): counted as the goroutines n sessions
// through the front add, minus what the same n go-sdk clients add
// connected to the upstream straight (the front's own few, its pools'
// idle connections, add 0.3-0.6 a session at n = 16). Failed on main: 7.3
// (net/http's two loops of the upstream GET stream's connection, and the
// relay's reader of the client).
func TestIdleSessionGoroutines(t *testing.T) {
	const n, most = 16, 5.5
	up := httpExample(t, fixtures.ModeHonest)
	s := serve(t, up, lockOf(t, up), nil)
	ctx := testContext(t)
	added := func(url string) int {
		settle := func() int {
			last := -1
			for range 50 { // until the count holds still
				time.Sleep(50 * time.Millisecond)
				c := runtime.NumGoroutine()
				if c == last {
					return c
				}
				last = c
			}
			return last
		}
		before := settle()
		closeAll := openSessions(t, ctx, url, n)
		defer closeAll()
		return settle() - before
	}
	clients := added(up.url)
	time.Sleep(300 * time.Millisecond) // the clients' goroutines end
	front := added(s.url)
	per := float64(front-clients) / n
	t.Logf("%.2f goroutines a session (%d through the front, %d the clients alone)", per, front, clients)
	if per > most {
		t.Errorf("an idle session holds %.1f goroutines in the front (%d for %d sessions and their clients, %d for the clients alone), want at most %v", per, front, n, clients, most)
	}
}
