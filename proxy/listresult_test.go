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

	// What the listings keep may reach MaxHeldBytes exactly, their cursors
	// counted.
	r, _ = bareRelay(100)
	r.chains = map[digest.Kind]map[string]*chain{}
	if err := r.keepChain(k, "c1", &chain{bytes: 98}); err != nil {
		t.Errorf("listings of MaxHeldBytes: %v", err)
	}
	if err := r.keepChain(k, "c", &chain{}); err == nil {
		t.Errorf("listings of MaxHeldBytes+1: no error")
	}
}

// TestPageListing: the pages of the client's own listing are one listing,
// complete at the page with no nextCursor, of at most MaxPages pages
// (inclusive); a list in any other result is a page of its own, never
// complete and never kept.
func TestPageListing(t *testing.T) {
	const k = digest.KindTool
	page := func(r *relay, p *pendingReq, next string) (*chain, bool, error) {
		res := `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]`
		if next != "" {
			res += `,"nextCursor":"` + next + `"`
		}
		return r.page(inboundOf(t, `{"jsonrpc":"2.0","id":1,"result":`+res+`}`), p, k)
	}
	list := func(cursor *string) *pendingReq {
		return &pendingReq{id: []byte("1"), method: "tools/list", kind: k, cursor: cursor}
	}
	for _, pages := range []int{1, 2, MaxPages, MaxPages + 1} {
		t.Run(fmt.Sprint(pages, " pages"), func(t *testing.T) {
			r, _ := bareRelay(1 << 30)
			r.chains = map[digest.Kind]map[string]*chain{}
			var cursor *string
			for i := 1; i <= pages; i++ {
				next := ""
				if i < pages {
					next = fmt.Sprint("p", i+1)
				}
				ch, complete, err := page(r, list(cursor), next)
				if pages > MaxPages && i == pages {
					if err == nil {
						t.Fatalf("page %d of a listing: no error", i)
					}
					return
				}
				if err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				if ch.pages != i || len(ch.items) != i || complete != (next == "") {
					t.Fatalf("page %d: %d pages, %d items, complete %v", i, ch.pages, len(ch.items), complete)
				}
				if _, kept := r.chains[k][next]; kept != (next != "") {
					t.Fatalf("page %d: listing kept %v under %q", i, kept, next)
				}
				cursor = &next
			}
		})
	}
	r, _ := bareRelay(1 << 30)
	r.chains = map[digest.Kind]map[string]*chain{}
	for _, p := range []*pendingReq{nil, {id: []byte("1"), method: "prompts/list", kind: digest.KindPrompt}} {
		ch, complete, err := page(r, p, "p2")
		if err != nil || complete || ch.started || len(r.chains[k]) != 0 {
			t.Errorf("tools in the answer to %+v: %v, complete %v, %d kept", p, err, complete, len(r.chains[k]))
		}
	}
}

// TestCursorOf: the cursor of list request params, read strictly; none
// when the params are no object, have no string cursor, or cannot be read.
func TestCursorOf(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   *string
	}{
		{`{"cursor":"p2"}`, new("p2")},
		{`{"cursor":""}`, new("")},
		{`{"_meta":{},"cursor":"a\u0062"}`, new("ab")},
		{``, nil},
		{`{}`, nil},
		{`{"cursor":null}`, nil},
		{`{"cursor":2}`, nil},
		{`{"cursor":"a","cursor":"b"}`, nil},
		{`["p2"]`, nil},
	} {
		got := cursorOf([]byte(tc.params))
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("cursorOf(%s) = %v, want %v", tc.params, deref(got), deref(tc.want))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%q", *s)
}
