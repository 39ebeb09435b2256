package trustroot_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsign/mcpsign/trustroot"
)

// An operator's tool builds the trusted root of a private Rekor v2 log
// from its PEM public key, as 'mcpsign trustroot create' does, and reads
// back what it trusts.
func ExampleEntries() {
	dir, _ := os.MkdirTemp("", "trustroot-example")
	defer os.RemoveAll(dir)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	keyFile := filepath.Join(dir, "rekor.pub")
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)

	logs, err := trustroot.Entries{Files: []string{keyFile}, URLs: []string{"https://rekor.example"},
		Origins: []string{"rekor.example"}, Starts: []string{"2026-01-01T00:00:00Z"}}.Logs()
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := trustroot.Create(trustroot.CreateOptions{TransparencyLogs: logs})
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := trustroot.ParseTrustedRoot(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := trustroot.Describe(tr, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	for _, l := range d.TransparencyLogs {
		fmt.Println(l.BaseURL, l.KeyType, l.Status)
	}
	// Output:
	// https://rekor.example ECDSA P-256 active
}

// A host writes the trusted root of a private deployment from the entries
// of its configuration, as 'mcpsign trustroot create -o FILE' does, and
// reads the file back as 'mcpsign trustroot show' does.
func ExampleEntrySet() {
	dir, _ := os.MkdirTemp("", "trustroot-example")
	defer os.RemoveAll(dir)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	keyFile := filepath.Join(dir, "ct.pub")
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)

	set := trustroot.EntrySet{CTLogs: trustroot.Entries{Files: []string{keyFile}, URLs: []string{"https://ct.example"}}}
	opts, err := set.CreateOptions()
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := trustroot.Create(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	file := filepath.Join(dir, "trusted_root.json")
	if err := trustroot.WriteFile(file, data, false, nil); err != nil {
		fmt.Println(err)
		return
	}
	rep, err := trustroot.ReadFileReport(file, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range rep.CTLogs {
		fmt.Println(l.BaseURL, l.KeyType, l.Status)
	}
	// Output:
	// https://ct.example ECDSA P-256 active
}
