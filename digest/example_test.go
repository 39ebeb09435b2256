package digest_test

import (
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
)

// A registry computes the digests of a snapshot a publisher uploaded: one
// per definition, and the Set Digest of each kind.
func ExampleCompute() {
	snap, err := digest.ParseSnapshot([]byte(`{"kind":"mcpsign.snapshot","snapshotVersion":1,
		"server":{"name":"notes","version":"1.2.0"},"protocolVersion":"2025-11-25",
		"tools":[{"name":"add_note","description":"Add a note","inputSchema":{"type":"object"}}],
		"prompts":[],"resourceTemplates":[],"capturedAt":"2026-01-01T00:00:00Z"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := digest.Compute(snap) // r.Report(snap) is the same as a JSON document (docs/JSON.md)
	if err := r.Err(); err != nil {
		fmt.Println("not every definition has a digest:", err)
		return
	}
	for _, d := range r.Definitions {
		fmt.Println(d.Kind, d.Key, d.Digest)
	}
	for _, k := range digest.Kinds {
		fmt.Println("set", k.ListMember(), r.Sets[k])
	}
	// Output:
	// tool add_note sha256:4170f667a21d54719c8037f6c1f2fcf4e8bfacad36579e67c5c11423d0581b4e
	// set tools sha256:872d20f179f42ac1458bcb3178d12a7d8219c00fa62baa40e0bd74a6a9fffe3e
	// set prompts sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945
	// set resourceTemplates sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945
}
