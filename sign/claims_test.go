package sign

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
)

// fakeFulcio issues, for any request, a certificate for the request's key
// carrying the Fulcio source extensions of src (1.3.6.1.4.1.57264.1.12–.14,
// DER UTF8String as Fulcio writes them).
func fakeFulcio(t *testing.T, src attest.Source) *httptest.Server {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake fulcio"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	ext := func(n int, v string) pkix.Extension {
		b, err := asn1.MarshalWithParams(v, "utf8")
		if err != nil {
			t.Fatal(err)
		}
		return pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, n}, Value: b}
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			PublicKeyRequest struct {
				PublicKey struct{ Content string } `json:"publicKey"`
			} `json:"publicKeyRequest"`
		}
		if r.URL.Path != "/api/v2/signingCert" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		blk, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
		pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		leaf := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * time.Minute),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
			EmailAddresses:  []string{"ci@example.com"},
			ExtraExtensions: []pkix.Extension{ext(8, "https://token.actions.githubusercontent.com")}}
		for n, v := range map[int]string{12: src.Repository, 13: src.Commit, 14: src.Ref} {
			if v != "" {
				leaf.ExtraExtensions = append(leaf.ExtraExtensions, ext(n, v))
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, leaf, ca, pub, caKey)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		chain := []string{
			string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{"certificates": chain}}})
	}))
}

// TestSourceClaimsCheckedAtFulcio signs keylessly against a fake Fulcio
// whose certificate vouches for a source: a statement whose claims
// contradict it fails before any timestamp authority or log is asked.
func TestSourceClaimsCheckedAtFulcio(t *testing.T) {
	certSrc := attest.Source{Repository: "https://github.com/acme/notes", Commit: strings.Repeat("a", 40), Ref: "refs/tags/v1.2.0"}
	fulcio := fakeFulcio(t, certSrc)
	defer fulcio.Close()
	var calls atomic.Int32
	later := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "refused", http.StatusBadRequest)
	}))
	defer later.Close()

	key, err := oidcissuer.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is, err := oidcissuer.New("https://token.actions.githubusercontent.com", key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := is.Mint(oidcissuer.Claims{Email: "ci@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := IDToken(context.Background(), TokenOptions{Flag: raw})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		src      *attest.Source
		mismatch string // "": the claim check passes (the TSA then fails)
	}{
		{"commit contradicts .13", &attest.Source{Repository: certSrc.Repository, Commit: strings.Repeat("b", 40)},
			`source.commit is "` + strings.Repeat("b", 40) + `", the certificate's extension 1.3.6.1.4.1.57264.1.13 (source repository digest) says "` + certSrc.Commit + `"`},
		{"repository contradicts .12", &attest.Source{Repository: "https://github.com/evil/notes"}, `source.repository is "https://github.com/evil/notes"`},
		{"ref contradicts .14", &attest.Source{Ref: "refs/heads/main"}, `source.ref is "refs/heads/main"`},
		{"agrees", &certSrc, ""},
		{"partial, agrees", &attest.Source{Commit: certSrc.Commit}, ""},
		{"no claim", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			st, err := attest.Build(exampleSnapshot(), attest.Options{Source: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			payload, err := st.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSigstoreSigner(tok, fulcio.URL)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Sign(context.Background(), payload, Options{
				Signer: s, TransparencyLogs: []RekorService{{URL: later.URL, Version: 2}}, TimestampAuthorities: []string{later.URL},
				TrustedMaterial: &root.BaseTrustedMaterial{}, Timeout: 5 * time.Second,
			})
			if res != nil {
				t.Fatal("a bundle was returned")
			}
			if tc.mismatch != "" {
				if !errors.Is(err, ErrClaimMismatch) || !errors.Is(err, attest.ErrSourceMismatch) || !strings.Contains(err.Error(), tc.mismatch) {
					t.Fatalf("err %v; want %v naming %s", err, ErrClaimMismatch, tc.mismatch)
				}
				if n := calls.Load(); n != 0 {
					t.Errorf("%d requests to the TSA or log after the mismatch", n)
				}
				return
			}
			var se *ServiceError
			if errors.Is(err, ErrClaimMismatch) || !errors.As(err, &se) || se.Service != ServiceTSA || calls.Load() == 0 {
				t.Fatalf("err %v; want the TSA's failure, after the claim check passed", err)
			}
		})
	}
}

func TestCertificateSource(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(exts ...pkix.Extension) *x509.Certificate {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), ExtraExtensions: exts}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	utf8 := func(n int, v string) pkix.Extension {
		b, _ := asn1.MarshalWithParams(v, "utf8")
		return pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, n}, Value: b}
	}
	if s, err := certificateSource(mk()); s != nil || err != nil {
		t.Errorf("no extensions: %+v %v", s, err)
	}
	got, err := certificateSource(mk(utf8(13, "abc"), utf8(14, "refs/heads/main")))
	if err != nil || got == nil || *got != (attest.Source{Commit: "abc", Ref: "refs/heads/main"}) {
		t.Errorf("got %+v", got)
	}
	if err := checkSourceClaims(mk(utf8(13, "abc")).Raw, &attest.Source{Commit: "abd"}); !errors.Is(err, ErrClaimMismatch) {
		t.Errorf("mismatch: %v", err)
	}
	if err := checkSourceClaims(mk(utf8(13, "abc")).Raw, &attest.Source{Commit: "abc", Ref: "refs/x"}); err != nil {
		t.Errorf("agreeing: %v", err)
	}
}
