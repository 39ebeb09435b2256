package mcpwire

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestAdvertisedAttestation(t *testing.T) {
	big := `{"x":"` + strings.Repeat("a", MaxAttestationBundleBytes) + `"}`
	// atBound is a bundle of exactly MaxAttestationBundleBytes, the most
	// accepted; one byte more is refused.
	atBound := `{"x":"` + strings.Repeat("a", MaxAttestationBundleBytes-8) + `"}`
	overBound := `{"x":"` + strings.Repeat("a", MaxAttestationBundleBytes-7) + `"}`
	tests := []struct {
		name    string
		caps    string
		want    Attestation
		none    bool   // ErrNoAttestation
		wantErr string // part of the error; "" means success
	}{
		{name: "inline", caps: `{"dev.mcpsign/attestation":{"bundle":{"mediaType":"m"}}}`, want: Attestation{Bundle: []byte(`{"mediaType":"m"}`)}},
		{name: "url", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https://example.com/b.json","bundleDigest":"` + testDigest + `"}}`, want: Attestation{URL: "https://example.com/b.json", Digest: testDigest}},
		{name: "url without digest", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https://example.com/b.json"}}`, want: Attestation{URL: "https://example.com/b.json"}},
		{name: "other members ignored", caps: `{"other":1,"dev.mcpsign/attestation":{"bundle":{},"note":"x"}}`, want: Attestation{Bundle: []byte(`{}`)}},
		{name: "empty", caps: ``, none: true},
		{name: "absent", caps: `{"other":{}}`, none: true},
		{name: "null", caps: `{"dev.mcpsign/attestation":null}`, none: true},
		{name: "case variant", caps: `{"Dev.mcpsign/attestation":{"bundle":{}}}`, wantErr: "case"},
		{name: "repeated", caps: `{"dev.mcpsign/attestation":{"bundle":{}},"dev.mcpsign/attestation":{"bundle":{}}}`, wantErr: "repeated"},
		{name: "member case variant", caps: `{"dev.mcpsign/attestation":{"Bundle":{}}}`, wantErr: "case"},
		{name: "not an object", caps: `{"dev.mcpsign/attestation":"https://example.com"}`, wantErr: "not a JSON object"},
		{name: "both", caps: `{"dev.mcpsign/attestation":{"bundle":{},"bundleUrl":"https://e.com/b"}}`, wantErr: "both bundle and bundleUrl"},
		{name: "neither", caps: `{"dev.mcpsign/attestation":{"bundleDigest":"` + testDigest + `"}}`, wantErr: "neither bundle nor bundleUrl"},
		{name: "digest beside bundle", caps: `{"dev.mcpsign/attestation":{"bundle":{},"bundleDigest":"` + testDigest + `"}}`, wantErr: "bundleDigest is for bundleUrl"},
		{name: "bundle string", caps: `{"dev.mcpsign/attestation":{"bundle":"e30="}}`, wantErr: "bundle is not a JSON object"},
		{name: "bundle repeated member", caps: `{"dev.mcpsign/attestation":{"bundle":{"a":1,"a":2}}}`, wantErr: "repeated"},
		{name: "http", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"http://example.com/b.json"}}`, wantErr: "not an https URL"},
		{name: "relative", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"/b.json"}}`, wantErr: "not an https URL"},
		{name: "no host", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https:///b.json"}}`, wantErr: "has no host"},
		{name: "user info", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https://u:p@example.com/b.json"}}`, wantErr: "user info"},
		{name: "url not a string", caps: `{"dev.mcpsign/attestation":{"bundleUrl":1}}`, wantErr: "bundleUrl"},
		{name: "bad digest", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https://e.com/b","bundleDigest":"sha256:ABC"}}`, wantErr: "not sha256:"},
		{name: "sha512 digest", caps: `{"dev.mcpsign/attestation":{"bundleUrl":"https://e.com/b","bundleDigest":"sha512:` + strings.Repeat("a", 128) + `"}}`, wantErr: "not sha256:"},
		{name: "oversized", caps: `{"dev.mcpsign/attestation":{"bundle":` + big + `}}`, wantErr: "at most"},
		{name: "bundle at the bound", caps: `{"dev.mcpsign/attestation":{"bundle":` + atBound + `}}`, want: Attestation{Bundle: []byte(atBound)}},
		{name: "oversized by one byte", caps: `{"dev.mcpsign/attestation":{"bundle":` + overBound + `}}`, wantErr: "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := AdvertisedAttestation([]byte(tt.caps))
			switch {
			case tt.none:
				if !errors.Is(err, ErrNoAttestation) {
					t.Fatalf("err = %v, want ErrNoAttestation", err)
				}
			case tt.wantErr != "":
				if !errors.Is(err, ErrAttestation) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrAttestation with %q", err, tt.wantErr)
				}
				if strings.HasPrefix(tt.name, "oversized") && !errors.Is(err, boundedfile.ErrTooLarge) {
					t.Fatalf("err = %v, want ErrTooLarge", err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if string(a.Bundle) != string(tt.want.Bundle) || a.URL != tt.want.URL || a.Digest != tt.want.Digest {
					t.Fatalf("got %+v, want %+v", a, tt.want)
				}
			}
		})
	}
}

// TestHelloAttestation: each generation reads its own capability member.
func TestHelloAttestation(t *testing.T) {
	const hint = `{"dev.mcpsign/attestation":{"bundle":{"k":1}}}`
	legacy := `{"protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"},"capabilities":{"experimental":` + hint + `}}`
	h, err := ParseInitialize([]byte(legacy))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := h.Attestation(); err != nil || string(a.Bundle) != `{"k":1}` {
		t.Fatalf("legacy: %+v, %v", a, err)
	}
	// Under the initialize generation, extensions is not where it is read.
	other := `{"protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"},"capabilities":{"extensions":` + hint + `}}`
	if h, err = ParseInitialize([]byte(other)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Attestation(); !errors.Is(err, ErrNoAttestation) {
		t.Fatalf("legacy with extensions: %v, want ErrNoAttestation", err)
	}
	modern := `{"resultType":"complete","supportedVersions":["2026-07-28"],"serverInfo":{"name":"s","version":"1"},"capabilities":{"extensions":` + hint + `}}`
	h, ok, err := ParseDiscover([]byte(modern), nil, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if a, err := h.Attestation(); err != nil || string(a.Bundle) != `{"k":1}` {
		t.Fatalf("modern: %+v, %v", a, err)
	}
	if got := string(h.Advertised()); got != hint {
		t.Fatalf("Advertised = %s", got)
	}
}

func FuzzAdvertisedAttestation(f *testing.F) {
	for _, s := range []string{
		`{"dev.mcpsign/attestation":{"bundle":{"mediaType":"m"}}}`,
		`{"dev.mcpsign/attestation":{"bundleUrl":"https://example.com/b.json","bundleDigest":"` + testDigest + `"}}`,
		`{"DEV.mcpsign/attestation":{}}`,
		`{"dev.mcpsign/attestation":{"bundleUrl":"https://[::1]:443/#x"}}`,
		`null`, ``, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := AdvertisedAttestation(data)
		if err != nil {
			if !errors.Is(err, ErrAttestation) && !errors.Is(err, ErrNoAttestation) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if (a.Bundle == nil) == (a.URL == "") {
			t.Fatalf("exactly one of bundle and URL: %+v", a)
		}
		if a.URL != "" && CheckBundleURL(a.URL) != nil {
			t.Fatalf("accepted URL %q", a.URL)
		}
	})
}

// TestCheckBundleURLRedacts: a URL that does not parse is not echoed (it
// may carry a password or token that cannot be redacted).
func TestCheckBundleURLRedacts(t *testing.T) {
	err := CheckBundleURL("https://user:s3cret-token@exa mple.com/b.json")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("CheckBundleURL: %v", err)
	}
}
