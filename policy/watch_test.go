package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

func TestWatchlist(t *testing.T) {
	dir := t.TempDir()
	key := newSigner(t, dir, "release")
	pub, err := trustroot.ReadPublicKeyFile(key.pem)
	if err != nil {
		t.Fatal(err)
	}
	kid, err := verify.KeyID(pub)
	if err != nil {
		t.Fatal(err)
	}
	const gh = "https://token.actions.githubusercontent.com"
	notes := verify.Identity{SAN: "https://github.com/acme/notes/.github/workflows/release.yml@refs/heads/main", Issuer: gh}
	regexp := verify.Identity{SANRegexp: "^https://github.com/acme/files/", IssuerRegexp: "^https://token\\.actions\\."}
	path := filepath.Join(dir, "policy.json")
	body := `{"kind":"mcpsign.policy","policyVersion":1,"servers":{
	  "notes":{"identities":[{"method":"sigstore","issuer":"` + gh + `","subject":"` + notes.SAN + `"}]},
	  "files":{"identities":[{"method":"sigstore","issuerRegexp":"^https://token\\.actions\\.","subjectRegexp":"^https://github.com/acme/files/"},
	                         {"method":"key","key":"release.pub.pem"}]},
	  "corp":{"identities":[{"method":"certificate","subject":"CN=release,O=Corp"}]},
	  "mixed":{"identities":[{"method":"certificate","subject":"CN=release,O=Corp"},{"method":"key","key":"release.pub.pem"}]},
	  "local":{"identities":[],"unsigned":"tofu"}
	}}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policy.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		names   []string
		ids     []verify.Identity
		keys    []string
		skipped []string // "server" or "server: identity"
		err     error
	}{
		{name: "one of two servers", names: []string{"notes"}, ids: []verify.Identity{notes}},
		{name: "regexp identity and key", names: []string{"files"}, ids: []verify.Identity{regexp}, keys: []string{kid}},
		{name: "two servers", names: []string{"notes", "files"}, ids: []verify.Identity{notes, regexp}, keys: []string{kid}},
		{name: "an unwatchable identity is skipped", names: []string{"mixed"}, keys: []string{kid},
			skipped: []string{"mixed: certificate subject CN=release,O=Corp"}},
		{name: "every server", ids: []verify.Identity{notes, regexp}, keys: []string{kid},
			skipped: []string{"corp: certificate subject CN=release,O=Corp", "corp", "mixed: certificate subject CN=release,O=Corp", "local"}},
		{name: "nothing to watch", names: []string{"corp", "local"}, err: policy.ErrNothingWatchable,
			skipped: []string{"corp: certificate subject CN=release,O=Corp", "corp", "local"}},
		{name: "unknown server", names: []string{"nope"}, err: policy.ErrNoServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := f.Watchlist(tt.names)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if w == nil {
				if tt.err != policy.ErrNoServer {
					t.Fatal("no watchlist")
				}
				return
			}
			if !slices.Equal(w.Identities, tt.ids) || !slices.Equal(w.KeyIDs, tt.keys) {
				t.Errorf("watched %+v %v, want %+v %v", w.Identities, w.KeyIDs, tt.ids, tt.keys)
			}
			var got []string
			for _, s := range w.Skipped {
				k := s.Server
				if s.Identity != "" {
					k += ": " + s.Identity
				}
				got = append(got, k)
				if !strings.Contains(s.String(), `"`+s.Server+`"`) || s.Reason == "" {
					t.Errorf("notice %q does not name the server", s)
				}
			}
			if !slices.Equal(got, tt.skipped) {
				t.Errorf("skipped %q, want %q", got, tt.skipped)
			}
		})
	}
}

// TestWatchlistRegistryNames: a policy that governs registry entries is
// watched as 'registry verify' reads it: a registry name's identities are
// watched, a namespace pattern whose signer is derived per entry is
// skipped, saying so; neither refuses the whole policy.
func TestWatchlistRegistryNames(t *testing.T) {
	const gh = "https://token.actions.githubusercontent.com"
	special := verify.Identity{SAN: "https://github.com/acme/special/.github/workflows/r.yml@refs/tags/v1", Issuer: gh}
	f, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{
 "io.github.acme/*":{"repositorySigner":{}},
 "io.github.acme/special":{"identities":[{"method":"sigstore","issuer":"`+gh+`","subject":"`+special.SAN+`"}]}}}`), "/etc/p.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Watchlist(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Identities, []verify.Identity{special}) || len(w.Skipped) != 1 || w.Skipped[0].Server != "io.github.acme/*" ||
		!strings.Contains(w.Skipped[0].Reason, "derived from a registry entry's repository") {
		t.Fatalf("%+v", w)
	}
	if _, err := f.Watchlist([]string{"io.github.acme/other"}); !errors.Is(err, policy.ErrNoServer) {
		t.Fatalf("a registry name the policy does not list: %v", err)
	}
}

// TestSkippedString: a skipped server names the identity left out when
// there is one, and only the server when the whole server is.
func TestSkippedString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    policy.Skipped
		want string
	}{
		{policy.Skipped{Server: "a", Reason: "it names no identity"}, `policy server "a" not watched: it names no identity`},
		{policy.Skipped{Server: "a", Identity: "certificate email e@example.com", Reason: "r"}, `policy server "a": certificate email e@example.com not watched: r`},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%q, want %q", got, tt.want)
		}
	}
}
