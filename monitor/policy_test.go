package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/verify"
)

// TestSetupAddPolicy: a policy's watchable identities are added to what
// the Setup already watches, every unwatchable server is a notice (also
// when nothing is left to watch), and a policy that does not read adds
// nothing.
func TestSetupAddPolicy(t *testing.T) {
	t.Parallel()
	const gh = "https://token.actions.githubusercontent.com"
	notes := verify.Identity{SAN: "https://github.com/acme/notes/.github/workflows/release.yml@refs/heads/main", Issuer: gh}
	path := filepath.Join(t.TempDir(), "policy.json")
	body := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{
	  "notes":{"identities":[{"method":"sigstore","issuer":"` + gh + `","subject":"` + notes.SAN + `"}]},
	  "corp":{"identities":[{"method":"certificate","subject":"CN=release,O=Corp"}]}
	}}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	given := verify.Identity{SAN: "a@example.com", Issuer: "https://issuer.example"}
	for _, tc := range []struct {
		name    string
		path    string
		names   []string
		ids     []verify.Identity
		notices []string
		err     error
	}{
		{"every server", path, nil, []verify.Identity{given, notes}, []string{"corp: certificate subject CN=release,O=Corp", "corp"}, nil},
		{"one server", path, []string{"notes"}, []verify.Identity{given, notes}, nil, nil},
		{"nothing watchable", path, []string{"corp"}, []verify.Identity{given}, []string{"corp: certificate subject CN=release,O=Corp", "corp"}, policy.ErrNothingWatchable},
		{"unknown server", path, []string{"nope"}, []verify.Identity{given}, nil, policy.ErrNoServer},
		{"no policy file", path + ".missing", nil, []verify.Identity{given}, nil, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Setup{Identities: []verify.Identity{given}}
			var notices []string
			err := s.AddPolicy(tc.path, tc.names, func(sk policy.Skipped) {
				notices = append(notices, strings.TrimSuffix(sk.Server+": "+sk.Identity, ": "))
			})
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if !slices.Equal(s.Identities, tc.ids) || !slices.Equal(notices, tc.notices) {
				t.Errorf("identities %+v notices %q, want %+v %q", s.Identities, notices, tc.ids, tc.notices)
			}
		})
	}
}
