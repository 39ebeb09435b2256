package verify

import (
	"context"
	"errors"
	"sync"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/trustroot"
)

// TrustSources say where the trusted material of a verification comes
// from: a Sigstore trusted root (a trusted_root.json file, or TUF) and the
// PEM files of an enterprise PKI (docs/TRUSTROOT.md).
type TrustSources struct {
	// Root says where the Sigstore trusted root comes from:
	// Root.TrustedRootPath, a trusted_root.json, or else TUF (Root.CacheDir,
	// Root.Mirror, and Root.Offline, which never fetches).
	Root trustroot.Options
	// CARoots and CAIntermediates are PEM files of enterprise root and
	// intermediate CA certificates, for MethodCertificate only
	// (trustroot.LoadPKIFiles); CAIntermediates may be "".
	CARoots         string
	CAIntermediates string
}

// Errors of LoadTrust, each the Kind of a *TrustError.
var (
	// ErrTrustedRoot: the trusted_root.json named by
	// TrustSources.Root.TrustedRootPath does not load.
	ErrTrustedRoot = errors.New("the trusted root does not load")
	// ErrNoTrustedRoot: the policy needs a Sigstore trusted root, none is
	// named, and TUF gives none (offline with nothing cached, or the
	// repository fails).
	ErrNoTrustedRoot = errors.New("no trusted root")
	// ErrNoCARoots: MethodCertificate without the enterprise roots.
	ErrNoCARoots = errors.New("the certificate method needs the enterprise root certificates")
	// ErrCARoots: the enterprise root or intermediate certificates do not
	// load (trustroot.LoadPKI says why).
	ErrCARoots = errors.New("the enterprise CA certificates do not load")
	// ErrCAsUnused: enterprise CA certificates given for a method other
	// than MethodCertificate, which alone uses them.
	ErrCAsUnused = errors.New("enterprise CA certificates are only for the certificate method")
)

// TrustError is a failure of LoadTrust: Kind is one of its sentinel errors
// (ErrTrustedRoot, ErrNoTrustedRoot, ErrNoCARoots, ErrCARoots,
// ErrCAsUnused) and Err the cause, if any. errors.Is matches both.
type TrustError struct {
	Kind error
	Err  error
}

func (e *TrustError) Error() string {
	if e.Err == nil {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Err.Error()
}

func (e *TrustError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// LoadTrust loads what policy p trusts, for New: the Sigstore trusted root
// when the method needs one (MethodSigstore always; MethodKey and
// MethodCertificate when p requires a log entry or a timestamp) or when
// src names one, and the enterprise CAs of src for MethodCertificate.
//
// The material is wrapped in trustroot.WithChainCache: it verifies each
// constant chain on first use only, so one verification costs no more than
// without it, and a host that verifies again (a proxy's roll-forward, many
// bundles) reuses the work. Every per-bundle check still runs on every
// call. A failure is a *TrustError.
func LoadTrust(ctx context.Context, src TrustSources, p Policy) (Trust, error) {
	loadRoot := func(ctx context.Context, o trustroot.Options) (root.TrustedMaterial, error) {
		tm, err := trustroot.Load(ctx, o)
		if err != nil {
			return nil, err
		}
		return trustroot.WithChainCache(tm), nil
	}
	loadPKI := func(roots, intermediates string) (root.TrustedMaterial, error) {
		tm, err := trustroot.LoadPKIFiles(roots, intermediates)
		if err != nil {
			return nil, err
		}
		return trustroot.WithChainCache(tm), nil
	}
	return loadTrust(ctx, src, p, loadRoot, loadPKI)
}

// loadTrust is LoadTrust with the loaders of the material (each returns
// it wrapped in its chain cache).

func loadTrust(ctx context.Context, src TrustSources, p Policy,
	loadRoot func(context.Context, trustroot.Options) (root.TrustedMaterial, error),
	loadPKI func(roots, intermediates string) (root.TrustedMaterial, error)) (Trust, error) {
	var tr Trust
	needRoot := p.Method == MethodSigstore || p.RequireTlog || p.RequireTimestamp
	if src.Root.TrustedRootPath != "" || needRoot {
		tm, err := loadRoot(ctx, src.Root)
		if err != nil {
			if src.Root.TrustedRootPath != "" {
				return tr, &TrustError{Kind: ErrTrustedRoot, Err: err}
			}
			return tr, &TrustError{Kind: ErrNoTrustedRoot, Err: err}
		}
		tr.Sigstore = tm
	}
	if p.Method == MethodCertificate {
		if src.CARoots == "" {
			return tr, &TrustError{Kind: ErrNoCARoots}
		}
		pki, err := loadPKI(src.CARoots, src.CAIntermediates)
		if err != nil {
			return tr, &TrustError{Kind: ErrCARoots, Err: err}
		}
		tr.CertificateAuthorities = pki.FulcioCertificateAuthorities()
	} else if src.CARoots != "" || src.CAIntermediates != "" {
		return tr, &TrustError{Kind: ErrCAsUnused}
	}
	return tr, nil
}

// TrustCache is LoadTrust that loads each trusted root and each set of
// enterprise CA files once and shares it, with its chain cache
// (trustroot.WithChainCache), between every Trust it returns: a host that
// verifies under many policies (many servers of a policy file, many
// registry entries) loads its trust once. Only successful loads are kept:
// a failure is tried again on the next call. The zero value is ready; it
// is safe for concurrent use, and concurrent first loads of one source
// load it once.
type TrustCache struct {
	mu    sync.Mutex
	roots map[rootKey]*cached[root.TrustedMaterial]
	pkis  map[[2]string]*cached[root.TrustedMaterial]
}

// rootKey is what names a trusted root among trustroot.Options (TUFRoot,
// the HTTP client and the timeout are the same for every call of a host).
type rootKey struct {
	path, signing, cache, mirror string
	offline, refresh             bool
}

type cached[T any] struct {
	mu   sync.Mutex
	done bool
	val  T
}

// get returns the value of c, loading it with load the first time (and
// again after a failure).
func (c *cached[T]) get(load func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.val, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.val, c.done = v, true
	return v, nil
}

func entry[K comparable, T any](mu *sync.Mutex, m *map[K]*cached[T], k K) *cached[T] {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[K]*cached[T]{}
	}
	c, ok := (*m)[k]
	if !ok {
		c = &cached[T]{}
		(*m)[k] = c
	}
	return c
}

// Load is LoadTrust, from the cache: the material of src is loaded on its
// first use only.
func (c *TrustCache) Load(ctx context.Context, src TrustSources, p Policy) (Trust, error) {
	loadRoot := func(ctx context.Context, o trustroot.Options) (root.TrustedMaterial, error) {
		k := rootKey{o.TrustedRootPath, o.SigningConfigPath, o.CacheDir, o.Mirror, o.Offline, o.Refresh}
		return entry(&c.mu, &c.roots, k).get(func() (root.TrustedMaterial, error) {
			tm, err := trustroot.Load(ctx, o)
			if err != nil {
				return nil, err
			}
			return trustroot.WithChainCache(tm), nil
		})
	}
	loadPKI := func(roots, intermediates string) (root.TrustedMaterial, error) {
		return entry(&c.mu, &c.pkis, [2]string{roots, intermediates}).get(func() (root.TrustedMaterial, error) {
			tm, err := trustroot.LoadPKIFiles(roots, intermediates)
			if err != nil {
				return nil, err
			}
			return trustroot.WithChainCache(tm), nil
		})
	}
	return loadTrust(ctx, src, p, loadRoot, loadPKI)
}
