package registry

import (
	"bytes"
	"fmt"
	"testing"
)

// servedSpec is one entry of a test dump.
type servedSpec struct {
	name, version, status, verifiedAt string
}

// realServerJSON is an entry the official registry's validators accept:
// $schema, a description, a repository, one npm package over stdio, and
// the attestation hint.
func realServerJSON(name, version, status string) string {
	st := ""
	if status != "" {
		st = `,"status":"` + status + `"`
	}
	short := name[len(Namespace(name))+1:]
	return `{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"` + name +
		`","description":"Notes server ` + short + `","version":"` + version + `"` + st +
		`,"repository":{"url":"https://github.com/acme/` + short + `","source":"github"}` +
		`,"packages":[{"registryType":"npm","identifier":"@acme/` + short + `","version":"` + version + `","transport":{"type":"stdio"}}]` +
		pointerMeta("https://example.com/"+short+"/"+version+".sigstore.json", dg) + `}`
}

// servedDump writes a verified dump of specs with DumpWriter, as
// `registry verify --verified-out` writes it.
func servedDump(t testing.TB, specs []servedSpec) []byte {
	t.Helper()
	var buf bytes.Buffer
	d := NewDumpWriter(&buf)
	for _, s := range specs {
		e, err := ParseServer([]byte(realServerJSON(s.name, s.version, s.status)), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		at := s.verifiedAt
		if at == "" {
			at = "2026-12-01T01:00:00Z"
		}
		r := &Result{Name: e.Name, Version: e.Version, Verified: true, Policy: Namespace(e.Name) + "/*", Bundles: []string{dg},
			Status: s.status, Signers: []Signer{{Method: "sigstore", Identity: "https://github.com/acme/x/.github/workflows/release.yml@refs/tags/v" + e.Version,
				Issuer: "https://token.actions.githubusercontent.com", SourceRepository: "https://github.com/acme/x"}},
			VerifiedAt: at, entry: e}
		if err := d.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manySpecs is n servers of 1 to 3 versions each.
func manySpecs(n int) []servedSpec {
	var s []servedSpec
	for i := 0; len(s) < n; i++ {
		for v := 0; v <= i%3 && len(s) < n; v++ {
			s = append(s, servedSpec{name: fmt.Sprintf("io.github.acme/notes-%05d", i), version: fmt.Sprintf("1.%d.0", v)})
		}
	}
	return s
}
