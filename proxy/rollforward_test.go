package proxy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/verify"
)

func toolNamesOf(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestSignedFirstUseAndRollForward: with no lock, a verified bundle writes
// it (signed first use); a changed server whose bundle, signed by the same
// publisher, covers the new definitions rolls it forward and the session
// goes on; a bundle by another key, or that does not cover the server,
// blocks.
func TestSignedFirstUseAndRollForward(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	bundle := filepath.Join(dir, "server.sigstore.json")
	honest := snapshotOf(t, exampleArgv(t, fixtures.ModeHonest))
	rugpull := snapshotOf(t, exampleArgv(t, fixtures.ModeRugPull))
	alice, mallory := publisher.New(t), publisher.New(t)

	// Signed first use.
	alice.Sign(t, honest, bundle)
	s := startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle)}), exampleArgv(t, fixtures.ModeHonest), nil)
	cs, err := s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("signed first use: %v", err)
	}
	if got := toolNamesOf(t, ctx, cs); !slices.Equal(got, fixtures.HonestToolNames()) {
		t.Errorf("tools %v", got)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	first, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	aliceID, _ := verify.KeyID(alice.Key.Public())
	if first.Approval.Method != verify.MethodKey || first.Approval.Identity != aliceID || first.Approval.BundleDigest == "" {
		t.Fatalf("first approval %+v", first.Approval)
	}

	// An update by another key, verified under its own policy: the lock
	// names alice, so it blocks; under alice's policy it does not verify.
	mallory.Sign(t, rugpull, bundle)
	for name, v := range map[string]*verify.Verifier{"mallory's policy": mallory.Verifier, "alice's policy": alice.Verifier} {
		t.Run(name, func(t *testing.T) {
			s := startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(v, bundle)}), exampleArgv(t, fixtures.ModeRugPull), nil)
			if _, err := s.connect(ctx, "", nil); !isBlocked(err) {
				t.Fatalf("connect: %v, want the block error", err)
			}
			if b := asBlocked(s.wait()); b == nil || !b.Drift() {
				t.Fatalf("Run: %v, want a drift block", b)
			}
			if l, err := pin.Read(lock); err != nil || l.LockDigest != first.LockDigest {
				t.Errorf("the lock changed: %v", err)
			}
		})
	}

	// A bundle by alice over the old definitions does not cover the new.
	alice.Sign(t, honest, bundle)
	s = startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle)}), exampleArgv(t, fixtures.ModeRugPull), nil)
	if _, err := s.connect(ctx, "", nil); !isBlocked(err) {
		t.Fatalf("stale bundle: connect: %v, want the block error", err)
	}
	s.wait()
	if !strings.Contains(s.stderr.String(), "does not approve") {
		t.Errorf("the report does not say the bundle does not approve the change:\n%s", s.stderr.String())
	}

	// Alice signs the new definitions: the lock rolls forward.
	alice.Sign(t, rugpull, bundle)
	s = startProxy(t, lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle)}), exampleArgv(t, fixtures.ModeRugPull), nil)
	cs, err = s.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("signed update: %v", err)
	}
	if got := toolNamesOf(t, ctx, cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
		t.Errorf("tools %v", got)
	}
	cs.Close()
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	next, err := pin.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := next.Lookup(digest.KindTool, "run_command"); !ok || next.Approval.Identity != aliceID || next.Approval.BundleDigest == first.Approval.BundleDigest {
		t.Errorf("the lock was not rolled forward: %+v", next.Approval)
	}
}

// TestRollForwardMidSession: the server changes during a session and its
// bundle covers the change: the proxy lists again, rolls the lock forward,
// forwards the list_changed notification, and the session goes on.
func TestRollForwardMidSession(t *testing.T) {
	t.Parallel()
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx := testContext(t)
			dir := t.TempDir()
			lock := filepath.Join(dir, "mcp.lock")
			bundle := filepath.Join(dir, "server.sigstore.json")
			alice := publisher.New(t)
			alice.Sign(t, snapshotOf(t, exampleArgv(t, fixtures.ModeHonest)), bundle)
			policy := lockPolicy(t, lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle)})
			s := startProxy(t, policy, exampleArgv(t, fixtures.ModeListChanged, g.serverArgs...), nil)
			changed := make(chan struct{}, 1)
			cs, err := s.connect(ctx, "", &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			// The publisher releases the change, then the server makes it.
			alice.Sign(t, snapshotOf(t, exampleArgv(t, fixtures.ModeRugPull, g.serverArgs...)), bundle)
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "x"}}); err != nil {
				t.Fatalf("call: %v", err)
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("the list_changed notification never came")
			}
			if got := toolNamesOf(t, ctx, cs); !slices.Equal(got, fixtures.RugPullToolNames()) {
				t.Errorf("tools after the update %v", got)
			}
			cs.Close()
			if err := s.wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if _, ok := policy.Lock().Lookup(digest.KindTool, "run_command"); !ok {
				t.Errorf("the lock in force was not rolled forward")
			}
		})
	}
}

// TestConcurrentProxiesOneLock: proxies started together on one lock, for a
// first use and then for a signed update, all let their sessions through,
// and the lock is whole and approves what they served.
func TestConcurrentProxiesOneLock(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	lock := filepath.Join(dir, "mcp.lock")
	bundle := filepath.Join(dir, "server.sigstore.json")
	alice := publisher.New(t)
	const n = 6
	for _, step := range []struct {
		mode  string
		tools []string
	}{{fixtures.ModeHonest, fixtures.HonestToolNames()}, {fixtures.ModeRugPull, fixtures.RugPullToolNames()}} {
		alice.Sign(t, snapshotOf(t, exampleArgv(t, step.mode)), bundle)
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			go func() {
				errs <- func() error {
					p, err := NewLockPolicy(lock, LockOptions{Verify: pinbundle.Verifier(alice.Verifier, bundle)})
					if err != nil {
						return err
					}
					s := startProxy(t, p, exampleArgv(t, step.mode), nil)
					cs, err := s.connect(ctx, "", nil)
					if err != nil {
						return err
					}
					res, err := cs.ListTools(ctx, nil)
					if err != nil {
						return err
					}
					if len(res.Tools) != len(step.tools) {
						t.Errorf("%d tools", len(res.Tools))
					}
					cs.Close()
					return s.wait()
				}()
			}()
		}
		for i := 0; i < n; i++ {
			if err := <-errs; err != nil {
				t.Errorf("%s: a proxy failed: %v", step.mode, err)
			}
		}
		l, err := pin.Read(lock)
		if err != nil {
			t.Fatalf("%s: the lock: %v", step.mode, err)
		}
		if r := l.Check(snapshotOf(t, exampleArgv(t, step.mode))); r.Errors() != 0 {
			t.Errorf("%s: the lock does not approve the server: %d findings", step.mode, r.Errors())
		}
	}
}

// TestListResultCheckedAgain: a list result the policy refuses is not
// refused yet: the proxy lists the whole server again and judges that, and
// only an approved update (a signed roll-forward) that then also approves
// the list result lets it through (docs/PROXY.md, "Checks"). The server
// answers the proxy's own listing honestly and the client's with the
// rug-pull tools; the policy is scripted by call: the start-up listing,
// the client's list result, the listing again, the list result again.
func TestListResultCheckedAgain(t *testing.T) {
	t.Parallel()
	allow := &Decision{Allow: true, Summary: "start-up"}
	page := &Decision{Summary: "the page", Findings: []string{"pin-tool-added tool/run_command"}}
	for _, tc := range []struct {
		name  string
		again []*Decision // the listing again, the list result again
		err   error       // of the listing again
		// want: the refusal that blocks, by its summary; "": none, the
		// client receives the new tools.
		want, wantErr string
	}{
		{name: "an update that approves the list result",
			again: []*Decision{{Allow: true, Updated: true, Summary: "updated"}, {Allow: true, Summary: "the page again"}}},
		{name: "an update that does not approve the list result",
			again: []*Decision{{Allow: true, Updated: true, Summary: "updated"}, {Summary: "the page again"}}, want: "the page again"},
		{name: "the listing again approved without an update",
			again: []*Decision{{Allow: true, Summary: "no update"}}, want: "the page"},
		{name: "the listing again refused",
			again: []*Decision{{Summary: "refused again"}}, want: "the page"},
		{name: "the listing again cannot be checked",
			err: errors.New("no verdict"), want: "the page", wantErr: "checking the server's listing again before the refusal failed: no verdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			var mu sync.Mutex
			calls := 0
			policy := PolicyFunc(func(context.Context, *digest.Snapshot) (*Decision, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				switch n := calls - 3; {
				case calls == 1:
					return allow, nil
				case calls == 2:
					return page, nil
				case n == 0 && tc.err != nil:
					return nil, tc.err
				case n < len(tc.again):
					return tc.again[n], nil
				}
				t.Errorf("the policy called %d times", calls)
				return &Decision{Summary: "too many calls"}, nil
			})
			s := startProxy(t, policy, exampleArgv(t, fixtures.ModeHonestProbe), nil)
			cs, err := s.connect(ctx, "", nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			res, err := cs.ListTools(ctx, nil)
			cs.Close()
			b := asBlocked(s.wait())
			if tc.want == "" {
				if err != nil || len(res.Tools) != len(fixtures.RugPullToolNames()) || b != nil {
					t.Fatalf("tools/list: %v; Run: %v; want the update's tools", err, b)
				}
				return
			}
			if !isBlocked(err) || b == nil || b.Decision == nil || b.Decision.Summary != tc.want {
				t.Fatalf("tools/list: %v; Run: %v; want the block of %q", err, b, tc.want)
			}
			if got := fmt.Sprint(b.Err); (tc.wantErr == "") != (b.Err == nil) || !strings.Contains(got, tc.wantErr) {
				t.Errorf("the block's error %q, want %q", got, tc.wantErr)
			}
		})
	}
}
