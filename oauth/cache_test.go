package oauth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/nofollow"
)

// FuzzCache reads arbitrary token files: never a panic; what is taken is
// an mcpsign token file, anything else is an empty entry (a sign-in then
// replaces it).
func FuzzCache(f *testing.F) {
	f.Add([]byte(`{"kind":"mcpsign.oauth-token","cacheVersion":1,"server":"https://h/mcp","issuer":"https://as","client":{"clientId":"c","registration":"dynamic","redirectUri":"http://127.0.0.1:1/callback","tokenEndpoint":"https://as/token","authStyle":1},"token":{"access_token":"a","token_type":"Bearer","refresh_token":"r","expiry":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"kind":"mcpsign.oauth-token","cacheVersion":2}`))
	f.Add([]byte(`{"kind":"mcpsign.oauth-token","cacheVersion":1,"extra":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		var stderr bytes.Buffer
		tr, err := New(Options{ServerURL: "https://h/mcp", CacheDir: dir, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tr.path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := tr.read()
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind != "" && (e.Kind != cacheKind || e.CacheVersion != cacheVersion) {
			t.Fatalf("took a foreign file: %+v", e)
		}
		if strings.Count(stderr.String(), "\n") > 1 {
			t.Fatalf("more than one line: %q", stderr.String())
		}
	})
}

// FuzzScrub: a scrubbed message never holds the secret, and keeps the
// error's chain.
func FuzzScrub(f *testing.F) {
	f.Add("token endpoint said abcd1234 twice: abcd1234", "abcd1234")
	f.Add("]xyzxyz", "]xyz")
	f.Add("[redacted]", "dact")
	f.Add("short", "ab")
	f.Fuzz(func(t *testing.T, msg, secret string) {
		base := errors.New(msg)
		got := scrubbed(base, secret)
		if len(secret) >= 4 && strings.Contains(got.Error(), secret) {
			t.Fatalf("scrubbed %q still holds %q: %q", msg, secret, got.Error())
		}
		if !errors.Is(got, base) {
			t.Fatal("the chain is lost")
		}
	})
}

// FuzzShortText: a foreign message is one escaped line without a body.
func FuzzShortText(f *testing.F) {
	f.Add(`failed to decode successful registration response: EOF ({"client_secret":"s"})`)
	f.Add("registration failed with status 500 Internal Server Error: <html>")
	f.Add("line one\nline two")
	f.Fuzz(func(t *testing.T, s string) {
		got := shortText(s)
		if strings.ContainsAny(strings.ReplaceAll(got, `\u{`, ""), "\n\r{<") { // \u{…} is textsafe's escape
			t.Fatalf("shortText(%q) = %q", s, got)
		}
	})
}

// TestLockAndCacheModes: the cache directory is 0700, a token file 0600,
// and a lock file holds nothing.
func TestLockAndCacheModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	tr, err := New(Options{ServerURL: "https://h/mcp", CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.locked(context.Background(), func() error {
		return tr.save(&entry{Client: client{ID: "c", Secret: "s3cret-value"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, tr.path: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	if lock, err := os.ReadFile(tr.path + ".lock"); err != nil || len(lock) != 0 {
		t.Errorf("lock file: %q, %v", lock, err)
	}
}

// TestOpenBrowserRefuses what is not an http(s) URL with a host, before
// anything runs.
func TestOpenBrowserRefuses(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"file:///etc/passwd", "-x", "javascript:alert(1)", "https://", "ms-settings:"} {
		if err := OpenBrowser(context.Background(), u); err == nil {
			t.Errorf("OpenBrowser(%q) accepted", u)
		}
	}
}

// TestCacheDirThroughLink: a cache directory one of whose components is a
// symbolic link (a directory in a checked-out repository that links
// elsewhere) is refused before anything is read or created, with an error
// naming the component; the same directory by its own path is used.
func TestCacheDirThroughLink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	elsewhere := filepath.Join(base, "elsewhere")
	repo := filepath.Join(base, "repo")
	for _, d := range []string{elsewhere, repo} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(repo, ".cache")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	for _, tt := range []struct {
		name, dir string
		refused   bool
	}{
		{"a link in the middle", filepath.Join(link, "mcpsign", "oauth"), true},
		{"the directory a link", link, true},
		{"the target by its own path", filepath.Join(elsewhere, "mcpsign", "oauth"), false},
	} {
		tr, err := New(Options{ServerURL: "https://h/mcp", CacheDir: tt.dir})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tr.load(context.Background())
		if !tt.refused {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrCacheDir) || !errors.Is(err, nofollow.ErrSymlink) || !strings.Contains(err.Error(), link) {
			t.Errorf("%s: load = %v, want ErrCacheDir naming %s", tt.name, err, link)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("%s: %d files made through the link", tt.name, len(entries))
		}
	}
}
