package monitor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// TestStackMonitorRegistryReleased: a bundle signed on the stack's Rekor
// v2 log and listed by a registry for a watched server is released (no
// alert); one the registry lists only for a server not watched is not.
func TestStackMonitorRegistryReleased(t *testing.T) {
	s := newStackLog(t)
	watched := uniqueEmail(t, "publisher")
	m := s.matcher(t, watched)
	ctx := context.Background()
	res, _, err := s.run(t, ctx, s.url, m, nil, nil, nil)
	if err != nil || res.State == nil {
		t.Fatalf("first run: %+v %v", res, err)
	}
	state0 := res.State
	released, releasedIdx := s.sign(t, watched)
	rogue, rogueIdx := s.sign(t, watched)

	bundles := map[string][]byte{"/released.sigstore.json": released, "/rogue.sigstore.json": rogue}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := bundles[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	entry := func(name, path string) string {
		return `{"name":"` + name + `","version":"1.0.0","description":"d","_meta":{"` + registry.PublisherProvided + `":{"` +
			registry.AttestationMember + `":{"bundleUrl":"` + srv.URL + path + `","bundleDigest":"` + registry.PointerDigest(bundles[path]) + `"}}}}`
	}
	// An API page, as a registry dump holds it.
	page := `{"servers":[{"server":` + entry("io.github.acme/notes", "/released.sigstore.json") + `},{"server":` +
		entry("io.github.mallory/notes", "/rogue.sigstore.json") + `}],"metadata":{"count":2}}`
	src := filepath.Join(t.TempDir(), "registry.json")
	if err := os.WriteFile(src, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := s.released(t, watched)
	if n, err := ReleasedFromRegistry(ctx, rel, src, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client(), BundleAddresses: source.LoopbackAddresses}); err != nil || n != 1 {
		t.Fatalf("released from the registry: %d %v", n, err)
	}
	res, fs, err := s.run(t, ctx, s.url, m, rel, state0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Kind != KindUnreleased || fs[0].LogIndex != rogueIdx || res.Watched != 2 || res.Released != 1 {
		t.Fatalf("findings %+v, result %+v (released %d, rogue %d)", fs, res, releasedIdx, rogueIdx)
	}

	// Watch reads the registry before each run; a registry that fails
	// fails the run, and no state is written.
	statePath := filepath.Join(t.TempDir(), "state.json")
	if err := WriteState(statePath, state0); err != nil {
		t.Fatal(err)
	}
	fresh := s.released(t, watched)
	opts := Options{LogURL: s.url, TrustedMaterial: s.tr, Identities: m, Released: fresh}
	fromRegistry := func(src string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := ReleasedFromRegistry(ctx, fresh, src, []string{"io.github.acme/notes"}, RegistryOptions{HTTPClient: srv.Client(), BundleAddresses: source.LoopbackAddresses})
			return err
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	if _, err := Watch(ctx, opts, state0, WatchOptions{StatePath: statePath, BeforeRun: fromRegistry(missing)}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("a registry that cannot be read: %v", err)
	}
	if st, err := ReadState(statePath); err != nil || mustSize(t, st) != mustSize(t, state0) {
		t.Fatalf("state written after a failed registry: %v", err)
	}
	alerts, err := Watch(ctx, opts, state0, WatchOptions{StatePath: statePath, BeforeRun: fromRegistry(src)})
	if err != nil || alerts != 1 || fresh.Len() == 0 {
		t.Fatalf("watch: %d alerts, %d released digests, %v", alerts, fresh.Len(), err)
	}
}
