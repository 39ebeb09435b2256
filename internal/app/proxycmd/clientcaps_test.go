package proxycmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/source"
)

// TestClientCapabilitiesNotice: a session from a client that announces
// other capabilities than the lock records, and is offered fewer
// definitions, is relayed; stderr says so, the capability finding first.
func TestClientCapabilitiesNotice(t *testing.T) {
	server := []string{fixtures.BuildExampleServer(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := source.Load(ctx, source.Spec{Command: server}, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As if the server offered one more tool to clients with roots.
	snap.Tools = append(snap.Tools, json.RawMessage(`{"name":"get-roots-list","description":"Lists the client's roots.","inputSchema":{"type":"object"}}`))
	l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(t.TempDir(), "mcp.lock")
	if err := l.Write(ctx, lock); err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr fixtures.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, &Config{Lock: lock, Command: server, ShutdownGrace: time.Second}, nil, nil, inR, outW, &stderr)
		outW.Close()
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize answer %q (%v)\n%s", line, err, stderr.String())
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	out := stderr.String()
	i := strings.Index(out, pin.RuleClientCapabilitiesDiffer)
	j := strings.Index(out, pin.RuleToolAbsentForClient+`  tool "get-roots-list"`)
	if i < 0 || j < i || !strings.Contains(out, "for this client's capabilities, which differ from the lock's") {
		t.Fatalf("stderr does not report the capability difference, then the absent tool:\n%s", out)
	}
}
