package diff

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

// snapshots caches the example server's snapshot per mode for this test
// process: each is read once from the real server over stdio.
var snapshots = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}

// exampleSnapshot returns (as in package pin's tests) a fresh copy of the example server's snapshot in
// mode, read from the live server over stdio.
func exampleSnapshot(t testing.TB, mode string) *digest.Snapshot {
	t.Helper()
	snapshots.Lock()
	defer snapshots.Unlock()
	data, ok := snapshots.m[mode]
	if !ok {
		bin := fixtures.BuildExampleServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := source.Load(ctx, source.Spec{Command: []string{bin, "--mode", mode}}, source.Options{})
		if err != nil {
			t.Fatalf("listing the example server (%s): %v", mode, err)
		}
		if data, err = s.MarshalFile(); err != nil {
			t.Fatal(err)
		}
		snapshots.m[mode] = data
	}
	s, err := digest.ParseSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
