package options

import (
	"strings"
	"testing"
)

func TestParsePackages(t *testing.T) {
	hex64 := strings.Repeat("0a", 32)
	tests := []struct {
		name    string
		purls   []string
		digests []string
		ok      bool
	}{
		{"none", nil, nil, true},
		{"purl only", []string{"pkg:npm/%40acme/notes@1.0.0"}, nil, true},
		{"pair", []string{"pkg:pypi/notes@1.0"}, []string{"sha256:" + hex64}, true},
		{"two pairs", []string{"pkg:npm/a@1", "pkg:oci/a@sha256%3Aab"}, []string{"sha512:" + hex64 + hex64, "sha256:" + hex64}, true},
		{"digest without purl", nil, []string{"sha256:" + hex64}, false},
		{"fewer digests", []string{"pkg:npm/a", "pkg:npm/b"}, []string{"sha256:" + hex64}, false},
		{"not a purl", []string{"npm/a"}, nil, false},
		{"purl with space", []string{"pkg:npm/a b"}, nil, false},
		{"purl with newline", []string{"pkg:npm/a\nb"}, nil, false},
		{"uppercase hex", []string{"pkg:npm/a"}, []string{"sha256:" + strings.ToUpper(hex64)}, false},
		{"no algorithm", []string{"pkg:npm/a"}, []string{hex64}, false},
		{"short hex", []string{"pkg:npm/a"}, []string{"sha256:abcd"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkgs, err := ParsePackages(tt.purls, tt.digests)
			if (err == nil) != tt.ok {
				t.Fatalf("ok=%v, err=%v", tt.ok, err)
			}
			if err == nil && len(pkgs) != len(tt.purls) {
				t.Errorf("%d packages", len(pkgs))
			}
		})
	}
	many := make([]string, MaxPackages+1)
	for i := range many {
		many[i] = "pkg:npm/a"
	}
	if _, err := ParsePackages(many, nil); err == nil {
		t.Error("too many packages accepted")
	}
}

func TestAttestOptionsFromActions(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/notes", "GITHUB_SHA": "abc", "GITHUB_REF": "refs/heads/main"}
	o := StatementOptions{SourceCommit: "def"}
	got, err := o.AttestOptions(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Source; s == nil || s.Repository != "https://github.com/acme/notes" || s.Commit != "def" || s.Ref != "refs/heads/main" {
		t.Errorf("source %+v", got.Source)
	}
	got, err = (&StatementOptions{}).AttestOptions(func(string) string { return "" })
	if err != nil || got.Source != nil {
		t.Errorf("outside Actions: %+v %v", got.Source, err)
	}
	if _, err := (&StatementOptions{SourceRef: "a\x1b[2J"}).AttestOptions(func(string) string { return "" }); err == nil {
		t.Error("control characters accepted")
	}
}

func TestLogOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		o  LogOptions
		ok bool
	}{
		{LogOptions{}, true},
		{LogOptions{TSAURL: "http://tsa"}, true},
		{LogOptions{TlogUpload: true, RekorURL: "http://r"}, true},
		{LogOptions{TlogUpload: true, SigningConfig: "sc.json"}, true},
		{LogOptions{TlogUpload: true}, false},
		{LogOptions{RekorURL: "http://r"}, false},
		{LogOptions{SigningConfig: "sc.json", TSAURL: "http://tsa"}, false},
	} {
		if err := tt.o.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v", tt.o, err)
		}
	}
}

func FuzzParsePackages(f *testing.F) {
	f.Add("pkg:npm/%40acme/notes@1.0.0", "sha256:"+strings.Repeat("0a", 32))
	f.Add("pkg:oci/x", "sha512:00")
	f.Fuzz(func(t *testing.T, purl, dg string) {
		pkgs, err := ParsePackages([]string{purl}, []string{dg})
		if err != nil {
			return
		}
		if len(pkgs) != 1 || pkgs[0].PURL != purl || len(pkgs[0].Digest) != 1 {
			t.Fatalf("%+v", pkgs)
		}
		if strings.ContainsAny(purl, " \n\r\t\x00") {
			t.Fatalf("whitespace accepted: %q", purl)
		}
		for alg, h := range pkgs[0].Digest {
			if alg+":"+h != dg || strings.ToLower(h) != h {
				t.Fatalf("digest %q -> %s:%s", dg, alg, h)
			}
		}
	})
}
