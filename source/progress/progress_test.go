package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/source"
)

// syncBuf is a strings.Builder safe for the notice's timer goroutine.
type syncBuf struct {
	mu chan struct{}
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

// TestSlowNotice: without a terminal, a listing that hangs gets one line
// on stderr naming what it waits for and the limit; a quick one, or a
// source that is no live listing, gets nothing.
func TestSlowNotice(t *testing.T) {
	t.Run("hangs", func(t *testing.T) {
		w := &syncBuf{mu: make(chan struct{}, 1)}
		// 500 ms (was 20): the start stage's notice must not come before
		// the next stage begins, a call later, however late it runs.
		progress, done := SlowNotice(w, 30*time.Second, 500*time.Millisecond, "--timeout")
		progress(source.StageStart, 0)
		progress(source.StageInitialize, 0)
		deadline := time.Now().Add(10 * time.Second)
		for w.String() == "" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		done()
		got := w.String()
		if want := "mcpsign: waiting for the server to answer initialize: no answer after 500ms (the limit is 30s, --timeout)\n"; got != want {
			t.Errorf("notice %q, want %q", got, want)
		}
	})
	t.Run("quick", func(t *testing.T) {
		w := &syncBuf{mu: make(chan struct{}, 1)}
		// 500 ms (was 50): done must run before the delay, a call later,
		// however late it runs; then past the delay, the stopped timer
		// wrote nothing.
		progress, done := SlowNotice(w, 30*time.Second, 500*time.Millisecond, "--timeout")
		progress(source.StageStart, 0)
		done()
		time.Sleep(700 * time.Millisecond)
		if got := w.String(); got != "" {
			t.Errorf("quick listing noticed: %q", got)
		}
	})
	t.Run("no stages", func(t *testing.T) {
		w := &syncBuf{mu: make(chan struct{}, 1)}
		_, done := SlowNotice(w, 30*time.Second, time.Millisecond, "--timeout")
		time.Sleep(20 * time.Millisecond)
		done()
		if got := w.String(); got != "" {
			t.Errorf("a file source noticed: %q", got)
		}
	})
}

// TestFor picks the display: lines when verbose (even quiet), nothing when
// quiet, else a spinner at a terminal (which writes nothing for a quick
// listing) or the slow listing's notice.
func TestFor(t *testing.T) {
	tests := []struct {
		name     string
		d        Display
		wantNil  bool
		wantLine string // what one stage writes at once
	}{
		{name: "verbose", d: Display{Verbose: true, Quiet: true}, wantLine: "mcpsign: initialize\n"},
		{name: "quiet", d: Display{Quiet: true}, wantNil: true},
		{name: "terminal", d: Display{Terminal: true}},
		{name: "elsewhere", d: Display{Limit: time.Minute, Setting: "--timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &syncBuf{mu: make(chan struct{}, 1)}
			p, done := For(w, tt.d)
			if (p == nil) != tt.wantNil || done == nil {
				t.Fatalf("progress nil %v, done nil %v", p == nil, done == nil)
			}
			if p != nil {
				p("initialize", 0)
			}
			done()
			if got := w.String(); got != tt.wantLine {
				t.Fatalf("wrote %q, want %q", got, tt.wantLine)
			}
		})
	}
}
