package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/source"
)

// ErrRegistrySource: a registry source given to ReleasedFromRegistry
// cannot be used (standard input, or no watched server names).
var ErrRegistrySource = errors.New("invalid released registry source")

// RegistryOptions configure ReleasedFromRegistry.
type RegistryOptions struct {
	// HTTPClient reads the registry API and fetches the bundles (TLS
	// roots); nil: http.DefaultClient.
	HTTPClient *http.Client
	// Limits bound the registry's pages and entries (registry.Limits).
	Limits registry.Limits
	// MaxBundleBytes caps one bundle; FetchTimeout bounds one fetch
	// (zero: source's defaults).
	MaxBundleBytes int64
	FetchTimeout   time.Duration
	// BundleAddresses are the addresses a bundle fetch may connect to, as
	// registry.Options.BundleAddresses: the zero value refuses every
	// non-public address but a loopback registry's own host and port
	// (registry.NewFetcher, docs/REGISTRY.md "Bundle addresses").
	BundleAddresses source.AddressScope
}

// ReleasedFromRegistry adds to r every bundle that the registry src lists
// for the servers names match (docs/MONITOR.md, "What was released"). src
// is what `mcpsign registry verify` reads: a registry base URL, or a file
// of server.json documents, API entries or pages (not standard input).
// names are registry server names or namespace patterns ("NS/*"), matched
// as a policy's registry names are (policy.File.MatchRegistry).
//
// Each bundle is fetched as registry verify fetches it (https only,
// bounded, only from the addresses o.BundleAddresses allows, its digest
// checked before anything parses it) and verified and added with
// r.AddBundle: being listed releases nothing by itself. A bundle that
// claims a watched signer and does not verify releases nothing and is kept
// in r as a KindUnverifiedRelease alert, one of a signer not watched as a
// KindUnwatchedRelease notice, which Run reports. A matching entry whose
// pointer does not read, or a bundle that cannot be fetched, does not have
// the listed digest or is not a bundle, is an error naming the entry and
// the URL: it is never skipped. An entry that lists no attestation adds
// nothing. It returns the number of bundles added.
func ReleasedFromRegistry(ctx context.Context, r *Released, src string, names []string, o RegistryOptions) (int, error) {
	if src == "-" {
		return 0, fmt.Errorf("%w: standard input is not a registry here: give a URL or a file", ErrRegistrySource)
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("%w: %s: no registry server names to watch", ErrRegistrySource, textsafe.RawQuote(src))
	}
	// The names as a policy's server names: one matcher for both.
	watched := &policy.File{Servers: map[string]policy.Server{}}
	for _, n := range names {
		if !policy.ValidRegistryName(n) {
			return 0, fmt.Errorf("%w: %s is not a registry server name (NAMESPACE/NAME) or namespace pattern (NAMESPACE/*)", ErrRegistrySource, textsafe.RawQuote(n))
		}
		watched.Servers[n] = policy.Server{}
	}
	fetcher, err := registry.NewFetcher(src, source.BundleOptions{HTTPClient: o.HTTPClient, MaxBytes: o.MaxBundleBytes, Timeout: o.FetchTimeout,
		Addresses: o.BundleAddresses})
	if err != nil {
		return 0, err
	}
	defer fetcher.Close()
	client := registry.Client{HTTPClient: o.HTTPClient, Limits: o.Limits}
	added := 0
	err = registry.List(ctx, src, client, nil)(func(raw []byte) error {
		e, err := registry.ParseEntry(raw, o.Limits)
		if e == nil {
			// No name: it cannot be told to be a watched server's. An
			// entry of theirs missed means more alerts, never fewer.
			return nil
		}
		if _, ok := watched.MatchRegistry(e.Name); !ok {
			return nil
		}
		what := textsafe.RawQuote(e.Name) + " version " + textsafe.RawQuote(e.Version)
		switch {
		case err != nil:
			return fmt.Errorf("registry entry %s: %w", what, err)
		case errors.Is(e.AttestationErr, registry.ErrNoAttestation):
			return nil
		case e.AttestationErr != nil:
			return fmt.Errorf("registry entry %s: %w", what, e.AttestationErr)
		}
		for _, p := range e.Pointers {
			b, err := fetcher.Fetch(ctx, p.URL, p.Digest, 0)
			if err == nil {
				err = r.AddBundle(ctx, b)
			}
			switch {
			case err == nil:
				added++
				continue
			case errors.Is(err, ErrUnverifiedRelease), errors.Is(err, ErrUnwatchedRelease):
				// Released nothing: said by each run, an alert when it
				// claims a watched signer (someone listed under the name
				// a bundle that would silence the monitor).
				fd := Finding{Kind: KindUnwatchedRelease, LogIndex: -1, Registry: src, Server: e.Name, Version: e.Version, Bundle: p.URL, Detail: err.Error()}
				if errors.Is(err, ErrUnverifiedRelease) {
					fd.Kind, fd.Alert = KindUnverifiedRelease, true
				}
				r.findings = append(r.findings, fd)
				continue
			}
			return fmt.Errorf("registry entry %s, bundle %s: %w", what, textsafe.RawQuote(p.URL), err)
		}
		return nil
	})
	if err != nil {
		return added, fmt.Errorf("released registry %s: %w", textsafe.RawQuote(src), err)
	}
	return added, nil
}

// RegistryRefresh returns a WatchOptions.BeforeRun that adds to r, before
// each run, what every registry of srcs lists now for the servers names
// match (ReleasedFromRegistry; the first error fails that run); the
// findings about bundles that released nothing are those of this read. It
// is nil when srcs is empty.
func RegistryRefresh(r *Released, srcs, names []string, o RegistryOptions) func(context.Context) error {
	if len(srcs) == 0 {
		return nil
	}
	return func(ctx context.Context) error {
		r.findings = nil
		for _, src := range srcs {
			if _, err := ReleasedFromRegistry(ctx, r, src, names, o); err != nil {
				return err
			}
		}
		return nil
	}
}
