package digest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// genTool returns a realistic tool definition of about 2 KB: a long
// description, a dozen described parameters, annotations and execution.
func genTool(i int) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"tool_%04d","title":"Tool number %d","description":%q,"inputSchema":{"type":"object","properties":{`,
		i, i, strings.Repeat("Does a useful thing with the given input; résumé ✓. ", 12))
	for p := 0; p < 12; p++ {
		if p > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"param_%d":{"type":"string","description":"Parameter %d of this tool.","maxLength":%d}`, p, p, 100+p)
	}
	b.WriteString(`},"required":["param_0","param_1"]},"annotations":{"readOnlyHint":true,"openWorldHint":false},"execution":{"taskSupport":"optional"},"_meta":{"x":1}}`)
	return json.RawMessage(b.String())
}

func genListing(n int) (*Snapshot, []byte) {
	s := &Snapshot{Prompts: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}}
	var list strings.Builder
	list.WriteString(`{"tools":[`)
	for i := 0; i < n; i++ {
		t := genTool(i)
		s.Tools = append(s.Tools, t)
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(t)
	}
	list.WriteString(`]}`)
	return s, []byte(list.String())
}

func listingBytes(s *Snapshot) int64 {
	var n int64
	for _, t := range s.Tools {
		n += int64(len(t))
	}
	return n
}

// BenchmarkDigest digests a 1,000-tool listing: every Definition Digest and
// the Set Digests.
func BenchmarkDigest(b *testing.B) {
	s, _ := genListing(1000)
	b.SetBytes(listingBytes(s))
	b.ReportAllocs()
	for b.Loop() {
		if r := Compute(s); r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}

// BenchmarkDigestBaseline is the peer the issue names, on the same input:
// json.Unmarshal into any (the usual validity check) then jcs.Transform and
// SHA-256 per tool. It neither refuses what the strict reader refuses nor
// removes _meta, so it does less work.
func BenchmarkDigestBaseline(b *testing.B) {
	s, _ := genListing(1000)
	b.SetBytes(listingBytes(s))
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range s.Tools {
			var v any
			if err := json.Unmarshal(t, &v); err != nil {
				b.Fatal(err)
			}
			c, err := jcs.Transform(t)
			if err != nil {
				b.Fatal(err)
			}
			sha256.Sum256(c)
		}
	}
}

// BenchmarkSplitAndDigest includes splitting the raw tools/list result.
func BenchmarkSplitAndDigest(b *testing.B) {
	_, raw := genListing(1000)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		items, _, _, err := SplitList(KindTool, raw)
		if err != nil {
			b.Fatal(err)
		}
		Compute(&Snapshot{Tools: items})
	}
}

// TestPeakMemory16MiB parses and digests a 16 MiB snapshot file and checks
// that everything allocated on the way (an upper bound of the peak heap,
// the GC being off) stays below 4x the file's size, the file included.
func TestPeakMemory16MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	n := 16 << 20 / len(genTool(0))
	s, _ := genListing(n)
	file, err := s.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	s = nil
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	snap, err := ParseSnapshot(file)
	if err != nil {
		t.Fatal(err)
	}
	r := Compute(snap)
	runtime.ReadMemStats(&after)
	if r.Err() != nil || len(r.Definitions) != n {
		t.Fatal("digest failed")
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	ratio := float64(alloc+uint64(len(file))) / float64(len(file))
	t.Logf("%d tools, %.1f MiB file, %.1f MiB allocated: %.2fx the input with the input", n, float64(len(file))/(1<<20), float64(alloc)/(1<<20), ratio)
	if ratio >= 4 {
		t.Errorf("peak memory bound %.2fx the listing, want below 4x", ratio)
	}
}
