package proxy

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// TestChainsKept: a listing the client is paging through is kept under the
// cursor of its next page, its bytes counted against MaxHeldBytes, at most
// maxChains of a kind (one is dropped to make room); the page of that
// cursor takes it, and it is forgotten, its bytes no longer counted, until
// it is kept again. A cursor the proxy did not hand starts a listing of its
// own, not begun.
func TestChainsKept(t *testing.T) {
	r, _ := bareRelay(1 << 20)
	r.chains = map[digest.Kind]map[string]*chain{}
	const k = digest.KindTool
	counted := func() int {
		n := 0
		for _, c := range r.chains[k] {
			n += c.bytes
		}
		return n
	}
	for i := range maxChains + 1 {
		ch := r.takeChain(k, nil)
		ch.bytes = 100
		if err := r.keepChain(k, fmt.Sprint("c", i), ch); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.chains[k]); n != maxChains || r.chainBytes != counted() {
		t.Fatalf("%d listings kept, %d bytes counted for %d; want %d listings", n, r.chainBytes, counted(), maxChains)
	}
	for _, cursor := range slices.Sorted(maps.Keys(r.chains[k])) {
		want := r.chains[k][cursor]
		if got := r.takeChain(k, &cursor); got != want || !got.started {
			t.Fatalf("the page of %s continues %p, want %p", cursor, got, want)
		}
		if _, kept := r.chains[k][cursor]; kept || r.chainBytes != counted() {
			t.Fatalf("after the page of %s: kept %v, %d bytes counted for %d", cursor, kept, r.chainBytes, counted())
		}
	}
	if r.chainBytes != 0 {
		t.Errorf("%d bytes counted for no listing", r.chainBytes)
	}
	other := "not handed"
	if ch := r.takeChain(k, &other); ch.started || len(ch.items) != 0 || ch.cursors == nil {
		t.Errorf("a cursor the proxy did not hand continues %+v", ch)
	}
}
