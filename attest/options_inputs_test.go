package attest

import (
	"errors"
	"strings"
	"testing"
)

func TestInputsOptions(t *testing.T) {
	hex64 := strings.Repeat("0a", 32)
	many := make([]string, MaxPackages+1)
	for i := range many {
		many[i] = "pkg:npm/a"
	}
	errRead := errors.New("cannot read")
	read := func(p string) (Package, error) {
		if p == "bad.tgz" {
			return Package{}, errRead
		}
		return Package{PURL: "pkg:npm/" + strings.TrimSuffix(p, ".tgz") + "@1"}, nil
	}
	countErr := func(part string, got, want int) func(error) bool {
		return func(err error) bool {
			var ce *CountError
			return errors.As(err, &ce) && ce.Part == part && ce.Got == got && ce.Want == want
		}
	}
	inputErr := func(part string) func(error) bool {
		return func(err error) bool {
			var ie *InputError
			return errors.As(err, &ie) && ie.Part == part
		}
	}
	tests := []struct {
		name      string
		in        Inputs
		wantPURLs []string
		wantErr   func(error) bool
	}{
		{"none", Inputs{}, nil, nil},
		{"purl only", Inputs{PURLs: []string{"pkg:npm/%40acme/notes@1.0.0"}}, []string{"pkg:npm/%40acme/notes@1.0.0"}, nil},
		{"pair", Inputs{PURLs: []string{"pkg:pypi/notes@1.0"}, Digests: []string{"sha256:" + hex64}}, []string{"pkg:pypi/notes@1.0"}, nil},
		{"two pairs", Inputs{PURLs: []string{"pkg:npm/a@1", "pkg:oci/a@sha256%3Aab"}, Digests: []string{"sha512:" + hex64 + hex64, "sha256:" + hex64}},
			[]string{"pkg:npm/a@1", "pkg:oci/a@sha256%3Aab"}, nil},
		{"files first", Inputs{PURLs: []string{"pkg:npm/b@1"}, PackageFiles: []string{"a.tgz"}, ReadPackage: read},
			[]string{"pkg:npm/a@1", "pkg:npm/b@1"}, nil},
		{"digest without purl", Inputs{Digests: []string{"sha256:" + hex64}}, nil, countErr(CountDigests, 1, 0)},
		{"fewer digests", Inputs{PURLs: []string{"pkg:npm/a", "pkg:npm/b"}, Digests: []string{"sha256:" + hex64}}, nil, countErr(CountDigests, 1, 2)},
		{"not a purl", Inputs{PURLs: []string{"npm/a"}}, nil, inputErr("purl")},
		{"purl with space", Inputs{PURLs: []string{"pkg:npm/a b"}}, nil, inputErr("purl")},
		{"purl with newline", Inputs{PURLs: []string{"pkg:npm/a\nb"}}, nil, inputErr("purl")},
		{"uppercase hex", Inputs{PURLs: []string{"pkg:npm/a"}, Digests: []string{"sha256:" + strings.ToUpper(hex64)}}, nil, inputErr("digest")},
		{"no algorithm", Inputs{PURLs: []string{"pkg:npm/a"}, Digests: []string{hex64}}, nil, inputErr("digest")},
		{"short hex", Inputs{PURLs: []string{"pkg:npm/a"}, Digests: []string{"sha256:abcd"}}, nil, inputErr("digest")},
		{"too many purls", Inputs{PURLs: many}, nil, countErr(CountPURLs, MaxPackages+1, 0)},
		{"too many packages, files unread", Inputs{PURLs: many[1:], PackageFiles: []string{"bad.tgz"}, ReadPackage: read}, nil,
			countErr(CountPackages, MaxPackages+1, 0)},
		{"a file that cannot be read", Inputs{PackageFiles: []string{"bad.tgz"}, ReadPackage: read}, nil, func(err error) bool {
			var fe *PackageFileError
			return errors.As(err, &fe) && fe.Path == "bad.tgz" && errors.Is(err, errRead)
		}},
		{"purls before files", Inputs{PURLs: []string{"npm/a"}, PackageFiles: []string{"bad.tgz"}, ReadPackage: read}, nil, inputErr("purl")},
		{"a source claim", Inputs{Source: Source{Ref: "a\x1b[2J"}}, nil, inputErr("source.ref")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.in.Options(func(string) string { return "" })
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range opts.Packages {
				got = append(got, p.PURL)
			}
			if strings.Join(got, " ") != strings.Join(tt.wantPURLs, " ") {
				t.Errorf("packages %q, want %q", got, tt.wantPURLs)
			}
		})
	}
}

func TestInputsOptionsSource(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/notes", "GITHUB_SHA": "abc", "GITHUB_REF": "refs/heads/main"}
	got, err := Inputs{Source: Source{Commit: "def"}, OmitDefinitions: true}.Options(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Source; s == nil || s.Repository != "https://github.com/acme/notes" || s.Commit != "def" || s.Ref != "refs/heads/main" || !got.OmitDefinitions {
		t.Errorf("options %+v, source %+v", got, got.Source)
	}
	if got, err := (Inputs{}).Options(func(string) string { return "" }); err != nil || got.Source != nil {
		t.Errorf("outside Actions: %+v %v", got.Source, err)
	}
}

func FuzzInputsOptions(f *testing.F) {
	f.Add("pkg:npm/%40acme/notes@1.0.0", "sha256:"+strings.Repeat("0a", 32))
	f.Add("pkg:oci/x", "sha512:00")
	f.Fuzz(func(t *testing.T, purl, dg string) {
		opts, err := Inputs{PURLs: []string{purl}, Digests: []string{dg}}.Options(func(string) string { return "" })
		if err != nil {
			return
		}
		pkgs := opts.Packages
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
