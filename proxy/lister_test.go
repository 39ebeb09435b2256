package proxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOwnCallsAfterClose: once the server is gone, the proxy's own call
// waiting for an answer and every later one fail with the first reason
// given, at once (a later close does not replace it).
func TestOwnCallsAfterClose(t *testing.T) {
	t.Parallel()
	r, _ := bareRelay(1 << 20)
	r.prefix = "mcpsign-test-"
	r.own = map[string]chan ownReply{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, second := errors.New("the server exited"), errors.New("the session ended")
	waiting := make(chan error, 1)
	go func() {
		_, err := r.Call(ctx, "tools/list", []byte(`{}`))
		waiting <- err
	}()
	r.closeOwn(first)
	r.closeOwn(second)
	if err := <-waiting; !errors.Is(err, first) {
		t.Errorf("the waiting call failed with %v, want %v", err, first)
	}
	if _, err := r.Call(ctx, "prompts/list", []byte(`{}`)); !errors.Is(err, first) {
		t.Errorf("a later call failed with %v, want %v", err, first)
	}
}
