package verify

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// npmTarball writes an npm pack tarball of notes@1.0.0 in dir.
func npmTarball(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := `{"name":"notes","version":"1.0.0"}`
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "notes-1.0.0.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, buf.Bytes()
}

func TestPackageRequirementOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tgz, data := npmTarball(t, dir)
	sum := sha512.Sum512(data)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	tests := []struct {
		name     string
		req      func() (PackageRequirement, error)
		wantName string
		wantErr  bool
	}{
		{name: "file", req: func() (PackageRequirement, error) { return PackageFile(tgz) }, wantName: `"` + tgz + `" (pkg:npm/notes@1.0.0)`},
		{name: "missing file", req: func() (PackageRequirement, error) { return PackageFile(filepath.Join(dir, "none.tgz")) }, wantErr: true},
		{name: "integrity", req: func() (PackageRequirement, error) { return PackageIntegrity(integrity) }, wantName: `of integrity "` + integrity + `"`},
		{name: "malformed integrity", req: func() (PackageRequirement, error) { return PackageIntegrity("sha512-!!") }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.req()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("%+v, want an error", r)
				}
				return
			}
			if err != nil || r.Name != tt.wantName || r.Digests["sha512"] != hex.EncodeToString(sum[:]) {
				t.Fatalf("%+v, %v; want %s with the tarball's sha512", r, err, tt.wantName)
			}
		})
	}
}
