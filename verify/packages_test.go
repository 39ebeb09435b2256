package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"

	"github.com/mcpsign/mcpsign/attest"
)

func TestRequiredPackages(t *testing.T) {
	snap := exampleSnapshot()
	h256, h512 := strings.Repeat("a1", 32), strings.Repeat("b2", 64)
	other512 := strings.Repeat("c3", 64)
	npm := attest.Package{PURL: "pkg:npm/%40acme/notes@1.2.0", Digest: map[string]string{"sha512": h512}}
	both := attest.Package{PURL: "pkg:npm/%40acme/notes@1.2.0", Digest: map[string]string{"sha256": h256, "sha512": other512}}
	file := PackageRequirement{Name: "notes-1.2.0.tgz", Digests: map[string]string{"sha256": h256, "sha512": h512}}
	tampered := PackageRequirement{Name: "notes-1.2.0.tgz", Digests: map[string]string{"sha256": h256, "sha512": other512[:126] + "00"}}
	for _, tc := range []struct {
		name   string
		pkgs   []attest.Package
		reqs   []PackageRequirement
		substr []string // in the error; nil: verifies
	}{
		{"bound", []attest.Package{npm}, []PackageRequirement{file}, nil},
		{"bound, second entry", []attest.Package{{PURL: "pkg:oci/x"}, npm}, []PackageRequirement{file}, nil},
		{"no requirement", []attest.Package{npm}, nil, nil},
		{"tampered", []attest.Package{npm}, []PackageRequirement{tampered},
			[]string{"sha512:" + other512[:126] + "00", "package[0] pkg:npm/%40acme/notes@1.2.0 with sha512:" + h512}},
		{"one algorithm agrees, another differs", []attest.Package{both}, []PackageRequirement{file},
			[]string{"sha512:" + h512, "sha256:" + h256 + " and sha512:" + other512}},
		{"no package in the statement", nil, []PackageRequirement{file}, []string{"binds no package"}},
		{"no common algorithm", []attest.Package{{PURL: "pkg:npm/a@1", Digest: map[string]string{"sha1": "00"}}}, []PackageRequirement{file}, []string{"sha1:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := statementOf(t, snap, attest.Options{Packages: tc.pkgs})
			pb, pub := keySigned(t, payload, attest.PayloadType)
			v := mustVerifier(t, Trust{}, Policy{Method: MethodKey, PublicKey: pub, Packages: tc.reqs})
			res, err := v.Verify(context.Background(), marshalBundle(t, pb), snap)
			if tc.substr == nil {
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Claims {
					want := ClaimUnverified
					if tc.reqs != nil && c.Value == npm.PURL {
						want = ClaimVerified
					}
					if c.Status != want {
						t.Errorf("claim %+v; want %s", c, want)
					}
				}
				return
			}
			if step, _ := FailedStep(err); step != StepStatement || !errors.Is(err, ErrPackageMismatch) {
				t.Fatalf("err %v; want %v at the statement step", err, ErrPackageMismatch)
			}
			for _, s := range tc.substr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

func TestCertificateSource(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fulcio bool
		nilRes bool
	}{{"fulcio", true, false}, {"enterprise", false, true}} {
		cert := certSummaryWithSource()
		got := vouchedSource(cert, tc.fulcio)
		if (got == nil) != tc.nilRes {
			t.Fatalf("%s: %+v", tc.name, got)
		}
		if got != nil && (got.Repository != cert.Extensions.SourceRepositoryURI || got.Commit != cert.Extensions.SourceRepositoryDigest || got.Ref != cert.Extensions.SourceRepositoryRef) {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	if vouchedSource(nil, true) != nil {
		t.Error("a key vouches for a source")
	}
}

func certSummaryWithSource() *certificate.Summary {
	return &certificate.Summary{Extensions: certificate.Extensions{
		SourceRepositoryURI: "https://github.com/acme/notes", SourceRepositoryDigest: strings.Repeat("d", 40), SourceRepositoryRef: "refs/tags/v1.2.0",
	}}
}
