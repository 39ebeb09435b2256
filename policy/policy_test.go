package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/verify"
)

const base = `"kind":"mcpsign.policy","policyVersion":1`

func parse(t *testing.T, body string) (*File, error) {
	t.Helper()
	return Parse([]byte(body), "/etc/mcpsign/policy.json")
}

func TestParseRefusals(t *testing.T) {
	sig := `{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com","subject":"a@example.com"}`
	tests := []struct {
		name, body, want string
		unknown          bool
	}{
		{"not an object", `[]`, "not a JSON object", false},
		{"no kind", `{"policyVersion":1}`, `missing member "kind"`, false},
		{"wrong kind", `{"kind":"mcpsign.lock","policyVersion":1}`, `/kind: is "mcpsign.lock"`, false},
		{"no version", `{"kind":"mcpsign.policy"}`, `missing member "policyVersion"`, false},
		{"version 2", `{"kind":"mcpsign.policy","policyVersion":2}`, `/policyVersion: is "2"`, false},
		{"value of 40 bytes shown whole", `{"kind":"mcpsign.policy","policyVersion":` + strings.Repeat("1", 40) + `}`, `/policyVersion: is "` + strings.Repeat("1", 40) + `", want 1`, false},
		{"value over 40 bytes cut", `{"kind":"mcpsign.policy","policyVersion":` + strings.Repeat("1", 41) + `}`, `/policyVersion: is "` + strings.Repeat("1", 40) + `…", want 1`, false},
		{"version 1.0", `{"kind":"mcpsign.policy","policyVersion":1.0}`, `/policyVersion: is "1.0"`, false},
		{"repeated member", `{` + base + `,"kind":"mcpsign.policy"}`, `repeated member "kind"`, false},
		{"escaped repeat", `{` + base + `,"\u006bind":"mcpsign.policy"}`, `repeated member "kind"`, false},
		{"unknown top", `{` + base + `,"server":{}}`, `/: unknown member "server"`, true},
		{"case variant", `{` + base + `,"Servers":{}}`, `would be read as "servers"`, false},
		{"unknown server member", `{` + base + `,"servers":{"a":{"mdoe":"warn"}}}`, `/servers/a: unknown member "mdoe"`, true},
		{"unknown trust member", `{` + base + `,"trust":{"root":"x"}}`, `/trust: unknown member "root"`, true},
		{"unknown revoked member", `{` + base + `,"revoked":{"keys":[]}}`, `/revoked: unknown member "keys"`, true},
		{"bad name", `{` + base + `,"servers":{"../x":{}}}`, `invalid server name "../x"`, false},
		{"dot name", `{` + base + `,"servers":{".x":{}}}`, `invalid server name ".x"`, false},
		{"bad mode", `{` + base + `,"servers":{"a":{"mode":"off"}}}`, `/servers/a/mode: "off": want one of block, warn, audit`, false},
		{"bad unsigned", `{` + base + `,"defaults":{"unsigned":"allow"}}`, `/defaults/unsigned: "allow"`, false},
		{"bad rollForward", `{` + base + `,"defaults":{"rollForward":"auto"}}`, `/defaults/rollForward: "auto"`, false},
		{"lock in defaults", `{` + base + `,"defaults":{"lock":"x.lock"}}`, `/defaults/lock: a lock is per server`, false},
		{"empty string", `{` + base + `,"servers":{"a":{"audit":""}}}`, `/servers/a/audit: is empty`, false},
		{"threshold 0", `{` + base + `,"servers":{"a":{"threshold":0}}}`, `/servers/a/threshold: want an integer`, false},
		{"threshold 1.0", `{` + base + `,"servers":{"a":{"threshold":1.0}}}`, `/servers/a/threshold: want an integer`, false},
		{"threshold too high", `{` + base + `,"servers":{"a":{"identities":[` + sig + `],"threshold":2}}}`, `/servers/a/threshold: 2 of 1 identities`, false},
		{"require bad", `{` + base + `,"servers":{"a":{"require":["rekor"]}}}`, `/servers/a/require/0: "rekor"`, false},
		{"require repeated", `{` + base + `,"servers":{"a":{"require":["tlog","tlog"]}}}`, `/servers/a/require/1: "tlog" repeated`, false},
		{"bad age", `{` + base + `,"servers":{"a":{"maxBundleAge":"30d"}}}`, `/servers/a/maxBundleAge: "30d"`, false},
		{"negative age", `{` + base + `,"servers":{"a":{"maxBundleAge":"-1h"}}}`, `/servers/a/maxBundleAge: "-1h"`, false},
		{"string over the bound", `{` + base + `,"$comment":"` + strings.Repeat("x", 4097) + `"}`, `/$comment: longer than 4096 bytes`, false},
		{"identities over the bound", `{` + base + `,"defaults":{"identities":[` + keyIdentities(MaxIdentities+1) + `]}}`, `/defaults/identities: more than 32 elements`, false},
		{"servers over the bound", `{` + base + `,"servers":{` + tofuServers(MaxServers+1) + `}}`, `/servers: more than 1024 servers`, false},
		{"zero age", `{` + base + `,"servers":{"a":{"maxBundleAge":"0s"}}}`, `/servers/a/maxBundleAge: "0s": want a positive Go duration`, false},
		{"threshold over the bound", `{` + base + `,"defaults":{"threshold":33}}`, `/defaults/threshold: want an integer from 1 to 32, not "33"`, false},
		{"http bundle", `{` + base + `,"servers":{"a":{"bundle":"http://x/b.json"}}}`, `/servers/a/bundle: "http://x/b.json": a URL must be https://`, false},
		{"bad purl", `{` + base + `,"servers":{"a":{"package":"npm:x"}}}`, `/servers/a/package: "npm:x": want a purl`, false},
		{"no method", `{` + base + `,"servers":{"a":{"identities":[{"key":"k.pem"}]}}}`, `/servers/a/identities/0: missing member "method"`, false},
		{"bad method", `{` + base + `,"servers":{"a":{"identities":[{"method":"gpg"}]}}}`, `/servers/a/identities/0/method: "gpg"`, false},
		{"member of another method", `{` + base + `,"servers":{"a":{"identities":[{"method":"key","key":"k.pem","issuer":"x"}]}}}`, `/servers/a/identities/0: unknown member "issuer"`, true},
		{"key without key", `{` + base + `,"servers":{"a":{"identities":[{"method":"key"}]}}}`, `/servers/a/identities/0: missing member "key"`, false},
		{"sigstore without issuer", `{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","subject":"a@example.com"}]}}}`, `/servers/a/identities/0: `, false},
		{"sigstore both subject forms", `{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","issuer":"i","subject":"a","subjectRegexp":"a"}]}}}`, `not both`, false},
		{"bad regexp", `{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","issuer":"i","subjectRegexp":"("}]}}}`, `/servers/a/identities/0: identity regexp`, false},
		{"certificate nothing", `{` + base + `,"servers":{"a":{"identities":[{"method":"certificate"}]}}}`, `/servers/a/identities/0: `, false},
		{"certificate bad DN", `{` + base + `,"servers":{"a":{"identities":[{"method":"certificate","subject":"O=Example Corp, CN=x"}]}}}`, `certificate subject`, false},
		{"revoked bad digest", `{` + base + `,"revoked":{"bundles":["sha256:00"]}}`, `/revoked/bundles/0: "sha256:00"`, false},
		{"tuf and root", `{` + base + `,"trust":{"trustedRoot":"r.json","tuf":{}}}`, `/trust/tuf: give trustedRoot or tuf`, false},
		{"intermediates alone", `{` + base + `,"trust":{"caIntermediates":"i.pem"}}`, `/trust/caIntermediates: intermediates without caRoots`, false},
		{"tuf http mirror", `{` + base + `,"trust":{"tuf":{"mirror":"http://tuf"}}}`, `/trust/tuf/mirror`, false},
		{"trailing data", `{` + base + `} {}`, `unexpected data after the JSON object`, false},
		{"syntax error at the end", `{"kind":"mcpsign.policy"`, `line 1, column 25: expected ',' or '}'`, false},
		{"syntax error line", "{" + base + ",\n  \"servers\": {\n    \"a\": {\"mode\": \"warn\",}\n  }\n}", `line 3, column 26: expected a member name`, false},
		{"clientCapabilities null", `{` + base + `,"servers":{"a":{"clientCapabilities":null}}}`, `/servers/a/clientCapabilities: invalid client capabilities: want a JSON object, not "null"`, false},
		{"clientCapabilities array", `{` + base + `,"defaults":{"clientCapabilities":[]}}`, `/defaults/clientCapabilities: invalid client capabilities: want a JSON object, not "[]"`, false},
		{"clientCapabilities repeated", `{` + base + `,"servers":{"a":{"clientCapabilities":{"roots":{},"roots":{}}}}}`, `repeated member name "roots" at /roots`, false},
		{"clientCapabilities case variant", `{` + base + `,"servers":{"a":{"ClientCapabilities":{}}}}`, `would be read as "clientCapabilities"`, false},
		{"bad utf8", "{" + base + `,"$comment":"` + "\xff" + `"}`, `/$comment`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.body)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			if errors.Is(err, ErrUnknownMember) != tt.unknown {
				t.Errorf("error %v: wraps ErrUnknownMember = %v, want %v", err, !tt.unknown, tt.unknown)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestParseBounds: a value at the edge of what a member allows is read,
// and read as written (the refusals just past each edge are
// TestParseRefusals' rows).
func TestParseBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		ok         func(f *File) bool
	}{
		{"threshold at the bound, no identities to count", `{` + base + `,"defaults":{"threshold":32}}`,
			func(f *File) bool { return f.Defaults.Threshold != nil && *f.Defaults.Threshold == MaxIdentities }},
		{"require both, the most it takes", `{` + base + `,"defaults":{"require":["timestamp","tlog"]}}`,
			func(f *File) bool {
				return f.Defaults.RequireTlog != nil && *f.Defaults.RequireTlog && f.Defaults.RequireTimestamp != nil && *f.Defaults.RequireTimestamp
			}},
		{"identities at the bound, all of them required", `{` + base + `,"defaults":{"identities":[` + keyIdentities(MaxIdentities) + `],"threshold":32}}`,
			func(f *File) bool {
				return len(f.Defaults.Identities) == MaxIdentities && *f.Defaults.Threshold == MaxIdentities
			}},
		{"servers at the bound", `{` + base + `,"servers":{` + tofuServers(MaxServers) + `}}`,
			func(f *File) bool { return len(f.Names) == MaxServers }},
		{"string at the bound", `{` + base + `,"defaults":{"package":"pkg:npm/` + strings.Repeat("x", 4096-len("pkg:npm/")) + `"}}`,
			func(f *File) bool { return f.Defaults.Package != nil && len(*f.Defaults.Package) == 4096 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parse(t, tt.body)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok(f) {
				t.Errorf("read as %+v", f)
			}
		})
	}
}

// tofuServers is n servers, each pinned on first use, as a JSON object's
// members.
func tofuServers(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf(`"s%d":{"unsigned":"tofu"}`, i)
	}
	return strings.Join(s, ",")
}

// keyIdentities is n key identities, each its own key file, as a JSON
// array's elements.
func keyIdentities(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf(`{"method":"key","key":"k%d.pem"}`, i)
	}
	return strings.Join(ids, ",")
}

func TestResolve(t *testing.T) {
	f, err := parse(t, `{`+base+`,
	  "trust":{"trustedRoot":"trust/root.json","caRoots":"/abs/root.pem"},
	  "defaults":{"identities":[{"method":"key","key":"keys/org.pub.pem"}],"require":["tlog"],"mode":"warn","audit":"audit.jsonl","bundle":"server"},
	  "servers":{
	    "a":{},
	    "b":{"identities":[{"method":"key","key":"b.pem"},{"method":"sigstore","issuer":"https://i","subjectRegexp":"x.*","sourceRepository":"acme/b"}],
	         "threshold":2,"require":[],"maxBundleAge":"24h","bundle":"https://example.com/b.json","lock":"locks/b.lock","mode":"block","rollForward":"manual","package":"pkg:npm/b@1.0.0"},
	    "c":{"identities":[],"unsigned":"tofu","bundle":"c.sigstore.json"},
	    "d":{"identities":[]}
	  },
	  "revoked":{"identities":["old@example.com"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	opts := ResolveOptions{StateDir: "/state"}
	a, err := f.Resolve("a", opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.Trust.TrustedRoot != "/etc/mcpsign/trust/root.json" || a.Trust.CARoots != "/abs/root.pem" {
		t.Errorf("trust paths %+v", a.Trust)
	}
	if len(a.Identities) != 1 || a.Identities[0].Key != "/etc/mcpsign/keys/org.pub.pem" || a.Threshold != 1 ||
		!a.RequireTlog || a.Mode != ModeWarn || a.Audit != "/etc/mcpsign/audit.jsonl" || a.Bundle.Kind != BundleServer ||
		a.Lock != filepath.Join("/state", "a.mcpsign.lock") || a.Unsigned != UnsignedRefuse || a.RollForward != RollForwardSigned {
		t.Errorf("a resolved to %+v", a)
	}
	b, err := f.Resolve("b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Identities) != 2 || b.Threshold != 2 || b.RequireTlog || b.MaxBundleAge != 24*time.Hour ||
		b.Bundle != (Bundle{BundleURL, "https://example.com/b.json"}) || b.Lock != "/etc/mcpsign/locks/b.lock" ||
		b.Mode != ModeBlock || b.RollForward != RollForwardManual || b.Package != "pkg:npm/b@1.0.0" || b.Audit != "/etc/mcpsign/audit.jsonl" {
		t.Errorf("b resolved to %+v", b)
	}
	if got := b.Identities[1]; got.Method != verify.MethodSigstore || got.Identity.SANRegexp != "x.*" || got.Identity.GitHubWorkflowRepository != "acme/b" {
		t.Errorf("b identity %+v", got)
	}
	c, err := f.Resolve("c", opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Unsigned != UnsignedTOFU || c.Threshold != 0 || c.Bundle != (Bundle{BundleFile, "/etc/mcpsign/c.sigstore.json"}) {
		t.Errorf("c resolved to %+v", c)
	}
	if _, err := f.Resolve("d", opts); !errors.Is(err, ErrNoIdentity) || !strings.Contains(err.Error(), `add "identities" to servers.d`) {
		t.Errorf("d: %v, want ErrNoIdentity saying what to add", err)
	}
	// clientCapabilities: the server's own, else the defaults', else none.
	caps, err := parse(t, `{`+base+`,"defaults":{"identities":[],"unsigned":"tofu","clientCapabilities":{ "roots": {"listChanged": true} }},
	  "servers":{"own":{"clientCapabilities":{}},"inherits":{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"own": `{}`, "inherits": `{"roots":{"listChanged":true}}`} {
		r, err := caps.Resolve(name, opts)
		if err != nil || string(r.ClientCapabilities) != want {
			t.Errorf("%s: clientCapabilities %s (%v), want %s", name, r.ClientCapabilities, err, want)
		}
	}
	if a.ClientCapabilities != nil {
		t.Errorf("a: clientCapabilities %s, want none", a.ClientCapabilities)
	}
	if _, err := f.Resolve("e", opts); !errors.Is(err, ErrNoServer) {
		t.Errorf("e: %v, want ErrNoServer", err)
	}
	if _, err := f.Resolve("../a", opts); !errors.Is(err, ErrBadName) {
		t.Errorf("../a: %v, want ErrBadName", err)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg")
	if d, err := DefaultStateDir(); err != nil || d != filepath.Join("/xdg", "mcpsign", "locks") {
		t.Errorf("DefaultStateDir = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	if d, err := DefaultStateDir(); err != nil || strings.HasPrefix(d, "relative") {
		t.Errorf("a relative XDG_STATE_HOME was used: %q, %v", d, err)
	}
}

func TestRevokedCheck(t *testing.T) {
	const b1 = "sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"
	const d1 = "sha256:125c9a89488da8b035c4c3af19c353a02ebafc94ab6a2b54a58dbdd4409489ce"
	r := Revoked{Bundles: []string{b1}, Definitions: []string{d1}, Identities: []string{"old@example.com"}}
	tests := []struct {
		name, id, bundle string
		defs             []string
		want             *RevokedError
	}{
		{"clean", "new@example.com", "sha256:" + strings.Repeat("0", 64), []string{"sha256:" + strings.Repeat("1", 64)}, nil},
		{"bundle", "new@example.com", b1, nil, &RevokedError{"bundle", b1}},
		{"identity", "old@example.com", "", nil, &RevokedError{"identity", "old@example.com"}},
		{"definition", "", "", []string{"sha256:" + strings.Repeat("1", 64), d1}, &RevokedError{"definition", d1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Check(tt.id, tt.bundle, tt.defs)
			var re *RevokedError
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &re) || *re != *tt.want {
				t.Fatalf("Check = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{` + base + `}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"identities":[{"method":"key","key":"k.pem"}],"threshold":1,"mode":"warn"}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","issuer":"i","subjectRegexp":"("}]}}}`))
	f.Add([]byte(`{` + base + `,"revoked":{"bundles":["sha256:00"]},"trust":{"tuf":{"mirror":"https://x"}}}`))
	f.Add([]byte(`{` + base + `,"defaults":{"clientCapabilities":{"roots":{"listChanged":true}}},"servers":{"a":{"identities":[],"unsigned":"tofu","clientCapabilities":{}}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"clientCapabilities":[1e400]}}}`))
	// Canonical forms and duplicates (docs/POLICY.md "Canonical forms").
	f.Add([]byte(`{` + base + `,"servers":{"ex":{"unsigned":"tofu"},"EX":{"unsigned":"tofu"}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"unsigned":"tofu","lock":"l"},"b":{"unsigned":"tofu","lock":"L"}}}`))
	f.Add([]byte(`{` + base + `,"revoked":{"identities":["SHA256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"," x","a@b","A@B"]}}`))
	f.Add([]byte(`{` + base + `,"revoked":{"identities":["1E6ED65D77D6364EEAED5A745BA5C4985AE2B700DD85D7CF7F027BDF294A33FC"],"bundles":["sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc","sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"]}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"identities":[{"method":"key","key":"k"},{"method":"key","key":"./k"}],"threshold":2}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"identities":[{"method":"sigstore","issuer":"HTTPS://I.example","subject":"a\u0085"}]}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"com.example/*":{"repositorySigner":{"owner":"ex","repositories":["*"],"refs":["refs/tags/v*"],"triggers":["push"]}},"io.github.a/b":{"repositorySigner":{}}}}`))
	f.Add([]byte(`{` + base + `,"defaults":{"serverRequests":{"sampling":"deny","logging":"relay"}},"servers":{"a":{"unsigned":"tofu","serverRequests":{"roots":"deny"}}}}`))
	f.Add([]byte(`{` + base + `,"servers":{"a":{"identities":[{"method":"certificate","dns":" d","email":" e","san":" s"}],"mode":"x","threshold":0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "/p/policy.json")
		// The same file, the same error (never Go's map order).
		if _, again := Parse(data, "/p/policy.json"); fmt.Sprint(again) != fmt.Sprint(err) {
			t.Fatalf("parsed twice: %v, then %v", err, again)
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		for _, id := range p.Revoked.Identities {
			if !canonicalRevokedIdentity(id) || strings.TrimSpace(id) != id {
				t.Fatalf("accepted revoked identity %q", id)
			}
		}
		for i, n := range p.Names {
			if ValidServerName(n) != nil {
				t.Fatalf("accepted server name %q", n)
			}
			if rs := p.Servers[n].RepositorySigner; rs != nil && ValidRegistryName(n) && rs.checkOwner(n) != nil {
				t.Fatalf("server %q: accepted a repository signer with no owner: %+v", n, rs)
			}
			for _, o := range p.Names[:i] {
				if strings.EqualFold(o, n) {
					t.Fatalf("accepted server names %q and %q", o, n)
				}
			}
			ids := p.Servers[n].Identities
			for j := range ids {
				for _, o := range ids[:j] {
					if o.same(ids[j]) {
						t.Fatalf("server %q: accepted one identity twice: %+v", n, o)
					}
				}
			}
			r, err := p.resolveAny(n, ResolveOptions{StateDir: "/s"})
			if err != nil {
				continue
			}
			if ids := len(r.Identities) + r.RepositorySigner.count(); r.Threshold > ids || (ids > 0 && r.Threshold < 1) {
				t.Fatalf("threshold %d of %d", r.Threshold, ids)
			}
			for _, rule := range []ServerRequestRule{r.ServerRequests.Sampling, r.ServerRequests.Elicitation, r.ServerRequests.Roots, r.ServerRequests.Logging} {
				if rule != RuleRelay && rule != RuleDeny {
					t.Fatalf("server requests %+v", r.ServerRequests)
				}
			}
			if ValidRegistryName(n) {
				continue // no lock: a registry entry is verified, not run
			}
			if !filepath.IsAbs(r.Lock) {
				t.Fatalf("lock %q not absolute", r.Lock)
			}
		}
	})
}

// TestIdentityString: an identity as a report names it ('policy check',
// refusals): each member it was given, a regexp marked with "~", and none
// it was not.
func TestIdentityString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   Identity
		want string
	}{
		{Identity{Method: verify.MethodKey, Key: "/k.pem"}, "key /k.pem"},
		{Identity{Method: verify.MethodKey, Key: "/k.pem", KeyID: "sha256:ab"}, "key /k.pem (sha256:ab)"},
		{Identity{Method: verify.MethodSigstore, Identity: verify.Identity{Issuer: "https://i", SAN: "a@example.com"}},
			"sigstore issuer https://i subject a@example.com"},
		{Identity{Method: verify.MethodSigstore, Identity: verify.Identity{IssuerRegexp: "https://.*", SANRegexp: "a@.*",
			GitHubWorkflowRepository: "acme/a", GitHubWorkflowRef: "refs/tags/v1"}},
			"sigstore issuer ~https://.* subject ~a@.* repository acme/a ref refs/tags/v1"},
		{Identity{Method: verify.MethodCertificate, Identity: verify.Identity{Subject: "CN=x", SANRegexp: "x.*", Email: "e@example.com", URI: "https://u", DNS: "d.example"}},
			"certificate subject CN=x san ~x.* email e@example.com uri https://u dns d.example"},
		{Identity{Method: verify.MethodCertificate, Identity: verify.Identity{Email: "e@example.com"}}, "certificate email e@example.com"},
		{Identity{Method: verify.MethodCertificate}, "certificate "},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.id, got, tt.want)
		}
	}
}

// TestResolveNoServer: a name the policy does not list is refused with
// the names it does list.
func TestResolveNoServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ servers, want string }{
		{`{}`, `"x" (it lists no server)`},
		{`{"a":{"unsigned":"tofu"},"b":{"unsigned":"tofu"}}`, `"x" (it lists "a", "b")`},
	} {
		f, err := parse(t, `{`+base+`,"servers":`+tt.servers+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Resolve("x", ResolveOptions{StateDir: "/s"}); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrNoServer with %s", tt.servers, err, tt.want)
		}
	}
}
