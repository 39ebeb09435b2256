package front_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/front"
	"github.com/mcpsign/mcpsign/internal/testkit/cputime"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

// reverseProxy is the plain peer of the front (docs/PERFORMANCE.md, "HTTP
// front"): plainReverseProxy in front of the same upstream, in this
// process.
func reverseProxy(tb testing.TB, upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(plainReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}))
	tb.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// plainReverseProxy is Go's httputil.ReverseProxy to target, flushing
// every write (the SSE answers), checking nothing.
func plainReverseProxy(target *url.URL) *httputil.ReverseProxy {
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // a client that closes its stream is no news
	return rp
}

// programReverseProxy is reverseProxyMain as a program of this test
// binary (fixtures.Executable).
const programReverseProxy = "reverse-proxy"

// reverseProxyMain is the plain peer as a process of its own, the 30-line
// program: reverse-proxy ADDR TARGET serves plainReverseProxy to TARGET (a
// scheme and host) at ADDR until ctx is done.
func reverseProxyMain(ctx context.Context, args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: reverse-proxy ADDR TARGET")
		return 2
	}
	target, err := url.Parse(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv := &http.Server{Addr: args[0], Handler: plainReverseProxy(target)}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// toolhivePeer starts ToolHive's transparent proxy (the second peer of
// docs/PERFORMANCE.md, "HTTP front", built out of tree: a small main
// around github.com/stacklok/toolhive/pkg/transport/proxy/transparent,
// taking PORT and TARGET-URL) from $MCPSIGN_TOOLHIVE_PROXY in front of
// upstream, and returns its URL; "" when the variable is unset.
func toolhivePeer(tb testing.TB, upstream string) string {
	exe := os.Getenv("MCPSIGN_TOOLHIVE_PROXY")
	if exe == "" {
		return ""
	}
	u, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	addr, _ := startPeer(tb, "the ToolHive peer", func(port string) *exec.Cmd {
		return exec.Command(exe, port, u.Scheme+"://"+u.Host)
	})
	return "http://" + addr + u.Path
}

// supergatewayPeer starts supergateway (npm, the peer of docs/PERFORMANCE.md
// for a stdio upstream: it serves a stdio server over Streamable HTTP,
// one process per session, checking nothing) from $MCPSIGN_SUPERGATEWAY
// (its executable, installed out of tree) in front of the stdio command,
// and returns its URL; "" when the variable is unset.
func supergatewayPeer(tb testing.TB, command []string) string {
	exe := os.Getenv("MCPSIGN_SUPERGATEWAY")
	if exe == "" {
		return ""
	}
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	addr, _ := startPeer(tb, "the supergateway peer", func(port string) *exec.Cmd {
		return exec.Command(exe, "--stdio", strings.Join(quoted, " "), "--outputTransport", "streamableHttp",
			"--stateful", "--port", port, "--logLevel", "none")
	})
	return "http://" + addr + "/mcp"
}

// startPeer starts a peer's process on a free port of 127.0.0.1 (cmd of
// the port) and waits until it listens there; it is stopped (SIGINT, then
// killed) when tb ends. It returns the address and the process's id.
func startPeer(tb testing.TB, what string, cmdOf func(port string) *exec.Cmd) (addr string, pid int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := cmdOf(port)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatalf("%s %s: %v", what, cmd.Path, err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s never listened on %s", what, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, cmd.Process.Pid
}

// BenchmarkFrontRoundTrip: tools/call round trips of go-sdk clients
// (sessions, protocol 2025-11-25) to the example server over Streamable
// HTTP, straight, through httputil.ReverseProxy, and through the front, at
// 1 and 64 concurrent sessions; it reports p50 and p99 in µs and calls/s.
//
//	go test ./front -run '^$' -bench FrontRoundTrip -benchtime 4000x
func BenchmarkFrontRoundTrip(b *testing.B) {
	up := httpExample(b, fixtures.ModeHonest)
	lock := lockOf(b, up)
	s := serve(b, up, lock, nil)
	paths := []struct{ name, url string }{
		{"direct", up.url},
		{"reverseproxy", reverseProxy(b, up.url)},
		{"front", s.url},
	}
	for _, sessions := range []int{1, 64} {
		for _, p := range paths {
			b.Run(fmt.Sprintf("%s/sessions=%d", p.name, sessions), func(b *testing.B) {
				roundTrips(b, p.url, sessions)
			})
		}
	}
}

func roundTrips(b *testing.B, url string, sessions int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	css := make([]*mcp.ClientSession, sessions)
	for i := range css {
		cs, err := connect(ctx, url, "2025-11-25")
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		css[i] = cs
	}
	args := &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}
	for _, cs := range css { // warm up every session
		if _, err := cs.CallTool(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
	per := max(b.N/sessions, 1)
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				if _, err := cs.CallTool(ctx, args); err != nil {
					b.Error(err)
					return
				}
				l = append(l, time.Since(t0))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
}

// BenchmarkFrontInterleaved: BenchmarkFrontRoundTrip's three paths in one
// benchmark, interleaved: every path's sessions are open at once, and the
// calls run in rounds, each round every path in turn (the order rotating),
// so that the machine's drift (other loads) falls on all three alike. It
// reports each path's p50 and p99 in µs and calls/s, and the front's
// ratios to the reverse proxy's (p50 and p99: lower is better;
// throughput: higher is better). With $MCPSIGN_TOOLHIVE_PROXY
// (toolhivePeer) ToolHive's transparent proxy is a fourth path, and the
// front's ratios to it are reported too.
//
//	go test ./front -run '^$' -bench FrontInterleaved -benchtime 6000x
func BenchmarkFrontInterleaved(b *testing.B) {
	up := httpExample(b, fixtures.ModeHonest)
	s := serve(b, up, lockOf(b, up), nil)
	paths := []benchPath{
		httpPath("direct", up.url),
		httpPath("reverseproxy", reverseProxy(b, up.url)),
		httpPath("front", s.url),
	}
	if th := toolhivePeer(b, up.url); th != "" {
		paths = append(paths, httpPath("toolhive", th))
	}
	for _, sessions := range []int{1, 64} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			interleave(b, paths, sessions, "reverseproxy", "rp", "toolhive")
		})
	}
}

// BenchmarkFrontProcesses: BenchmarkFrontInterleaved with each proxy in a
// process of its own, as they are deployed: `mcpsign serve` (the mcpsign
// binary, built without -race) and the reverse proxy (reverseProxyMain),
// so that neither shares a collector or a scheduler with the clients, or
// with the other. The test process's CPU per call is then the clients'
// alone on every path, and each proxy's process's own is reported beside
// it ("-proc-cpu-µs/call", and the front's ratio "front/rp-proc-cpu").
//
//	go test ./front -run '^$' -bench FrontProcesses -benchtime 6000x
func BenchmarkFrontProcesses(b *testing.B) {
	up := httpExample(b, fixtures.ModeHonest)
	lock := lockOf(b, up)
	u, err := url.Parse(up.url)
	if err != nil {
		b.Fatal(err)
	}
	rp, rpPID := startPeer(b, "the reverse proxy", func(port string) *exec.Cmd {
		return exec.Command(fixtures.Executable(b, programReverseProxy), "127.0.0.1:"+port, u.Scheme+"://"+u.Host)
	})
	mcpsign := fixtures.BuildMcpsignNoRace(b)
	fr, frPID := startPeer(b, "mcpsign serve", func(port string) *exec.Cmd {
		return exec.Command(mcpsign, "serve", "--listen", "127.0.0.1:"+port, "--lock", lock, "--", up.url)
	})
	waitReady(b, "http://"+fr+"/readyz")
	paths := []benchPath{
		httpPath("direct", up.url),
		httpPath("reverseproxy", "http://"+rp+u.Path).in(rpPID),
		httpPath("front", "http://"+fr+"/mcp").in(frPID),
	}
	for _, sessions := range []int{1, 64} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			interleave(b, paths, sessions, "reverseproxy", "rp")
		})
	}
}

// waitReady waits until url answers 200 (a front's /readyz).
func waitReady(tb testing.TB, url string) {
	tb.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not ready in 20 s (%v)", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// benchPath is one way to the upstream: how a client session is opened,
// and the process of its proxy when that is not this one.
type benchPath struct {
	name string
	dial func(context.Context) (*mcp.ClientSession, error)
	pid  int
}

// in is p through a proxy in the process pid: interleave reports that
// process's CPU per call too.
func (p benchPath) in(pid int) benchPath {
	p.pid = pid
	return p
}

// httpPath is a go-sdk client session over Streamable HTTP to url.
func httpPath(name, url string) benchPath {
	return benchPath{name: name, dial: func(ctx context.Context) (*mcp.ClientSession, error) { return connect(ctx, url, "2025-11-25") }}
}

// interleave opens sessions sessions on every path at once, runs the calls
// in 10 rounds, each round every path in turn (the order rotating), and
// reports each path's p50 and p99 in µs and calls/s, and the front's
// ratios to the path named peer (metrics "front/<short>-…"; p50 and p99:
// lower is better; throughput: higher is better) and to each of more, if
// present (metrics "front/<name>-…").
func interleave(b *testing.B, paths []benchPath, sessions int, peer, short string, more ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}
	css := make([][]*mcp.ClientSession, len(paths))
	for p := range paths {
		for range sessions {
			cs, err := paths[p].dial(ctx)
			if err != nil {
				b.Fatalf("%s: %v", paths[p].name, err)
			}
			defer cs.Close()
			if _, err := cs.CallTool(ctx, args); err != nil { // warm up
				b.Fatalf("%s: %v", paths[p].name, err)
			}
			css[p] = append(css[p], cs)
		}
	}
	const rounds = 10
	per := max(b.N/len(paths)/sessions/rounds, 1)
	lat := make([][]time.Duration, len(paths))
	busy := make([]time.Duration, len(paths))
	cpu := make([]time.Duration, len(paths))  // this process's, during the path's turns
	proc := make([]time.Duration, len(paths)) // the path's proxy process's, during its turns
	b.ResetTimer()
	for r := range rounds {
		for k := range paths {
			p := (r + k) % len(paths)
			var mu sync.Mutex
			var wg sync.WaitGroup
			t0, c0, p0 := time.Now(), cputime.Self(), cputime.Process(paths[p].pid)
			for _, cs := range css[p] {
				wg.Go(func() {
					l := make([]time.Duration, 0, per)
					for range per {
						t := time.Now()
						if _, err := cs.CallTool(ctx, args); err != nil {
							b.Error(err)
							return
						}
						l = append(l, time.Since(t))
					}
					mu.Lock()
					lat[p] = append(lat[p], l...)
					mu.Unlock()
				})
			}
			wg.Wait()
			busy[p] += time.Since(t0)
			cpu[p] += cputime.Self() - c0
			if paths[p].pid != 0 {
				proc[p] += cputime.Process(paths[p].pid) - p0
			}
		}
	}
	b.StopTimer()
	type stat struct{ p50, p99, rate, cpu, proc float64 }
	st := map[string]stat{}
	for p := range paths {
		slices.Sort(lat[p])
		n := len(lat[p])
		if n == 0 {
			return
		}
		s := stat{float64(lat[p][n/2].Microseconds()), float64(lat[p][n*99/100].Microseconds()), float64(n) / busy[p].Seconds(), float64(cpu[p].Microseconds()) / float64(n), float64(proc[p].Microseconds()) / float64(n)}
		st[paths[p].name] = s
		b.ReportMetric(s.p50, paths[p].name+"-p50-µs")
		b.ReportMetric(s.p99, paths[p].name+"-p99-µs")
		b.ReportMetric(s.rate, paths[p].name+"-calls/s")
		// The test process's CPU per call while the path ran: the
		// clients' (alike on every path) and, through a proxy in this
		// process (the front, the reverse proxy), the proxy's; minus the
		// direct path's, the proxy's own. Not a peer's of its own
		// process, nor the upstream's.
		b.ReportMetric(s.cpu, paths[p].name+"-cpu-µs/call")
		if paths[p].pid != 0 {
			// The proxy's own process (cputime.Process, to 10 ms over
			// the path's calls).
			b.ReportMetric(s.proc, paths[p].name+"-proc-cpu-µs/call")
		}
	}
	fr := st["front"]
	ratios := func(name, short string) {
		if o, ok := st[name]; ok {
			b.ReportMetric(fr.p50/o.p50, "front/"+short+"-p50")
			b.ReportMetric(fr.p99/o.p99, "front/"+short+"-p99")
			b.ReportMetric(fr.rate/o.rate, "front/"+short+"-throughput")
			if fr.proc > 0 && o.proc > 0 {
				b.ReportMetric(fr.proc/o.proc, "front/"+short+"-proc-cpu")
			}
		}
	}
	ratios(peer, short)
	for _, m := range more {
		ratios(m, m)
	}
}

// BenchmarkFrontStdio: BenchmarkFrontInterleaved for a stdio upstream (the
// example server, one process per session on every path): go-sdk clients
// straight to the server (mcp.CommandTransport, the floor), through the
// front, and, with $MCPSIGN_SUPERGATEWAY (supergatewayPeer), through
// supergateway, the plain peer: the front's ratios to it are
// "front/sg-…".
//
//	MCPSIGN_SUPERGATEWAY=/tmp/sg/node_modules/.bin/supergateway \
//	go test ./front -run '^$' -bench FrontStdio -benchtime 6000x
func BenchmarkFrontStdio(b *testing.B) {
	up := stdioExample(b, fixtures.ModeHonest)
	s := serve(b, up, lockOf(b, up), nil)
	paths := []benchPath{
		{name: "direct", dial: func(ctx context.Context) (*mcp.ClientSession, error) {
			c := mcp.NewClient(&mcp.Implementation{Name: "front-bench", Version: "0"}, nil)
			return c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(up.command[0], up.command[1:]...)},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		}},
		httpPath("front", s.url),
	}
	if sg := supergatewayPeer(b, up.command); sg != "" {
		paths = append(paths, httpPath("supergateway", sg))
	}
	for _, sessions := range []int{1, 64} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			interleave(b, paths, sessions, "supergateway", "sg", "direct")
		})
	}
}

// BenchmarkFrontIdleSession: the front's memory per idle client session
// of an HTTP upstream (the session's transport, relay and upstream
// session; the upstream runs in its own process), after every session
// initialized and listed once: heap in use and goroutine stacks, each
// minus what the same number of go-sdk clients alone hold (they run in
// this process).
//
//	go test ./front -run '^$' -bench FrontIdleSession -benchtime 1x
func BenchmarkFrontIdleSession(b *testing.B) {
	up := httpExample(b, fixtures.ModeHonest)
	s := serve(b, up, lockOf(b, up), func(o *frontOptions) { o.MaxSessions = 10000 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n = 200
	clientHeap, clientStack := memPer(n, func() func() { return openSessions(b, ctx, up.url, n) })
	heap, stack := memPer(n, func() func() { return openSessions(b, ctx, s.url, n) })
	b.ReportMetric(heap-clientHeap, "front-heap-B/session")
	b.ReportMetric(stack-clientStack, "front-stack-B/session")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines-after")
}

type frontOptions = front.Options

// memPer is the heap and stack in use after open, minus before, per
// session.
func memPer(n int, open func() func()) (heap, stack float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	closeAll := open()
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&after)
	closeAll()
	return float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n),
		float64(int64(after.StackInuse)-int64(before.StackInuse)) / float64(n)
}

func openSessions(b testing.TB, ctx context.Context, url string, n int) func() {
	css := make([]*mcp.ClientSession, 0, n)
	for range n {
		cs, err := connect(ctx, url, "2025-11-25")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		css = append(css, cs)
	}
	return func() {
		for _, cs := range css {
			cs.Close()
		}
		http.DefaultClient.CloseIdleConnections()
	}
}

// TestIdleHeapProfile writes the heap profile of 200 idle sessions to
// $MCPSIGN_FRONT_HEAPPROFILE (only then), and their goroutines (counted
// by stack) to the same path with ".goroutine" appended.
func TestIdleHeapProfile(t *testing.T) {
	path := os.Getenv("MCPSIGN_FRONT_HEAPPROFILE")
	if path == "" {
		return
	}
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1 // every allocation, not a sample
	up := httpExample(t, fixtures.ModeHonest)
	s := serve(t, up, lockOf(t, up), func(o *frontOptions) { o.MaxSessions = 10000 })
	ctx := testContext(t)
	closeAll := openSessions(t, ctx, s.url, 200)
	defer closeAll()
	runtime.GC()
	f, _ := os.Create(path)
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	g, _ := os.Create(path + ".goroutine")
	pprof.Lookup("goroutine").WriteTo(g, 1)
	g.Close()
}

// BenchmarkFrontReady: a readiness probe that must check (no passed check
// stands: ReadyTTL 1 ns) against the upstream's own listing
// (source.Load), both over Streamable HTTP to the example server.
//
//	go test ./front -run '^$' -bench FrontReady -benchtime 50x
func BenchmarkFrontReady(b *testing.B) {
	up := httpExample(b, fixtures.ModeHonest)
	s := serve(b, up, lockOf(b, up), func(o *frontOptions) { o.ReadyTTL = time.Nanosecond })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var ready, listing time.Duration
	for range b.N {
		t0 := time.Now()
		if _, err := source.Load(ctx, up.spec(), source.Options{}); err != nil {
			b.Fatal(err)
		}
		listing += time.Since(t0)
		t0 = time.Now()
		if err := s.f.Ready(ctx); err != nil {
			b.Fatal(err)
		}
		ready += time.Since(t0)
	}
	b.ReportMetric(float64(listing.Microseconds())/float64(b.N)/1000, "listing-ms")
	b.ReportMetric(float64(ready.Microseconds())/float64(b.N)/1000, "ready-ms")
}
