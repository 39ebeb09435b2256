package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// TestRedteamChainsBounded: a server can make the relay keep a chain for
// every answer that carries a definition list and a nextCursor, whatever
// request it answers (a tools/call, a ping). Each chain keeps its cursor
// (up to MaxMessageBytes) and the page's items (which point into the whole
// line); 64 per kind are kept. What the relay keeps for them must stay
// within MaxHeldBytes, as everything else it keeps for a peer does.
func TestRedteamChainsBounded(t *testing.T) {
	t.Parallel()
	const maxHeld = 1 << 20
	instr := "x"
	snap := &digest.Snapshot{Kind: digest.SnapshotKind, SnapshotVersion: digest.SnapshotVersion,
		Server: digest.ServerInfo{Name: "s", Version: "1"}, ProtocolVersion: "2025-11-25", Instructions: &instr,
		Tools:             []json.RawMessage{json.RawMessage(`{"name":"greet","inputSchema":{"type":"object"}}`)},
		Prompts:           []json.RawMessage{},
		ResourceTemplates: []json.RawMessage{}}
	r := &relay{
		o:        &Options{MaxHeldBytes: maxHeld, MaxMessageBytes: 16 << 20, Stderr: io.Discard},
		toClient: newOutQueue(io.Discard, 1<<40),
		toServer: newOutQueue(io.Discard, 1<<40),
		chains:   map[digest.Kind]map[string]*chain{},
		checked:  true,
		approved: newApprovedSet(snap),
	}
	pad := strings.Repeat("a", 64<<10)
	for i := range 300 {
		member := []string{"tools", "prompts", "resourceTemplates"}[i%3]
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[],%q:[],"nextCursor":"%s-%d"}}`+"\n", i, member, pad, i)
		env, err := mcpwire.ParseFromServer([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		r.listResult(&inbound{line: []byte(line), env: env}, &pendingReq{id: env.ID, method: "tools/call"})
		r.toClient.flush()
		if r.blocked != nil || r.running != nil {
			t.Fatalf("answer %d: blocked=%v running=%v", i, r.blocked, r.running != nil)
		}
	}
	kept, n := 0, 0
	for _, m := range r.chains {
		for c := range m {
			kept += len(c)
			n++
		}
	}
	t.Logf("%d chains keep %d bytes of cursors", n, kept)
	if kept > maxHeld {
		t.Errorf("the relay keeps %d bytes of cursors for %d chains planted by non-list answers, more than MaxHeldBytes %d", kept, n, maxHeld)
	}
}
