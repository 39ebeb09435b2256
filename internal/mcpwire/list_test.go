package mcpwire

import (
	"context"
	"encoding/json"
	"errors"
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
