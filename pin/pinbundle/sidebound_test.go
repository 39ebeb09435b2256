package pinbundle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/diff"
)

// TestReadSideFileSizeBound: a side file of exactly the bound is read;
// one byte more is no side file (ok false, no error: the caller takes the
// argument as a source). The bound is MaxBytes for ReadSideFile, held
// here at a lock's own size so that no 65 MiB file is written; a file
// one byte over MaxBytes (sparse) is passed over by ReadSideFile too.
func TestReadSideFileSizeBound(t *testing.T) {
	dir := t.TempDir()
	lock, err := pin.NewLock(snapshot(t, honestSnap), pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	data, err := lock.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.lock")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	for _, tt := range []struct {
		limit int64
		ok    bool
	}{{n + 1, true}, {n, true}, {n - 1, false}} {
		side, ok, err := readSideFile(p, tt.limit)
		if err != nil || ok != tt.ok || (ok && (side == nil || side.Origin != diff.OriginLock)) {
			t.Errorf("a %d-byte lock at the bound %d: ok %v, side %v, err %v; want ok %v", n, tt.limit, ok, side, err, tt.ok)
		}
	}
	big := filepath.Join(dir, "big.lock")
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxBytes+1); err != nil {
		t.Fatal(err)
	}
	if side, ok, err := ReadSideFile(big); ok || side != nil || err != nil {
		t.Errorf("a file of MaxBytes+1: ok %v, side %v, err %v; want no side file", ok, side, err)
	}
}
