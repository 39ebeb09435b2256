package capability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchTool is (as in package pin's benchmarks) a realistic tool definition of about 2 KB (the shape of
// digest's benchmarks): a long description, a dozen described parameters,
// annotations.
func benchTool(i int, variant string) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"tool_%04d","title":"Tool number %d","description":%q,"inputSchema":{"type":"object","properties":{`,
		i, i, strings.Repeat("Searches the records for a useful thing; résumé ✓. ", 12)+variant)
	for p := 0; p < 12; p++ {
		if p > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"param_%d":{"type":"string","description":"Parameter %d of this tool.","maxLength":%d}`, p, p, 100+p)
	}
	b.WriteString(`},"required":["param_0","param_1"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`)
	return json.RawMessage(b.String())
}

// BenchmarkClassifyTool classifies one 2 KB tool.
func BenchmarkClassifyTool(b *testing.B) {
	t := benchTool(1, "")
	b.SetBytes(int64(len(t)))
	b.ReportAllocs()
	for b.Loop() {
		Classify(t, nil)
	}
}
