package registry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/registrylocal"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/source"
)

// The entries of the end-to-end tests sign as GitHub Actions workflows
// through the local Sigstore stack's second issuer (OIDC_ISSUER/github,
// Fulcio type github-workflow), so their certificates carry the source
// repository extensions the repository signer checks.

const anonNS = "io.modelcontextprotocol.anonymous"

var mcpbSHA = strings.Repeat("5a", 32)

// bundleSpec is one bundle the fixture signs.
type bundleSpec struct {
	repo, version string
	pkgs          []attest.Package
	// workflowRepo is the repository of the workflow that ran (a reusable
	// workflow of another repository); "" : repo's own.
	workflowRepo string
}

var bundleSpecs = map[string]bundleSpec{
	"good":     {"acme/notes", "1.0.0", []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}}, ""},
	"old":      {"acme/notes", "0.9.0", []attest.Package{{PURL: "pkg:npm/%40acme/notes@0.9.0"}}, ""},
	"otherpkg": {"acme/notes", "1.0.0", []attest.Package{{PURL: "pkg:npm/%40acme/other@1.0.0"}}, ""},
	"evil":     {"evil/notes", "1.0.0", []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}}, ""},
	"mcpb":     {"acme/notes", "2.0.0", []attest.Package{{PURL: "pkg:generic/notes@2.0.0", Digest: map[string]string{"sha256": mcpbSHA}}}, ""},
	// Distinct good bundles, for the benchmarks.
	"bench1": {"acme/notes", "3.0.1", []attest.Package{{PURL: "pkg:npm/%40acme/notes@3.0.1"}}, ""},
	"bench2": {"acme/notes", "3.0.2", []attest.Package{{PURL: "pkg:npm/%40acme/notes@3.0.2"}}, ""},
	"bench3": {"acme/notes", "3.0.3", []attest.Package{{PURL: "pkg:npm/%40acme/notes@3.0.3"}}, ""},
	// evil/notes's job calling acme/notes's release workflow: the SAN is
	// acme's workflow, the source repository evil's.
	"reusable": {"evil/notes", "1.0.0", []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}}, "acme/notes"},
}

type fixture struct {
	bundles  map[string][]byte
	srv      *httptest.Server
	policy   string // the policy file's text
	ghIssuer string
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// stack signs the bundles once per test binary and serves them over TLS
// on 127.0.0.1.
func stack(t testing.TB) *fixture {
	t.Helper()
	env := sigstack.Require(t)
	fixOnce.Do(func() { fix, fixErr = newFixture(env) })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func newFixture(env *sigstack.Env) (*fixture, error) {
	f := &fixture{bundles: map[string][]byte{}, ghIssuer: env.OIDCIssuer + "/github"}
	svc, tr, err := registrylocal.StackServices(env.TrustedRoot, env.SigningConfig)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(bundleSpecs))
	for name, s := range bundleSpecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := signBundle(f.ghIssuer, svc, tr, s)
			if err != nil {
				errs <- fmt.Errorf("signing %s: %w", name, err)
				return
			}
			mu.Lock()
			f.bundles[name] = b
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := f.bundles[strings.TrimPrefix(r.URL.Path, "/b/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	f.policy = fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":%q},
"servers":{%q:{"repositorySigner":{"issuer":%q,"owner":"acme","repositories":["notes"]}}}}`, env.TrustedRoot, anonNS+"/*", f.ghIssuer)
	return f, nil
}

func signBundle(issuer string, svc sign.Services, tr *root.TrustedRoot, s bundleSpec) ([]byte, error) {
	return registrylocal.SignAsWorkflow(context.Background(), registrylocal.Workflow{Issuer: issuer, Repository: s.repo, WorkflowRepository: s.workflowRepo, Version: s.version},
		svc, tr, s.pkgs)
}

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// entryCase is one server version of the end-to-end tests and the step it
// must fail at ("" : it verifies).
type entryCase struct {
	name, version, repo string
	packages            string // JSON array
	bundle, digestOf    string // the bundle pointed at, and whose digest is given
	step                string
}

func entryCases() []entryCase {
	npm := func(v string) string {
		return `[{"registryType":"npm","identifier":"@acme/notes","version":"` + v + `","transport":{"type":"stdio"}}]`
	}
	mcpb := `[{"registryType":"mcpb","identifier":"https://example.com/notes.mcpb","fileSha256":"` + mcpbSHA + `","transport":{"type":"stdio"}}]`
	return []entryCase{
		{"good", "1.0.0", "acme/notes", npm("1.0.0"), "good", "good", ""},
		{"mcpb", "2.0.0", "acme/notes", mcpb, "mcpb", "mcpb", ""},
		{"other-version", "1.0.0", "acme/notes", npm("1.0.0"), "old", "old", registry.StepBinding},
		{"other-package", "1.0.0", "acme/notes", npm("1.0.0"), "otherpkg", "otherpkg", registry.StepBinding},
		{"other-repository", "1.0.0", "acme/notes", npm("1.0.0"), "evil", "evil", "identity"},
		{"reusable-workflow-of-another-repository", "1.0.0", "acme/notes", npm("1.0.0"), "reusable", "reusable", "identity"},
		{"claims-other-repository", "1.0.0", "evil/notes", npm("1.0.0"), "good", "good", registry.StepSigner},
		{"no-github-repository", "1.0.0", "", npm("1.0.0"), "good", "good", registry.StepSigner},
		{"digest-mismatch", "1.0.0", "acme/notes", npm("1.0.0"), "good", "old", registry.StepFetch},
		{"no-attestation", "1.0.0", "acme/notes", npm("1.0.0"), "", "", registry.StepAttestation},
		{"no-bundle-there", "1.0.0", "acme/notes", npm("1.0.0"), "missing", "good", registry.StepFetch},
	}
}

// serverJSON writes the server.json of c, named under prefix.
func (f *fixture) serverJSON(c entryCase, prefix string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":%q,"description":"mcpsign test entry","version":%q`,
		prefix+c.name, c.version)
	if c.repo != "" {
		fmt.Fprintf(&b, `,"repository":{"url":"https://github.com/%s","source":"github"}`, c.repo)
	}
	fmt.Fprintf(&b, `,"packages":%s`, c.packages)
	if c.bundle != "" {
		fmt.Fprintf(&b, `,"_meta":{%q:{%q:{"bundleUrl":%q,"bundleDigest":%q}}}`, registry.PublisherProvided, registry.AttestationMember,
			f.srv.URL+"/b/"+c.bundle, digestOf(f.bundles[c.digestOf]))
	}
	b.WriteString("}")
	return []byte(b.String())
}

// policyFile writes the policy in a directory of t's.
func (f *fixture) policyFile(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(f.policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) verifier(t testing.TB) *registry.Verifier {
	pf, err := policy.Read(f.policyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := registry.New(registry.Options{Policy: pf, HTTPClient: f.srv.Client(),
		// The fixture's bundles are served on 127.0.0.1.
		BundleAddresses: source.LoopbackAddresses})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// check runs list and compares each result of ours (named under prefix)
// with its case.
func check(t *testing.T, v *registry.Verifier, list func(func([]byte) error) error, prefix string, o registry.RunOptions) []*registry.Result {
	t.Helper()
	byName := map[string]entryCase{}
	for _, c := range entryCases() {
		byName[prefix+c.name] = c
	}
	var ours []*registry.Result
	o.Emit = func(r *registry.Result) error {
		if _, ok := byName[r.Name]; ok {
			ours = append(ours, r)
		}
		return nil
	}
	if _, err := v.Run(context.Background(), list, o); err != nil {
		t.Fatal(err)
	}
	for _, r := range ours {
		c := byName[r.Name]
		line, _ := json.Marshal(r)
		t.Logf("%s", line)
		if c.step == "" && (!r.Verified || len(r.Signers) != 1 || r.Signers[0].SourceRepository != "https://github.com/acme/notes") {
			t.Errorf("%s: want verified by acme/notes: %s", c.name, line)
		}
		if c.step != "" && (r.Verified || r.Step != c.step || r.Reason == "") {
			t.Errorf("%s: want a failure at step %s: %s", c.name, c.step, line)
		}
	}
	return ours
}

func TestVerifyDumpOnStack(t *testing.T) {
	f := stack(t)
	prefix := anonNS + "/dump-"
	var lines []string
	for _, c := range entryCases() {
		lines = append(lines, string(f.serverJSON(c, prefix)))
	}
	// One entry no policy server matches, and one that does not read.
	lines = append(lines, `{"name":"io.github.other/x","version":"1.0.0"}`, `{"name":"`+prefix+`broken","version":"1","version":"2"}`)
	path := filepath.Join(t.TempDir(), "entries.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	v := f.verifier(t)
	var all []*registry.Result
	var dump strings.Builder
	d := registry.NewDumpWriter(&dump) // what passes, as a dump (RunOptions.Verified)
	sum, err := v.Run(context.Background(), registry.List(context.Background(), path, registry.Client{}, nil), registry.RunOptions{
		Workers: 2, Verified: d, Emit: func(r *registry.Result) error { all = append(all, r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Entries != len(lines) || sum.Verified != 2 || sum.Unmatched != 1 || len(all) != len(lines) {
		t.Fatalf("summary %+v, %d results", sum, len(all))
	}
	// In the file's order, each as its case says.
	for i, c := range entryCases() {
		if all[i].Name != prefix+c.name {
			t.Fatalf("result %d is %s, want %s", i, all[i].Name, prefix+c.name)
		}
	}
	if r := all[len(all)-1]; r.Step != registry.StepEntry {
		t.Errorf("broken entry: %+v", r)
	}
	if r := all[len(all)-2]; r.Step != registry.StepPolicy {
		t.Errorf("unmatched entry: %+v", r)
	}
	check(t, v, registry.List(context.Background(), path, registry.Client{}, nil), prefix, registry.RunOptions{})

	// The passing entries as a dump, verified again: both pass.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err = v.Run(context.Background(), registry.List(context.Background(), "-", registry.Client{}, strings.NewReader(dump.String())), registry.RunOptions{})
	if err != nil || sum.Entries != 2 || sum.Verified != 2 {
		t.Fatalf("dump: %+v %v", sum, err)
	}

	// Shards partition the run: together they give its results.
	total := 0
	for i := range 3 {
		s, err := v.Run(context.Background(), registry.List(context.Background(), path, registry.Client{}, nil), registry.RunOptions{Shard: registry.Shard{I: i, N: 3}})
		if err != nil {
			t.Fatal(err)
		}
		total += s.Entries
		if s.Entries+s.OtherShards != len(lines) {
			t.Fatalf("shard %d: %+v", i, s)
		}
	}
	if total != len(lines) {
		t.Fatalf("shards verified %d entries, want %d", total, len(lines))
	}
}

// TestVerifyOfficialRegistry publishes the entries to the official
// registry server (scripts/registry-local) with mcp-publisher, then
// verifies the registry through its API.
func TestVerifyOfficialRegistry(t *testing.T) {
	reg := registrylocal.Require(t)
	f := stack(t)
	prefix := fmt.Sprintf("%s/r%d-", anonNS, time.Now().UnixNano())
	for _, c := range entryCases() {
		reg.Publish(t, f.serverJSON(c, prefix))
	}
	v := f.verifier(t)
	c := registry.Client{PageSize: 3} // several pages
	ours := check(t, v, registry.List(context.Background(), reg.URL, c, nil), prefix, registry.RunOptions{})
	if len(ours) != len(entryCases()) {
		t.Fatalf("%d of our %d entries listed", len(ours), len(entryCases()))
	}
	e, err := (&registry.Client{Base: reg.URL}).Version(context.Background(), prefix+"good", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Verify(context.Background(), e); !r.Verified {
		t.Fatalf("one version: %+v", r)
	}
}
