package actiontest

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/registry"
)

// TestActionRegistryHint: with registry-hint, the signing step writes the
// bundle's URL and digest into the server.json that mcp-publisher
// publishes, keeping its other bytes.
func TestActionRegistryHint(t *testing.T) {
	env := sigstack.Require(t)
	if env.OIDCTokenURL == "" {
		t.Skip("the stack cannot mint tokens (no SIGSTACK_OIDC_TOKEN_URL)")
	}
	orig := "{\n  \"name\": \"io.github.acme/notes-mcp\",\n  \"version\": \"1.2.0\",\n  \"description\": \"Notes\"\n}\n"
	const bundleURL = "https://github.com/acme/notes-mcp/releases/download/v1.2.0/notes.sigstore.json"
	sr := runOnStackWith(t, env, env.OIDCTokenURL, url.Values{"email": {"release-bot@example.com"}, "ttl": {"10m"}},
		map[string]string{"registry-hint": "server.json", "registry-bundle-url": bundleURL},
		map[string]string{"server.json": orig})
	got, err := os.ReadFile(filepath.Join(sr.ws, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), strings.TrimSuffix(orig, "\n}\n")+",\n  \"_meta\": ") {
		t.Fatalf("server.json:\n%s", got)
	}
	e, err := registry.ParseServer(got, registry.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := os.ReadFile(sr.res.Outputs["bundle-path"])
	if err != nil {
		t.Fatal(err)
	}
	want := registry.Pointer{URL: bundleURL, Digest: registry.PointerDigest(bundle)}
	if len(e.Pointers) != 1 || e.Pointers[0] != want || sr.res.Outputs["bundle-digest"] != want.Digest {
		t.Fatalf("pointers %+v, bundle-digest %q, want %+v", e.Pointers, sr.res.Outputs["bundle-digest"], want)
	}
}
