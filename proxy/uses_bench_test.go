package proxy

import (
	"testing"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// BenchmarkUsesDefinition is the cost the check of a tools/call name adds to
// every call (docs/PERFORMANCE.md).
func BenchmarkUsesDefinition(b *testing.B) {
	m, _ := mcpwire.Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"hello world"}}}`))
	b.ReportAllocs()
	for b.Loop() {
		usesDefinition(&m)
	}
}
