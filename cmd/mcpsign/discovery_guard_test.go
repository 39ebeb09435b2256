package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/source"
)

// TestBundleFromServerGuarded: the bundle URL a server advertises
// (--bundle-from-server, and a policy's "server" bundle) is fetched only
// on the addresses the server's own host allows (docs/DISCOVERY.md "Where
// a bundle URL may point"): a remote server on a public host that names a
// bundle on 127.0.0.1 is refused before any request, with the flag that
// lifts it; --allow-private-bundles lifts it; a server on a loopback host
// may name loopback; a stdio server anything. The
// flags go through the command's own wiring (serveFromArgs,
// newBundleInput) to the one bundle fetcher.
func TestBundleFromServerGuarded(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int64
	bundles := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"mediaType":"not a bundle"}`))
	}))
	defer bundles.Close()
	snap := &digest.Snapshot{Advertised: []byte(`{"dev.mcpsign/attestation":{"bundleUrl":"` + bundles.URL + `/b.json"}}`)}
	for _, tt := range []struct {
		name         string
		args         []string
		dash         bool
		allowPrivate bool
		refused      bool
	}{
		{"public server, loopback bundle", []string{"https://mcp.example.com/mcp"}, false, false, true},
		{"server on a public IP", []string{"https://93.184.216.34/mcp"}, false, false, true},
		{"public server, --allow-private-bundles", []string{"https://mcp.example.com/mcp"}, false, true, false},
		{"loopback server", []string{"https://127.0.0.1:8443/mcp"}, false, false, false},
		{"localhost server", []string{"http://LOCALHOST:8080/mcp"}, false, false, false},
		{"private server", []string{"https://10.1.2.3/mcp"}, false, false, false},
		{"stdio server", []string{"--", "./server", "--stdio"}, true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cobra.Command{Run: func(*cobra.Command, []string) {}}
			args := tt.args
			if tt.dash {
				if err := cmd.ParseFlags(args); err != nil {
					t.Fatal(err)
				}
				args = cmd.Flags().Args()
			}
			f := &verifyFlags{}
			f.vo.BundleFromServer, f.vo.AllowPrivateBundles = true, tt.allowPrivate
			f.serveFromArgs(cmd, args)
			in, err := newBundleInput(&app{httpClient: bundles.Client()}, f)
			if err != nil {
				t.Fatal(err)
			}
			before := fetched.Load()
			_, err = in.Fresh(context.Background(), snap)
			requests := fetched.Load() - before
			if tt.refused {
				if !errors.Is(err, source.ErrAddressRefused) || requests != 0 {
					t.Fatalf("got %v (%d requests); want the address refused before any request", err, requests)
				}
				if msg := withFlagHint(err).Error(); !strings.Contains(msg, "--allow-private-bundles") {
					t.Errorf("the refusal does not name the flag that lifts it: %s", msg)
				}
				return
			}
			// Fetched; what was fetched is no bundle (the parse fails after).
			if errors.Is(err, source.ErrBundleFetch) || requests != 1 {
				t.Fatalf("got %v (%d requests); want the bundle fetched", err, requests)
			}
		})
	}
}

// TestProxyVerifyServedAddresses: mcpsign-proxy's verifier, 'mcpsign
// proxy-verify', is told the addresses the bundle URL the proxy's server
// advertises may be on, and reads them as the in-process proxy would.
func TestProxyVerifyServedAddresses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		server []string
		extra  []string
		want   source.AddressScope
	}{
		{[]string{"https://mcp.example.com/mcp"}, nil, source.PublicAddresses},
		{[]string{"http://127.0.0.1:8080/mcp"}, nil, source.LoopbackAddresses},
		{[]string{"https://10.0.0.2/mcp"}, nil, source.PrivateAddresses},
		{[]string{"./server", "--stdio"}, nil, source.AnyAddress},
		{[]string{"https://mcp.example.com/mcp"}, []string{"--allow-private-bundles"}, source.AnyAddress},
	} {
		var po options.ProxyOptions
		var f verifyFlags
		proxyCmd := &cobra.Command{Use: "proxy"}
		addProxyFlags(proxyCmd.Flags(), &po, &f)
		if err := proxyCmd.ParseFlags(append([]string{"--lock", "l.lock", "--bundle-from-server", "--key", "k.pub"}, tt.extra...)); err != nil {
			t.Fatal(err)
		}
		cfg := po.ProxyConfig()
		if err := cfg.SetServer(tt.server); err != nil {
			t.Fatal(err)
		}
		args := proxyVerifyArgs(proxyCmd.Flags(), cfg)
		// proxy-verify reads them as the hand-over runs it.
		verifier := newProxyVerifyCmd(&app{})
		if err := verifier.ParseFlags(args); err != nil {
			t.Fatalf("proxy-verify %v: %v", args, err)
		}
		served, _ := verifier.Flags().GetString(servedAddressesFlag)
		allow, _ := verifier.Flags().GetBool("allow-private-bundles")
		got, err := servedAddressesOf(served, allow)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%v %v: proxy-verify %v read %v, want %v", tt.server, tt.extra, args, got, tt.want)
		}
	}
}
