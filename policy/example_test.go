package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
)

// A Go host goes from a policy file to a written lock, offline: the
// policy names the publisher's key and the bundle of the server "notes";
// the host reads what the server serves (here a snapshot file), decides
// under the policy, and pins what the decision approved. Later it checks
// that the lock still stands under the policy (its bundle re-verified: a
// record in a lock is no proof) and that the server has not drifted.
func Example_host() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mcpsign-policy-example-")
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

	// The policy entry of the server; one Decider for every entry (its
	// trusted material is loaded once, and it is safe for concurrent use).
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
	d := policy.NewDecider(policy.DeciderOptions{Offline: true})

	// What the server serves now, and the bundles the policy names.
	snap, err := source.Load(ctx, source.Spec{File: snapshotFile}, source.Options{})
	if err != nil {
		fmt.Println("server:", err)
		return
	}
	locations := r.BundleLocations(nil, source.BundleOptions{})
	bundles, err := pinbundle.ReadAll(ctx, locations, snap)
	if err != nil {
		fmt.Println("bundle:", err)
		return
	}
	dec, err := d.Decide(ctx, r, bundles, snap)
	var de *policy.DecisionError
	if errors.As(err, &de) {
		for i, why := range de.Reasons {
			fmt.Printf("identity %d: %v\n", i, why)
		}
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("decided: %d of %d required, %d signer(s)\n", dec.Matched, r.Threshold, len(dec.Signers))
	fmt.Println("signer counts for identity", dec.Signers[0].Counted, "by", dec.Signers[0].Result.Method)

	// Pin it: the lock, recorded in the audit log first when the policy
	// names one.
	lock, err := pin.NewLock(snap, dec.Approval())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := auditevent.WriteLock(ctx, r.Lock, lock, false, r.Audit); err != nil {
		fmt.Println(err)
		return
	}

	// Later: the lock in force must stand under the policy, and the server
	// must serve what it approves.
	held, err := pin.Read(r.Lock)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = d.CheckLock(ctx, r, held, nil, policy.LockCheck{
		Bundles: func(ctx context.Context, snap *digest.Snapshot) ([][]byte, error) {
			return pinbundle.ReadAll(ctx, locations, snap)
		},
	})
	fmt.Println("lock", filepath.Base(r.Lock), "approved by", held.Approval.Method, "stands:", err == nil)
	fmt.Println("drift:", held.Check(snap).Failed(pin.FailOnDrift))
	// Output:
	// decided: 1 of 1 required, 1 signer(s)
	// signer counts for identity 0 by key
	// lock notes.mcpsign.lock approved by key stands: true
	// drift: false
}

// publishNotes writes what a publisher gives and a host keeps in dir: the
// server's definitions as a snapshot file, the publisher's public key, the
// bundle it signed ('mcpsign sign key' does this), and the policy.
func publishNotes(dir string) (string, error) {
	served := &digest.Snapshot{
		Server: digest.ServerInfo{Name: "notes", Version: "1.2.0"},
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"search_notes","description":"Search the notes.","inputSchema":{"type":"object"}}`),
		},
	}
	data, err := served.MarshalFile()
	if err != nil {
		return "", err
	}
	snapshotFile := filepath.Join(dir, "notes.snapshot.json")
	if err := os.WriteFile(snapshotFile, data, 0o644); err != nil {
		return "", err
	}
	st, err := attest.Build(served, attest.Options{})
	if err != nil {
		return "", err
	}
	payload, err := st.Marshal()
	if err != nil {
		return "", err
	}
	key, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		return "", err
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: payload, PayloadType: attest.PayloadType}, key, sgsign.BundleOptions{})
	if err != nil {
		return "", err
	}
	bundleJSON, err := protojson.Marshal(pb)
	if err != nil {
		return "", err
	}
	pem, err := key.GetPublicKeyPem()
	if err != nil {
		return "", err
	}
	files := map[string]string{
		"notes.sigstore.json": string(bundleJSON),
		"publisher.pub.pem":   pem,
		"policy.json": `{"kind": "mcpsign.policy", "policyVersion": 1,
  "servers": {"notes": {
    "identities": [{"method": "key", "key": "publisher.pub.pem"}],
    "bundle": "notes.sigstore.json",
    "lock": "notes.mcpsign.lock"}}}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return snapshotFile, nil
}
