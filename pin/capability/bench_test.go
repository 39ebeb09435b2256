package capability

import (
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
)

// BenchmarkClassifyTool classifies one 2 KB tool.
func BenchmarkClassifyTool(b *testing.B) {
	t := testsnap.BenchTool(1, "")
	b.SetBytes(int64(len(t)))
	b.ReportAllocs()
	for b.Loop() {
		Classify(t, nil)
	}
}
