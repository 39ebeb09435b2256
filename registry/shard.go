package registry

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Shard is one part of a registry partitioned by server name: an entry
// belongs to shard I of N when FNV-1a-64 of its name in lower case, modulo
// N, is I (docs/REGISTRY.md, "Shards"): names that differ only in case are
// one server to the duplicate rule (dupKey), so they must meet in one shard. Every version of a server is in one
// shard, and the N shards of a run together verify each entry once. The
// zero value is the whole registry.
type Shard struct {
	I, N int
}

// ErrShard: a shard that is not I/N with 0 <= I < N.
var ErrShard = errors.New("invalid shard")

// ParseShard reads "I/N" (0 <= I < N <= 65536).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 65536 || i < 0 || i >= n || strconv.Itoa(i) != a || strconv.Itoa(n) != b {
		return Shard{}, fmt.Errorf("%w %s: want I/N with 0 <= I < N <= 65536 (0/4 is the first of four)", ErrShard, textsafe.RawQuote(s))
	}
	return Shard{I: i, N: n}, nil
}

// Contains reports whether the entry named name belongs to s.
func (s Shard) Contains(name string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(name)))
	return h.Sum64()%uint64(s.N) == uint64(s.I)
}

func (s Shard) String() string {
	if s.N <= 1 {
		return "0/1"
	}
	return strconv.Itoa(s.I) + "/" + strconv.Itoa(s.N)
}
