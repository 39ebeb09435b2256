package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/pin"
)

// TestCheckApproval: the lock in force must be one the policy would have
// approved: its method allowed, its signer listed; a record that cannot
// show what the policy requires is unproven.
func TestCheckApproval(t *testing.T) {
	dir := t.TempDir()
	kidA, _ := writeKey(t, dir, "a.pem", nil, false)
	kidB, _ := writeKey(t, dir, "b.pem", nil, false)
	const iss = "https://token.actions.githubusercontent.com"
	const san = "https://github.com/acme/notes/.github/workflows/release.yml@refs/tags/v1"
	body := `{` + base + `,"servers":{
	  "keyA":{"identities":[{"method":"key","key":"a.pem"}]},
	  "keyA-tofu":{"identities":[{"method":"key","key":"a.pem"}],"unsigned":"tofu"},
	  "keyA-manual":{"identities":[{"method":"key","key":"a.pem"}],"rollForward":"manual"},
	  "tofu":{"unsigned":"tofu"},
	  "two":{"identities":[{"method":"key","key":"a.pem"},{"method":"key","key":"b.pem"}],"threshold":2},
	  "keyless":{"identities":[{"method":"sigstore","issuer":"` + iss + `","subjectRegexp":"https://github\\.com/acme/notes/.*"}]},
	  "keyless-repo":{"identities":[{"method":"sigstore","issuer":"` + iss + `","subject":"` + san + `","sourceRepository":"acme/notes"}]},
	  "cert-dn":{"identities":[{"method":"certificate","subject":"CN=Release,O=Example"}]},
	  "cert-email":{"identities":[{"method":"certificate","email":"release@example.com"}]},
	  "cert-san":{"identities":[{"method":"certificate","san":"release@example.com"}]},
	  "cert-two":{"identities":[{"method":"certificate","email":"release@example.com","subject":"CN=Release,O=Example"}]},
	  "cert-issuer":{"identities":[{"method":"certificate","email":"release@example.com","issuer":"https://issuer.example"}]}
	}}`
	// The same certificate identity under a policy that revokes a key.
	revokesKey := `{` + base + `,"servers":{"cert-dn":{"identities":[{"method":"certificate","subject":"CN=Release,O=Example"}]}},
	  "revoked":{"identities":["` + kidB + `"]}}`
	p := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id string) pin.Approval { return pin.Approval{Method: evidence.MethodKey, Identity: id} }
	tests := []struct {
		server string
		a      pin.Approval
		want   string // "" passes, else the rule
	}{
		{"keyA", key(kidA), ""},
		{"keyA", key(kidB), RuleLockSignerUnlisted},
		{"keyA", pin.Approval{Method: MethodTOFU}, RuleLockMethodRefused},
		{"keyA", pin.Approval{Method: MethodManual}, RuleLockMethodRefused},
		{"keyA", pin.Approval{Method: evidence.MethodSigstore, Identity: san, Issuer: iss}, RuleLockSignerUnlisted},
		{"keyA", pin.Approval{Method: "pgp", Identity: kidA}, RuleLockMethodRefused},
		{"keyA-tofu", pin.Approval{Method: MethodTOFU}, ""},
		{"keyA-tofu", pin.Approval{Method: MethodManual}, ""},
		{"keyA-tofu", key(kidB), RuleLockSignerUnlisted},
		{"keyA-manual", pin.Approval{Method: MethodManual}, ""},
		{"keyA-manual", pin.Approval{Method: MethodTOFU}, RuleLockMethodRefused},
		{"tofu", pin.Approval{Method: MethodTOFU}, ""},
		{"tofu", key(kidA), RuleLockSignerUnlisted},
		{"two", key(kidA), RuleLockUnproven},
		{"two", key(kidB), RuleLockUnproven},
		{"two", key("sha256:" + strings.Repeat("0", 64)), RuleLockSignerUnlisted},
		{"keyless", pin.Approval{Method: evidence.MethodSigstore, Identity: san, Issuer: iss}, ""},
		{"keyless", pin.Approval{Method: evidence.MethodSigstore, Identity: san, Issuer: "https://accounts.google.com"}, RuleLockSignerUnlisted},
		{"keyless", pin.Approval{Method: evidence.MethodSigstore, Identity: "x" + san, Issuer: iss}, RuleLockSignerUnlisted},
		{"keyless-repo", pin.Approval{Method: evidence.MethodSigstore, Identity: san, Issuer: iss}, RuleLockUnproven},
		{"cert-dn", pin.Approval{Method: evidence.MethodCertificate, Identity: "CN=Release,O=Example"}, ""},
		{"cert-dn", pin.Approval{Method: evidence.MethodCertificate, Identity: "CN=Other,O=Example"}, RuleLockSignerUnlisted},
		{"cert-email", pin.Approval{Method: evidence.MethodCertificate, Identity: "release@example.com"}, ""},
		{"cert-san", pin.Approval{Method: evidence.MethodCertificate, Identity: "release@example.com"}, ""},
		{"cert-san", pin.Approval{Method: evidence.MethodCertificate, Identity: "other@example.com"}, RuleLockSignerUnlisted},
		{"cert-two", pin.Approval{Method: evidence.MethodCertificate, Identity: "release@example.com"}, RuleLockUnproven},
		{"cert-two", pin.Approval{Method: evidence.MethodCertificate, Identity: "other@example.com"}, RuleLockSignerUnlisted},
		{"cert-issuer", pin.Approval{Method: evidence.MethodCertificate, Identity: "release@example.com"}, RuleLockUnproven},
	}
	for _, tt := range tests {
		r, err := f.Resolve(tt.server, ResolveOptions{StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		err = r.CheckApproval(tt.a)
		var le *LockError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %+v: %v, want it to pass", tt.server, tt.a, err)
		case tt.want != "" && (!errors.As(err, &le) || le.Rule != tt.want):
			t.Errorf("%s %+v: %v, want %s", tt.server, tt.a, err, tt.want)
		}
	}
	// A refusal names the signer: its issuer, when it has one.
	for _, c := range []struct {
		server string
		a      pin.Approval
		want   string
	}{
		{"keyless", pin.Approval{Method: evidence.MethodSigstore, Identity: san, Issuer: "https://accounts.google.com"},
			`signed by sigstore "` + san + `" (issuer "https://accounts.google.com"), which none`},
		{"keyA", key(kidB), `signed by key "` + kidB + `", which none`},
	} {
		r, err := f.Resolve(c.server, ResolveOptions{StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CheckApproval(c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.server, err, c.want)
		}
	}
	rk, err := Parse([]byte(revokesKey), p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rk.Resolve("cert-dn", ResolveOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var le *LockError
	if err := r.CheckApproval(pin.Approval{Method: evidence.MethodCertificate, Identity: "CN=Release,O=Example"}); !errors.As(err, &le) || le.Rule != RuleLockUnproven {
		t.Errorf("a certificate lock under a policy revoking a key: %v, want %s", err, RuleLockUnproven)
	}
	// A File from Parse alone has not read its keys: a key lock is unproven.
	pf, err := Parse([]byte(body), p)
	if err != nil {
		t.Fatal(err)
	}
	r, err = pf.Resolve("keyA", ResolveOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckApproval(key(kidA)); err == nil || !strings.Contains(err.Error(), RuleLockUnproven) {
		t.Errorf("unread key: %v", err)
	}
}
