package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenArtifact(t *testing.T) {
	dir := t.TempDir()
	hexd := strings.Repeat("ab", 32)
	a, done, err := OpenArtifact("sha256:" + hexd)
	done()
	if err != nil || a.DigestAlgorithm != "sha256" || len(a.Digest) != 32 || a.Reader != nil {
		t.Errorf("digest: %+v %v", a, err)
	}
	if a, done, err := OpenArtifact("sha512:" + strings.Repeat("cd", 64)); err != nil || a.DigestAlgorithm != "sha512" {
		t.Errorf("sha512: %+v %v", a, err)
	} else {
		done()
	}
	// A file of that name wins over the digest reading.
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "sha256:"+hexd), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, done, err = OpenArtifact("sha256:" + hexd)
	if err != nil || a.Reader == nil {
		t.Errorf("file named like a digest: %+v %v", a, err)
	}
	done()
	for _, bad := range []string{"sha256:abc", "md5:" + strings.Repeat("a", 32), "nope"} {
		if _, _, err := OpenArtifact(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
