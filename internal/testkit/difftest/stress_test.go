package difftest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// stressRuns is how often TestProxyTranscriptSeedsRepeated runs each seed
// of FuzzProxyTranscript, as `go test -race -count=20` would.
const stressRuns = 20

// stressTiming is the client's timing under stress: many sessions beside
// other work may take seconds to answer, which the oracle would call a hang
// (the proxy's own check timeout stays fuzzCheckTimeout).
var stressTiming = timing{request: 15 * time.Second, settle: fuzzTiming.settle}

// stressSessions bounds the sessions (each with its scripted server
// process) that run at once.
const stressSessions = 48

// TestProxyTranscriptSeedsRepeated runs every seed of FuzzProxyTranscript
// stressRuns times, many sessions at once (under -race in the README's test
// command), half of them with GOMAXPROCS 1 and all beside goroutines that
// spin and yield, so that the relay's readers and checks interleave in
// orders a single run rarely takes (docs/PROXY.md, "Order": which answer a
// request gets is one rule, whatever the order in which the client's and
// the server's messages arrive). An ordering race between a block and the
// refusal of a call was seen in one full run in twenty; here it fails every
// time.
func TestProxyTranscriptSeedsRepeated(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test: skipped under -short")
	}
	l, lockData := honestLock(t)
	stop := make(chan struct{})
	var spin sync.WaitGroup
	for range runtime.NumCPU() {
		spin.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%1024 == 0 {
					time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
				}
				runtime.Gosched()
			}
		})
	}
	defer func() {
		close(stop)
		spin.Wait()
	}()
	sem := make(chan struct{}, stressSessions)
	for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			prev := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(prev)
			var wg sync.WaitGroup
			for i, r := range rows() {
				for n := range stressRuns / 2 {
					wg.Go(func() {
						sem <- struct{}{}
						defer func() { <-sem }()
						// t.Run from several goroutines at once: the
						// sessions run concurrently, beyond -parallel.
						t.Run(fmt.Sprintf("seed#%d/%s/%d", i, r.name, n), func(t *testing.T) {
							runTranscript(t, l, lockData, r.transcript, seedFlags(r), stressTiming)
						})
					})
				}
			}
			wg.Wait()
		})
	}
}
