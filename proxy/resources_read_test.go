package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/source"
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

// TestResourceModeForEmptySet: a lock written under pin for a server with no
// static resources records an empty set, and its default stays pin (a
// server that adds one later is caught), while a lock without the member
// defaults to pass.
func TestResourceModeForEmptySet(t *testing.T) {
	t.Parallel()
	snap := &digest.Snapshot{Tools: []json.RawMessage{json.RawMessage(`{"name":"greet","inputSchema":{"type":"object"}}`)}, Prompts: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}}
	for _, tc := range []struct {
		resources []json.RawMessage
		want      ResourceMode
	}{
		{nil, ResourcesPass},
		{[]json.RawMessage{}, ResourcesPin},
	} {
		s := *snap
		s.Resources = tc.resources
		l, err := pin.NewLock(&s, pin.Approval{Method: pin.MethodTOFU})
		if err != nil {
			t.Fatal(err)
		}
		data, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := pin.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ResourceModeFor("", back); err != nil || got != tc.want {
			t.Errorf("resources %v: ResourceModeFor = %q, %v; want %q", tc.resources, got, err, tc.want)
		}
	}
}

// FuzzHasDotSegment checks hasDotSegment against a plain reading of its
// rule: decode %2e, %2f and %5c (any case), split at / \ ? #, and look for
// a segment "." or "..".
func FuzzHasDotSegment(f *testing.F) {
	for _, s := range []string{"", ".", "..", "...", "a/../b", "a/%2E%2e/b", "a/.%2e", "%2e", "%2", "%252e", "a..b", "x/.?y", "x\\..#", "%2f..%5C", "notes://..", "file:///notes/.hidden"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		var b strings.Builder
		for i := 0; i < len(uri); i++ {
			if uri[i] == '%' && i+2 < len(uri) {
				switch strings.ToLower(uri[i+1 : i+3]) {
				case "2e":
					b.WriteByte('.')
					i += 2
					continue
				case "2f":
					b.WriteByte('/')
					i += 2
					continue
				case "5c":
					b.WriteByte('\\')
					i += 2
					continue
				}
			}
			b.WriteByte(uri[i])
		}
		want := false
		for _, seg := range strings.FieldsFunc(b.String(), func(r rune) bool { return strings.ContainsRune(`/\?#`, r) }) {
			if seg == "." || seg == ".." {
				want = true
			}
		}
		if got := hasDotSegment(uri); got != want {
			t.Fatalf("hasDotSegment(%q) = %v, want %v", uri, got, want)
		}
	})
}

// TestReadURIStrict: the uri of resources/read is read as a case-sensitive
// server reads it, or not at all (the read is then refused with -32602):
// a repeated uri, a case variant beside or instead of it (encoding/json
// would take "Uri"), a non-string, an escape that hides invalid UTF-8.
func TestReadURIStrict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		params string
		uri    string
		ok     bool
	}{
		{`{"uri":"notes://1"}`, "notes://1", true},
		{`{"uri":"notes:\/\/1","_meta":{"uri":"x"}}`, "notes://1", true},
		{`{"uri":"notes://1","uri":"file:///etc/passwd"}`, "", false},
		{`{"uri":"notes://1","Uri":"file:///etc/passwd"}`, "", false},
		{`{"Uri":"file:///etc/passwd"}`, "", false},
		{`{"uri":["notes://1"]}`, "", false},
		{`{"uri":"notes://\ud800"}`, "", false},
		{`["notes://1"]`, "", false},
		{``, "", false},
	} {
		uri, ok := readURI([]byte(tc.params))
		if ok != tc.ok || uri != tc.uri {
			t.Errorf("readURI(%s) = %q, %v; want %q, %v", tc.params, uri, ok, tc.uri, tc.ok)
		}
	}
}

// TestResourcesModernFirstRequest: under 2026-07-28 the client's first
// request may be resources/list, without server/discover: the proxy holds
// it, discovers and lists itself, then answers it under hide (the server
// never sees it) or relays the checked answer under pin; the read rule
// holds in that generation too.
func TestResourcesModernFirstRequest(t *testing.T) {
	t.Parallel()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	argv := exampleArgv(t, fixtures.ModeHonest)
	for _, mode := range []ResourceMode{ResourcesHide, ResourcesPin} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			lock := writeTOFULockOf(t, snapshotWith(t, argv, source.Options{Resources: mode == ResourcesPin}))
			s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, func(o *Options) { o.Resources = mode })
			p := newRawPeer(t, s.out, s.in)
			p.send(`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{` + meta + `}}`)
			m := decode(t, p.next())
			if string(m.ID) != "1" || m.Error != nil || !strings.Contains(string(m.Result), `"resources":[]`) {
				t.Fatalf("resources/list: id %s, result %s, error %+v", m.ID, m.Result, m.Error)
			}
			if mode == ResourcesHide && string(m.Result) != emptyResources {
				t.Errorf("hide answered %s, want %s", m.Result, emptyResources)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://%2e%2e",` + meta + `}}`)
			if m := decode(t, p.next()); m.Error == nil || m.Error.Code != codeResourceNotFound {
				t.Errorf("read of a dot-segment: %s %+v", m.Result, m.Error)
			}
			if err := s.wait(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}
