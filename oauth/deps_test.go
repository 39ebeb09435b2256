package oauth_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinariesDoNotLinkTestServer: the authorization server of the tests
// (zitadel/oidc through internal/testkit/oauthtest) is a test dependency only.
func TestBinariesDoNotLinkTestServer(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "list", "-deps", "../cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/zitadel/") || dep == "github.com/mcpsign/mcpsign/internal/testkit/oauthtest" {
			t.Errorf("the binaries link %s", dep)
		}
	}
}
