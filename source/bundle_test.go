package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestFetchBundle(t *testing.T) {
	body := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/b.json", func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/b.json", http.StatusFound) })
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/b.json", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat(" ", 2048))) })
	mux.HandleFunc("/bigchunked", func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			w.Write([]byte(strings.Repeat(" ", 512)))
			w.(http.Flusher).Flush()
		}
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	opts := BundleOptions{HTTPClient: srv.Client(), MaxBytes: 1024, Timeout: 5 * time.Second, Addresses: LoopbackAddresses}
	// The other server's certificate is httptest's too: trusted by the same client.
	tests := []struct {
		name, url, digest string
		wantErr           error
		wantText          string
		opts              *BundleOptions // nil: opts
	}{
		{name: "ok", url: srv.URL + "/b.json"},
		{name: "ok with digest", url: srv.URL + "/b.json", digest: sha(body)},
		{name: "same-origin redirect", url: srv.URL + "/same", digest: sha(body)},
		{name: "redirect elsewhere", url: srv.URL + "/elsewhere", wantErr: ErrBundleFetch, wantText: "another origin"},
		{name: "http", url: strings.Replace(srv.URL, "https:", "http:", 1) + "/b.json", wantErr: ErrBundleFetch, wantText: "not an https URL"},
		{name: "not found", url: srv.URL + "/nothing", wantErr: ErrBundleFetch, wantText: "404"},
		{name: "too large", url: srv.URL + "/big", wantErr: ErrBundleTooLarge, wantText: "larger than 1024"},
		{name: "too large, no length", url: srv.URL + "/bigchunked", wantErr: ErrBundleTooLarge, wantText: "larger than 1024"},
		{name: "digest mismatch", url: srv.URL + "/b.json", digest: sha([]byte("other")), wantErr: ErrBundleDigest, wantText: sha(body)},
		{name: "bad digest", url: srv.URL + "/b.json", digest: "sha256:zz", wantErr: ErrBundleFetch, wantText: "64 lowercase hex"},
		{name: "loopback refused by default", url: srv.URL + "/b.json", opts: &BundleOptions{HTTPClient: srv.Client()}, wantErr: ErrAddressRefused, wantText: "127.0.0.1 is a loopback address"},
		{name: "loopback by name refused by default", url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/b.json", opts: &BundleOptions{HTTPClient: srv.Client()}, wantErr: ErrAddressRefused, wantText: "loopback address"},
		{name: "any address", url: srv.URL + "/b.json", opts: &BundleOptions{HTTPClient: srv.Client(), Addresses: AnyAddress}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			if tt.opts != nil {
				o = *tt.opts
			}
			got, err := FetchBundle(context.Background(), tt.url, tt.digest, o)
			if tt.wantErr == nil {
				if err != nil || string(got) != string(body) {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %v, want %v with %q", err, tt.wantErr, tt.wantText)
			}
		})
	}
	// An untrusted certificate (the default client) is refused.
	if _, err := FetchBundle(context.Background(), srv.URL+"/b.json", "", BundleOptions{Timeout: 5 * time.Second, Addresses: LoopbackAddresses}); !errors.Is(err, ErrBundleFetch) || errors.Is(err, ErrAddressRefused) {
		t.Fatalf("untrusted certificate: %v", err)
	}
}

func TestAdvertisedBundle(t *testing.T) {
	body := []byte(`{"k":1}`)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	// The URL a server advertises is fetched on the addresses of Served,
	// not of Addresses (those of a URL the operator names).
	opts := BundleOptions{HTTPClient: srv.Client(), Addresses: PublicAddresses, Served: LoopbackAddresses}
	for _, tt := range []struct {
		name, adv string
		want      string
		wantErr   error
		opts      *BundleOptions
	}{
		{name: "url, served by a public server", adv: `{"dev.mcpsign/attestation":{"bundleUrl":"` + srv.URL + `/b"}}`, wantErr: ErrAddressRefused,
			opts: &BundleOptions{HTTPClient: srv.Client(), Addresses: AnyAddress, Served: PublicAddresses}},
		{name: "inline", adv: `{"dev.mcpsign/attestation":{"bundle":{"k":2}}}`, want: `{"k":2}`},
		{name: "url", adv: `{"dev.mcpsign/attestation":{"bundleUrl":"` + srv.URL + `/b","bundleDigest":"` + sha(body) + `"}}`, want: `{"k":1}`},
		{name: "none", adv: ``, wantErr: mcpwire.ErrNoAttestation},
		{name: "malformed", adv: `{"dev.mcpsign/attestation":{"bundle":[]}}`, wantErr: mcpwire.ErrAttestation},
		{name: "url digest mismatch", adv: `{"dev.mcpsign/attestation":{"bundleUrl":"` + srv.URL + `/b","bundleDigest":"` + sha(nil) + `"}}`, wantErr: ErrBundleDigest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			if tt.opts != nil {
				o = *tt.opts
			}
			got, err := AdvertisedBundle(context.Background(), &digest.Snapshot{Advertised: []byte(tt.adv)}, o)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v", got, err)
			}
		})
	}
}

// TestLoadAdvertised: a live server's advertised attestation rides beside
// the snapshot, from the member of the generation negotiated, over stdio
// and Streamable HTTP; a server that advertises none leaves it nil.
func TestLoadAdvertised(t *testing.T) {
	server := fixtures.BuildExampleServerNoRace(t)
	bundle := filepath.Join(t.TempDir(), "b.json")
	if err := os.WriteFile(bundle, []byte(`{"mediaType": "m"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stateless := fixtures.StartExampleHTTP(t, "", "--stateless", "--bundle", bundle)
	for _, tt := range []struct {
		name     string
		spec     Spec
		protocol string
		want     string // the inline bundle; "" none
	}{
		{"stdio, modern", Spec{Command: []string{server, "--bundle", bundle}}, ProtocolModern, `{"mediaType":"m"}`},
		{"stdio, initialize", Spec{Command: []string{server, "--bundle", bundle, "--protocol-versions", "2025-11-25"}}, "2025-11-25", `{"mediaType":"m"}`},
		{"http, modern", Spec{URL: stateless}, ProtocolModern, `{"mediaType":"m"}`},
		{"none", Spec{Command: []string{server}}, ProtocolModern, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Load(context.Background(), tt.spec, Options{Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if snap.ProtocolVersion != tt.protocol {
				t.Fatalf("protocol %s, want %s", snap.ProtocolVersion, tt.protocol)
			}
			got, err := AdvertisedBundle(context.Background(), snap, BundleOptions{})
			if tt.want == "" {
				if !errors.Is(err, mcpwire.ErrNoAttestation) || snap.Advertised != nil {
					t.Fatalf("advertised %s, %v; want none", snap.Advertised, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("bundle %s, %v; want %s", got, err, tt.want)
			}
			// Not in the snapshot file.
			data, err := snap.MarshalFile()
			if err != nil || strings.Contains(string(data), "attestation") {
				t.Fatalf("the snapshot file holds the hint: %v\n%s", err, data)
			}
		})
	}
}

// TestBundleFetcher: one fetcher, its connections reused, its byte cap
// given per fetch.
func TestBundleFetcher(t *testing.T) {
	body := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	f, err := NewBundleFetcher(BundleOptions{HTTPClient: srv.Client(), Addresses: LoopbackAddresses})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 5 {
		if got, err := f.Fetch(context.Background(), srv.URL+"/b", sha(body), 0); err != nil || string(got) != string(body) {
			t.Fatalf("got %q, %v", got, err)
		}
	}
	if _, err := f.Fetch(context.Background(), srv.URL+"/b", "", 10); !errors.Is(err, ErrBundleTooLarge) {
		t.Fatalf("capped at 10 bytes: %v", err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 6 fetches, want 1", n)
	}
	type notTransport struct{ http.RoundTripper }
	if _, err := NewBundleFetcher(BundleOptions{HTTPClient: &http.Client{Transport: notTransport{}}}); !errors.Is(err, ErrAddressRefused) || !errors.Is(err, ErrBundleFetch) {
		t.Fatalf("an unguardable transport: %v", err)
	}
}

// TestServedAddresses: the bundle URL a server advertises is fetched on
// the addresses the server's own host allows; a stdio server's, and any
// with allowPrivate, on every address.
func TestServedAddresses(t *testing.T) {
	for _, tt := range []struct {
		spec         Spec
		allowPrivate bool
		want         AddressScope
	}{
		{Spec{URL: "https://mcp.example.com/mcp"}, false, PublicAddresses},
		{Spec{URL: "https://93.184.216.34/mcp"}, false, PublicAddresses},
		{Spec{URL: "https://169.254.169.254/mcp"}, false, PublicAddresses},
		{Spec{URL: "http://127.0.0.1:8080/mcp"}, false, LoopbackAddresses},
		{Spec{URL: "http://LOCALHOST:8080/mcp"}, false, LoopbackAddresses},
		{Spec{URL: "https://[::1]/mcp"}, false, LoopbackAddresses},
		{Spec{URL: "https://10.0.0.7/mcp"}, false, PrivateAddresses},
		{Spec{URL: "https://mcp.example.com/mcp"}, true, AnyAddress},
		{Spec{Command: []string{"server"}}, false, AnyAddress},
		{Spec{File: "snap.json"}, false, PublicAddresses},
	} {
		if got := ServedAddresses(tt.spec, tt.allowPrivate); got != tt.want {
			t.Errorf("ServedAddresses(%+v, %v) = %v, want %v", tt.spec, tt.allowPrivate, got, tt.want)
		}
	}
}

// TestBundleURLRedacted: a bundle URL's query (a token) and user info never
// appear in an error (netguard.ShownURL, the one redaction of a parsed
// URL).
func TestBundleURLRedacted(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer srv.Close()
	opts := BundleOptions{HTTPClient: srv.Client(), Addresses: LoopbackAddresses, Timeout: 5 * time.Second}
	for _, u := range []string{
		srv.URL + "/b.json?token=S3CRET",
		strings.Replace(srv.URL, "https:", "http:", 1) + "/b.json?token=S3CRET",
	} {
		_, err := FetchBundle(context.Background(), u, "", opts)
		if err == nil || strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("FetchBundle(%s): %v: want an error without the query", u, err)
		}
	}
}
