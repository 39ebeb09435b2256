package mcpwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// pagesCaller answers list requests from a table: method and cursor ("" for
// none) to a result, or method not found.
type pagesCaller struct {
	pages map[string]string
	asked []string
}

func (c *pagesCaller) Call(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(params, &p)
	c.asked = append(c.asked, method+" "+p.Cursor)
	if r, ok := c.pages[method+" "+p.Cursor]; ok {
		return json.RawMessage(r), nil
	}
	return nil, &RPCError{Method: method, Code: CodeMethodNotFound, Message: "method not found"}
}

// TestListAllResources: the static resources are listed, every page, only
// when Limits.Resources asks for them and the server announced resources.
func TestListAllResources(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"tools/list ":               `{"tools":[]}`,
		"resources/templates/list ": `{"resourceTemplates":[]}`,
		"resources/list ":           `{"resources":[{"uri":"file:///a"}],"nextCursor":"2"}`,
		"resources/list 2":          `{"resources":[{"uri":"file:///b"}]}`,
	}
	resourcesCaps := map[string][]byte{"tools": []byte(`{}`), "resources": []byte(`{}`)}
	for _, tc := range []struct {
		name      string
		caps      map[string][]byte
		resources bool
		pages     map[string]string
		want      int // resources listed; -1: not listed (nil)
		err       string
	}{
		{name: "not asked", caps: resourcesCaps, want: -1},
		{name: "asked, two pages", caps: resourcesCaps, resources: true, want: 2},
		{name: "asked, resources not announced", caps: map[string][]byte{"tools": []byte(`{}`)}, resources: true, want: 0},
		{name: "asked, capabilities unknown", resources: true, want: 2},
		{name: "asked, announced but not implemented", caps: resourcesCaps, resources: true,
			pages: map[string]string{"tools/list ": `{"tools":[]}`}, err: "resources/list"},
		{name: "a case variant of resources", caps: resourcesCaps, resources: true,
			pages: map[string]string{"tools/list ": `{"tools":[]}`, "resources/list ": `{"resources":[],"Resources":[{"uri":"x"}]}`}, err: "Resources"},
		{name: "a repeated cursor", caps: resourcesCaps, resources: true,
			pages: map[string]string{"tools/list ": `{"tools":[]}`, "resources/list ": `{"resources":[],"nextCursor":"x"}`, "resources/list x": `{"resources":[],"nextCursor":"x"}`}, err: "repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &pagesCaller{pages: pages}
			if tc.pages != nil {
				c.pages = tc.pages
			}
			snap, err := ListAll(context.Background(), c, &Hello{Caps: tc.caps}, Limits{Resources: tc.resources})
			if tc.err != "" {
				var le *ListError
				if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ListAll: %v, want a *ListError naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want < 0 && snap.Resources != nil:
				t.Errorf("resources listed (%d) without being asked", len(snap.Resources))
			case tc.want >= 0 && (snap.Resources == nil || len(snap.Resources) != tc.want):
				t.Errorf("resources %q, want %d", snap.Resources, tc.want)
			}
			for _, a := range c.asked {
				if strings.HasPrefix(a, "resources/list") && tc.want <= 0 {
					t.Errorf("asked %q", a)
				}
			}
		})
	}
}

func TestListFlagResources(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"a"}],"nextCursor":"c"}}`))
	if err != nil || m.Lists != HasResources || ListFlag(digest.KindResource) != HasResources {
		t.Fatalf("lists %v, %v", m.Lists, err)
	}
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{"resources":[],"resources":[{"uri":"a"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"resources":[],"Resources":[{"uri":"a"}]}}`,
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%s) accepted", in)
		}
	}
}

// endlessCaller answers tools/list with one more page, a new cursor each
// time, and fails after max calls (a listing that does not stop).
type endlessCaller struct{ calls, max int }

func (c *endlessCaller) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	c.calls++
	if c.calls > c.max {
		return nil, errors.New("asked for too many pages")
	}
	return json.RawMessage(fmt.Sprintf(`{"tools":[],"nextCursor":"c%d"}`, c.calls)), nil
}

// TestListAllBounds: a listing stops at Limits.MaxPages pages of a kind,
// naming the page, and at Limits.MaxBytes bytes of results, inclusive.
func TestListAllBounds(t *testing.T) {
	t.Parallel()
	tools := &Hello{Caps: map[string][]byte{"tools": []byte(`{}`)}}
	const page = `{"tools":[{"name":"a"}]}` // 24 bytes
	for _, tc := range []struct {
		name     string
		c        Caller
		lim      Limits
		is       error // nil: listed
		page     int   // of the ListError
		progress []int
	}{
		{name: "pages to the bound", c: &endlessCaller{max: 10}, lim: Limits{MaxPages: 3}, is: ErrTooManyPages, page: 3, progress: []int{1, 2, 3}},
		{name: "one page allowed", c: &endlessCaller{max: 10}, lim: Limits{MaxPages: 1}, is: ErrTooManyPages, page: 1, progress: []int{1}},
		// An empty nextCursor on the first page names the page just read.
		{name: "empty cursor first", c: &pagesCaller{pages: map[string]string{"tools/list ": `{"tools":[],"nextCursor":""}`}}, is: ErrCursorLoop, page: 1, progress: []int{1}},
		{name: "bytes to the bound", c: &pagesCaller{pages: map[string]string{"tools/list ": page}}, lim: Limits{MaxBytes: int64(len(page))}, progress: []int{1}},
		{name: "bytes over the bound", c: &pagesCaller{pages: map[string]string{"tools/list ": page}}, lim: Limits{MaxBytes: int64(len(page)) - 1}, is: ErrListingTooLarge, page: 1, progress: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress []int
			tc.lim.Progress = func(method string, page int) {
				if method == "tools/list" {
					progress = append(progress, page)
				}
			}
			snap, err := ListAll(context.Background(), tc.c, tools, tc.lim)
			if fmt.Sprint(progress) != fmt.Sprint(tc.progress) {
				t.Errorf("pages asked %v, want %v", progress, tc.progress)
			}
			if tc.is == nil {
				if err != nil || len(snap.Tools) != 1 {
					t.Fatalf("ListAll = %v; want one tool", err)
				}
				return
			}
			var le *ListError
			if !errors.Is(err, tc.is) || !errors.As(err, &le) || le.Page != tc.page {
				t.Fatalf("ListAll = %v; want a *ListError of page %d wrapping %v", err, tc.page, tc.is)
			}
		})
	}
}
