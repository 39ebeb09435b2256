package pin

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
)

// benchSnapshot has n tools; every step-th one (0: none) has a changed
// description.
func benchSnapshot(n, step int) *digest.Snapshot {
	ins := "Use the tools."
	s := &digest.Snapshot{Server: digest.ServerInfo{Name: "bench", Version: "1"}, ProtocolVersion: "2025-11-25", Instructions: &ins,
		Prompts: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}}
	for i := range n {
		v := ""
		if step > 0 && i%step == 0 {
			v = " Also deletes them."
		}
		s.Tools = append(s.Tools, testsnap.BenchTool(i, v))
	}
	return s
}

func benchLock(b *testing.B, n int) *Lock {
	l, err := NewLock(benchSnapshot(n, 0), Approval{Method: MethodTOFU, ApprovedAt: time.Unix(1767225600, 0)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Marshal(); err != nil {
		b.Fatal(err)
	}
	return l
}

func snapshotBytes(s *digest.Snapshot) int64 {
	var n int64
	for _, t := range s.Tools {
		n += int64(len(t))
	}
	return n
}

// BenchmarkCheck checks a live 1,000-tool listing against its lock, no
// drift: what verify-pin and the proxy do on every listing.
func BenchmarkCheck(b *testing.B) {
	l, s := benchLock(b, 1000), benchSnapshot(1000, 0)
	b.SetBytes(snapshotBytes(s))
	b.ReportAllocs()
	for b.Loop() {
		if r := l.Check(s); len(r.Findings) != 0 {
			b.Fatal("drift")
		}
	}
}

// BenchmarkCheckBaseline is the floor of a check: digest.Compute of the
// same listing (every Definition Digest and Set Digest).
func BenchmarkCheckBaseline(b *testing.B) {
	s := benchSnapshot(1000, 0)
	b.SetBytes(snapshotBytes(s))
	b.ReportAllocs()
	for b.Loop() {
		digest.Compute(s)
	}
}

// BenchmarkCheckDrift: 100 of the 1,000 tools changed; every one is
// diffed field by field and classified.
func BenchmarkCheckDrift(b *testing.B) {
	l, s := benchLock(b, 1000), benchSnapshot(1000, 10)
	b.SetBytes(snapshotBytes(s))
	b.ReportAllocs()
	for b.Loop() {
		if r := l.Check(s); len(r.Findings) != 200 {
			b.Fatalf("%d findings", len(r.Findings))
		}
	}
}

// BenchmarkParseLock reads a 1,000-tool lock (about 2.3 MB) with every
// check; BenchmarkParseLockBaseline is the strict read alone
// (digest.Canonicalize of the same bytes).
func BenchmarkParseLock(b *testing.B) {
	data, _ := benchLock(b, 1000).Marshal()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLockBaseline(b *testing.B) {
	data, _ := benchLock(b, 1000).Marshal()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := digest.Canonicalize(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteLock writes a small lock (the example server's size, 9 KB)
// under the file lock; BenchmarkWriteLockBaseline writes the same bytes
// with atomicfile.Write alone. Both fsync: the disk dominates.
func BenchmarkWriteLock(b *testing.B) {
	l := benchLock(b, 4)
	path := filepath.Join(b.TempDir(), "l.lock")
	for b.Loop() {
		if err := l.Write(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteLockBaseline(b *testing.B) {
	data, _ := benchLock(b, 4).Marshal()
	path := filepath.Join(b.TempDir(), "l.lock")
	for b.Loop() {
		if err := atomicfile.Write(path, data, atomicfile.Options{Overwrite: true}); err != nil {
			b.Fatal(err)
		}
	}
}
