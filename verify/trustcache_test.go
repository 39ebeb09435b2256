package verify

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/trustroot"
)

// TestTrustCache loads one trusted root once for many concurrent callers
// and every method that needs it, and does not keep a failure.
func TestTrustCache(t *testing.T) {
	t.Parallel()
	path, err := filepath.Abs("../testdata/sigstore-conformance/bundle-with-sct-with-extensions/trusted_root.json")
	if err != nil {
		t.Fatal(err)
	}
	var c TrustCache
	src := TrustSources{Root: trustroot.Options{TrustedRootPath: path}}
	var wg sync.WaitGroup
	got := make([]Trust, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Policy{Method: MethodSigstore}
			if i%2 == 1 {
				p = Policy{Method: MethodKey, RequireTlog: true}
			}
			got[i], errs[i] = c.Load(context.Background(), src, p)
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("load %d: %v", i, errs[i])
		}
		if got[i].Sigstore != got[0].Sigstore {
			t.Fatalf("load %d has other material: the root was loaded again", i)
		}
	}
	// The same errors as LoadTrust, and a failure is not kept.
	missing := TrustSources{Root: trustroot.Options{TrustedRootPath: filepath.Join(t.TempDir(), "none.json")}}
	if _, err := c.Load(context.Background(), missing, Policy{Method: MethodSigstore}); !errors.Is(err, ErrTrustedRoot) {
		t.Fatalf("missing root: %v, want ErrTrustedRoot", err)
	}
	if _, err := c.Load(context.Background(), TrustSources{}, Policy{Method: MethodCertificate}); !errors.Is(err, ErrNoCARoots) {
		t.Fatalf("no CA roots: %v, want ErrNoCARoots", err)
	}
}
