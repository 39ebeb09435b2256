package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	rekorpb "github.com/sigstore/rekor-tiles/v2/pkg/generated/protobuf"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/verify"
)

// TestRunKeyIDs: a watched key ID is "sha256:" and 64 lowercase hex digits;
// Run refuses any other form before reading the log, where one too short
// panicked and one of another algorithm or case was read as the key's
// SHA-256 (a key ID the policy never named, in the findings).
func TestRunKeyIDs(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "keyids.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	l.add(k.signStatement(t, "a").body)
	hexPart := strings.TrimPrefix(k.id, "sha256:")
	for _, c := range []struct {
		name, id string
		ok       bool
	}{
		{"the key", k.id, true},
		{"short", "abc", false},
		{"empty", "", false},
		{"prefix only", "sha256:", false},
		{"another algorithm", "sha512:" + hexPart, false},
		{"no prefix", hexPart, false},
		{"upper-case hex", "sha256:" + strings.ToUpper(hexPart), false},
		{"one digit short", k.id[:len(k.id)-1], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var fs []Finding
			start := uint64(0)
			_, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: fakeRoot(t, l), KeyIDs: []string{c.id},
				OnFinding: func(f Finding) { fs = append(fs, f) }}, nil)
			if !c.ok {
				if !errors.Is(err, ErrKeyID) || len(fs) != 0 {
					t.Fatalf("error %v, findings %+v; want ErrEntry and none", err, fs)
				}
				return
			}
			if err != nil || len(fs) != 1 || fs[0].KeyID != k.id || !fs[0].Alert {
				t.Fatalf("error %v, findings %+v; want one alert of %s", err, fs, k.id)
			}
		})
	}
}

// TestCheckErrorText: a check's error names the log index from 0, and no
// index when it is -1.
func TestCheckErrorText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		index int64
		want  string
	}{
		{-1, "monitor: entry: malformed log entry: x"},
		{0, "monitor: entry at log index 0: malformed log entry: x"},
		{7, "monitor: entry at log index 7: malformed log entry: x"},
	} {
		if got := checkErr("entry", c.index, ErrEntry, "x").Error(); got != c.want {
			t.Errorf("index %d: %q, want %q", c.index, got, c.want)
		}
	}
}

// certRekordBody is a Rekor v2 hashedrekord entry of dg signed under the
// certificate der (the signature is not checked by the monitor).
func certRekordBody(t testing.TB, dg, der []byte) []byte {
	t.Helper()
	e := &rekorpb.Entry{Kind: "hashedrekord", ApiVersion: "0.0.2", Spec: &rekorpb.Spec{Spec: &rekorpb.Spec_HashedRekordV002{HashedRekordV002: &rekorpb.HashedRekordLogEntryV002{
		Data: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: dg},
		Signature: &rekorpb.Signature{Content: []byte{1}, Verifier: &rekorpb.Verifier{
			Verifier:   &rekorpb.Verifier_X509Certificate{X509Certificate: &protocommon.X509Certificate{RawBytes: der}},
			KeyDetails: protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256,
		}},
	}}}}
	j, err := protojson.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRunCertificateEntries: entries signed under certificates, with no
// Sigstore stack (sigstore-go's in-process CA): one of the watched
// identity that chains to the trusted root's CA and is not released is an
// alert naming the identity and issuer; one of another identity is not
// read; one of the watched identity under a CA the root does not trust is
// an untrusted-certificate notice; one released is counted, not reported.
// With the identity exact (the certificates' base64 searched for it) and
// as regexps that name no bytes to search for.
func TestRunCertificateEntries(t *testing.T) {
	t.Parallel()
	const watched, issuer = "publisher@example.com", "https://issuer.example"
	trusted, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	untrusted, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(vs *ca.VirtualSigstore, identity string) []byte {
		c, _, err := vs.GenerateLeafCert(identity, issuer)
		if err != nil {
			t.Fatal(err)
		}
		return c.Raw
	}
	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	l := newFakeLog(t, "certs.monitor.example")
	url := l.start(t)
	first := l.add(
		certRekordBody(t, sum("unreleased"), leaf(trusted, watched)),
		certRekordBody(t, sum("other"), leaf(trusted, "someone@example.com")),
		certRekordBody(t, sum("untrusted"), leaf(untrusted, watched)),
		certRekordBody(t, sum("released"), leaf(trusted, watched)),
	)
	tm, err := root.NewTrustedRoot(root.TrustedRootMediaType01, trusted.FulcioCertificateAuthorities(), nil, nil,
		map[string]*root.TransparencyLog{hexID(l): l.transparencyLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		id      verify.Identity
		needles bool
	}{
		{"exact", verify.Identity{SAN: watched, Issuer: issuer}, true},
		{"regexps", verify.Identity{SANRegexp: `(?i)publisher@example\.com$`, IssuerRegexp: `^https://issuer\.example$`}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{c.id})
			if err != nil {
				t.Fatal(err)
			}
			if got := newChecker(&Options{Identities: m}, &Result{}).b64 != nil; got != c.needles {
				t.Fatalf("base64 needles %v, want %v", got, c.needles)
			}
			rel, err := NewReleased(ReleaseCheck{})
			if err != nil {
				t.Fatal(err)
			}
			if err := rel.AddDigest("sha256:" + hex.EncodeToString(sum("released"))); err != nil {
				t.Fatal(err)
			}
			var fs []Finding
			start := uint64(0)
			res, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: tm, Identities: m, Released: rel,
				OnFinding: func(f Finding) { fs = append(fs, f) }}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Watched != 3 || res.Released != 1 || res.Alerts != 1 || res.Notices != 1 || len(fs) != 2 {
				t.Fatalf("watched %d released %d alerts %d notices %d, findings %+v; want 3 1 1 1", res.Watched, res.Released, res.Alerts, res.Notices, fs)
			}
			alert, notice := fs[0], fs[1]
			if alert.Kind != KindUnreleased || !alert.Alert || alert.LogIndex != first || alert.Identity != watched || alert.Issuer != issuer ||
				alert.Digest != "sha256:"+hex.EncodeToString(sum("unreleased")) || alert.EntryKind != "hashedrekord 0.0.2" {
				t.Errorf("alert %+v", alert)
			}
			if notice.Kind != KindUntrustedCertificate || notice.Alert || notice.LogIndex != first+2 || notice.Identity != watched || notice.Source != nil ||
				!strings.Contains(notice.Detail, "does not chain to a CA of the trusted root") {
				t.Errorf("notice %+v", notice)
			}
		})
	}
}
