package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// listing3 is a listing of three pages (two entries, two, one) served by
// cursor: "" the first, "c1" the second, "c2" the third, whose cursor is
// last ("" ends the listing).
func listing3(last string) []string {
	e := func(name string) string { return `{"server":` + serverJSON(name, "1", "") + `}` }
	page := func(next string, entries ...string) string {
		md := `{}`
		if next != "" {
			md = `{"nextCursor":"` + next + `"}`
		}
		return `{"servers":[` + strings.Join(entries, ",") + `],"metadata":` + md + `}`
	}
	return []string{page("c1", e("a/p1e0"), e("a/p1e1")), page("c2", e("a/p2e0"), e("a/p2e1")), page(last, e("a/p3e0"))}
}

// TestClientEachAtBounds: EachAt's bounds on the listing are inclusive
// (the pages, the bytes of all pages, the entries: a listing of exactly
// each reads whole), one less refuses it naming the bound and the count
// reached, the entries before the refusal have been given, and an entry's
// position counts its page from 1 whether the registry serves /v0.1 or
// only /v0.
func TestClientEachAtBounds(t *testing.T) {
	t.Parallel()
	pages := listing3("")
	total := int64(len(pages[0]) + len(pages[1]) + len(pages[2]))
	all := "1.0 1.1 2.0 2.1 3.0"
	for _, c := range []struct {
		name   string
		v0     bool     // /v0.1 answers 404, the listing is on /v0
		pages  []string // nil: pages
		lim    Limits
		stopAt int    // fn fails at this entry (1-based; 0: never)
		seen   string // the positions given to fn, "page.index"
		prog   string // Progress's calls, "pages/entries"
		err    string // a regexp the error matches; "" when it reads whole
	}{
		{name: "whole", seen: all, prog: "1/2 2/4 3/5"},
		{name: "whole on /v0", v0: true, seen: all, prog: "1/2 2/4 3/5"},
		{name: "the most pages", lim: Limits{MaxPages: 3}, seen: all, prog: "1/2 2/4 3/5"},
		{name: "the most pages on /v0", v0: true, lim: Limits{MaxPages: 3}, seen: all, prog: "1/2 2/4 3/5"},
		{name: "one page too many", lim: Limits{MaxPages: 2}, seen: "1.0 1.1 2.0 2.1", prog: "1/2 2/4", err: `^reading the registry: more than 2 pages$`},
		{name: "the most bytes", lim: Limits{MaxListingBytes: total}, seen: all, prog: "1/2 2/4 3/5"},
		{name: "one byte too many", lim: Limits{MaxListingBytes: total - 1}, seen: "1.0 1.1 2.0 2.1", prog: "1/2 2/4",
			err: fmt.Sprintf(`^reading the registry: the listing's pages exceed %d bytes together after 3 pages$`, total-1)},
		{name: "the most entries", lim: Limits{MaxEntries: 5}, seen: all, prog: "1/2 2/4 3/5"},
		{name: "one entry too many", lim: Limits{MaxEntries: 4}, seen: "1.0 1.1 2.0 2.1", prog: "1/2 2/4", err: `^reading the registry: more than 4 entries$`},
		{name: "fn's error", stopAt: 3, seen: "1.0 1.1 2.0", prog: "1/2", err: `^stop at 3$`},
		{name: "a bad second page", pages: []string{pages[0], `{"servers":{}}`}, seen: "1.0 1.1", prog: "1/2",
			err: `^page 2: invalid registry page: servers: not a JSON array$`},
		{name: "a cursor that loops", pages: listing3("c1"), seen: all, prog: "1/2 2/4 3/5",
			err: `^reading the registry: the cursor "c1" came back after 3 pages: it loops$`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			served := c.pages
			if served == nil {
				served = pages
			}
			srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
				want := "/v0.1/servers"
				if c.v0 {
					want = "/v0/servers"
				}
				i := map[string]int{"": 0, "c1": 1, "c2": 2}[r.URL.Query().Get("cursor")]
				if r.URL.Path != want || i >= len(served) {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, served[i])
			})
			var seen, prog []string
			cl := Client{Base: srv.URL, HTTPClient: srv.Client(), Limits: c.lim,
				Progress: func(pages, entries int) { prog = append(prog, fmt.Sprintf("%d/%d", pages, entries)) }}
			err := cl.EachAt(context.Background(), func(raw []byte, pos Position) error {
				seen = append(seen, fmt.Sprintf("%d.%d", pos.Page, pos.Index))
				if e, err := ParseEntry(raw, Limits{}); err != nil || e.Name != fmt.Sprintf("a/p%de%d", pos.Page, pos.Index) {
					t.Errorf("at %v: %v %v", pos, e, err)
				}
				if len(seen) == c.stopAt {
					return fmt.Errorf("stop at %d", c.stopAt)
				}
				return nil
			})
			if c.err == "" && err != nil || c.err != "" && (err == nil || !regexp.MustCompile(c.err).MatchString(err.Error())) {
				t.Errorf("error %v, want %s", err, c.err)
			}
			if got := strings.Join(seen, " "); got != c.seen {
				t.Errorf("positions %s, want %s", got, c.seen)
			}
			if got := strings.Join(prog, " "); got != c.prog {
				t.Errorf("progress %s, want %s", got, c.prog)
			}
		})
	}
}

// TestClientListingTimeText: a listing over its time budget says so, with
// the budget and the pages read (the first page's, or none on a machine
// too loaded to answer it within the budget); a listing the caller cancels returns the
// caller's cancellation, not the budget's.
func TestClientListingTimeText(t *testing.T) {
	t.Parallel()
	// serve answers the first page and holds the second until the request
	// ends; asked receives each request's cursor.
	serve := func() (*Client, chan string) {
		asked := make(chan string, 10)
		srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
			cur := r.URL.Query().Get("cursor")
			asked <- cur
			if cur == "" {
				fmt.Fprint(w, listing3("")[0])
				return
			}
			<-r.Context().Done()
		})
		return &Client{Base: srv.URL, HTTPClient: srv.Client()}, asked
	}

	cl, _ := serve()
	cl.Limits.ListingTimeout = 500 * time.Millisecond
	err := cl.Each(context.Background(), func([]byte) error { return nil })
	if !errors.Is(err, ErrFetch) || !errors.Is(err, errListingTime) ||
		!regexp.MustCompile(`^reading the registry: the listing's time budget is spent: more than 500ms after [01] pages$`).MatchString(err.Error()) {
		t.Errorf("over the budget: %v", err)
	}

	cl, asked := serve()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for cur := range asked {
			if cur != "" { // the second page asked: the caller gives up
				cancel()
				return
			}
		}
	}()
	err = cl.Each(ctx, func([]byte) error { return nil })
	if !errors.Is(err, context.Canceled) || errors.Is(err, errListingTime) || err != nil && strings.Contains(err.Error(), "budget") {
		t.Errorf("cancelled by the caller: %v", err)
	}
}

// TestParsePagePrefixes: every prefix of a valid page (cut anywhere, a
// hostile registry's answer) is refused as a page, without a panic; the
// whole page reads.
func TestParsePagePrefixes(t *testing.T) {
	t.Parallel()
	page := []byte(`{"servers": [{"server":` + serverJSON("a/b", "1", "") + `}, {}],` +
		` "metadata": {"nextCursor": "c\u0031", "count": 2}}`)
	for i := range len(page) {
		if entries, next, err := ParsePage(page[:i], Limits{}); !errors.Is(err, ErrPage) || entries != nil || next != "" {
			t.Errorf("%q: %d entries, next %q, error %v; want ErrPage", page[:i], len(entries), next, err)
		}
	}
	if entries, next, err := ParsePage(page, Limits{}); len(entries) != 2 || next != "c1" || err != nil {
		t.Errorf("whole: %d entries, next %q, error %v", len(entries), next, err)
	}
}

// TestReadDumpErrorText: a file's refusal says what the reader found.
func TestReadDumpErrorText(t *testing.T) {
	t.Parallel()
	e := serverJSON("a/b", "1", "")
	for _, c := range []struct{ name, in, want string }{
		{"a stray ]", "]", "invalid registry page: invalid character ']' looking for beginning of value"},
		{"a stray } after an entry", e + "\n}", "invalid registry page: invalid character '}' looking for beginning of value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ReadDump(strings.NewReader(c.in), Limits{}, func([]byte) error { return nil })
			if !errors.Is(err, ErrPage) || err.Error() != c.want {
				t.Errorf("error %v, want %s", err, c.want)
			}
		})
	}
}

// TestClientVersionBound: Version reads an answer of up to twice
// MaxEntryBytes (white space around an entry included), and refuses a
// longer one before parsing it; an answer for another name or version is
// refused.
func TestClientVersionBound(t *testing.T) {
	t.Parallel()
	const bound = 4096
	entry := `{"server":` + serverJSON("a/b", "1", "") + `}`
	for _, c := range []struct {
		name, body string
		err        string // "" when it reads
	}{
		{"the most bytes", entry + strings.Repeat(" ", 2*bound-len(entry)), ""},
		{"one byte too many", entry + strings.Repeat(" ", 2*bound+1-len(entry)), "larger than 8192 bytes"},
		{"another version", `{"server":` + serverJSON("a/b", "2", "") + `}`, `asked for "a/b" "1", the registry answered "a/b" "2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.EscapedPath() != "/v0.1/servers/a%2Fb/versions/1" {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, c.body)
			})
			cl := Client{Base: srv.URL, HTTPClient: srv.Client(), Limits: Limits{MaxEntryBytes: bound}}
			e, err := cl.Version(context.Background(), "a/b", "1")
			if c.err == "" && (err != nil || e == nil || e.Name != "a/b") || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("entry %v, error %v; want %q", e, err, c.err)
			}
		})
	}
}
