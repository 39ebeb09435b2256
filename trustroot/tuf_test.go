package trustroot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/tuf"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
	"github.com/mcpsign/mcpsign/internal/testkit/tuftest"
)

func productionRootJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(shareddata.Path(t, realRoot))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stagingRootJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(shareddata.Path(t, "real-bundles/trusted-roots/staging_trusted_root.sigstore-python.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTUFOnlineThenOffline(t *testing.T) {
	ctx := context.Background()
	repo := tuftest.NewRepo(t, map[string][]byte{
		TrustedRootTarget:   productionRootJSON(t),
		SigningConfigTarget: []byte(testSigningConfig),
	})
	cache := t.TempDir()
	opts := Options{CacheDir: cache, Mirror: repo.Server.URL, TUFRoot: repo.RootJSON(1)}

	tm, err := Load(ctx, opts)
	if err != nil {
		t.Fatalf("online: %v", err)
	}
	if len(tm.FulcioCertificateAuthorities()) != 2 {
		t.Errorf("online: %d CAs", len(tm.FulcioCertificateAuthorities()))
	}
	if repo.Requests.Load() == 0 {
		t.Fatal("online load made no request")
	}
	if _, err := LoadSigningConfig(ctx, opts); err != nil {
		t.Fatalf("signing config: %v", err)
	}

	// A recent cache is used without the network, online too.
	before := repo.Requests.Load()
	if _, err := Load(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if n := repo.Requests.Load() - before; n != 0 {
		t.Errorf("online load with a recent cache made %d requests", n)
	}
	// Refresh goes to the repository.
	if _, err := Load(ctx, Options{CacheDir: cache, Mirror: repo.Server.URL, Refresh: true}); err != nil {
		t.Fatalf("refresh (cached root): %v", err)
	}
	if repo.Requests.Load() == before {
		t.Error("refresh made no request")
	}

	// Offline: the server is gone, the cache is enough, no root needed.
	repo.Server.Close()
	off := Options{CacheDir: cache, Mirror: repo.Server.URL, Offline: true}
	if _, err := Load(ctx, off); err != nil {
		t.Fatalf("offline with a cache: %v", err)
	}
	if _, err := LoadSigningConfig(ctx, off); err != nil {
		t.Fatalf("offline signing config: %v", err)
	}
	// Online with the server gone and a refresh due: an error, not the
	// cache.
	_, err = Load(ctx, Options{CacheDir: cache, Mirror: repo.Server.URL, Refresh: true, Timeout: 5 * time.Second})
	if err == nil || errors.Is(err, ErrOffline) {
		t.Errorf("refresh from a dead mirror: %v, want a network error", err)
	}
}

const testSigningConfig = `{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json",
"caUrls":[{"url":"https://fulcio.example","majorApiVersion":1,"validFor":{"start":"2024-01-01T00:00:00Z"},"operator":"example"}],
"oidcUrls":[],"rekorTlogUrls":[],"rekorTlogConfig":{"selector":"ANY"},"tsaUrls":[],"tsaConfig":{"selector":"ANY"}}`

// TestTUFOfflineFailsClosed: offline, anything short of a complete,
// verified, unexpired cache is an ErrOffline error, and nothing is fetched.
func TestTUFOfflineFailsClosed(t *testing.T) {
	ctx := context.Background()
	repo := tuftest.NewRepo(t, map[string][]byte{TrustedRootTarget: productionRootJSON(t)})
	root1 := repo.RootJSON(1)

	populate := func(t *testing.T) string {
		cache := t.TempDir()
		if _, err := Load(ctx, Options{CacheDir: cache, Mirror: repo.Server.URL, TUFRoot: root1}); err != nil {
			t.Fatal(err)
		}
		return cache
	}
	mirrorDir := func(cache string) string { return filepath.Join(cache, tuf.URLToPath(repo.Server.URL)) }

	cases := []struct {
		name   string
		mutate func(t *testing.T, cache string)
	}{
		{"empty cache", func(t *testing.T, cache string) {
			if err := os.RemoveAll(mirrorDir(cache)); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired timestamp", func(t *testing.T, cache string) {
			b := repo.SignTimestamp(time.Now().Add(-time.Minute))
			repo.SignTimestamp(time.Now().Add(time.Hour)) // the repository stays valid
			if err := os.WriteFile(filepath.Join(mirrorDir(cache), "timestamp.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"timestamp with a broken signature", func(t *testing.T, cache string) {
			path := filepath.Join(mirrorDir(cache), "timestamp.json")
			b, _ := os.ReadFile(path)
			// Change the version the signature covers.
			b = []byte(strings.Replace(string(b), `"version": `, `"version": 9`, 1))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"tampered targets metadata", func(t *testing.T, cache string) {
			path := filepath.Join(mirrorDir(cache), "targets.json")
			b, _ := os.ReadFile(path)
			b = []byte(strings.Replace(string(b), `"length": `, `"length": 1`, 1))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"tampered cached target", func(t *testing.T, cache string) {
			matches, _ := filepath.Glob(filepath.Join(mirrorDir(cache), "targets", "*"+TrustedRootTarget))
			if len(matches) != 1 {
				t.Fatalf("cached targets: %v", matches)
			}
			b, _ := os.ReadFile(matches[0])
			b = []byte(strings.Replace(string(b), "sigstore", "sigst0re", 1))
			if err := os.WriteFile(matches[0], b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing cached target", func(t *testing.T, cache string) {
			if err := os.RemoveAll(filepath.Join(mirrorDir(cache), "targets")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cache := populate(t)
			tc.mutate(t, cache)
			before := repo.Requests.Load()
			_, err := Load(ctx, Options{CacheDir: cache, Mirror: repo.Server.URL, TUFRoot: root1, Offline: true})
			if !errors.Is(err, ErrOffline) {
				t.Errorf("offline: err = %v, want ErrOffline", err)
			}
			if n := repo.Requests.Load() - before; n != 0 {
				t.Errorf("offline made %d requests", n)
			}
		})
	}

	t.Run("public-good, nothing cached", func(t *testing.T) {
		cache := t.TempDir()
		_, err := Load(ctx, Options{CacheDir: cache, Offline: true})
		if !errors.Is(err, ErrOffline) {
			t.Errorf("err = %v, want ErrOffline", err)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("offline failure wrote to the cache: %v", entries)
		}
	})
	t.Run("unknown mirror without a TUF root", func(t *testing.T) {
		_, err := Load(ctx, Options{CacheDir: t.TempDir(), Mirror: repo.Server.URL})
		if err == nil || !strings.Contains(err.Error(), "no TUF root") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestTUFUpdateAndRotation: a new target and a root rotation reach the
// cache online; offline then starts from the cached (rotated) root even
// when given the original one.
func TestTUFUpdateAndRotation(t *testing.T) {
	ctx := context.Background()
	repo := tuftest.NewRepo(t, map[string][]byte{TrustedRootTarget: productionRootJSON(t)})
	root1 := repo.RootJSON(1)
	cache := t.TempDir()
	opts := Options{CacheDir: cache, Mirror: repo.Server.URL, TUFRoot: root1}
	if _, err := Load(ctx, opts); err != nil {
		t.Fatal(err)
	}

	// Rotate the root and timestamp keys (root v2 signed by old and new
	// root keys) and publish the staging trusted root.
	oldRoot := repo.Keys["root"]
	repo.NewKey("root")
	repo.NewKey("timestamp")
	repo.Root.Signed.Version = 2
	repo.WriteRoot(oldRoot)
	repo.Files[TrustedRootTarget] = stagingRootJSON(t)
	repo.Publish()

	opts.Refresh = true
	tr, err := LoadTrustedRoot(ctx, opts)
	if err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	staging, err := ParseTrustedRoot(stagingRootJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.RekorLogs()) != len(staging.RekorLogs()) {
		t.Errorf("did not get the updated target")
	}
	if v := rootVersion(mustRead(t, filepath.Join(cache, tuf.URLToPath(repo.Server.URL), "root.json"))); v != 2 {
		t.Errorf("cached root version %d, want 2", v)
	}
	repo.Server.Close()
	if _, err := Load(ctx, Options{CacheDir: cache, Mirror: repo.Server.URL, TUFRoot: root1, Offline: true}); err != nil {
		t.Errorf("offline after rotation, starting from root v1: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
