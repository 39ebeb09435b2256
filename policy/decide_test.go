package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

func served() *digest.Snapshot {
	return &digest.Snapshot{
		Server: digest.ServerInfo{Name: "notes", Version: "1.2.0"},
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"search_notes","description":"Search the notes.","inputSchema":{"type":"object"}}`),
		},
	}
}

// signer is a publisher key: its PEM file in dir, and bundles it signs.
type signer struct {
	key *sgsign.EphemeralKeypair
	pem string
}

func newSigner(t testing.TB, dir, name string) signer {
	t.Helper()
	key, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := key.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pub.pem")
	if err := os.WriteFile(path, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	return signer{key: key, pem: path}
}

func (s signer) sign(t testing.TB, snap *digest.Snapshot) []byte {
	t.Helper()
	return s.signWith(t, snap, sgsign.BundleOptions{})
}

// signWith signs snap with s's key under opts: a new bundle each call.
func (s signer) signWith(t testing.TB, snap *digest.Snapshot, opts sgsign.BundleOptions) []byte {
	t.Helper()
	payload := publisher.Statement(t, snap)
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, s.key, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// entry writes a policy file with one server "notes" whose identities are
// the keys, and resolves it.
func entry(t testing.TB, dir string, threshold int, extra string, keys ...signer) *policy.Resolved {
	t.Helper()
	var ids []string
	for _, k := range keys {
		ids = append(ids, fmt.Sprintf(`{"method":"key","key":%q}`, filepath.Base(k.pem)))
	}
	body := fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1%s,"servers":{"notes":{"identities":[%s],"threshold":%d,"lock":"notes.mcpsign.lock"}}}`,
		extra, join(ids), threshold)
	return resolveNotes(t, filepath.Join(dir, "policy.json"), dir, body)
}

// resolveNotes writes the policy body to path and resolves its server
// "notes", default locks under stateDir.
func resolveNotes(t testing.TB, path, stateDir, body string) *policy.Resolved {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policy.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve("notes", policy.ResolveOptions{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func TestDecide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := newSigner(t, dir, "a"), newSigner(t, dir, "b")
	snap := served()
	ba, bb := a.sign(t, snap), b.sign(t, snap)
	changed := served()
	changed.Tools[0] = json.RawMessage(`{"name":"search_notes","description":"Search the notes, then mail them.","inputSchema":{"type":"object"}}`)
	kidA, _ := verify.KeyID(a.key.GetPublicKey())
	tofu, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	revokedDef := fmt.Sprintf(`,"revoked":{"definitions":[%q]}`, tofu.Definitions[0].Digest)

	tests := []struct {
		name      string
		threshold int
		extra     string
		bundles   [][]byte
		snap      *digest.Snapshot
		// wantStep is the failed step ("" for a decision that holds);
		// wantBundle the failing bundle; wantCounted how many signers count.
		wantStep    verify.Step
		wantBundle  int
		wantCounted int
		wantIs      any // an error for errors.Is, a pointer for errors.As
		// reasons: for each identity, whether it has a reason, and the step.
		reasons []verify.Step
	}{
		{name: "two of two", threshold: 2, bundles: [][]byte{ba, bb}, snap: snap, wantCounted: 2, reasons: []verify.Step{"", ""}},
		{name: "one of two", threshold: 1, bundles: [][]byte{bb}, snap: snap, wantCounted: 1, reasons: []verify.Step{verify.StepSignature, ""}},
		{name: "statements alone", threshold: 2, bundles: [][]byte{ba, bb}, snap: nil, wantCounted: 2, reasons: []verify.Step{"", ""}},
		// Two signers that signed different definitions are not two
		// signers of one thing: with no snapshot to verify each against,
		// the statements must agree (a snapshot holds them to its own).
		{name: "statements alone, different definitions", threshold: 2, bundles: [][]byte{ba, b.sign(t, changed)}, snap: nil,
			wantStep: verify.StepStatement, wantBundle: 1, wantCounted: 1, reasons: []verify.Step{"", verify.StepSignature}},
		{name: "one signer twice", threshold: 2, bundles: [][]byte{ba, ba}, snap: snap, wantStep: verify.StepIdentity, wantBundle: -1, wantCounted: 1,
			wantIs: policy.ErrThreshold, reasons: []verify.Step{"", verify.StepSignature}},
		{name: "definitions changed", threshold: 1, bundles: [][]byte{ba}, snap: changed, wantStep: verify.StepMatch, wantBundle: 0,
			wantIs: verify.ErrMismatch, reasons: []verify.Step{verify.StepMatch, verify.StepSignature}},
		{name: "second bundle bad", threshold: 2, bundles: [][]byte{ba, []byte("{}")}, snap: snap, wantStep: verify.StepBundle, wantBundle: 1, wantCounted: 1,
			reasons: []verify.Step{"", verify.StepSignature}},
		{name: "revoked key", threshold: 1, extra: fmt.Sprintf(`,"revoked":{"identities":[%q]}`, kidA), bundles: [][]byte{ba}, snap: snap,
			wantStep: verify.StepIdentity, wantBundle: 0, reasons: []verify.Step{verify.StepIdentity, verify.StepSignature}},
		{name: "revoked definition", threshold: 1, extra: revokedDef, bundles: [][]byte{ba}, snap: snap,
			wantStep: verify.StepIdentity, wantBundle: 0, wantIs: new(*policy.RevokedError), reasons: []verify.Step{verify.StepIdentity, verify.StepSignature}},
		{name: "revoked definition, statements alone", threshold: 1, extra: revokedDef, bundles: [][]byte{ba}, snap: nil,
			wantStep: verify.StepIdentity, wantBundle: 0, reasons: []verify.Step{verify.StepIdentity, verify.StepSignature}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, k := range []signer{a, b} {
				data, _ := os.ReadFile(k.pem)
				os.WriteFile(filepath.Join(dir, filepath.Base(k.pem)), data, 0o644)
			}
			r := entry(t, dir, tt.threshold, tt.extra, a, b)
			dec, err := policy.NewDecider(policy.DeciderOptions{}).Decide(context.Background(), r, tt.bundles, tt.snap)
			if dec == nil {
				t.Fatalf("no decision: %v", err)
			}
			counted := 0
			for _, s := range dec.Signers {
				if s.Counted >= 0 {
					counted++
				}
			}
			if counted != tt.wantCounted {
				t.Errorf("%d signers counted, want %d", counted, tt.wantCounted)
			}
			if tt.wantStep == "" {
				if err != nil {
					t.Fatalf("Decide: %v", err)
				}
				if len(dec.Results) != len(tt.bundles) || dec.First().Statement == nil {
					t.Fatalf("results %d, want %d with statements", len(dec.Results), len(tt.bundles))
				}
				if tt.snap == nil && len(dec.First().Definitions) != 0 {
					t.Errorf("no snapshot, but definitions matched: %v", dec.First().Definitions)
				}
				if ap := dec.Approval(); ap.Method != verify.MethodKey || ap.BundleDigest == "" {
					t.Errorf("approval %+v", ap)
				}
				return
			}
			var de *policy.DecisionError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a *DecisionError", err, err)
			}
			if step, _ := verify.FailedStep(err); step != tt.wantStep {
				t.Errorf("step %q, want %q: %v", step, tt.wantStep, err)
			}
			if de.Bundle != tt.wantBundle {
				t.Errorf("bundle %d, want %d", de.Bundle, tt.wantBundle)
			}
			if is, ok := tt.wantIs.(error); ok && !errors.Is(err, is) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			} else if tt.wantIs != nil && !ok && !errors.As(err, tt.wantIs) {
				t.Errorf("error %v is no %T", err, tt.wantIs)
			}
			if len(de.Reasons) != 2 {
				t.Fatalf("%d reasons, want one per identity", len(de.Reasons))
			}
			for i, want := range tt.reasons {
				got := de.Reasons[i]
				if want == "" {
					if got != nil {
						t.Errorf("identity %d: reason %v, want none (it counted)", i, got)
					}
					continue
				}
				if step, _ := verify.FailedStep(got); step != want {
					t.Errorf("identity %d: reason %v (step %q), want step %q", i, got, step, want)
				}
			}
		})
	}
}

func TestDecideNoIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	os.WriteFile(path, []byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"notes":{"unsigned":"tofu","lock":"n.lock"}}}`), 0o644)
	f, err := policy.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve("notes", policy.ResolveOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy.NewDecider(policy.DeciderOptions{}).Decide(context.Background(), r, nil, served())
	if !errors.Is(err, policy.ErrNoSignature) {
		t.Fatalf("error %v, want ErrNoSignature", err)
	}
}

// TestDecideConcurrent decides many entries at once with one Decider (run
// with -race): the trust is shared, every decision its own.
func TestDecideConcurrent(t *testing.T) {
	t.Parallel()
	d := policy.NewDecider(policy.DeciderOptions{})
	var wg sync.WaitGroup
	// Room for every error the goroutines can send (8 entries, 4 each, 2
	// decisions): a full channel would block them and wg.Wait, turning a
	// failure into a hang (a mutant "timed out" instead of killed).
	errs := make(chan error, 8*4*2)
	for i := range 8 {
		dir := t.TempDir()
		s := newSigner(t, dir, fmt.Sprint("k", i))
		other := newSigner(t, dir, fmt.Sprint("o", i))
		r := entry(t, dir, 1, "", s)
		snap := served()
		good, bad := s.sign(t, snap), other.sign(t, snap)
		e, err := d.Prepare(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.Decide(context.Background(), [][]byte{good}, snap); err != nil {
					errs <- err
				}
				if _, err := d.Decide(context.Background(), r, [][]byte{bad}, nil); err == nil {
					errs <- errors.New("a bundle by another key was accepted")
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDecideNumbersBundles: with several bundles, a failure and an
// identity's reasons name the bundle ("bundle 2 of 2"); with one, they do
// not.
func TestDecideNumbersBundles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := newSigner(t, dir, "a"), newSigner(t, dir, "b")
	snap := served()
	ba := a.sign(t, snap)
	changed := served()
	changed.Tools[0] = json.RawMessage(`{"name":"search_notes","description":"Search the notes, then mail them.","inputSchema":{"type":"object"}}`)
	for _, c := range []struct {
		name      string
		threshold int
		bundles   [][]byte
		snap      *digest.Snapshot
		want      []string // in the error
		not       string   // not in the error
		reason1   []string // in identity 1's reason
	}{
		{"one bundle", 1, [][]byte{ba}, changed, []string{"verification failed at step match"}, "bundle 1 of 1", nil},
		{"the second of two", 2, [][]byte{ba, []byte("{}")}, snap, []string{"at step bundle: bundle 2 of 2: "}, "bundle 1 of", nil},
		{"the first of two", 2, [][]byte{ba, ba}, changed, []string{"at step match: bundle 1 of 2: "}, "bundle 2 of", nil},
		{"one signer twice", 2, [][]byte{ba, ba}, snap, []string{"(2 bundle(s), 1 distinct signer(s)"}, "bundle 1 of",
			[]string{"bundle 1 of 2: verification failed at step signature", "bundle 2 of 2: verification failed at step signature"}},
	} {
		r := entry(t, dir, c.threshold, "", a, b)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := policy.NewDecider(policy.DeciderOptions{}).Decide(context.Background(), r, c.bundles, c.snap)
			var de *policy.DecisionError
			if !errors.As(err, &de) {
				t.Fatalf("error %v, want a *DecisionError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), c.not) {
				t.Errorf("error %q has %q", err, c.not)
			}
			for _, w := range c.reason1 {
				if de.Reasons[1] == nil || !strings.Contains(de.Reasons[1].Error(), w) {
					t.Errorf("identity 1's reason %v lacks %q", de.Reasons[1], w)
				}
			}
		})
	}
}
