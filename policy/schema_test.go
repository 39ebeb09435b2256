package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// docsExamples returns every ```json block of docs/POLICY.md.
func docsExamples(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "POLICY.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	rest := string(doc)
	for {
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```json\n"); !ok {
			break
		}
		var block string
		block, rest, _ = strings.Cut(rest, "```")
		out = append(out, block)
	}
	if len(out) == 0 {
		t.Fatal("docs/POLICY.md has no json block")
	}
	return out
}

func schema(t *testing.T) (*jsonschema.Resolved, map[string]any) {
	t.Helper()
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return rs, raw
}

// The examples of docs/POLICY.md, and the file 'policy init' writes, are
// accepted by both the parser and the JSON Schema.
func TestDocsExamples(t *testing.T) {
	rs, _ := schema(t)
	examples := append(docsExamples(t), string(InitTemplate()))
	for i, ex := range examples {
		if _, err := Parse([]byte(ex), "/etc/mcpsign/policy.json"); err != nil {
			t.Errorf("example %d: parser: %v", i, err)
		}
		var inst any
		if err := json.Unmarshal([]byte(ex), &inst); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(inst); err != nil {
			t.Errorf("example %d: schema: %v", i, err)
		}
	}
}

// Documents the parser refuses are refused by the schema too (those the
// schema can express: not server names equal under case folding, one key
// in two files, an issuer's case).
func TestSchemaRefuses(t *testing.T) {
	rs, _ := schema(t)
	for _, body := range []string{
		`{"policyVersion":1}`,
		`{` + base + `,"server":{}}`,
		`{` + base + `,"servers":{"a":{"mdoe":"warn"}}}`,
		`{` + base + `,"servers":{"../a":{}}}`,
		`{` + base + `,"servers":{"a":{"mode":"off"}}}`,
		`{` + base + `,"defaults":{"lock":"x"}}`,
		`{` + base + `,"servers":{"a":{"identities":[{"method":"key","key":"k","issuer":"i"}]}}}`,
		`{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","subject":"a"}]}}}`,
		`{` + base + `,"revoked":{"bundles":["sha256:00"]}}`,
		`{` + base + `,"servers":{"a":{"require":["tlog","tlog"]}}}`,
		`{` + base + `,"servers":{"a":{"clientCapabilities":null}}}`,
		`{` + base + `,"defaults":{"clientCapabilities":"roots"}}`,
		// Canonical forms and duplicates (docs/POLICY.md "Canonical forms").
		`{` + base + `,"revoked":{"identities":["sha256:1E6ED65D77D6364EEAED5A745BA5C4985AE2B700DD85D7CF7F027BDF294A33FC"]}}`,
		`{` + base + `,"revoked":{"identities":["1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"]}}`,
		`{` + base + `,"revoked":{"identities":["SHA256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"]}}`,
		`{` + base + `,"revoked":{"identities":[" sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"]}}`,
		`{` + base + `,"revoked":{"identities":["old@example.com\n"]}}`,
		`{` + base + `,"revoked":{"bundles":["sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc","sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"]}}`,
		`{` + base + `,"servers":{"a":{"identities":[{"method":"key","key":"k"},{"method":"key","key":"k"}]}}}`,
		`{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","issuer":"https://i","subject":" a@example.com"}]}}}`,
	} {
		var inst any
		if err := json.Unmarshal([]byte(body), &inst); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(inst) == nil {
			t.Errorf("schema accepts %s", body)
		}
		if _, err := Parse([]byte(body), "/p.json"); err == nil {
			t.Errorf("parser accepts %s", body)
		}
	}
}

// The schema's property lists are the parser's member tables: every
// object of the format, so that neither can drift from the other.
func TestSchemaMembers(t *testing.T) {
	_, raw := schema(t)
	props := func(obj any) []string {
		m := obj.(map[string]any)["properties"].(map[string]any)
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	defs := raw["$defs"].(map[string]any)
	ids := defs["identity"].(map[string]any)["oneOf"].([]any)
	noLock := slices.DeleteFunc(serverTable().names(), func(s string) bool { return s == "lock" })
	cases := []struct {
		name   string
		schema any
		parser []string
	}{
		{"top", raw, topTable().names()},
		{"trust", defs["trust"], trustTable().names()},
		{"tuf", defs["trust"].(map[string]any)["properties"].(map[string]any)["tuf"], tufTable().names()},
		{"server", defs["server"], serverTable().names()},
		{"defaults", defs["defaults"], noLock},
		{"revoked", defs["revoked"], revokedTable().names()},
		{"repositorySigner", defs["repositorySigner"], repositorySignerTable().names()},
		{"serverRequests", defs["serverRequests"], serverRequestsTable().names()},
	}
	if len(ids) != len(identityMethods) {
		t.Fatalf("the schema has %d identity forms, the parser %d methods", len(ids), len(identityMethods))
	}
	for i, m := range identityMethods {
		cases = append(cases, struct {
			name   string
			schema any
			parser []string
		}{string(m), ids[i], identityTables()[m].names()})
		// The schema's form i is method m's.
		if enum := ids[i].(map[string]any)["properties"].(map[string]any)["method"].(map[string]any)["const"]; enum != string(m) {
			t.Errorf("identity form %d is for %v, want %s", i, enum, m)
		}
	}
	for _, c := range cases {
		want := slices.Sorted(slices.Values(c.parser))
		if got := props(c.schema); !slices.Equal(got, want) {
			t.Errorf("%s: schema properties %v, parser members %v", c.name, got, want)
		}
		if len(want) != len(c.parser) || slices.Compact(slices.Clone(want)) == nil || len(slices.Compact(slices.Clone(want))) != len(want) {
			t.Errorf("%s: a member listed twice: %v", c.name, c.parser)
		}
	}
}

// TestDocsHighSecurityExample: the example policy at the top of
// docs/POLICY.md, the high-security one, denies sampling and elicitation
// to every server (docs/POLICY.md, "serverRequests").
func TestDocsHighSecurityExample(t *testing.T) {
	f, err := Parse([]byte(docsExamples(t)[0]), "/etc/mcpsign/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Names {
		r, err := f.Resolve(n, ResolveOptions{StateDir: "/"})
		if err != nil {
			t.Fatal(err)
		}
		if d := r.ServerRequests.Denied(); !slices.Equal(d, []string{"sampling", "elicitation"}) {
			t.Errorf("%s: denies %v", n, d)
		}
	}
}

// TestCheckRegistryNames: 'policy check' shows the servers of the docs'
// own registry examples (io.github.acme/notes, io.github.acme/*) under the
// name rule Parse applies, not as blocked ("BLOCKED: invalid
// server name" while 'registry verify' took the file).
func TestCheckRegistryNames(t *testing.T) {
	n := 0
	for i, ex := range docsExamples(t) {
		if !strings.Contains(ex, `"io.github.acme/`) {
			continue
		}
		n++
		f, err := Parse([]byte(ex), "/etc/mcpsign/policy.json")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if blocked := f.WriteCheckText(&b); blocked != 0 || strings.Contains(b.String(), "BLOCKED") {
			t.Errorf("example %d: %d blocked:\n%s", i, blocked, b.String())
		}
		for _, want := range []string{"server io.github.acme/*:", "server io.github.acme/notes:", "lock: none", "the entry's repository: issuer https://token.actions.githubusercontent.com, owner the namespace's owner"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("example %d: no %q in\n%s", i, want, b.String())
			}
		}
	}
	if n == 0 {
		t.Fatal("docs/POLICY.md has no registry example")
	}
	// A registry name with no identity is blocked as a local one is.
	f, err := Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"io.github.acme/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if blocked := f.WriteCheckText(&b); blocked != 1 || !strings.Contains(b.String(), "names no identity") {
		t.Errorf("%d blocked: %s", blocked, b.String())
	}
	// The one name rule: what Parse takes under "servers".
	for _, c := range []struct {
		name string
		ok   bool
	}{{"notes", true}, {"io.github.acme/notes", true}, {"io.github.acme/*", true}, {"../x", false}, {"a/b/c", false}, {"", false}, {"-x", false}} {
		if err := ValidServerName(c.name); (err == nil) != c.ok {
			t.Errorf("ValidServerName(%q) = %v", c.name, err)
		}
	}
}
