package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
)

// gateFixture is an entry "notes" of signer a whose policy names the
// bundle file notes.sigstore.json (a's bundle of served()), with extra
// members in its defaults.
func gateFixture(t *testing.T, defaults string) (*policy.Gate, string, []byte) {
	t.Helper()
	dir := t.TempDir()
	a := newSigner(t, dir, "a")
	bundle := a.sign(t, served())
	if err := os.WriteFile(filepath.Join(dir, "notes.sigstore.json"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	r := entry(t, dir, 1, fmt.Sprintf(`,"defaults":{"bundle":"notes.sigstore.json"%s}`, defaults), a)
	return &policy.Gate{Decider: policy.NewDecider(policy.DeciderOptions{}), Policy: r}, dir, bundle
}

func TestGateDecide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other := served()
	other.Server.Version = "1.3.0"
	other.Tools[0] = []byte(`{"name":"search_notes","description":"Search all the notes.","inputSchema":{"type":"object"}}`)
	tests := []struct {
		name      string
		bundles   []string // "" for the entry's bundle
		snap      *digest.Snapshot
		loadErr   error
		wantErr   string // an input error
		wantFail  bool   // Served.Err
		wantHints bool   // the Hint saw the error
	}{
		{name: "holds", snap: served()},
		{name: "other definitions", snap: other, wantFail: true},
		{name: "unreadable bundle", bundles: []string{"missing.sigstore.json"}, snap: served(), wantErr: "missing.sigstore.json", wantHints: true},
		{name: "unreadable server", loadErr: errors.New("server gone"), wantErr: "server gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, dir, _ := gateFixture(t, "")
			for _, b := range tt.bundles {
				g.Bundles = append(g.Bundles, filepath.Join(dir, b))
			}
			hinted := false
			g.Hint = func(err error) error { hinted = true; return err }
			sv, err := g.Decide(ctx, func(context.Context) (*digest.Snapshot, error) { return tt.snap, tt.loadErr })
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || hinted != tt.wantHints {
					t.Fatalf("err %v (hinted %v), want %q (hinted %v)", err, hinted, tt.wantErr, tt.wantHints)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if (sv.Err != nil) != tt.wantFail || sv.Snapshot != tt.snap {
				t.Fatalf("Served.Err %v, want a failure %v", sv.Err, tt.wantFail)
			}
			if !tt.wantFail && sv.Decision.Approval().Method != evidence.MethodKey {
				t.Fatalf("approval %+v", sv.Decision.Approval())
			}
		})
	}
}

func TestGateLocations(t *testing.T) {
	t.Parallel()
	g, dir, _ := gateFixture(t, "")
	locs, err := g.Locations()
	if err != nil || len(locs) != 1 || locs[0].File != filepath.Join(dir, "notes.sigstore.json") {
		t.Fatalf("the entry's: %+v, %v", locs, err)
	}
	g.Bundles = []string{"x.json", "https://example.com/y.json"}
	if locs, _ = g.Locations(); len(locs) != 2 || locs[0].File != "x.json" || locs[1].URL == "" {
		t.Fatalf("the host's: %+v", locs)
	}
	g.Bundles = nil
	g.Policy.Bundle = policy.Bundle{}
	if _, err := g.Locations(); !errors.Is(err, policy.ErrNoBundle) || !strings.Contains(err.Error(), `"notes"`) {
		t.Fatalf("none: %v", err)
	}
	if f, err := g.VerifyFunc(context.Background()); f != nil || err != nil {
		t.Fatalf("VerifyFunc with no bundle: %v", err)
	}
}

func TestGateVerifyFunc(t *testing.T) {
	t.Parallel()
	g, _, _ := gateFixture(t, "")
	vf, err := g.VerifyFunc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := vf(context.Background(), served())
	if err != nil || v.Approval.Method != evidence.MethodKey || v.Server.Name != "notes" {
		t.Fatalf("%+v, %v", v, err)
	}
}

func TestGateProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	signedLock := func(t *testing.T, g *policy.Gate, bundle []byte) *pin.Lock {
		dec, err := g.Decider.Decide(ctx, g.Policy, [][]byte{bundle}, served())
		if err != nil {
			t.Fatal(err)
		}
		l, err := pin.NewLock(served(), dec.Approval())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// proven: a signed lock that carries its bundle (its proof).
	proven := func(t *testing.T, g *policy.Gate, bundle []byte) *pin.Lock {
		l := signedLock(t, g, bundle)
		if err := l.SetProof([][]byte{bundle}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	tofu := func(*testing.T, *policy.Gate, []byte) *pin.Lock {
		l, err := pin.NewLock(served(), pin.Approval{Method: pin.MethodTOFU})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name      string
		defaults  string
		lock      func(*testing.T, *policy.Gate, []byte) *pin.Lock // nil: none
		wantIs    error
		wantRule  string
		wantTOFU  bool
		wantAdmit policy.Admission
		// unlisted: the entry lists no identity; wantManual: manual
		// roll-forward.
		unlisted, wantManual bool
		// unnamed: the entry names no bundle.
		unnamed bool
	}{
		{name: "first use", wantAdmit: policy.Admission{}},
		{name: "no identity, first use on trust", defaults: `,"unsigned":"tofu"`, unlisted: true, wantTOFU: true, wantAdmit: policy.Admission{AllowTOFU: true, AllowManual: true}},
		{name: "no identity, unsigned refused", unlisted: true},
		{name: "proven lock", lock: signedLock, wantAdmit: policy.Admission{LockDigest: "set"}},
		{name: "a lock that carries its proof, no bundle named", lock: proven, unnamed: true, wantAdmit: policy.Admission{LockDigest: "set"}},
		{name: "a lock without its proof, no bundle named", lock: signedLock, unnamed: true, wantIs: policy.ErrNoLockBundle},
		{name: "tofu lock refused", lock: tofu, wantRule: policy.RuleLockMethodRefused},
		{name: "manual allowed", defaults: `,"unsigned":"tofu","rollForward":"manual"`, wantAdmit: policy.Admission{AllowTOFU: true, AllowManual: true}, wantManual: true},
		{name: "server's bundle", defaults: `,"bundle":"server"`, lock: signedLock, wantAdmit: policy.Admission{LockDigest: "set", Reverify: true}},
		{name: "audit without a log", defaults: `,"mode":"audit"`, wantIs: policy.ErrAuditNoLog},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _, bundle := gateFixture(t, strings.Replace(tt.defaults, `,"bundle":"server"`, "", 1))
			if strings.Contains(tt.defaults, `"bundle":"server"`) {
				g.Policy.Bundle = policy.Bundle{Kind: policy.BundleServer}
			}
			if tt.unnamed {
				g.Policy.Bundle = policy.Bundle{}
			}
			if tt.unlisted {
				g.Policy.Identities = nil
			}
			if tt.lock != nil {
				if err := tt.lock(t, g, bundle).Write(ctx, g.Policy.Lock); err != nil {
					t.Fatal(err)
				}
			}
			st, err := g.Proxy(ctx)
			var out *policy.OutsideError
			switch {
			case tt.wantIs != nil || tt.wantRule != "":
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) || tt.wantRule != "" && (!errors.As(err, &out) || out.Rule != tt.wantRule) {
					t.Fatalf("err %v, want %v %s", err, tt.wantIs, tt.wantRule)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if st.Lock != g.Policy.Lock || st.TOFU != tt.wantTOFU || st.ManualRollForward != tt.wantManual || st.Mode != policy.ModeBlock {
				t.Fatalf("%+v", st)
			}
			if (st.Admission.LockDigest != "") != (tt.wantAdmit.LockDigest != "") {
				t.Fatalf("lock digest %q", st.Admission.LockDigest)
			}
			st.Admission.LockDigest, tt.wantAdmit.LockDigest = "", ""
			if st.Admission != tt.wantAdmit {
				t.Fatalf("admission %+v, want %+v", st.Admission, tt.wantAdmit)
			}
		})
	}
}

// A host decides through a Gate on what a server serves, pins it, and
// later asks how a proxy under the entry starts: the lock it wrote stands
// (its bundle re-verified), so the proxy enforces that very lock.
func ExampleGate() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mcpsign-gate-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	snapshotFile, err := publishNotes(dir)
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	f, err := policy.Read(filepath.Join(dir, "policy.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := f.Resolve("notes", policy.ResolveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := &policy.Gate{Decider: policy.NewDecider(policy.DeciderOptions{Offline: true}), Policy: r}

	sv, err := g.Decide(ctx, func(ctx context.Context) (*digest.Snapshot, error) {
		return source.Load(ctx, source.Spec{File: snapshotFile}, source.Options{})
	})
	if err != nil {
		fmt.Println("input:", err)
		return
	}
	if sv.Err != nil {
		fmt.Println("refused:", sv.Err)
		return
	}
	lock, err := pin.NewLock(sv.Snapshot, sv.Decision.Approval())
	if err == nil {
		err = auditevent.WriteLock(ctx, r.Lock, lock, false, r.Audit)
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	st, err := g.Proxy(ctx)
	if err != nil {
		fmt.Println("the proxy does not start:", err)
		return
	}
	fmt.Println("mode", st.Mode, "lock", filepath.Base(st.Lock), "enforced:", st.Admission.LockDigest == lock.LockDigest)
	// Output: mode block lock notes.mcpsign.lock enforced: true
}

func TestGateCheckPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drifted := served()
	drifted.Tools[0] = []byte(`{"name":"search_notes","description":"Search all the notes.","inputSchema":{"type":"object"}}`)
	tests := []struct {
		name        string
		server      bool // the entry's bundle is the server's
		tofu        bool // a tofu lock, outside the default policy
		snap        *digest.Snapshot
		wantLoaded  bool
		wantOutside bool
		wantDrift   bool
		wantRule    string
	}{
		{name: "stands", snap: served(), wantLoaded: true},
		{name: "stands, drifted", snap: drifted, wantLoaded: true, wantDrift: true},
		{name: "outside at start", tofu: true, snap: served(), wantOutside: true, wantRule: policy.RuleLockMethodRefused},
		{name: "server's bundle proves it", server: true, snap: served(), wantLoaded: true},
		{name: "server's bundle, drifted", server: true, snap: drifted, wantLoaded: true, wantOutside: true, wantDrift: true, wantRule: policy.RuleLockUnproven},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, dir, bundle := gateFixture(t, "")
			approval := pin.Approval{Method: pin.MethodTOFU}
			if !tt.tofu {
				dec, err := g.Decider.Decide(ctx, g.Policy, [][]byte{bundle}, served())
				if err != nil {
					t.Fatal(err)
				}
				approval = dec.Approval()
			}
			l, err := pin.NewLock(served(), approval)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetCapabilities(capability.Overrides{"search_notes": {capability.Read}}); err != nil {
				t.Fatal(err)
			}
			dropped := false
			g.OverridesDropped = func() { dropped = true }
			if tt.server {
				g.Policy.Bundle = policy.Bundle{Kind: policy.BundleServer}
				tt.snap.Advertised = json.RawMessage(`{"dev.mcpsign/attestation":{"bundle":` + string(bundle) + `}}`)
			}
			loaded := false
			p, err := g.CheckPinned(ctx, l, filepath.Join(dir, "x.lock"), func(context.Context) (*digest.Snapshot, error) {
				loaded = true
				return tt.snap, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rules := map[string]bool{}
			for _, f := range p.Report.Findings {
				rules[f.Rule] = true
			}
			if loaded != tt.wantLoaded || p.Outside != tt.wantOutside || p.Report.Failed(pin.FailOnDrift) != (tt.wantDrift || tt.wantOutside) ||
				tt.wantRule != "" && !rules[tt.wantRule] {
				t.Fatalf("loaded %v, outside %v, findings %v", loaded, p.Outside, rules)
			}
			// A lock proven by its bundle does not keep its overrides.
			if dropped != !p.Outside {
				t.Fatalf("overrides dropped %v, outside %v", dropped, p.Outside)
			}
		})
	}
}
