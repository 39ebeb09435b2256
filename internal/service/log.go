package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// NewLogger returns a logger writing JSON lines (log/slog's JSONHandler)
// to w, at level (slog.LevelInfo when nil), that escapes every string it
// writes with textsafe.Escape: the message, string values, errors and
// Stringers. It is the edge where what clients and servers wrote is
// printed, so text is given to it as it is, not escaped before.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	if level == nil {
		level = slog.LevelInfo
	}
	return slog.New(EscapingHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})))
}

// EscapingHandler wraps h so that every string of a record (its message,
// string values, errors and fmt.Stringers, in groups too) is escaped with
// textsafe.Escape before h writes it.
func EscapingHandler(h slog.Handler) slog.Handler { return escaping{h} }

type escaping struct{ h slog.Handler }

func (e escaping) Enabled(ctx context.Context, l slog.Level) bool { return e.h.Enabled(ctx, l) }

func (e escaping) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, textsafe.Escape(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(escapeAttr(a))
		return true
	})
	return e.h.Handle(ctx, out)
}

func (e escaping) WithAttrs(as []slog.Attr) slog.Handler {
	esc := make([]slog.Attr, len(as))
	for i, a := range as {
		esc[i] = escapeAttr(a)
	}
	return escaping{e.h.WithAttrs(esc)}
}

func (e escaping) WithGroup(name string) slog.Handler {
	return escaping{e.h.WithGroup(textsafe.Escape(name))}
}

func escapeAttr(a slog.Attr) slog.Attr {
	a.Key = textsafe.Escape(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(textsafe.Escape(v.String()))
	case slog.KindGroup:
		g := v.Group()
		esc := make([]slog.Attr, len(g))
		for i, ga := range g {
			esc[i] = escapeAttr(ga)
		}
		a.Value = slog.GroupValue(esc...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case textsafe.Escaped:
			a.Value = slog.StringValue(string(x)) // escaped once already
		case error:
			a.Value = slog.StringValue(textsafe.Escape(x.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(textsafe.Escape(x.String()))
		case []byte:
			a.Value = slog.StringValue(textsafe.Escape(string(x)))
		default:
			// Any other value (a named string type, a slice, a struct)
			// could carry outside text: written as its escaped fmt form.
			a.Value = slog.StringValue(textsafe.Escape(fmt.Sprint(x)))
		}
	default:
		a.Value = v
	}
	return a
}

// observe wraps h with the request metrics and the access log: one line
// per request with its method, path (never the query, which can carry a
// token), status, duration and bytes written; never a header.
func (s *server) observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		rw := &recorder{ResponseWriter: w}
		defer func() {
			d := time.Since(start)
			code := rw.code
			if code == 0 {
				code = http.StatusOK
			}
			route := routeLabel(r)
			s.metrics.observe(route, r.Method, code, d.Seconds())
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", route),
				slog.Int("status", code),
				slog.Duration("duration", d),
				slog.Int64("bytes", rw.bytes),
			)
		}()
		h.ServeHTTP(rw, r)
	})
}

// routeLabel is the pattern of the http.ServeMux that served r (set on r
// by the mux), so that the metric labels are as many as the routes;
// "unmatched" for a request no pattern matched.
func routeLabel(r *http.Request) string {
	if r.Pattern == "" {
		return "unmatched"
	}
	return r.Pattern
}

// recorder keeps the status and the bytes of a response; Unwrap lets
// http.ResponseController reach the connection (Flush, deadlines).
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Flush is http.Flusher's, for handlers that assert it (event streams).
func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
