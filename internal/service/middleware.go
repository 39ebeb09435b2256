package service

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/cors"

	"github.com/mcpsign/mcpsign/internal/loopback"
)

// Middleware wraps a handler. The middlewares of this package pass the
// request they were given on (they never copy it), so that a ServeMux
// further in labels it with its pattern for the metrics.
type Middleware func(http.Handler) http.Handler

// LimitBody bounds request bodies to max bytes: a request that declares a
// longer body is answered 413 at once; one whose body turns out longer
// (chunked) gets its body cut with http.MaxBytesReader, and the response
// its handler then starts is replaced by the 413, whatever status the
// handler chose for its failed read. With timeout > 0 the body must also
// arrive within timeout of the handler's start (a read deadline on the
// connection, cleared once the body ended): a body that does not is cut
// the same way and answered 408. Run applies it to Options.Handler.
func LimitBody(max int64, timeout time.Duration) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				tooLarge(w, max)
				return
			}
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			lw := &limitWriter{ResponseWriter: w, max: max}
			lb := &limitBody{ReadCloser: http.MaxBytesReader(w, r.Body, max), w: lw}
			if timeout > 0 {
				rc := http.NewResponseController(w)
				if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
					lb.rc = rc
				}
			}
			r.Body = lb
			next.ServeHTTP(lw, r)
		})
	}
}

func tooLarge(w http.ResponseWriter, max int64) {
	writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{
		"error": "request body larger than " + strconv.FormatInt(max, 10) + " bytes",
	})
}

func tooSlow(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusRequestTimeout, map[string]any{"error": "the request body did not arrive in time"})
}

type limitBody struct {
	io.ReadCloser
	w  *limitWriter
	rc *http.ResponseController // clears the read deadline when not nil
	mu sync.Mutex
}

func (b *limitBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == nil {
		return n, nil
	}
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		b.w.hit.Store(hitTooLarge)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.w.hit.CompareAndSwap(0, hitTooSlow)
	}
	b.mu.Lock()
	if b.rc != nil {
		// The body ended (or failed): the deadline must not cut the
		// connection while the response streams.
		_ = b.rc.SetReadDeadline(time.Time{})
		b.rc = nil
	}
	b.mu.Unlock()
	return n, err
}

// What cut a body (limitWriter.hit).
const (
	hitTooLarge = 1 + iota
	hitTooSlow
)

// limitWriter answers 413 (408) in place of the handler's response once
// the body went past the limit (its deadline).
type limitWriter struct {
	http.ResponseWriter
	max      int64
	hit      atomic.Int32
	replaced bool
	started  bool
}

func (w *limitWriter) WriteHeader(code int) {
	if w.started || w.replaced {
		if !w.replaced {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if hit := w.hit.Load(); hit != 0 {
		w.replaced = true
		// The handler's headers describe its own body, not this one.
		for _, k := range []string{"Content-Length", "Content-Encoding", "Content-Range", "ETag", "Last-Modified", "Mcp-Session-Id"} {
			w.ResponseWriter.Header().Del(k)
		}
		if hit == hitTooSlow {
			tooSlow(w.ResponseWriter)
		} else {
			tooLarge(w.ResponseWriter, w.max)
		}
		return
	}
	if code >= 200 {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitWriter) Write(b []byte) (int, error) {
	if !w.started && !w.replaced {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(b), nil // the handler's answer to a cut body is dropped
	}
	return w.ResponseWriter.Write(b)
}

// Flush is http.Flusher's, for handlers that assert it.
func (w *limitWriter) Flush() {
	if !w.replaced {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *limitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// OriginError is the error of an allowed origin that is not one: an origin
// is a scheme (http or https), a host and an optional port, nothing else.
type OriginError struct {
	Origin string
	Reason string
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("allowed origin %q: %s (an origin is scheme://host[:port], such as https://app.example.com)", e.Origin, e.Reason)
}

// CheckOrigin is the Origin check the MCP specification asks of Streamable
// HTTP servers against DNS rebinding (2025-11-25, Transports, "Security
// Warning"): a request whose Origin header is present and not one of
// allowed is refused with 403 Forbidden, its body a JSON-RPC error with
// no id. A request without Origin (a client that is not a browser) passes.
// Origins compare as browsers serialize them: scheme and host in lower
// case, the default port (80, 443) left out. With no allowed origin,
// every browser request is refused. An entry that is not an origin is an
// *OriginError.
func CheckOrigin(allowed []string) (Middleware, error) {
	set := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		n, reason := normalizeOrigin(a)
		if reason != "" {
			return nil, &OriginError{Origin: a, Reason: reason}
		}
		set[n] = true
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			vs := r.Header.Values("Origin")
			if len(vs) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			if n, reason := normalizeOrigin(vs[0]); len(vs) > 1 || reason != "" || !set[n] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				w.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: this Origin is not allowed"}}` + "\n"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// LoopbackHost refuses, with 403, a request that reached a loopback
// address with a Host header that does not name a loopback host
// (loopback.IsHost: localhost, 127.0.0.0/8, [::1]): the other half
// of the DNS-rebinding defence. A page whose name an attacker rebinds to
// 127.0.0.1 is same-origin with this service, its GET requests carry no
// Origin (CheckOrigin lets them through) but they carry the page's name as
// Host. Requests that reached another address (a Pod's, behind a Service)
// are not checked: their Host is whatever name routes to them. Put it in
// front of a service that listens on loopback and is reached by name only
// through a proxy that rewrites Host to a loopback one.
func LoopbackHost() Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			if local != nil && loopbackAddr(local.String()) {
				host := r.Host
				if h, _, err := net.SplitHostPort(host); err == nil {
					host = h
				}
				host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
				if !loopback.IsHost(host) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusForbidden)
					w.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: a request to a loopback address must name a loopback host"}}` + "\n"))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// loopbackAddr reports whether addr (host:port) is a loopback address.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopback.IsHost(host)
}

// normalizeOrigin returns o as a browser serializes it, or why it is not an
// origin.
func normalizeOrigin(o string) (string, string) {
	u, err := url.Parse(o)
	if err != nil {
		return "", "not a URL"
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", "the scheme is not http or https"
	case u.Host == "" || u.Hostname() == "":
		return "", "no host"
	case u.User != nil, u.Path != "", u.RawQuery != "", u.Fragment != "", u.Opaque != "", u.ForceQuery:
		return "", "more than scheme, host and port"
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", "the port is not a number"
		}
		host += ":" + port
	}
	return scheme + "://" + host, ""
}

// CORSOptions configure CORS. The zero value is what GitHub Copilot asks of
// a registry it reads
// (docs.github.com/en/copilot/how-tos/administer-copilot/manage-mcp-usage/configure-mcp-registry):
// any origin, GET and OPTIONS, the Authorization and Content-Type headers.
type CORSOptions struct {
	// AllowedOrigins are the origins allowed to read responses; ["*"]
	// when empty. Credentials are never allowed.
	AllowedOrigins []string
	// AllowedMethods; GET, HEAD and OPTIONS when empty.
	AllowedMethods []string
	// AllowedHeaders a request may carry; Authorization and Content-Type
	// when empty.
	AllowedHeaders []string
	// ExposedHeaders a page may read; ETag when empty.
	ExposedHeaders []string
	// MaxAge of a preflight answer in seconds; 600 when zero.
	MaxAge int
}

// CORS answers preflight requests (OPTIONS with
// Access-Control-Request-Method) itself and adds the CORS headers to the
// others, with github.com/rs/cors. Put it outside BearerTokens: a
// browser's preflight carries no credentials.
func CORS(o CORSOptions) Middleware {
	if len(o.AllowedOrigins) == 0 {
		o.AllowedOrigins = []string{"*"}
	}
	if len(o.AllowedMethods) == 0 {
		o.AllowedMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions}
	}
	if len(o.AllowedHeaders) == 0 {
		o.AllowedHeaders = []string{"Authorization", "Content-Type"}
	}
	if len(o.ExposedHeaders) == 0 {
		o.ExposedHeaders = []string{"ETag"}
	}
	if o.MaxAge == 0 {
		o.MaxAge = 600
	}
	c := cors.New(cors.Options{
		AllowedOrigins:       o.AllowedOrigins,
		AllowedMethods:       o.AllowedMethods,
		AllowedHeaders:       o.AllowedHeaders,
		ExposedHeaders:       o.ExposedHeaders,
		MaxAge:               o.MaxAge,
		OptionsSuccessStatus: http.StatusNoContent,
	})
	return c.Handler
}
