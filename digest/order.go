package digest

import (
	"slices"
	"strings"
)

// CompareKeys orders definitions as a lock and a diff list them: by kind in
// the order of Kinds, then by key in UTF-8 byte order. It returns a
// negative number, zero or a positive number as (ak, akey) sorts before,
// with or after (bk, bkey).
func CompareKeys(ak Kind, akey string, bk Kind, bkey string) int {
	if c := slices.Index(Kinds[:], ak) - slices.Index(Kinds[:], bk); c != 0 {
		return c
	}
	return strings.Compare(akey, bkey)
}
