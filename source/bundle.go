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
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/mcpwire"
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

// BundleOptions tune [FetchBundle] and [AdvertisedBundle]. The zero value
// is ready to use.
type BundleOptions struct {
	// HTTPClient is the base client (TLS roots, proxies); nil means
	// http.DefaultClient. Its redirect policy is replaced: a redirect is
	// followed only within the URL's origin.
	HTTPClient *http.Client
	// MaxBytes caps the bundle. Zero means boundedfile.MaxBundleBytes, the
	// cap of a bundle file.
	MaxBytes int64
	// Timeout bounds the fetch. Zero means DefaultBundleTimeout.
	Timeout time.Duration
}

// FetchBundle fetches a bundle from an https URL: at most o.MaxBytes bytes,
// a 200 answer, redirects only within the URL's origin. When want is not
// empty ("sha256:<hex>"), the bytes must have that SHA-256. The bytes are
// only returned: verifying them is the caller's (they are untrusted).
func FetchBundle(ctx context.Context, rawURL, want string, o BundleOptions) ([]byte, error) {
	if err := mcpwire.CheckBundleURL(rawURL); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	if want != "" && !digest.ValidDigest(want) {
		return nil, fmt.Errorf("%w: digest %q is not sha256: and 64 lowercase hex digits", ErrBundleFetch, textsafe.Escape(want))
	}
	u, _ := url.Parse(rawURL)
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
	origin := originOf(u)
	client := &http.Client{Transport: base.Transport, Jar: base.Jar, Timeout: o.Timeout}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if o := originOf(req.URL); o != origin {
			return fmt.Errorf("redirect to another origin (%s) refused", textsafe.Escape(o))
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBundleFetch, u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: status %s", ErrBundleFetch, u.Redacted(), textsafe.Escape(resp.Status))
	}
	if resp.ContentLength > o.MaxBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, larger than %d bytes", u.Redacted(), ErrBundleTooLarge, resp.ContentLength, o.MaxBytes)
	}
	data, err := boundedfile.ReadAll(resp.Body, u.Redacted(), o.MaxBytes, ErrBundleTooLarge)
	if err != nil {
		if errors.Is(err, ErrBundleTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrBundleFetch, err)
	}
	if want != "" {
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("%w: %s has %s, the server advertised %s", ErrBundleDigest, u.Redacted(), got, want)
		}
	}
	return data, nil
}

// AdvertisedBundle returns the bundle that the server of snap advertised
// (snap.Advertised, read with mcpwire.AdvertisedAttestation): the inline
// bundle, or the one fetched from its URL with FetchBundle (its digest
// checked when advertised). A snapshot read from a file carries no
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
	return FetchBundle(ctx, a.URL, a.Digest, o)
}
