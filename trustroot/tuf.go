package trustroot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tuf"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// FetchTarget returns the verified contents of one target of the TUF
// repository opts name, through sigstore-go's TUF client and the cache:
//
//   - online (the default), the cached metadata is used when it is valid
//     and was updated less than DefaultCacheValidityDays ago (never with
//     opts.Refresh); otherwise the client updates it over the network, and
//     a network failure is an error (there is no silent fallback to an
//     older cache: pass Offline for that);
//   - with opts.Offline, nothing is fetched: the cached metadata must be
//     present, verify against the trusted TUF root and be unexpired, and
//     the target must be cached, or the error wraps ErrOffline.
func FetchTarget(ctx context.Context, opts Options, target string) ([]byte, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := newTUFClient(ctx, opts, timeout)
	if err != nil {
		return nil, err
	}
	data, err := c.GetTarget(target)
	if err != nil {
		if opts.Offline {
			return nil, fmt.Errorf("TUF target %s: %w: %w", target, ErrOffline, err)
		}
		return nil, fmt.Errorf("TUF target %s: %w", target, err)
	}
	return data, nil
}

// FetchTrustedRootJSON returns the trusted_root.json target of the TUF
// repository opts name (see FetchTarget), checked to parse.
func FetchTrustedRootJSON(ctx context.Context, opts Options) ([]byte, error) {
	data, err := FetchTarget(ctx, opts, TrustedRootTarget)
	if err != nil {
		return nil, err
	}
	if _, err := ParseTrustedRoot(data); err != nil {
		return nil, fmt.Errorf("TUF target %s: %w", TrustedRootTarget, err)
	}
	return data, nil
}

// FetchSigningConfigJSON returns the signing_config.v0.2.json target of the
// TUF repository opts name (see FetchTarget), checked to parse.
func FetchSigningConfigJSON(ctx context.Context, opts Options) ([]byte, error) {
	data, err := FetchTarget(ctx, opts, SigningConfigTarget)
	if err != nil {
		return nil, err
	}
	if _, err := root.NewSigningConfigFromJSON(data); err != nil {
		return nil, fmt.Errorf("TUF target %s: %w", SigningConfigTarget, err)
	}
	return data, nil
}

func mirrorOf(opts Options) string {
	if opts.Mirror != "" {
		return opts.Mirror
	}
	return tuf.DefaultMirror
}

func newTUFClient(ctx context.Context, opts Options, timeout time.Duration) (*tuf.Client, error) {
	mirror := mirrorOf(opts)
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	mirrorDir := filepath.Join(cacheDir, tuf.URLToPath(mirror))

	trustRoot := opts.TUFRoot
	if len(trustRoot) == 0 {
		switch mirror {
		case tuf.DefaultMirror:
			trustRoot = tuf.DefaultRoot()
		case tuf.StagingMirror:
			trustRoot = tuf.StagingRoot()
		}
	}
	// A root the client cached after verifying it (a key rotation since
	// the embedded one) is the better starting point.
	if cached, err := readCapped(filepath.Join(mirrorDir, "root.json"), metadataMaxBytes); err == nil {
		if len(trustRoot) == 0 || rootVersion(cached) > rootVersion(trustRoot) {
			trustRoot = cached
		}
	}
	if len(trustRoot) == 0 {
		return nil, fmt.Errorf("%w for %s: its root.json is needed once, to start from", ErrNoTUFRoot, mirror)
	}

	o := tuf.DefaultOptions()
	o.Root = trustRoot
	o.CachePath = cacheDir
	o.RepositoryBaseURL = mirror
	o.CacheValidity = DefaultCacheValidityDays
	if opts.Refresh {
		o.CacheValidity = tuf.NoCache
	}
	if opts.Offline {
		// Do not even create a cache: nothing usable is there.
		if _, err := os.Stat(filepath.Join(mirrorDir, "timestamp.json")); err != nil {
			return nil, fmt.Errorf("%w for %s in %s", ErrOffline, mirror, cacheDir) // the command says what to do
		}
		o.ForceCache = true
		o.CacheValidity = tuf.MaxCache
		o.Fetcher = offlineFetcher{}
	} else {
		client := opts.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: timeout}
		}
		o.Fetcher = &httpFetcher{ctx: ctx, client: client}
	}
	c, err := tuf.New(o)
	if err != nil {
		if opts.Offline {
			return nil, fmt.Errorf("%w for %s in %s (missing, expired or not verifiable): %w", ErrOffline, mirror, cacheDir, err)
		}
		return nil, fmt.Errorf("TUF update from %s: %w", mirror, err)
	}
	return c, nil
}

// metadataMaxBytes bounds a cached root.json read to pick the starting root
// (go-tuf's own default bound for root metadata).
const metadataMaxBytes = 512000

// rootVersion is the version of a TUF root.json, 0 when it does not parse.
// The choice only picks a starting point: the client verifies whatever it
// starts from against the repository.
func rootVersion(data []byte) int64 {
	var r struct {
		Signed struct {
			Type    string `json:"_type"`
			Version int64  `json:"version"`
		} `json:"signed"`
	}
	if json.Unmarshal(data, &r) != nil || r.Signed.Type != "root" {
		return 0
	}
	return r.Signed.Version
}

// offlineFetcher refuses every download.
type offlineFetcher struct{}

func (offlineFetcher) DownloadFile(urlPath string, _ int64, _ time.Duration) ([]byte, error) {
	return nil, fmt.Errorf("%w: refusing to fetch %s", ErrOffline, urlPath)
}

// httpFetcher downloads with a context and a size bound.
type httpFetcher struct {
	ctx    context.Context
	client *http.Client
}

func (f *httpFetcher) DownloadFile(urlPath string, maxLength int64, _ time.Duration) ([]byte, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, urlPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "mcpsign")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &metadata.ErrDownloadHTTP{StatusCode: resp.StatusCode, URL: urlPath}
	}
	if resp.ContentLength > maxLength {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("%s: %d bytes, more than %d", urlPath, resp.ContentLength, maxLength)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLength+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxLength {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("%s: more than %d bytes", urlPath, maxLength)}
	}
	return data, nil
}
