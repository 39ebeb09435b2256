package sign_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/sign"
)

// A publisher's release tool signs a snapshot of its server with a key it
// holds, offline (no log, no timestamp), and gets the bundle to publish
// and the report of what it proves.
func ExampleSign() {
	snap, err := digest.ParseSnapshot([]byte(`{"kind":"mcpsign.snapshot","snapshotVersion":1,
		"server":{"name":"notes","version":"1.2.0"},"protocolVersion":"2025-11-25",
		"tools":[{"name":"add_note","inputSchema":{"type":"object"}}],
		"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := attest.Build(snap, attest.Options{Packages: []attest.Package{{PURL: "pkg:npm/notes@1.2.0"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	payload, err := st.Marshal()
	if err != nil {
		fmt.Println(err)
		return
	}
	// In a real release: sign.LoadPrivateKey of the key file, whose public
	// key verifiers pin.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, err := sign.NewKeySigner(key)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sign.Sign(context.Background(), payload, sign.Options{Signer: signer})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := res.Report("notes.sigstore.json", st)
	fmt.Println(r.Method, "signature of", r.Subjects, "subject(s),", len(r.Tlog), "log entries")
	fmt.Println("signed", st.Summary())
	// Output:
	// key signature of 1 subject(s), 0 log entries
	// signed "notes" 1.2.0, 1 subject (1 tool, 0 prompts, 0 resource templates)
}

// A provisioning tool makes a release key pair without a terminal, its
// password from the tool's secret store, as 'mcpsign keygen' does.
func ExampleKeygen() {
	dir, _ := os.MkdirTemp("", "keygen-example")
	defer os.RemoveAll(dir)
	res, err := sign.Keygen(sign.KeygenOptions{
		Prefix:    filepath.Join(dir, "release"),
		Algorithm: sign.Ed25519,
		Password:  sign.StaticPassword([]byte("from the secret store")),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(res.KeyPath), filepath.Base(res.PubPath), strings.HasPrefix(res.KeyID, "sha256:"))
	// Output:
	// release.key release.pub true
}
