package proxy

import (
	"errors"
	"testing"
)

// sendOnly is an UpstreamConn whose Send returns err; nothing else of it
// is used.
type sendOnly struct {
	UpstreamConn
	err  error
	sent []byte
}

func (c *sendOnly) Send(line []byte) error {
	if c.err == nil {
		c.sent = append(c.sent, line...)
	}
	return c.err
}

// TestConnWriter: the relay's queue to the server counts a line written
// only when the connection sent it; a line that was not sent is reported
// with the connection's error, nothing of it written.
func TestConnWriter(t *testing.T) {
	t.Parallel()
	line := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	gone := errors.New("the server is gone")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"sent", nil},
		{"not sent", gone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &sendOnly{err: tc.err}
			n, err := connWriter{c}.Write(line)
			if tc.err == nil && (n != len(line) || err != nil || string(c.sent) != string(line)) {
				t.Errorf("Write = %d, %v (sent %q); want %d, nil", n, err, c.sent, len(line))
			}
			if tc.err != nil && (n != 0 || !errors.Is(err, tc.err)) {
				t.Errorf("Write = %d, %v; want 0, %v", n, err, tc.err)
			}
		})
	}
}
