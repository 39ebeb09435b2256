package verify

import (
	"context"
	"errors"

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
	var tr Trust
	needRoot := p.Method == MethodSigstore || p.RequireTlog || p.RequireTimestamp
	if src.Root.TrustedRootPath != "" || needRoot {
		tm, err := trustroot.Load(ctx, src.Root)
		if err != nil {
			if src.Root.TrustedRootPath != "" {
				return tr, &TrustError{Kind: ErrTrustedRoot, Err: err}
			}
			return tr, &TrustError{Kind: ErrNoTrustedRoot, Err: err}
		}
		tr.Sigstore = trustroot.WithChainCache(tm)
	}
	if p.Method == MethodCertificate {
		if src.CARoots == "" {
			return tr, &TrustError{Kind: ErrNoCARoots}
		}
		pki, err := trustroot.LoadPKIFiles(src.CARoots, src.CAIntermediates)
		if err != nil {
			return tr, &TrustError{Kind: ErrCARoots, Err: err}
		}
		tr.CertificateAuthorities = trustroot.WithChainCache(pki).FulcioCertificateAuthorities()
	} else if src.CARoots != "" || src.CAIntermediates != "" {
		return tr, &TrustError{Kind: ErrCAsUnused}
	}
	return tr, nil
}
