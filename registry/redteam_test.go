package registry

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
)

// TestBindingRegistryBaseURL: a purl names a package of its type's public
// registry; an entry whose packages[].registryBaseUrl points elsewhere
// installs whatever that host serves under the name, which no statement
// binds.
func TestBindingRegistryBaseURL(t *testing.T) {
	t.Parallel()
	st := &attest.Statement{}
	st.Predicate.Server.Version = "1.0.0"
	st.Predicate.Package = []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}, {PURL: "pkg:pypi/acme-notes@1.0.0"}, {PURL: "pkg:nuget/Acme.Notes@1.0.0"}}
	for _, c := range []struct {
		name, pkg string
		ok        bool
	}{
		{"npm default", `{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm registry.npmjs.org", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm registry.npmjs.org/", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org/","identifier":"@acme/notes","version":"1.0.0"}`, true},
		{"npm another registry", `{"registryType":"npm","registryBaseUrl":"https://npm.evil.example","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"npm http", `{"registryType":"npm","registryBaseUrl":"http://registry.npmjs.org","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"npm lookalike", `{"registryType":"npm","registryBaseUrl":"https://registry.npmjs.org.evil.example","identifier":"@acme/notes","version":"1.0.0"}`, false},
		{"pypi pypi.org", `{"registryType":"pypi","registryBaseUrl":"https://pypi.org","identifier":"acme-notes","version":"1.0.0"}`, true},
		{"pypi another index", `{"registryType":"pypi","registryBaseUrl":"https://pypi.evil.example/simple","identifier":"acme-notes","version":"1.0.0"}`, false},
		{"nuget nuget.org", `{"registryType":"nuget","registryBaseUrl":"https://api.nuget.org","identifier":"Acme.Notes","version":"1.0.0"}`, true},
		{"nuget another feed", `{"registryType":"nuget","registryBaseUrl":"https://nuget.evil.example/v3/index.json","identifier":"Acme.Notes","version":"1.0.0"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(serverJSON("a/b", "1.0.0", `,"packages":[`+c.pkg+`]`)), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			err = CheckBinding(e, st)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			if err != nil && !errors.Is(err, ErrBinding) {
				t.Fatalf("not ErrBinding: %v", err)
			}
		})
	}
}

// TestVerifiedMemberSpoofed: a source's server.json that already holds
// the dump's _meta member twice, or in another case, would reach a
// verified dump beside the block mcpsign writes (WithVerified replaces
// one member), where a consumer that reads the first, or folds case,
// reads the source's. Such an entry does not verify.
func TestVerifiedMemberSpoofed(t *testing.T) {
	t.Parallel()
	ptr := `"` + PublisherProvided + `":{"` + AttestationMember + `":{"bundleUrl":"https://x/b","bundleDigest":"` + dg + `"}}`
	fake := `{"signers":[{"method":"sigstore","identity":"https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1"}]}`
	for _, c := range []struct {
		name, meta string
		ok         bool
	}{
		{"one, replaced by the dump", `{` + ptr + `,"` + VerifiedMember + `":` + fake + `}`, true},
		{"twice", `{` + ptr + `,"` + VerifiedMember + `":` + fake + `,"` + VerifiedMember + `":` + fake + `}`, false},
		{"another case", `{` + ptr + `,"Dev.Mcpsign/Verified":` + fake + `}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(serverJSON("a/b", "1", `,"_meta":`+c.meta)), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if (e.AttestationErr == nil) != c.ok {
				t.Fatalf("attestation err %v", e.AttestationErr)
			}
			if c.ok {
				out, err := WithVerified(e.Server, []byte(`{"real":1}`))
				if err != nil || bytes.Count(out, []byte(VerifiedMember)) != 1 || !bytes.Contains(out, []byte(`{"real":1}`)) {
					t.Fatalf("%s %v", out, err)
				}
			}
		})
	}
}
