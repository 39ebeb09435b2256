package digest

import (
	"slices"
	"strings"
)

// CompareKeys orders definitions as a lock and a diff list them: by kind in
// the order of Kinds (KindResource after them), then by key in UTF-8 byte
// order. It returns a
// negative number, zero or a positive number as (ak, akey) sorts before,
// with or after (bk, bkey).
func CompareKeys(ak Kind, akey string, bk Kind, bkey string) int {
	if c := kindRank(ak) - kindRank(bk); c != 0 {
		return c
	}
	return strings.Compare(akey, bkey)
}

// kindRank is a kind's place in the order of CompareKeys: its index in
// Kinds, len(Kinds) for KindResource, -1 for anything else.
func kindRank(k Kind) int {
	if k == KindResource {
		return len(Kinds)
	}
	return slices.Index(Kinds[:], k)
}
