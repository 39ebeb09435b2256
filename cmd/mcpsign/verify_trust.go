package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// verifyTrust loads what the verify commands trust: the Sigstore trusted
// root when the method needs one (sigstore always; key and certificate when
// the policy requires a log entry or timestamp, or --trusted-root is given)
// from --trusted-root or TUF (cached; --offline never fetches), and the
// enterprise CAs for the certificate method.
//
// The material is wrapped in trustroot.WithChainCache: it verifies each
// constant chain on first use only, so one verification costs no more than
// without it, and the proxy, which may verify again on a roll-forward,
// reuses the work. Every per-bundle check still runs on every call.
func verifyTrust(ctx context.Context, t *options.TrustOptions, p verify.Policy) (verify.Trust, error) {
	var tr verify.Trust
	needRoot := p.Method == verify.MethodSigstore || p.RequireTlog || p.RequireTimestamp
	if t.TrustedRoot != "" || needRoot {
		tm, err := trustroot.Load(ctx, t.TrustRootOptions())
		if err != nil {
			if t.TrustedRoot != "" {
				return tr, fmt.Errorf("--trusted-root: %w", err)
			}
			return tr, fmt.Errorf("no trusted root: %w (pass --trusted-root FILE, a Sigstore trusted_root.json, or run 'mcpsign trustroot fetch' while online)", err)
		}
		tr.Sigstore = trustroot.WithChainCache(tm)
	}
	if p.Method == verify.MethodCertificate {
		if t.CARoots == "" {
			return tr, errors.New("the certificate method needs the enterprise roots: pass --ca-roots FILE (PEM) and, if the bundle does not carry them, --ca-intermediates FILE")
		}
		pki, err := trustroot.LoadPKIFiles(t.CARoots, t.CAIntermediates)
		if err != nil {
			return tr, fmt.Errorf("--ca-roots/--ca-intermediates: %w", err)
		}
		tr.CertificateAuthorities = trustroot.WithChainCache(pki).FulcioCertificateAuthorities()
	} else if t.CARoots != "" || t.CAIntermediates != "" {
		return tr, fmt.Errorf("--ca-roots and --ca-intermediates are for 'mcpsign verify certificate', not the %s method", p.Method)
	}
	return tr, nil
}
