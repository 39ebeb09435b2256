package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
)

// withoutProof is the lock data without the bundles it carries (its
// proof), resealed: the lock pin wrote before locks carried their proof,
// for the tests of a signed lock that only the bundles named can prove.
func withoutProof(t *testing.T, data []byte) []byte {
	t.Helper()
	l, err := pin.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if l.Proof == nil {
		t.Fatal("the lock carries no proof")
	}
	l.Proof = nil
	out, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPinnedLockCarriesProof: `pin --policy P --name N --bundle B` writes
// a lock that carries B (docs/LOCK.md "proof"), so that `proxy --policy P
// --name N` and `verify-pin --policy P --name N` enforce it with nothing
// more given, where they blocked it before (policy-lock-unproven: no bundle
// to verify it with). The proof is verified against the policy each time,
// never trusted: a lock whose proof was edited by hand, swapped for the
// bundle of a key the policy does not list, or for a listed signer's
// bundle over other definitions (the lock resealed to match), or dropped,
// does not stand.
func TestPinnedLockCarriesProof(t *testing.T) {
	server, dir := demoDir(t)
	bundle := filepath.Join(dir, "demo", "server.sigstore.json")
	snap, err := digest.ParseSnapshot(mustRead(t, filepath.Join(dir, "demo", "server.snapshot.json")))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := digest.ParseSnapshot(mustRead(t, filepath.Join(dir, "demo", "server.snapshot.json")))
	if err != nil {
		t.Fatal(err)
	}
	changed.Tools = append(changed.Tools, json.RawMessage(`{"name":"run_command","description":"Run a command.","inputSchema":{"type":"object"}}`))
	unlisted, listed := newPTSigner(t, dir, "unlisted"), newPTSigner(t, dir, "listed")
	unlistedBundle, unlistedDigest := unlisted.sign(t, dir, "unlisted.sigstore.json", snap)
	otherDefs, otherDefsDigest := listed.sign(t, dir, "listed-other.sigstore.json", changed)
	// The policy lists the publisher and one more key, and names no bundle.
	pol := vtWrite(t, dir, "policy.json", []byte(fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"notes":{"identities":[{"method":"key","key":"demo/publisher.pub"},{"method":"key","key":%q}],"lock":"notes.lock"}}}`, listed.pub)))
	lock := filepath.Join(dir, "notes.lock")
	if code, out, stderr := runCLI(t, "pin", "--policy", pol, "--name", "notes", "--bundle", bundle, "--", server); code != 0 {
		t.Fatalf("pin: exit %d\n%s\n%s", code, out, stderr)
	}
	pinned := mustRead(t, lock)
	l, err := pin.Parse(pinned)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Proof) != 1 || !bytes.Equal(l.Proof[0], mustRead(t, bundle)) {
		t.Fatalf("the lock carries %d bundles, want the one pinned", len(l.Proof))
	}
	resealed := func(edit func(*pin.Lock)) []byte {
		l, err := pin.Parse(pinned)
		if err != nil {
			t.Fatal(err)
		}
		edit(l)
		data, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// One base64 character of the proof changed, the lockDigest not.
	edited := bytes.Clone(pinned)
	at := bytes.Index(edited, []byte(`"proof": [`)) + len(`"proof": [`) + 40
	if edited[at] == 'A' {
		edited[at] = 'B'
	} else {
		edited[at] = 'A'
	}

	for _, tc := range []struct {
		name string
		lock []byte
		rule string // "" the lock is in force
		// the exits of verify-pin and of the proxy when it does not stand
		verifyPinCode, proxyCode int
	}{
		{"as pinned", pinned, "", 0, 0},
		{"proof edited by hand", edited, "the lock was modified after it was written", exitError, exitError},
		{"proof swapped for an unlisted key's bundle, resealed", resealed(func(l *pin.Lock) {
			l.Proof, l.Approval.BundleDigest, l.Approval.Tlog = [][]byte{mustRead(t, unlistedBundle)}, unlistedDigest, nil
		}), policy.RuleLockUnproven, exitFailed, proxycmd.ExitBlocked},
		{"a listed signer's proof over other definitions, resealed", resealed(func(l *pin.Lock) {
			l.Proof = [][]byte{mustRead(t, otherDefs)}
			l.Approval = pin.Approval{Method: evidence.MethodKey, Identity: listed.keyID(t), BundleDigest: otherDefsDigest, ApprovedAt: l.Approval.ApprovedAt}
		}), policy.RuleLockUnproven, exitFailed, proxycmd.ExitBlocked},
		{"proof dropped, resealed", resealed(func(l *pin.Lock) { l.Proof = nil }), policy.RuleLockUnproven, exitFailed, proxycmd.ExitBlocked},
		// A bundle named decides, not the lock's proof: a listed signer's
		// bundle of other definitions (another release) does not prove it.
		{"as pinned, another release's bundle named", pinned, policy.RuleLockUnproven, exitFailed, proxycmd.ExitBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vtWriteBytes(t, lock, tc.lock)
			var named []string
			if strings.Contains(tc.name, "bundle named") {
				named = []string{"--bundle", otherDefs}
			}
			code, out, stderr := runCLI(t, append(append([]string{"verify-pin", "--policy", pol, "--name", "notes"}, named...), "--", server)...)
			if code != tc.verifyPinCode || !strings.Contains(out+stderr, tc.rule) {
				t.Errorf("verify-pin: exit %d, want %d and %q\n%s\n%s", code, tc.verifyPinCode, tc.rule, out, stderr)
			}
			if tc.rule != "" {
				code, _, stderr := runCLI(t, append(append([]string{"proxy", "--policy", pol, "--name", "notes"}, named...), "--", server)...)
				if code != tc.proxyCode || !strings.Contains(stderr, tc.rule) {
					t.Errorf("proxy: exit %d, want %d and %q: %s", code, tc.proxyCode, tc.rule, stderr)
				}
			} else {
				s := startCLI(t, nil, "proxy", "--policy", pol, "--name", "notes", "--", server)
				cs, _, err := s.client(t)
				if err != nil {
					t.Fatalf("proxy: connect: %v\n%s", err, s.stderr.String())
				}
				if _, err := cs.ListTools(context.Background(), nil); err != nil {
					t.Errorf("proxy: tools/list: %v\n%s", err, s.stderr.String())
				}
				cs.Close()
				if code := s.exit(t); code != 0 {
					t.Errorf("proxy: exit %d: %s", code, s.stderr.String())
				}
			}
			if !bytes.Equal(mustRead(t, lock), tc.lock) {
				t.Error("the lock was changed")
			}
		})
	}
}
