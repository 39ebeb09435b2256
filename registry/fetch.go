package registry

import (
	"context"
	"net"
	"net/url"
	"strings"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/source"
)

// Fetcher fetches the bundles a source's entries point at under the
// address rule of docs/REGISTRY.md ("Bundle addresses"): the addresses
// its options allow (public ones by default), and, when the source is a
// registry on a loopback host, that host and port (SourceHost) and no
// other loopback service.
type Fetcher struct {
	main, local *source.BundleFetcher
	host        string
}

// NewFetcher returns the Fetcher for the entries of src (a SOURCE as
// List takes), with o's client, bounds and address scope
// (source.PublicAddresses, the zero value, unless the operator allowed
// more); monitor's registry refresh fetches with it.
func NewFetcher(src string, o source.BundleOptions) (*Fetcher, error) {
	return newFetcher(SourceHost(src), o)
}

func newFetcher(host string, o source.BundleOptions) (*Fetcher, error) {
	m, err := source.NewBundleFetcher(o)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{main: m}
	if host != "" && o.Addresses < source.LoopbackAddresses {
		o.Addresses = source.LoopbackAddresses
		if f.local, err = source.NewBundleFetcher(o); err != nil {
			m.Close()
			return nil, err
		}
		f.host = host
	}
	return f, nil
}

// Fetch is source.BundleFetcher.Fetch by the rule above.
func (f *Fetcher) Fetch(ctx context.Context, rawURL, want string, maxBytes int64) ([]byte, error) {
	if u, err := url.Parse(rawURL); err == nil && f.local != nil && hostPort(u) == f.host {
		return f.local.Fetch(ctx, rawURL, want, maxBytes)
	}
	return f.main.Fetch(ctx, rawURL, want, maxBytes)
}

// Close releases the idle connections.
func (f *Fetcher) Close() {
	f.main.Close()
	if f.local != nil {
		f.local.Close()
	}
}

// SourceHost is the host:port of src when it is a registry URL on a
// loopback host (127.0.0.0/8, ::1, localhost), the port the scheme's
// default when it names none; "" otherwise. Its bundles may be fetched
// from that host and port (Options.SourceHost), a registry on this
// machine serving them beside it.
func SourceHost(src string) string {
	if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
		return ""
	}
	u, err := url.Parse(src)
	if err != nil || !netguard.IsLoopbackHost(u.Hostname()) {
		return ""
	}
	return hostPort(u)
}

// hostPort is u's host and port, the port the scheme's default when u
// names none, the host in lower case.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
