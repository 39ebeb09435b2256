package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/registrylocal"
)

// pageURLs walks base's listing (limit 100) and returns the URL of every
// page: what the load asks for, the same pages of both servers.
func pageURLs(tb testing.TB, base string) []string {
	tb.Helper()
	var out []string
	cursor := ""
	for range 1000 {
		u := base + "/v0.1/servers?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		out = append(out, u)
		resp, err := http.Get(u)
		if err != nil {
			tb.Fatal(err)
		}
		var page struct{ Metadata struct{ NextCursor string } }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if cursor = page.Metadata.NextCursor; cursor == "" {
			return out
		}
	}
	tb.Fatal("the cursor does not end")
	return nil
}

// loadResult is a closed-loop load: workers each asking for a random page
// of urls, one after another, for d.
type loadResult struct {
	requests  int
	perSecond float64
	p50, p99  time.Duration
}

func runLoad(tb testing.TB, urls []string, workers int, d time.Duration) loadResult {
	tb.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []time.Duration
			for time.Since(start) < d {
				t0 := time.Now()
				resp, err := client.Get(urls[r.IntN(len(urls))])
				if err != nil {
					tb.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					tb.Errorf("status %d", resp.StatusCode)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	if len(lat) == 0 {
		tb.Fatal("no request answered")
	}
	return loadResult{requests: len(lat), perSecond: float64(len(lat)) / el.Seconds(),
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

// BenchmarkServeList: list throughput and latency of registry serve over
// 10,000 entries (pages of 100 at random, 4 clients in a closed loop over
// loopback HTTP), and, when the local official registry is there, the
// same load on the official registry server v1.5.0 on PostgreSQL holding
// the same entries (seeded from registry serve, SEED_FROM). Run:
//
//	go test ./registry -run '^$' -bench BenchmarkServeList -benchtime 1x
//
// docs/PERFORMANCE.md, "Registry serving (`mcpsign registry serve`)".
func BenchmarkServeList(b *testing.B) {
	const n, workers = 10000, 4
	d := 10 * time.Second
	if s := os.Getenv("MCPSIGN_BENCH_SECONDS"); s != "" {
		fmt.Sscan(s, &d)
		d *= time.Second
	}
	dump := servedDump(b, manySpecs(n))
	// Twice: sync.Pool's victim cache (the strict reader's buffers) lives
	// through one collection.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	set, err := LoadServed(context.Background(), bytes.NewReader(dump), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(set)
	runtime.KeepAlive(dump) // live in both measures: the set's own size
	b.ReportMetric(float64(len(dump))/1e6, "dump-MB")
	b.ReportMetric(heap/float64(len(dump)), "heap/dump")
	served := 0
	for _, e := range set.all {
		served += len(e.resp)
	}
	b.ReportMetric(float64(served)/float64(len(dump)), "served/dump")
	srv := httptest.NewServer(NewServer(set))
	defer srv.Close()
	ours := runLoad(b, pageURLs(b, srv.URL), workers, d)
	b.ReportMetric(ours.perSecond, "mcpsign-req/s")
	b.ReportMetric(float64(ours.p50.Microseconds())/1000, "mcpsign-p50-ms")
	b.ReportMetric(float64(ours.p99.Microseconds())/1000, "mcpsign-p99-ms")
	if os.Getenv("MCPSIGN_BENCH_OFFICIAL") != "1" {
		return
	}
	t0 := time.Now()
	off := registrylocal.StartSeeded(b, srv.URL+"/v0/servers")
	b.Logf("the official registry seeded %d entries in %s", n, time.Since(t0).Round(time.Second))
	urls := pageURLs(b, off.URL)
	if len(urls) != n/100 && len(urls) != n/100+1 {
		b.Fatalf("the official registry has %d pages:\n%s", len(urls), off.Output())
	}
	theirs := runLoad(b, urls, workers, d)
	b.ReportMetric(theirs.perSecond, "official-req/s")
	b.ReportMetric(float64(theirs.p50.Microseconds())/1000, "official-p50-ms")
	b.ReportMetric(float64(theirs.p99.Microseconds())/1000, "official-p99-ms")
	b.ReportMetric(ours.perSecond/theirs.perSecond, "throughput-x")
	b.ReportMetric(float64(ours.p99)/float64(theirs.p99), "p99-ratio")
}
