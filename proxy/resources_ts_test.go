package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

// TestResourceReadTypeScriptServer reads through the proxy from a server on
// the official TypeScript SDK (testdata/npm/tsresourceserver.mjs) with a
// static resource file:///secret.txt and a template file:///notes/{+path}.
// The SDK's server reads every uri with new URL, which removes
// dot-segments, and looks up its static resources first: under pass,
// file:///notes/../secret.txt, which the template matches as text, serves
// the static resource. Under hide, which hides that resource, the proxy
// refuses the read; under pin too (the resource is pinned, and readable by
// its own uri: only a template-matched read with a dot-segment is refused).
func TestResourceReadTypeScriptServer(t *testing.T) {
	t.Parallel()
	node := fixtures.Node(t)
	argv := []string{node, filepath.Join(fixtures.NPMDir(t), "tsresourceserver.mjs")}
	if _, err := os.Stat(filepath.Join(fixtures.NPMDir(t), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		fixtures.MissingE2E(t, "the TypeScript SDK is not installed (%v)", err)
	}
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		readNote    = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///notes/a.md"}}`
		readDots    = `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///notes/../secret.txt"}}`
		readEnc     = `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///notes/%2e%2E/secret.txt"}}`
	)
	for _, tc := range []struct {
		mode   ResourceMode
		secret bool // the dot-segment reads reach the secret
	}{
		{ResourcesPass, true},
		{ResourcesHide, false},
		{ResourcesPin, false},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			lock := writeTOFULockOf(t, snapshotWith(t, argv, source.Options{Resources: tc.mode == ResourcesPin}))
			s := startProxy(t, lockPolicy(t, lock, LockOptions{}), argv, func(o *Options) {
				o.Resources = tc.mode
				o.CheckTimeout = 20 * time.Second
			})
			p := newRawPeer(t, s.out, s.in)
			p.send(initialize)
			if m := decode(t, p.next()); m.Error != nil {
				t.Fatalf("initialize: %+v", m.Error)
			}
			p.send(initialized)
			p.send(readNote)
			if m := decode(t, p.next()); m.Error != nil || !strings.Contains(string(m.Result), "note /notes/a.md") {
				t.Fatalf("%s: read of a note: %s %+v", tc.mode, m.Result, m.Error)
			}
			for _, read := range []string{readDots, readEnc} {
				p.send(read)
				line := p.next()
				m := decode(t, line)
				got := strings.Contains(string(line), "SECRET")
				if got != tc.secret {
					t.Errorf("%s: %s answered %s", tc.mode, read, line)
				}
				if !tc.secret && (m.Error == nil || m.Error.Code != codeResourceNotFound) {
					t.Errorf("%s: %s answered %s, want error %d", tc.mode, read, line, codeResourceNotFound)
				}
			}
			if err := s.wait(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}
