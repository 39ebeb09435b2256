package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// TestReadableURIs checks which resources/read URIs the approved set lets
// reach the server: a pinned resource by its exact uri, and a URI an
// approved template matches whole, unless a dot-segment in it (in any
// spelling) would make the server resolve it outside what the template
// matches: WHATWG URL parsing (the TypeScript SDK's server reads every URI
// with new URL, which removes them, then looks up its static resources
// first) and a handler that decodes a variable and joins it to a path both
// do.
func TestReadableURIs(t *testing.T) {
	t.Parallel()
	s := &digest.Snapshot{
		ResourceTemplates: []json.RawMessage{
			json.RawMessage(`{"uriTemplate":"file:///notes/{+path}","name":"notes"}`),
			json.RawMessage(`{"uriTemplate":"notes://{id}","name":"note"}`),
		},
		Resources: []json.RawMessage{json.RawMessage(`{"uri":"file:///pinned/../odd.txt","name":"odd"}`)},
	}
	a := newApprovedSet(s)
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"file:///notes/a.md", true},
		{"file:///notes/sub/a.md", true},
		{"file:///notes/a..md", true},
		{"file:///notes/.hidden", true},
		{"notes://42", true},
		{"notes://a.b", true},
		// A pinned resource is its exact uri, dot-segments and all.
		{"file:///pinned/../odd.txt", true},
		{"file:///notes/../secret.txt", false},
		{"file:///notes/../../etc/passwd", false},
		{"file:///notes/./a.md", false},
		{"file:///notes/sub/..", false},
		{"file:///notes/%2e%2e/secret.txt", false},
		{"file:///notes/%2E%2e/secret.txt", false},
		{"file:///notes/.%2E/secret.txt", false},
		{"file:///notes/..?x", false},
		{"file:///notes/..#x", false},
		{"file:///notes/a/..%2F..%2Fsecret.txt", false},
		{"file:///notes/..%5csecret.txt", false},
		{"notes://..", false},
		{"notes://%2e%2e%2Fsecret", false},
		{"file:///etc/passwd", false},
	} {
		if got := a.readable(tc.uri); got != tc.want {
			t.Errorf("readable(%q) = %v, want %v", tc.uri, got, tc.want)
		}
	}
}
