package monitor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// TestReleasedFromLoopbackRegistry: a registry on a loopback host may
// serve its entries' bundles beside it, as for `registry verify`
// (docs/REGISTRY.md "Bundle addresses"): the monitor's refresh fetches
// them with the default address scope, and no other loopback service is
// reached. On main the refresh refused its own registry's bundles (it did
// not use registry.NewFetcher).
func TestReleasedFromLoopbackRegistry(t *testing.T) {
	t.Parallel()
	w := newReleaseWorld(t)
	bundle := dsseBundle(t, w.r, w.a.tlogEntry(t, w.iR))
	var other atomic.Int32    // requests to the other service
	var withOther atomic.Bool // the page also lists a bundle on it
	service := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { other.Add(1) }))
	defer service.Close()
	var srv *httptest.Server
	bundleURL := "/b.sigstore.json"
	srv = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v0.1/servers":
			entry := func(name, url string) string {
				return `{"server":{"name":"` + name + `","version":"1.0.0","description":"d","_meta":{"` + registry.PublisherProvided + `":{"` +
					registry.AttestationMember + `":{"bundleUrl":"` + url + `","bundleDigest":"` + registry.PointerDigest(bundle) + `"}}}}}`
			}
			page := `{"servers":[` + entry("io.github.acme/notes", srv.URL+bundleURL)
			if withOther.Load() {
				page += "," + entry("io.github.acme/todo", service.URL+"/admin")
			}
			rw.Write([]byte(page + `],"metadata":{}}`))
		case bundleURL:
			rw.Write(bundle)
		default:
			http.NotFound(rw, r)
		}
	}))
	defer srv.Close()
	r, _ := NewReleased(w.check(t))
	n, err := ReleasedFromRegistry(context.Background(), r, srv.URL, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client()})
	if err != nil || n != 1 || r.Len() == 0 {
		t.Fatalf("the registry's own bundle: %d added, %v", n, err)
	}
	// Another loopback service: refused before any request.
	withOther.Store(true)
	r2, _ := NewReleased(w.check(t))
	_, err = ReleasedFromRegistry(context.Background(), r2, srv.URL, []string{"io.github.acme/*"}, RegistryOptions{HTTPClient: srv.Client()})
	if !errors.Is(err, source.ErrAddressRefused) || other.Load() != 0 {
		t.Fatalf("another loopback service: %v, %d requests", err, other.Load())
	}
}
