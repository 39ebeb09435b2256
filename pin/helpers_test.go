package pin

import (
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/examplesnap"
)

// tofuLock returns a tofu lock of the example server in mode.
func tofuLock(t testing.TB, mode string) *Lock {
	t.Helper()
	l, err := NewLock(examplesnap.Live(t, mode), Approval{Method: MethodTOFU, ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustMarshal(t testing.TB, l *Lock) []byte {
	t.Helper()
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}
