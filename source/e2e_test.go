package source

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// The e2e tests run the official MCP servers pinned in testdata/npm
// (package.json and package-lock.json; install with `npm ci` there). They
// are skipped when testdata/npm/node_modules or node is missing, unless
// MCPSIGN_REQUIRE_E2E=1 (CI), which makes that a failure.

// npmServer is fixtures.NPMServer.
func npmServer(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	return fixtures.NPMServer(t, pkg)
}

// sdkCounts lists a server with a plain go-sdk client session (typed,
// through go-sdk's own pagination) and returns the number of each kind.
func sdkCounts(t *testing.T, transport mcp.Transport) map[digest.Kind]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsign-e2e", Version: "0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("go-sdk client: %v", err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	counts := map[digest.Kind]int{}
	if caps.Tools != nil {
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("go-sdk tools: %v", err)
			}
			counts[digest.KindTool]++
		}
	}
	if caps.Prompts != nil {
		for _, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatalf("go-sdk prompts: %v", err)
			}
			counts[digest.KindPrompt]++
		}
	}
	if caps.Resources != nil {
		for _, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatalf("go-sdk resource templates: %v", err)
			}
			counts[digest.KindResourceTemplate]++
		}
	}
	return counts
}

// checkE2E checks a live snapshot against the go-sdk counts, the
// execution member and the snapshot-file round trip.
func checkE2E(t *testing.T, live *digest.Snapshot, sdk map[digest.Kind]int, minTools int) {
	t.Helper()
	r := digest.Compute(live)
	if err := r.Err(); err != nil {
		t.Errorf("live definitions without a digest: %v", err)
	}
	for _, k := range digest.Kinds {
		if got := len(live.Definitions(k)); got != sdk[k] {
			t.Errorf("%s: mcpsign listed %d, a go-sdk client %d", k, got, sdk[k])
		}
	}
	if len(live.Tools) < minTools {
		t.Errorf("%d tools, want at least %d", len(live.Tools), minTools)
	}
	t.Logf("server %s %s, protocol %s: %d tools, %d prompts, %d resource templates, instructions %v",
		live.Server.Name, live.Server.Version, live.ProtocolVersion, len(live.Tools), len(live.Prompts),
		len(live.ResourceTemplates), live.Instructions != nil)

	// The official servers send "execution", which go-sdk's typed Tool
	// drops: it must be in the captured bytes and in the digest.
	withExecution := 0
	for _, raw := range live.Tools {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		exec, ok := m["execution"]
		if !ok {
			continue
		}
		withExecution++
		before, err := digest.DefinitionDigest(raw)
		if err != nil {
			t.Fatal(err)
		}
		delete(m, "execution")
		stripped, _ := json.Marshal(m)
		after, err := digest.DefinitionDigest(stripped)
		if err != nil {
			t.Fatal(err)
		}
		if before == after {
			t.Errorf("the digest of %s does not cover its execution member %s", m["name"], exec)
		}
	}
	if withExecution == 0 {
		t.Error(`no tool has an "execution" member in the captured bytes`)
	}

	// The digest of the snapshot file equals the live digest.
	file, err := live.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snapshot.json")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseSpec(path, nil)
	if err != nil || spec.File != path {
		t.Fatalf("ParseSpec(%s) = %+v, %v", path, spec, err)
	}
	saved, err := Load(context.Background(), spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := digest.Compute(saved)
	for _, k := range digest.Kinds {
		if r.Sets[k] == "" || s.Sets[k] != r.Sets[k] {
			t.Errorf("%s set digest: live %q, snapshot %q", k, r.Sets[k], s.Sets[k])
		}
	}
	if s.Instructions != r.Instructions || len(s.Definitions) != len(r.Definitions) {
		t.Errorf("instructions %q vs %q, %d vs %d definitions", s.Instructions, r.Instructions, len(s.Definitions), len(r.Definitions))
	}
	for i := range r.Definitions {
		if i < len(s.Definitions) && (s.Definitions[i].Key != r.Definitions[i].Key || s.Definitions[i].Digest != r.Definitions[i].Digest) {
			t.Errorf("definition %d: live %s %s, snapshot %s %s", i, r.Definitions[i].Key, r.Definitions[i].Digest, s.Definitions[i].Key, s.Definitions[i].Digest)
		}
	}
	if saved.ProtocolVersion != live.ProtocolVersion || saved.Server != live.Server || !saved.CapturedAt.Equal(live.CapturedAt) {
		t.Errorf("snapshot envelope changed: %+v / %v vs %+v / %v", saved.Server, saved.CapturedAt, live.Server, live.CapturedAt)
	}
}

// e2eGrace is how long an official server is given to exit after its stdin
// closes, before SIGTERM, by Load and by go-sdk's CommandTransport:
// server-everything does not exit then, and the tests need not wait out the
// defaults (2 s, 5 s) for it.
const e2eGrace = 200 * time.Millisecond

func TestE2EStdio(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pkg      string
		args     func(t *testing.T) []string
		env      func(t *testing.T) []string
		minTools int
	}{
		{pkg: "server-everything", args: func(*testing.T) []string { return []string{"stdio"} }, minTools: 5},
		{
			pkg: "server-memory",
			env: func(t *testing.T) []string {
				return []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}
			},
			minTools: 5,
		},
		{pkg: "server-filesystem", args: func(t *testing.T) []string { return []string{t.TempDir()} }, minTools: 5},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			node, entry := npmServer(t, tt.pkg)
			argv := []string{node, entry}
			if tt.args != nil {
				argv = append(argv, tt.args(t)...)
			}
			var env []string
			if tt.env != nil {
				env = tt.env(t)
			}
			start := time.Now()
			var stderr bytes.Buffer
			// Read under go-sdk's default client profile, to compare with
			// what a go-sdk client lists (the default profile is fuller:
			// TestE2EStreamableHTTP).
			live, err := Load(context.Background(), Spec{Command: argv}, Options{Env: env, Stderr: &stderr, ShutdownGrace: e2eGrace, ClientCapabilities: json.RawMessage(goSDKCapabilities)})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			t.Logf("Load over stdio took %v (shutdown included)", took.Round(time.Millisecond))
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), env...)
			checkE2E(t, live, sdkCounts(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: e2eGrace}), tt.minTools)
		})
	}
}

func TestE2EStreamableHTTP(t *testing.T) {
	t.Parallel()
	node, entry := npmServer(t, "server-everything")
	url := fixtures.StartEverythingHTTP(t, node, entry)
	// The four listings at once (each its own session; one a stdio
	// server): each mostly waits on node, and one after the other they
	// were most of this package's wall time.
	loads := []struct {
		spec Spec
		opts Options
		snap *digest.Snapshot
		err  error
		took time.Duration
	}{
		{spec: Spec{URL: url}, opts: Options{Headers: map[string][]string{"X-Mcpsign-Test": {"e2e"}}, ClientCapabilities: json.RawMessage(goSDKCapabilities)}},
		{spec: Spec{URL: url}, opts: Options{ClientCapabilities: json.RawMessage(`{}`)}},
		{spec: Spec{URL: url}, opts: Options{}},
		{spec: Spec{Command: []string{node, entry, "stdio"}}, opts: Options{ShutdownGrace: e2eGrace}},
	}
	var wg sync.WaitGroup
	for i := range loads {
		wg.Go(func() {
			start := time.Now()
			loads[i].snap, loads[i].err = Load(context.Background(), loads[i].spec, loads[i].opts)
			loads[i].took = time.Since(start)
		})
	}
	wg.Wait()
	for _, l := range loads {
		if l.err != nil {
			t.Fatal(l.err)
		}
	}
	live, bare, full, stdio := loads[0].snap, loads[1].snap, loads[2].snap, loads[3].snap
	t.Logf("Load over Streamable HTTP took %v", loads[0].took.Round(time.Millisecond))
	checkE2E(t, live, sdkCounts(t, &mcp.StreamableClientTransport{Endpoint: url}), 5)

	// server-everything offers get-roots-list only to clients that announce
	// roots (as go-sdk's default client does): the listing depends on the
	// announced capabilities.
	if string(live.ClientCapabilities) != goSDKCapabilities || string(bare.ClientCapabilities) != `{}` {
		t.Errorf("snapshots record client capabilities %s and %s", live.ClientCapabilities, bare.ClientCapabilities)
	}
	if !hasTool(live, "get-roots-list") || hasTool(bare, "get-roots-list") || len(bare.Tools) != len(live.Tools)-1 {
		t.Errorf("get-roots-list: with roots %v (%d tools), without %v (%d tools)",
			hasTool(live, "get-roots-list"), len(live.Tools), hasTool(bare, "get-roots-list"), len(bare.Tools))
	}

	// The default profile is the fullest (docs/SNAPSHOT.md): it lists every
	// tool the server offers any client, a superset of go-sdk's listing,
	// including the ones the server adds for elicitation (form and url),
	// sampling and task-augmented requests.
	if string(full.ClientCapabilities) != DefaultClientCapabilities {
		t.Errorf("default profile recorded as %s", full.ClientCapabilities)
	}
	for _, raw := range live.Tools {
		var tool struct{ Name string }
		if json.Unmarshal(raw, &tool) != nil || !hasTool(full, tool.Name) {
			t.Errorf("tool %s of the go-sdk profile is not listed under the default profile", raw)
		}
	}
	for _, name := range []string{"get-roots-list", "trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request",
		"trigger-elicitation-request-async", "trigger-sampling-request-async"} {
		if !hasTool(full, name) {
			t.Errorf("the default profile does not list %s (%d tools)", name, len(full.Tools))
		}
	}

	// The same server over stdio yields the same digests.
	a, b := digest.Compute(full), digest.Compute(stdio)
	for _, k := range digest.Kinds {
		if a.Sets[k] != b.Sets[k] {
			t.Errorf("%s set digest over HTTP %s, over stdio %s", k, a.Sets[k], b.Sets[k])
		}
	}
}

// goSDKCapabilities is what a go-sdk v1.8.0 client announces by default.
const goSDKCapabilities = `{"roots":{"listChanged":true}}`

func hasTool(snap *digest.Snapshot, name string) bool {
	for _, raw := range snap.Tools {
		var tool struct{ Name string }
		if json.Unmarshal(raw, &tool) == nil && tool.Name == name {
			return true
		}
	}
	return false
}
