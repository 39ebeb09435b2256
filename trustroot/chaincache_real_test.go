package trustroot

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// verifyBoth runs one sigstore-go verification with the plain and the
// cached material and fails the test when they disagree. It returns the
// plain error.
func verifyBoth(t *testing.T, what string, plain, cached root.TrustedMaterial, opts []verify.VerifierOption, entity verify.SignedEntity, policy func() verify.PolicyBuilder) error {
	t.Helper()
	run := func(tm root.TrustedMaterial) (*verify.VerificationResult, error) {
		v, err := verify.NewVerifier(tm, opts...)
		if err != nil {
			return nil, err
		}
		return v.Verify(entity, policy())
	}
	pr, perr := run(plain)
	cr, cerr := run(cached)
	if (perr == nil) != (cerr == nil) {
		t.Errorf("%s: plain err=%v, cached err=%v", what, perr, cerr)
		return perr
	}
	if perr == nil {
		pj, _ := json.Marshal(pr)
		cj, _ := json.Marshal(cr)
		if string(pj) != string(cj) {
			t.Errorf("%s: results differ:\nplain  %s\ncached %s", what, pj, cj)
		}
	}
	return perr
}

var keylessOpts = []verify.VerifierOption{
	verify.WithSignedCertificateTimestamps(1),
	verify.WithTransparencyLog(1),
	verify.WithObserverTimestamps(1),
}

func digestPolicy(t *testing.T, san, issuer, digest string) func() verify.PolicyBuilder {
	alg, hexd, _ := strings.Cut(digest, ":")
	d, err := hex.DecodeString(hexd)
	if err != nil {
		t.Fatal(err)
	}
	return func() verify.PolicyBuilder {
		id, err := verify.NewShortCertificateIdentity(issuer, "", san, "")
		if err != nil {
			t.Fatal(err)
		}
		return verify.NewPolicy(verify.WithArtifactDigest(alg, d), verify.WithCertificateIdentity(id))
	}
}

// TestChainCacheRealBundles: every public-good bundle of the shared test
// data, with both production trusted roots, with its identity and with a
// wrong identity, issuer or digest: the cached material decides as the
// plain one, and the model-transparency bundles verify.
func TestChainCacheRealBundles(t *testing.T) {
	f, err := os.Open(shareddata.Path(t, "real-bundles/manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct{ bundle, san, issuer, input string }
	var rows []row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 6 || c[0] == "bundle" {
			continue
		}
		input := c[5]
		if i := strings.Index(input, "sha256:"); i >= 0 {
			input = input[i : i+len("sha256:")+64]
		} else if !strings.HasPrefix(input, "sha512:") {
			continue
		}
		rows = append(rows, row{c[0], c[3], c[4], input})
	}
	if len(rows) < 8 {
		t.Fatalf("manifest: %d rows", len(rows))
	}
	accepted := 0
	for _, rootFile := range []string{realRoot, "real-bundles/trusted-roots/production_trusted_root.sigstore-go-old.json"} {
		tr, err := LoadTrustedRootFile(shareddata.Path(t, rootFile))
		if err != nil {
			t.Fatal(err)
		}
		cached := WithChainCache(tr)
		for _, r := range rows {
			b, err := bundle.LoadJSONFromPath(shareddata.Path(t, filepath.Join("real-bundles", r.bundle)))
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(rootFile) + "/" + r.bundle
			err = verifyBoth(t, name, tr, cached, keylessOpts, b, digestPolicy(t, r.san, r.issuer, r.input))
			if err == nil {
				accepted++
			}
			if strings.HasPrefix(r.bundle, "model-transparency") && err != nil {
				t.Errorf("%s: %v", name, err)
			}
			wrongDigest := r.input[:len(r.input)-1] + map[bool]string{true: "0", false: "1"}[!strings.HasSuffix(r.input, "0")]
			for what, p := range map[string]func() verify.PolicyBuilder{
				"wrong identity": digestPolicy(t, "someone@example.com", r.issuer, r.input),
				"wrong issuer":   digestPolicy(t, r.san, "https://issuer.example.com", r.input),
				"wrong digest":   digestPolicy(t, r.san, r.issuer, wrongDigest),
			} {
				if verifyBoth(t, name+"/"+what, tr, cached, keylessOpts, b, p) == nil {
					t.Errorf("%s: %s accepted", name, what)
				}
			}
		}
	}
	t.Logf("%d bundle verifications accepted", accepted)
}

// TestChainCacheTamperedBundles flips one bit at a time in the binary
// fields of the model-transparency bundles (leaf certificate, DSSE
// signature and payload, log entry, inclusion proof and promise, timestamp
// response): every variant that still parses must get the same decision
// from both materials. (Variants of the v1.1.0 timestamp response that
// still verify do so on the log's integrated time alone: the policy asks for
// one observer timestamp, and a timestamp that fails is dropped.)
func TestChainCacheTamperedBundles(t *testing.T) {
	t.Parallel() // shares nothing: its own roots, caches and certificates
	tr := productionRoot(t)
	cached := WithChainCache(tr)
	stride := 7
	if testing.Short() {
		stride = 61
	}
	for _, c := range realCases {
		// One bundle a subtest, at once: each is seconds of signature
		// checks (minutes under -race), and the cached material is
		// shared as a verifier shares it (TestChainCacheConcurrent).
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			policy := digestPolicy(t, realIdentity, realIssuer, "sha256:"+realDigest)
			raw, err := os.ReadFile(shareddata.Path(t, c.bundle))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			compared, parsed, accepted := 0, 0, 0
			for _, field := range base64Fields(doc, "") {
				data, err := base64.StdEncoding.DecodeString(field.get())
				if err != nil {
					continue
				}
				for i := 0; i < len(data)*8; i += stride * 8 {
					mut := append([]byte(nil), data...)
					mut[i/8] ^= 1 << (i % 8)
					field.set(base64.StdEncoding.EncodeToString(mut))
					out, err := json.Marshal(doc)
					if err != nil {
						t.Fatal(err)
					}
					field.set(base64.StdEncoding.EncodeToString(data))
					var b bundle.Bundle
					compared++
					if b.UnmarshalJSON(out) != nil {
						continue
					}
					parsed++
					if verifyBoth(t, fmt.Sprintf("%s %s bit %d", c.name, field.path, i), tr, cached, keylessOpts, &b, policy) == nil {
						accepted++
					}
				}
			}
			// The thresholds follow the stride (one bit in stride bytes is
			// flipped): about 4,000 flippable bytes per bundle give 500 variants
			// or more at the full stride, 57 or more under -short; and a bit flip
			// in a binary field leaves the JSON well-formed, so at least 80% of
			// the variants must parse (92-95% do), or the test compares nothing.
			if want := 3500 / stride; compared < want {
				t.Errorf("%s: only %d tampered variants, want at least %d at stride %d", c.name, compared, want, stride)
			}
			if parsed*10 < compared*8 {
				t.Errorf("%s: only %d of %d tampered bundles parsed, want at least 80%%", c.name, parsed, compared)
			}
			t.Logf("%s: %d variants, %d parsed, %d accepted by both", c.name, compared, parsed, accepted)
		})
	}
}

type jsonField struct {
	path string
	get  func() string
	set  func(string)
}

// base64Fields lists the string members of doc that hold base64 binary
// data (long enough and decoding).
func base64Fields(v any, path string) []jsonField {
	var out []jsonField
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok {
				if len(s) >= 24 && isBase64(s) {
					out = append(out, jsonField{path + "/" + k, func() string { return x[k].(string) }, func(n string) { x[k] = n }})
				}
				continue
			}
			out = append(out, base64Fields(e, path+"/"+k)...)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				if len(s) >= 24 && isBase64(s) {
					out = append(out, jsonField{fmt.Sprintf("%s/%d", path, i), func() string { return x[i].(string) }, func(n string) { x[i] = n }})
				}
				continue
			}
			out = append(out, base64Fields(e, fmt.Sprintf("%s/%d", path, i))...)
		}
	}
	return out
}

func isBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// TestChainCacheConformance runs the sigstore-conformance bundle-verify
// cases of the shared test data through sigstore-go with each case's
// trusted root, plain and cached, in both input forms: the decisions must
// agree with each other and with the expected outcome.
func TestChainCacheConformance(t *testing.T) {
	t.Parallel() // shares nothing: its own roots, caches and certificates
	dir := shareddata.Path(t, "sigstore-conformance")
	f, err := os.Open(filepath.Join(dir, "cases.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	runs := 0
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 13 || c[0] == "name" {
			continue
		}
		name, expected, mode, san, issuer, digest := c[0], c[1], c[5], c[6], c[7], c[10]
		caseDir := filepath.Join(dir, name)
		for _, form := range []string{"path", "digest"} {
			runs++
			accepted := func() bool {
				trPath := filepath.Join(caseDir, "trusted_root.json")
				if _, err := os.Stat(trPath); err != nil {
					trPath = filepath.Join(dir, "_shared", "production_trusted_root.json")
				}
				tr, err := LoadTrustedRootFile(trPath)
				if err != nil {
					return false
				}
				b, err := bundle.LoadJSONFromPath(filepath.Join(caseDir, "bundle.sigstore.json"))
				if err != nil {
					return false
				}
				var plain root.TrustedMaterial = tr
				opts := keylessOpts
				var idOpt verify.PolicyOption
				if mode == "key" {
					km, err := LoadPublicKeyFile(filepath.Join(caseDir, "key.pub"))
					if err != nil {
						return false
					}
					plain = root.TrustedMaterialCollection{tr, km}
					opts = []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
					idOpt = verify.WithKey()
				} else {
					id, err := verify.NewShortCertificateIdentity(issuer, "", san, "")
					if err != nil {
						t.Fatal(err)
					}
					idOpt = verify.WithCertificateIdentity(id)
				}
				policy := func() verify.PolicyBuilder {
					if form == "digest" {
						d, _ := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
						return verify.NewPolicy(verify.WithArtifactDigest("sha256", d), idOpt)
					}
					af, err := os.Open(filepath.Join(caseDir, "artifact"))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { af.Close() })
					return verify.NewPolicy(verify.WithArtifact(af), idOpt)
				}
				return verifyBoth(t, name+"["+form+"]", plain, WithChainCache(plain), opts, b, policy) == nil
			}()
			if got := map[bool]string{true: "pass", false: "fail"}[accepted]; got != expected {
				t.Errorf("%s[%s]: got %s, want %s", name, form, got, expected)
			}
		}
	}
	if runs != 140 {
		t.Errorf("%d runs, want 140", runs)
	}
}

// TestChainCacheConcurrent verifies with one cached material from several
// goroutines (run with -race).
func TestChainCacheConcurrent(t *testing.T) {
	tm := WithChainCache(productionRoot(t))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := realCases[g%len(realCases)]
			b := loadBundle(t, c.bundle)
			v := publicGoodVerifier(t, tm)
			for range 5 {
				if _, err := v.Verify(b, realPolicy(t, realIdentity, realIssuer, realDigest)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
