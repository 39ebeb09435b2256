package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLineReader(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		max   int
		lines []string
		err   error
	}{
		{"lines", "a\nbc\r\n\nd", 10, []string{"a\n", "bc\r\n", "\n", "d"}, io.EOF},
		{"at the cap", "12345\n", 5, []string{"12345\n"}, io.EOF},
		{"at the cap with CRLF", "12345\r\n", 5, []string{"12345\r\n"}, io.EOF},
		{"over the cap", "123456\n", 5, nil, ErrMessageTooLarge},
		{"over the cap, last line", "ok\n123456", 5, []string{"ok\n"}, ErrMessageTooLarge},
		{"long line across buffers", strings.Repeat("x", 200<<10) + "\n", 300 << 10, []string{strings.Repeat("x", 200<<10) + "\n"}, io.EOF},
		{"long line over the cap", strings.Repeat("x", 200<<10) + "\n", 100 << 10, nil, ErrMessageTooLarge},
		{"empty", "", 5, nil, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(c.in), c.max)
			var got []string
			var err error
			for {
				var line []byte
				if line, err = lr.next(); err != nil {
					break
				}
				got = append(got, string(line))
			}
			if !errors.Is(err, c.err) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			if strings.Join(got, "|") != strings.Join(c.lines, "|") {
				t.Errorf("lines %q, want %q", got, c.lines)
			}
		})
	}
}

// FuzzLineReader: the lines read are the input, in order, each within the
// cap; nothing is lost but what follows a line over the cap.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Add(bytes.Repeat([]byte("z"), 70000), 65536)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<20 {
			return
		}
		lr := newLineReader(bytes.NewReader(data), limit)
		var got []byte
		for {
			line, err := lr.next()
			if err != nil {
				if errors.Is(err, io.EOF) && !bytes.Equal(got, data) {
					t.Fatalf("read %q of %q", got, data)
				}
				if errors.Is(err, ErrMessageTooLarge) {
					rest := data[len(got):]
					first := rest
					if i := bytes.IndexByte(rest, '\n'); i >= 0 {
						first = rest[:i+1]
					}
					if len(content(first)) <= limit {
						t.Fatalf("a line within the cap was refused: %q (cap %d)", first, limit)
					}
				}
				return
			}
			if len(content(line)) > limit {
				t.Fatalf("a line over the cap: %d > %d", len(content(line)), limit)
			}
			got = append(got, line...)
		}
	})
}

// slowWriter records writes; each can be made to wait.
type slowWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	gate  chan struct{}
	fails bool
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fails {
		return 0, errors.New("broken pipe")
	}
	return w.buf.Write(p)
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestOutQueue(t *testing.T) {
	t.Run("order from many goroutines", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 1<<20)
		var mu sync.Mutex // stands for the relay's lock: it orders enqueues
		var wg sync.WaitGroup
		next := 0
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					mu.Lock()
					o.enqueue([]byte(strings.Repeat("x", next%7) + "\n"))
					next++
					mu.Unlock()
					o.flush()
				}
			}()
		}
		wg.Wait()
		o.wait(time.Second)
		want := ""
		for i := 0; i < 1600; i++ {
			want += strings.Repeat("x", i%7) + "\n"
		}
		if w.String() != want {
			t.Error("messages out of order or lost")
		}
	})
	t.Run("a slow peer blocks only its flusher", func(t *testing.T) {
		w := &slowWriter{gate: make(chan struct{})}
		o := newOutQueue(w, 1<<20)
		o.enqueue([]byte("a\n"))
		go o.flush() // blocks in Write
		time.Sleep(20 * time.Millisecond)
		done := make(chan struct{})
		go func() { o.enqueue([]byte("b\n")); o.flush(); close(done) }()
		select {
		case <-done: // returned at once: the busy flusher writes it
		case <-time.After(time.Second):
			t.Fatal("a second flush waited for the slow write")
		}
		close(w.gate)
		o.wait(time.Second)
		if w.String() != "a\nb\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("cap", func(t *testing.T) {
		o := newOutQueue(&slowWriter{}, 4)
		if !o.enqueue([]byte("abc\n")) || o.enqueue([]byte("d")) {
			t.Error("the cap is not enforced")
		}
	})
	t.Run("drop", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		o.drop()
		o.enqueue([]byte("b\n"))
		o.flush()
		if w.String() != "" {
			t.Errorf("wrote %q after drop", w.String())
		}
	})
	t.Run("close when drained", func(t *testing.T) {
		w := &slowWriter{}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		closed := make(chan struct{})
		o.closeWhenDrained(func() { close(closed) })
		<-closed
		o.enqueue([]byte("b\n"))
		o.flush()
		if w.String() != "a\n" {
			t.Errorf("wrote %q", w.String())
		}
	})
	t.Run("write error", func(t *testing.T) {
		w := &slowWriter{fails: true}
		o := newOutQueue(w, 100)
		o.enqueue([]byte("a\n"))
		o.flush()
		if o.failed() == nil {
			t.Error("no error")
		}
	})
}
