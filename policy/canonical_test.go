package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
)

// writeKey writes a fresh P-256 public key as PEM to dir/name (with a PEM
// header when header is set: another encoding of the same key) and returns
// its key ID and DER.
func writeKey(t *testing.T, dir, name string, der []byte, header bool) (string, []byte) {
	t.Helper()
	if der == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if der, err = x509.MarshalPKIXPublicKey(&k.PublicKey); err != nil {
			t.Fatal(err)
		}
	}
	b := &pem.Block{Type: "PUBLIC KEY", Bytes: der}
	if header {
		b.Headers = map[string]string{"Comment": "the same key, another encoding"}
	}
	if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o644); err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	id, err := evidence.KeyID(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id, der
}

// TestCanonicalForms: every list of the policy compares in one form; an
// entry in another spelling, or one that repeats another, is refused at
// its JSON Pointer.
func TestCanonicalForms(t *testing.T) {
	const kid = "sha256:1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"
	hex := strings.TrimPrefix(kid, "sha256:")
	sig := func(issuer, subject string) string {
		return `{"method":"sigstore","issuer":"` + issuer + `","subject":"` + subject + `"}`
	}
	tests := []struct {
		name, body string
		kind       error
		want       string // "" accepted
	}{
		{"revoked key id canonical", `"revoked":{"identities":["` + kid + `"]}`, nil, ""},
		{"revoked key id upper-case hex", `"revoked":{"identities":["sha256:` + strings.ToUpper(hex) + `"]}`, nil, `/revoked/identities/0: "sha256:1E6ED`},
		{"revoked key id without sha256:", `"revoked":{"identities":["` + hex + `"]}`, nil, `/revoked/identities/0: "1e6ed`},
		{"revoked key id SHA256:", `"revoked":{"identities":["SHA256:` + hex + `"]}`, nil, `/revoked/identities/0: "SHA256:`},
		{"revoked key id leading space", `"revoked":{"identities":[" ` + kid + `"]}`, ErrNotCanonical, `/revoked/identities/0`},
		{"revoked key id short", `"revoked":{"identities":["sha256:1e6e"]}`, nil, `/revoked/identities/0: "sha256:1e6e": want a key ID`},
		{"revoked key id sha256: alone", `"revoked":{"identities":["sha256:"]}`, nil, `/revoked/identities/0: "sha256:": want a key ID`},
		// 64 hex digits, each at an edge of a range isHex takes: a key ID
		// without its sha256:, refused whichever digit it holds.
		{"revoked identity of 64 characters, not hex", `"revoked":{"identities":["` + strings.Repeat("x", 52) + `@example.com"]}`, nil, ""},
		{"revoked key id of edge digits without sha256:", `"revoked":{"identities":["` + strings.Repeat("09afAF", 10) + `09af"]}`, nil, `/revoked/identities/0: "09afAF`},
		{"revoked identity trailing space", `"revoked":{"identities":["old@example.com "]}`, ErrNotCanonical, `/revoked/identities/0`},
		{"revoked identity control", `"revoked":{"identities":["old@example.com\n"]}`, ErrNotCanonical, `/revoked/identities/0`},
		{"revoked identity twice", `"revoked":{"identities":["old@example.com","Old@Example.com"]}`, ErrDuplicate, `/revoked/identities/1: duplicate: "Old@Example.com" repeats /revoked/identities/0`},
		{"revoked bundle twice", `"revoked":{"bundles":["` + kid + `","` + kid + `"]}`, ErrDuplicate, `/revoked/bundles/1`},
		{"revoked bundle upper", `"revoked":{"bundles":["sha256:` + strings.ToUpper(hex) + `"]}`, nil, `/revoked/bundles/0`},
		{"revoked definition SHA256:", `"revoked":{"definitions":["SHA256:` + hex + `"]}`, nil, `/revoked/definitions/0`},
		{"server names ex and EX", `"servers":{"ex":{"unsigned":"tofu"},"EX":{"unsigned":"tofu"}}`, ErrDuplicate, `/servers/EX: duplicate: server name "EX" equals "ex"`},
		{"server names one lock", `"servers":{"a":{"unsigned":"tofu","lock":"x.lock"},"b":{"unsigned":"tofu","lock":"./X.lock"}}`, ErrDuplicate, `/servers/b/lock`},
		{"same identity twice", `"servers":{"ex":{"identities":[` + sig("https://i.example", "a@example.com") + `,` + sig("https://i.example", "a@example.com") + `],"threshold":2}}`, ErrDuplicate, `/servers/ex/identities/1: duplicate: the same identity as /servers/ex/identities/0`},
		{"same key file twice", `"defaults":{"identities":[{"method":"key","key":"k.pem"},{"method":"key","key":"./k.pem"}]}`, ErrDuplicate, `/defaults/identities/1`},
		{"identity subject leading space", `"servers":{"ex":{"identities":[` + sig("https://i.example", " a@example.com") + `]}}`, ErrNotCanonical, `/servers/ex/identities/0/subject`},
		{"issuer upper-case host", `"servers":{"ex":{"identities":[` + sig("https://Token.Actions.GitHubUserContent.com", "a@example.com") + `]}}`, ErrNotCanonical, `/servers/ex/identities/0/issuer`},
		{"issuer upper-case scheme", `"servers":{"ex":{"identities":[` + sig("HTTPS://i.example", "a@example.com") + `]}}`, ErrNotCanonical, `/servers/ex/identities/0/issuer`},
		{"certificate email trailing space", `"servers":{"ex":{"identities":[{"method":"certificate","email":"r@example.com "}]}}`, ErrNotCanonical, `/servers/ex/identities/0/email`},
		{"two identities differing in case", `"servers":{"ex":{"identities":[` + sig("https://i.example", "a@example.com") + `,` + sig("https://i.example", "A@example.com") + `]}}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, `{`+base+`,`+tt.body+`}`)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrSyntax) || tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %v does not wrap ErrSyntax and %v", err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestRevokedSpellings: a revoked identity matches under case folding, so
// that a revocation errs towards refusing.
func TestRevokedSpellings(t *testing.T) {
	r := Revoked{Identities: []string{"old@example.com"}}
	for _, id := range []string{"old@example.com", "OLD@example.com"} {
		if r.Check(id, "", nil) == nil {
			t.Errorf("%q is not revoked", id)
		}
	}
	if r.Check("old@example.co", "", nil) != nil {
		t.Error("another identity is revoked")
	}
}

// TestLoadKeys: Read reads every key file; a missing or random one, or one
// key twice in two encodings, is refused at its JSON Pointer, naming the
// file.
func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	kidA, derA := writeKey(t, dir, "a.pem", nil, false)
	writeKey(t, dir, "a-again.pem", derA, true)
	writeKey(t, dir, "b.pem", nil, false)
	if err := os.WriteFile(filepath.Join(dir, "random.pem"), []byte("\x8f\x01 not a key \xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(ids string, threshold int) string {
		p := filepath.Join(dir, "policy.json")
		body := `{` + base + `,"servers":{"ex":{"identities":[` + ids + `],"threshold":` + string(rune('0'+threshold)) + `}}}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func(f string) string { return `{"method":"key","key":"` + f + `"}` }
	tests := []struct {
		name, ids string
		threshold int
		kind      error
		want      string
	}{
		{"two keys", key("a.pem") + "," + key("b.pem"), 2, nil, ""},
		{"missing key file", key("a.pem") + "," + key("gone.pem"), 1, ErrFile, "/servers/ex/identities/1/key: " + filepath.Join(dir, "gone.pem")},
		{"random bytes", key("random.pem"), 1, ErrFile, "/servers/ex/identities/0/key: " + filepath.Join(dir, "random.pem") + ": want a PEM public key"},
		{"one key in two PEM encodings", key("a.pem") + "," + key("a-again.pem"), 2, ErrDuplicate, "/servers/ex/identities/1/key: duplicate: " + filepath.Join(dir, "a-again.pem") + " is the same key as /servers/ex/identities/0 (key ID " + kidA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(write(tt.ids, tt.threshold))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				r, err := f.Resolve("ex", ResolveOptions{StateDir: dir})
				if err != nil || r.Identities[0].KeyID != kidA {
					t.Fatalf("key ID %v, %v", r, err)
				}
				return
			}
			if err == nil || !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: %v, want %v containing %q", err, tt.kind, tt.want)
			}
		})
	}
}

// TestCheckFiles: the trusted material a policy names is read by
// CheckFiles, which names the member and the file of one that is not.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ trust, want string }{
		{`{"trustedRoot":"gone.json"}`, "/trust/trustedRoot: " + filepath.Join(dir, "gone.json")},
		{`{"trustedRoot":"junk"}`, "/trust/trustedRoot: " + junk},
		{`{"caRoots":"junk"}`, "/trust/caRoots: "},
		{`{"caRoots":"junk","caIntermediates":"junk"}`, "/trust/caRoots and /trust/caIntermediates: "},
	} {
		f, err := Parse([]byte(`{`+base+`,"trust":`+tc.trust+`}`), filepath.Join(dir, "p.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.CheckFiles(); !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrFile with %q", tc.trust, err, tc.want)
		}
	}
	f, err := Parse([]byte(`{`+base+`}`), filepath.Join(dir, "p.json"))
	if err != nil || f.CheckFiles() != nil {
		t.Errorf("no trust: %v", err)
	}
}
