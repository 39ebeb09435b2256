package options

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAttestOptionsErrors: the errors of attest.Inputs said with the
// flags.
func TestAttestOptionsErrors(t *testing.T) {
	hex64 := strings.Repeat("0a", 32)
	many := make([]string, MaxPackages+1)
	for i := range many {
		many[i] = "pkg:npm/a"
	}
	for _, tt := range []struct {
		name string
		o    StatementOptions
		want string
	}{
		{"too many package URLs", StatementOptions{PackagePURLs: many}, "--package-purl: at most 64 packages"},
		{"fewer digests", StatementOptions{PackagePURLs: []string{"pkg:npm/a", "pkg:npm/b"}, PackageDigests: []string{"sha256:" + hex64}},
			"--package-digest: 1 digests for 2 --package-purl; give one digest per package, in the same order, or none"},
		{"too many packages in all", StatementOptions{PackagePURLs: many[1:], PackageFiles: []string{"a.tgz"}},
			"--package and --package-purl: at most 64 packages"},
		{"a package file", StatementOptions{PackageFiles: []string{filepath.Join(t.TempDir(), "missing.tgz")}}, "--package: open "},
		{"not a purl", StatementOptions{PackagePURLs: []string{"npm/a"}}, `--package-purl "npm/a": not a package URL`},
		{"a bad digest", StatementOptions{PackagePURLs: []string{"pkg:npm/a"}, PackageDigests: []string{hex64}}, "--package-digest \"" + hex64 + "\": want ALG:HEX"},
		{"a source ref", StatementOptions{SourceRef: "a\x1b[2J"}, "--source-ref: control characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.AttestOptions(func(string) string { return "" })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
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
