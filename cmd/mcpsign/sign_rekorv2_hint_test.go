package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignRekorV2AsV1: --rekor-url naming a Rekor v2 log without
// --rekor-version 2 is sent the Rekor v1 API, which a v2 log answers with
// 404: the error says it looks like a Rekor v2 log and what to pass.
func TestSignRekorV2AsV1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap, _ := exampleSnapshot(t, dir)
	ca := newTestCA(t)
	goodKey, _ := ca.issueFor(t, "good", ecKey(t), nil)
	caRoot := ca.trustedRoot(t, nil)
	// A Rekor v2 server: POST /api/v2/log/entries; everything else 404.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/log/entries" {
			http.Error(w, "unreachable in this test", http.StatusInternalServerError)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, c := range []struct {
		name    string
		version []string
		want    []string
		not     []string
	}{
		{"v1 by default", nil, []string{"Rekor at " + srv.URL, "404", "looks like a Rekor v2 log", "--rekor-version 2"}, nil},
		{"v1 named", []string{"--rekor-version", "1"}, []string{"looks like a Rekor v2 log", "--rekor-version 2"}, nil},
		{"v2", []string{"--rekor-version", "2"}, []string{"Rekor at " + srv.URL}, []string{"looks like a Rekor v2 log"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.sigstore.json")
			args := append([]string{"sign", "key", "--key", goodKey, "--tlog-upload", "--rekor-url", srv.URL, "--trusted-root", caRoot}, c.version...)
			code, _, stderr := runWith(t, nil, append(args, snap, "-o", out)...)
			if code == 0 {
				t.Fatal("signed")
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			for _, w := range c.not {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
		})
	}
}
