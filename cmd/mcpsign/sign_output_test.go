package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
)

// TestSignOutputCheckedFirst: a bundle path that cannot be written is
// refused before any service is called (a keyless signature would spend a
// Fulcio certificate and a Rekor entry for nothing), and no temporary file
// name is shown.
func TestSignOutputCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	snap, _ := exampleSnapshot(t, dir)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	sc := signingConfig(t, t.TempDir(), srv.URL, srv.URL, srv.URL, 1, srv.URL+"/api/v1/timestamp")
	issuerKey, err := oidcissuer.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is, _ := oidcissuer.New("http://127.0.0.1:5556", issuerKey)
	token, _ := is.Mint(oidcissuer.Claims{Email: "alice@example.com"})
	root := newTestCA(t).trustedRoot(t, nil)

	existing := filepath.Join(dir, "exists.json")
	os.WriteFile(existing, []byte("keep"), 0o644)
	aDir := filepath.Join(dir, "adir")
	os.Mkdir(aDir, 0o755)
	readOnly := filepath.Join(dir, "ro")
	os.Mkdir(readOnly, 0o555)
	tests := []struct {
		name string
		out  string
		more []string
		want string
	}{
		{"missing directory", filepath.Join(dir, "nodir", "x.json"), nil, "no such directory " + filepath.Join(dir, "nodir")},
		{"a directory", aDir, nil, "is a directory"},
		{"a directory, --force", aDir, []string{"--force"}, "is a directory"},
		{"existing file", existing, nil, "--force"},
		{"read-only directory", filepath.Join(readOnly, "x.json"), nil, "cannot write in " + readOnly},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "read-only directory" && os.Geteuid() == 0 {
				t.Skip("root writes anywhere")
			}
			args := append([]string{"sign", "--signing-config", sc, "--trusted-root", root, "--identity-token", token, snap, "-o", tc.out}, tc.more...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q: %s", code, tc.want, stderr)
			}
			if strings.Contains(stderr, ".tmp-") {
				t.Errorf("a temporary file name is shown: %s", stderr)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("%d requests to the services before the output was checked", n)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Error("existing bundle changed")
	}
}
