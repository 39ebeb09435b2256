package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// logBuffer is a concurrency-safe log sink with a way to wait for a line.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines are the JSON log lines written so far.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// waitFor waits until a log line has msg, and returns it; 30 s is a hang
// bound (a loaded machine may take seconds to log).
func (b *logBuffer) waitFor(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range b.lines(t) {
			if l["msg"] == msg {
				return l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no log line %q in:\n%s", msg, b.String())
	return nil
}

// count is how many log lines have msg.
func (b *logBuffer) count(t *testing.T, msg string) int {
	n := 0
	for _, l := range b.lines(t) {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// started is a service run by a test.
type started struct {
	url  string
	log  *logBuffer
	stop context.CancelFunc
	done chan error
}

// start runs opts on a loopback port until the test ends (or stop).
func start(t *testing.T, opts Options) *started {
	t.Helper()
	if opts.Listener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		opts.Listener = ln
	}
	lb := &logBuffer{}
	ownLog := opts.Logger == nil
	if ownLog {
		opts.Logger = NewLogger(lb, slog.LevelDebug)
	}
	scheme := "http"
	if opts.TLSCert != "" {
		scheme = "https"
	}
	s := &started{url: scheme + "://" + opts.Listener.Addr().String(), log: lb, done: make(chan error, 1)}
	ctx, cancel := context.WithCancelCause(context.Background())
	s.stop = func() { cancel(errors.New("test stopped")) }
	go func() { s.done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		s.stop()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return 10 s after its context ended")
		}
	})
	if ownLog {
		// The listening line is written once Run serves (and handles
		// SIGHUP): a test's signal must not come before it.
		lb.waitFor(t, "listening")
	}
	return s
}

func hello() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"got":%d}`, len(b))
	})
	mux.HandleFunc("GET /mcp", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	return mux
}

func get(t *testing.T, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestListenRule: plain HTTP is served on loopback only, unless allowed;
// every other address needs TLS.
func TestListenRule(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "one")
	for _, tt := range []struct {
		name       string
		listen     string
		tls, allow bool
		refused    bool
	}{
		{"loopback IPv4", "127.0.0.1:0", false, false, false},
		{"loopback IPv6", "[::1]:0", false, false, false},
		{"localhost", "localhost:0", false, false, false},
		{"all interfaces", "0.0.0.0:0", false, false, true},
		{"no host", ":0", false, false, true},
		{"all interfaces, allowed", "0.0.0.0:0", false, true, false},
		{"all interfaces, TLS", "0.0.0.0:0", true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Listen: tt.listen, Handler: hello(), AllowPlaintext: tt.allow, Logger: NewLogger(io.Discard, nil)}
			if tt.tls {
				opts.TLSCert, opts.TLSKey = cert, key
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // serve nothing: drain at once
			err := Run(ctx, opts)
			if tt.refused != errors.Is(err, ErrPlaintextListen) {
				t.Errorf("Run on %s: %v; want refused %v", tt.listen, err, tt.refused)
			}
			var le *ListenError
			if !tt.refused && err != nil && !(errors.As(err, &le) && strings.Contains(err.Error(), "::1")) {
				t.Errorf("Run on %s: %v", tt.listen, err)
			}
		})
	}
	if err := Run(context.Background(), Options{}); !errors.Is(err, ErrOptions) {
		t.Errorf("Run without a handler: %v, want ErrOptions", err)
	}
	if err := Run(context.Background(), Options{Handler: hello(), TLSCert: cert}); !errors.Is(err, ErrOptions) {
		t.Errorf("Run with a certificate and no key: %v, want ErrOptions", err)
	}
	var te *TLSError
	if err := Run(context.Background(), Options{Handler: hello(), TLSCert: key, TLSKey: key}); !errors.As(err, &te) {
		t.Errorf("Run with a key as certificate: %v, want a *TLSError", err)
	}
}

// TestHealthReady: /healthz answers while the process lives; /readyz
// follows Ready, with the reason as JSON.
func TestHealthReady(t *testing.T) {
	var mu sync.Mutex
	reason := errors.New("upstream drifted: tools changed")
	s := start(t, Options{Handler: hello(), Ready: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return reason
	}})
	resp, body := get(t, nil, s.url+HealthPath)
	if resp.StatusCode != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/healthz: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, nil, s.url+ReadyPath)
	var got struct {
		Ready  bool
		Reason string
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != 503 || got.Ready || got.Reason != reason.Error() {
		t.Errorf("/readyz not ready: %d %s (%v)", resp.StatusCode, body, err)
	}
	mu.Lock()
	reason = nil
	mu.Unlock()
	resp, body = get(t, nil, s.url+ReadyPath)
	if resp.StatusCode != 200 || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz ready: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, nil, s.url+"/mcp")
	if resp.StatusCode != 200 || body != "hello" {
		t.Errorf("/mcp: %d %s", resp.StatusCode, body)
	}
}

// TestMetrics: /metrics exposes the Go and process collectors, the
// service's own metrics labelled by route pattern, and the caller's
// collectors, in the text format prometheus parses.
func TestMetrics(t *testing.T) {
	mine := prometheus.NewCounter(prometheus.CounterOpts{Name: "mcpsign_test_blocks_total", Help: "A caller's metric."})
	mine.Add(3)
	s := start(t, Options{Handler: hello(), Collectors: []prometheus.Collector{mine}})
	get(t, nil, s.url+"/mcp")
	get(t, nil, s.url+"/mcp")
	get(t, nil, s.url+"/nowhere")
	resp, body := get(t, nil, s.url+MetricsPath)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "mcpsign_test_blocks_total",
		"mcpsign_http_requests_total", "mcpsign_http_request_duration_seconds", "mcpsign_http_requests_in_flight",
		"mcpsign_reloads_total", "mcpsign_ready"} {
		if fams[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for name := range fams {
		if !strings.HasPrefix(name, "mcpsign_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("/metrics has %s: the service's metrics are named mcpsign_…", name)
		}
	}
	if v := counter(fams["mcpsign_test_blocks_total"], nil); v != 3 {
		t.Errorf("mcpsign_test_blocks_total = %v, want 3", v)
	}
	if v := counter(fams["mcpsign_http_requests_total"], map[string]string{"route": "GET /mcp", "method": "GET", "code": "200"}); v != 2 {
		t.Errorf("requests for route GET /mcp = %v, want 2\n%s", v, body)
	}
	if v := counter(fams["mcpsign_http_requests_total"], map[string]string{"route": "unmatched", "code": "404"}); v != 1 {
		t.Errorf("unmatched requests = %v, want 1\n%s", v, body)
	}
}

// counter sums the metrics of f whose labels include want.
func counter(f *dto.MetricFamily, want map[string]string) float64 {
	if f == nil {
		return -1
	}
	var sum float64
metrics:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue metrics
			}
		}
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// TestAccessLog: one JSON line per request with method, path, status,
// duration and bytes; the path escaped; no header, query or token.
func TestAccessLog(t *testing.T) {
	s := start(t, Options{Handler: hello()})
	const token = "s3cr3t-t0ken-never-logged-1234567890"
	get(t, nil, s.url+"/mcp%E2%80%AEgnp.exe%1B[31m?access_token="+token, "Authorization", "Bearer "+token, "Cookie", "c="+token)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.stop()
	<-s.done
	s.done <- nil
	text := s.log.String()
	if strings.Contains(text, token) || strings.Contains(text, "\u202e") || strings.Contains(text, "\x1b") || strings.Contains(text, `\u001b`) {
		t.Errorf("the log holds a token or unescaped text:\n%s", text)
	}
	var reqs []map[string]any
	for _, l := range s.log.lines(t) {
		if l["msg"] == "request" {
			reqs = append(reqs, l)
		}
	}
	if len(reqs) != 2 {
		t.Fatalf("%d access lines, want 2:\n%s", len(reqs), text)
	}
	if p := reqs[0]["path"]; p != `/mcp\u{202E}gnp.exe\u{1B}[31m` || reqs[0]["status"] != float64(404) {
		t.Errorf("first access line %v: want the path escaped and status 404", reqs[0])
	}
	if l := reqs[1]; l["method"] != "POST" || l["path"] != "/mcp" || l["status"] != float64(200) || l["bytes"] != float64(len(`{"got":17}`)) || l["duration"] == nil {
		t.Errorf("second access line %v", l)
	}
}

// TestEscapingHandler: every string a record holds is escaped once.
func TestEscapingHandler(t *testing.T) {
	var b bytes.Buffer
	l := NewLogger(&b, nil).With("server", "evil\u202Ename")
	l.Info("upstream said \x1b[2J", "description", "hidden\u200Btext", "error", errors.New("bad \u2066thing"),
		slog.Group("g", "k", "v\x07"), "n", 3, "back", `a\b`)
	out := b.String()
	for _, want := range []string{`evil\\u{202E}name`, `upstream said \\u{1B}[2J`, `hidden\\u{200B}text`, `bad \\u{2066}thing`, `v\\u{7}`, `"n":3`, `a\\\\b`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s lacks %s", out, want)
		}
	}
}

// TestEscapingHandlerEscapedOnce: text escaped already (a relay's stderr
// line: textsafe.Escaped) is logged as it is, so that a reader of the log
// sees \u{202E} once, never \\u{202E}, which reads like harmless text.
func TestEscapingHandlerEscapedOnce(t *testing.T) {
	var b bytes.Buffer
	type name string
	NewLogger(&b, nil).Info("relay", "line", textsafe.Escaped(textsafe.Escape("evil\u202Ename")), "raw", "evil\u202Ename",
		"named", name("evil\u202Ename"), "list", []string{"evil\u202Ename"})
	var rec struct{ Line, Raw, Named, List string }
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]string{"escaped once already": rec.Line, "raw": rec.Raw, "a named string type": rec.Named} {
		if got != `evil\u{202E}name` {
			t.Errorf("%s: logged %q, want %q", what, got, `evil\u{202E}name`)
		}
	}
	if rec.List != `[evil\u{202E}name]` {
		t.Errorf("a list: logged %q", rec.List)
	}
}

// TestDrain: when the context ends, the listener closes (a new connection
// is refused), Drain runs, the slow request in flight is answered exactly
// once, and Run returns nil.
func TestDrain(t *testing.T) {
	inHandler := make(chan struct{})
	release := make(chan struct{})
	var calls sync.WaitGroup
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		close(inHandler)
		<-release
		io.WriteString(w, "finished")
	})
	var dialErr error
	var drained bool
	var addr string
	s := start(t, Options{Handler: mux, Drain: func(ctx context.Context) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		dialErr, drained = err, true
		close(release)
		return nil
	}})
	addr = strings.TrimPrefix(s.url, "http://")
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 2)
	calls.Add(1)
	go func() {
		defer calls.Done()
		resp, err := http.Get(s.url + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp.StatusCode, string(b), err}
	}()
	<-inHandler
	s.stop()
	var err error
	select {
	case err = <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the drain")
	}
	s.done <- err
	calls.Wait()
	if r := <-got; r.err != nil || r.code != 200 || r.body != "finished" {
		t.Errorf("the request in flight: %+v; want 200 finished", r)
	}
	if len(got) != 0 {
		t.Error("the request in flight was answered twice")
	}
	if err != nil || !drained {
		t.Errorf("Run: %v, Drain called %v; want nil after Drain", err, drained)
	}
	if dialErr == nil {
		t.Error("a new connection was accepted while draining")
	}
	s.log.waitFor(t, "drained")
}

// TestDrainTimeout: a request that does not end within DrainTimeout is cut
// and Run says so.
func TestDrainTimeout(t *testing.T) {
	inHandler := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		close(inHandler)
		<-r.Context().Done()
	})
	s := start(t, Options{Handler: mux, DrainTimeout: 200 * time.Millisecond})
	go func() {
		if resp, err := http.Get(s.url + "/stream"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-inHandler
	began := time.Now()
	s.stop()
	err := <-s.done
	s.done <- err
	var de *DrainError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v; want a *DrainError of the deadline", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("Run returned %s after the drain began, want about 200ms", d)
	}
}
