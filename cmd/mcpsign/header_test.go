package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHeaderFromEnvironmentNeverShown: --header takes ${VAR} from the
// environment on every listing command, and the value appears in no
// output, lock, snapshot, audit line or error, whether the server takes it
// or refuses it.
func TestHeaderFromEnvironmentNeverShown(t *testing.T) {
	const secret = "tok-3f9c2e-never-printed"
	t.Setenv("MCPSIGN_TEST_TOKEN", secret)
	srv := mcp.NewServer(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Say hello."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	dir := t.TempDir()
	lock, snap, audit := filepath.Join(dir, "mcp.lock"), filepath.Join(dir, "snap.json"), filepath.Join(dir, "audit.log")
	header := "Authorization: Bearer ${MCPSIGN_TEST_TOKEN}"
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"digest", url, "--header", header}, 0, "sha256:"},
		{[]string{"snapshot", url, "-o", snap, "--header", header}, 0, ""},
		{[]string{"pin", url, "--lock", lock, "--tofu", "--audit-log", audit, "--header", header}, 0, ""},
		{[]string{"verify-pin", url, "--lock", lock, "--header", header}, 0, "matches the lock"},
		{[]string{"verify-pin", url, "--lock", lock, "--format", "json", "--header", header}, 0, ""},
		{[]string{"verify-pin", url, "--lock", lock}, 2, "401 Unauthorized"},
		{[]string{"verify-pin", url, "--lock", lock, "--header", "Authorization: Bearer wrong-" + secret}, 2, "401 Unauthorized"},
		{[]string{"verify-pin", url, "--lock", lock, "--header", "Authorization: Bearer ${MCPSIGN_UNSET_TOKEN}"}, 2, "MCPSIGN_UNSET_TOKEN is not set"},
	} {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tt.args[:1], code, tt.code, tt.want, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("%v shows the header value:\n%s%s", tt.args[:1], stdout, stderr)
		}
	}
	for _, f := range []string{lock, snap, audit} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), secret) || strings.Contains(string(data), "MCPSIGN_TEST_TOKEN") {
			t.Errorf("%s holds the header", filepath.Base(f))
		}
	}
}
