//go:build unix

package interrupt

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestNotify: the first SIGTERM (or SIGINT) cancels with a cause that
// reads "interrupted: SIGTERM received", not Go's "terminated signal
// received".
func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want string
	}{
		{syscall.SIGTERM, "interrupted: SIGTERM received"},
		{os.Interrupt, "interrupted: SIGINT received"},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := Notify(cancel)
		if err := syscall.Kill(os.Getpid(), tc.sig.(syscall.Signal)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: not canceled", tc.sig)
		}
		var ie *Error
		if cause := context.Cause(ctx); !errors.As(cause, &ie) || cause.Error() != tc.want {
			t.Errorf("%v: cause %v, want %q", tc.sig, cause, tc.want)
		}
		stop()
		stop()
	}
}
