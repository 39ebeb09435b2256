package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// DefaultBundleTimeout bounds fetching a bundle over HTTPS.
const DefaultBundleTimeout = 30 * time.Second

// Errors of fetching a bundle; test for them with errors.Is.
var (
	// ErrBundleFetch: a bundle URL could not be fetched (not https, a
	// redirect to another origin, a status other than 200, a transport
	// error).
	ErrBundleFetch = errors.New("fetching the bundle")
	// ErrBundleTooLarge: the bundle at a URL has more than
	// BundleOptions.MaxBytes bytes.
	ErrBundleTooLarge = boundedfile.ErrTooLarge
	// ErrBundleDigest: the bytes fetched do not have the digest the server
	// advertised beside the URL.
	ErrBundleDigest = errors.New("bundle digest mismatch")
)

// AddressScope says which addresses a bundle fetch may connect to
// (BundleOptions.Addresses): a bundle URL names a host the fetcher does
// not trust, and one on a loopback, private or link-local address (a
// cloud's metadata service at 169.254.169.254, a service of the internal
// network) would make the fetch a server-side request forgery. The
// address is checked when the connection is made, after the name is
// resolved (DNS rebinding cannot pass it), for every redirect too.
type AddressScope = netguard.Scope

// The address scopes.
const (
	// PublicAddresses: public unicast addresses only (the zero value):
	// not loopback, private, link-local, unspecified, multicast, shared,
	// documentation, benchmarking or reserved (netguard.IsPublic).
	PublicAddresses = netguard.Public
	// LoopbackAddresses: public ones and loopback (127.0.0.0/8, ::1).
	LoopbackAddresses = netguard.Loopback
	// PrivateAddresses: public, loopback and private ones (RFC 1918,
	// fc00::/7, 100.64.0.0/10), never link-local.
	PrivateAddresses = netguard.Private
	// AnyAddress: every address (a URL the operator gave, or a network
	// whose bundles are hosted on private addresses).
	AnyAddress = netguard.Any
)

// ErrAddressRefused: a bundle fetch would have connected to an address
// its AddressScope refuses. It is wrapped in ErrBundleFetch.
var ErrAddressRefused = netguard.ErrRefused

// BundleOptions tune [FetchBundle], [NewBundleFetcher] and
// [AdvertisedBundle]. The zero value is ready to use.
type BundleOptions struct {
	// HTTPClient is the base client (TLS roots, proxies); nil means
	// http.DefaultClient. Its redirect policy is replaced: a redirect is
	// followed only within the URL's origin. Unless Addresses is
	// AnyAddress its transport must be an *http.Transport (it is cloned,
	// with a dialer that checks each address).
	HTTPClient *http.Client
	// MaxBytes caps the bundle. Zero means boundedfile.MaxBundleBytes, the
	// cap of a bundle file.
	MaxBytes int64
	// Timeout bounds the fetch. Zero means DefaultBundleTimeout.
	Timeout time.Duration
	// Addresses are the addresses a fetch may connect to; the zero value,
	// PublicAddresses, refuses every address that is not public.
	Addresses AddressScope
	// Served are, in place of Addresses, the addresses the bundle URL a
	// server advertises may be fetched from ([AdvertisedBundle]): the
	// server chose that URL, not the operator. Set it with
	// [ServedAddresses]; the zero value, PublicAddresses, refuses every
	// address that is not public.
	Served AddressScope
}

// ServedAddresses is the address scope of fetching the bundle URL that the
// server of spec advertises (BundleOptions.Served, docs/DISCOVERY.md): every
// address for a stdio server (a process on this machine, which can reach
// them itself) or when allowPrivate; for a Streamable HTTP server, those
// its own host may send mcpsign to (netguard.ScopeOf: public addresses only
// for a server on a public address or name, loopback too for a server on a
// loopback host, private ones too for a server on a private address).
func ServedAddresses(spec Spec, allowPrivate bool) AddressScope {
	if allowPrivate || (spec.URL == "" && len(spec.Command) > 0) {
		return AnyAddress
	}
	u, err := url.Parse(spec.URL)
	if err != nil {
		return PublicAddresses
	}
	return netguard.ScopeOf(u.Hostname())
}

// BundleFetcher fetches bundles as FetchBundle does, with one client for
// all its fetches: its connections are reused, its address guard is built
// once. It is safe for concurrent use.
type BundleFetcher struct {
	o      BundleOptions
	client *http.Client
	// own is the transport the fetcher made (a guarded clone), closed by
	// Close; nil when it uses the base client's own.
	own http.RoundTripper
}

// NewBundleFetcher returns a fetcher with o. It fails (ErrBundleFetch,
// wrapping ErrAddressRefused) when o.Addresses asks for a guard that
// o.HTTPClient's transport cannot take.
func NewBundleFetcher(o BundleOptions) (*BundleFetcher, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = boundedfile.MaxBundleBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultBundleTimeout
	}
	base := o.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	rt, err := netguard.Transport(base.Transport, o.Addresses)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	f := &BundleFetcher{o: o, client: &http.Client{Transport: rt, Jar: base.Jar, Timeout: o.Timeout, CheckRedirect: sameOrigin}}
	if o.Addresses != AnyAddress {
		f.own = rt
	}
	return f, nil
}

// sameOrigin follows a redirect only within the first request's origin,
// and at most 10.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if o := originOf(req.URL); o != originOf(via[0].URL) {
		return fmt.Errorf("redirect to another origin (%s) refused", o)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// Close closes the idle connections of the transport the fetcher made
// (never those of the base client's).
func (f *BundleFetcher) Close() {
	if t, ok := f.own.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// FetchBundle fetches a bundle from an https URL: at most o.MaxBytes bytes,
// a 200 answer, redirects only within the URL's origin, connections only
// to the addresses o.Addresses allows. When want is not empty
// ("sha256:<hex>"), the bytes must have that SHA-256. The bytes are only
// returned: verifying them is the caller's (they are untrusted). To fetch
// many, use one BundleFetcher.
func FetchBundle(ctx context.Context, rawURL, want string, o BundleOptions) ([]byte, error) {
	f, err := NewBundleFetcher(o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Fetch(ctx, rawURL, want, 0)
}

// Fetch fetches the bundle at rawURL as FetchBundle does, capped at
// maxBytes (zero or less: the fetcher's MaxBytes).
func (f *BundleFetcher) Fetch(ctx context.Context, rawURL, want string, maxBytes int64) ([]byte, error) {
	if err := mcpwire.CheckBundleURL(rawURL); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	if want != "" && !digest.ValidDigest(want) {
		return nil, fmt.Errorf("%w: digest %s is not sha256: and 64 lowercase hex digits", ErrBundleFetch, textsafe.RawQuote(want))
	}
	if maxBytes <= 0 {
		maxBytes = f.o.MaxBytes
	}
	u, _ := url.Parse(rawURL)
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBundleFetch, netguard.ShownURL(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: status %s", ErrBundleFetch, netguard.ShownURL(u), resp.Status)
	}
	if resp.ContentLength > maxBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, larger than %d bytes", netguard.ShownURL(u), ErrBundleTooLarge, resp.ContentLength, maxBytes)
	}
	data, err := boundedfile.ReadAll(resp.Body, netguard.ShownURL(u), maxBytes, ErrBundleTooLarge)
	if err != nil {
		if errors.Is(err, ErrBundleTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	if want != "" {
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("%w: %s has %s, the server advertised %s", ErrBundleDigest, netguard.ShownURL(u), got, want)
		}
	}
	return data, nil
}

// AdvertisedBundle returns the bundle that the server of snap advertised
// (snap.Advertised, read with mcpwire.AdvertisedAttestation): the inline
// bundle, or the one fetched from its URL with FetchBundle (its digest
// checked when advertised), on the addresses o.Served allows. A snapshot read from a file carries no
// advertisement: the error wraps mcpwire.ErrNoAttestation.
func AdvertisedBundle(ctx context.Context, snap *digest.Snapshot, o BundleOptions) ([]byte, error) {
	return ResolveAttestation(ctx, snap.Advertised, o)
}

// ResolveAttestation is AdvertisedBundle for the raw capability object that
// may carry the hint (mcpwire.Hello.Advertised).
func ResolveAttestation(ctx context.Context, advertised []byte, o BundleOptions) ([]byte, error) {
	a, err := mcpwire.AdvertisedAttestation(advertised)
	if err != nil {
		return nil, err
	}
	if a.Bundle != nil {
		return bytes.Clone(a.Bundle), nil
	}
	o.Addresses = o.Served
	return FetchBundle(ctx, a.URL, a.Digest, o)
}
