package pkgfile

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body string
	typ        byte
	link       string
}

// makeTGZ builds a gzip tarball of entries, as npm pack lays one out.
func makeTGZ(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: typ, Linkname: e.link}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func makeZip(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const pkgJSON = `{"name": "@acme/notes-mcp", "version": "1.2.0", "main": "index.js"}`

func wheelMeta(name, version string) string {
	return "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: x\n\nName: not-a-header\n"
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		data     []byte
		purl     string
		kind     Kind
		alg      string
		wantErr  error
		errMatch string
	}{
		{"npm scoped", "acme-notes-mcp-1.2.0.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "package/index.js", body: "x"}),
			"pkg:npm/%40acme/notes-mcp@1.2.0", KindNPM, "sha512", nil, ""},
		{"npm unscoped, prerelease+build", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"notes","version":"1.0.0-rc.1+b2"}`}),
			"pkg:npm/notes@1.0.0-rc.1%2Bb2", KindNPM, "sha512", nil, ""},
		{"npm two package.json", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "./package/package.json", body: `{"name":"evil","version":"1.0.0"}`}),
			"", "", "", ErrArtifact, "two entries"},
		{"npm a second package's manifest", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"@acme/notes","version":"1.0.0"}`}, entry{name: "other/package.json", body: `{"name":"evil-pkg","version":"6.6.6"}`}),
			"", "", "", ErrArtifact, `two package manifests at the top level, "package/package.json" and "other/package.json"`},
		{"npm a second manifest first", "x.tgz",
			makeTGZ(t, entry{name: "other/Package.JSON", body: `{"name":"evil-pkg","version":"6.6.6"}`}, entry{name: "package/package.json", body: pkgJSON}),
			"", "", "", ErrArtifact, `"other/Package.JSON" and "package/package.json"`},
		{"npm ./package.json, which npm unpacks as the package's", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "./package.json", body: `{"name":"evil-pkg","version":"6.6.6"}`}),
			"", "", "", ErrArtifact, `two package manifests at the top level, "package/package.json" and "./package.json"`},
		{"npm .//package.json first", "x.tgz",
			makeTGZ(t, entry{name: ".//PACKAGE.json", body: `{"name":"evil-pkg","version":"6.6.6"}`}, entry{name: "package/package.json", body: pkgJSON}),
			"", "", "", ErrArtifact, `".//PACKAGE.json" and "package/package.json"`},
		{"npm nested package.json is not a manifest", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "package/node_modules/dep/package.json", body: `{"name":"dep","version":"1.0.0"}`}, entry{name: "other/", typ: tar.TypeDir}),
			"pkg:npm/%40acme/notes-mcp@1.2.0", KindNPM, "sha512", nil, ""},
		{"npm case variant package.json", "x.tgz",
			makeTGZ(t, entry{name: "package/Package.json", body: pkgJSON}, entry{name: "package/package.json", body: pkgJSON}),
			"", "", "", ErrArtifact, "spelled so"},
		{"npm traversal", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "package/../../etc/x", body: "x"}),
			"", "", "", ErrArtifact, "leaves the archive"},
		{"npm absolute", "x.tgz",
			makeTGZ(t, entry{name: "/package/package.json", body: pkgJSON}),
			"", "", "", ErrArtifact, "not a relative path"},
		{"npm symlink out", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}, entry{name: "package/l", typ: tar.TypeSymlink, link: "/etc/passwd"}),
			"", "", "", ErrArtifact, "leaves the archive"},
		{"npm package.json a symlink", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", typ: tar.TypeSymlink, link: "other.json"}),
			"", "", "", ErrArtifact, "not a regular file"},
		{"npm no package.json", "x.tgz",
			makeTGZ(t, entry{name: "package/index.js", body: "x"}),
			"", "", "", ErrArtifact, "no \"package/package.json\""},
		{"npm repeated member", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"a","name":"b","version":"1.0.0"}`}),
			"", "", "", ErrArtifact, "repeated member"},
		{"npm case-variant member", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"a","Version":"2.0.0","version":"1.0.0"}`}),
			"", "", "", ErrArtifact, "case-insensitive"},
		{"npm bad name", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"Evil Name","version":"1.0.0"}`}),
			"", "", "", ErrArtifact, "not an npm package name"},
		{"npm huge package.json", "x.tgz",
			makeTGZ(t, entry{name: "package/package.json", body: `{"name":"a","version":"1.0.0","x":"` + strings.Repeat("a", MaxManifestBytes) + `"}`}),
			"", "", "", ErrTooLarge, "package/package.json"},
		{"not gzip", "x.tgz", []byte("hello"), "", "", "", ErrArtifact, "not a gzip"},
		{"wheel", "Notes_MCP-0.3.1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp/__init__.py"}, entry{name: "Notes_MCP-0.3.1.dist-info/METADATA", body: wheelMeta("Notes.MCP", "0.3.1")}),
			"pkg:pypi/notes-mcp@0.3.1", KindWheel, "sha256", nil, ""},
		{"wheel with build tag", "notes_mcp-0.3.1-1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}),
			"pkg:pypi/notes-mcp@0.3.1", KindWheel, "sha256", nil, ""},
		{"wheel metadata disagrees", "notes_mcp-0.3.1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("other", "0.3.1")}),
			"", "", "", ErrArtifact, "the file name"},
		{"wheel two METADATA", "notes_mcp-0.3.1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}),
			"", "", "", ErrArtifact, "two entries"},
		{"wheel a second dist-info", "notes_mcp-0.3.1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}, entry{name: "evil_pkg-6.6.6.dist-info/METADATA", body: wheelMeta("evil-pkg", "6.6.6")}),
			"", "", "", ErrArtifact, `two package manifests at the top level, "notes_mcp-0.3.1.dist-info/METADATA" and "evil_pkg-6.6.6.dist-info/METADATA"`},
		{"wheel traversal", "notes_mcp-0.3.1-py3-none-any.whl",
			makeZip(t, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}, entry{name: "../evil.py"}),
			"", "", "", ErrArtifact, "leaves the archive"},
		{"wheel bad file name", "notes-py3-none-any.whl", makeZip(t), "", "", "", ErrArtifact, "PEP 427"},
		{"sdist", "notes_mcp-0.3.1.tar.gz",
			makeTGZ(t, entry{name: "notes_mcp-0.3.1/PKG-INFO", body: wheelMeta("notes_mcp", "0.3.1")}, entry{name: "notes_mcp-0.3.1/setup.py", body: ""}),
			"pkg:pypi/notes-mcp@0.3.1", KindSdist, "sha256", nil, ""},
		{"sdist a second PKG-INFO", "notes_mcp-0.3.1.tar.gz",
			makeTGZ(t, entry{name: "evil-6.6.6/PKG-INFO", body: wheelMeta("evil", "6.6.6")}, entry{name: "notes_mcp-0.3.1/PKG-INFO", body: wheelMeta("notes_mcp", "0.3.1")}),
			"", "", "", ErrArtifact, `"evil-6.6.6/PKG-INFO" and "notes_mcp-0.3.1/PKG-INFO"`},
		{"sdist without PKG-INFO", "notes_mcp-0.3.1.tar.gz",
			makeTGZ(t, entry{name: "notes_mcp-0.3.1/setup.py", body: ""}),
			"", "", "", ErrArtifact, "PKG-INFO"},
		{"mcpb", "notes.mcpb",
			makeZip(t, entry{name: "manifest.json", body: `{"manifest_version":"0.2","name":"notes-mcp","version":"1.2.0"}`}, entry{name: "server/index.js"}),
			"pkg:generic/notes-mcp@1.2.0", KindMCPB, "sha256", nil, ""},
		{"mcpb a second manifest", "notes.mcpb",
			makeZip(t, entry{name: "manifest.json", body: `{"name":"notes-mcp","version":"1.2.0"}`}, entry{name: "./manifest.json", body: `{"name":"evil","version":"6.6.6"}`}),
			"", "", "", ErrArtifact, "two entries named"},
		{"mcpb no manifest", "notes.mcpb", makeZip(t, entry{name: "server/index.js"}), "", "", "", ErrArtifact, "manifest.json"},
		{"unknown kind", "notes.jar", []byte("x"), "", "", "", ErrArtifact, "want an npm tarball"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse(tc.file, tc.data)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errMatch) {
					t.Fatalf("err %v; want %v containing %q", err, tc.wantErr, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s256, s512 := sha256.Sum256(tc.data), sha512.Sum512(tc.data)
			want := map[string]string{"sha256": hex.EncodeToString(s256[:]), "sha512": hex.EncodeToString(s512[:])}
			p := a.Package()
			if a.Kind != tc.kind || p.PURL != tc.purl || len(p.Digest) != 1 || p.Digest[tc.alg] != want[tc.alg] {
				t.Fatalf("artifact %+v package %+v; want %s %s %s", a, p, tc.kind, tc.purl, tc.alg)
			}
			if a.Integrity() != "sha512-"+base64.StdEncoding.EncodeToString(s512[:]) {
				t.Errorf("integrity %s", a.Integrity())
			}
		})
	}
}

func TestPURL(t *testing.T) {
	for _, tc := range []struct{ typ, ns, name, version, want string }{
		{"npm", "@acme", "notes", "1.0.0", "pkg:npm/%40acme/notes@1.0.0"},
		{"npm", "", "notes", "", "pkg:npm/notes"},
		{"PyPI", "", "a b", "1!2.0+x", "pkg:pypi/a%20b@1%212.0%2Bx"},
		{"generic", "", "a/b", "1", "pkg:generic/a%2Fb@1"},
	} {
		if got := PURL(tc.typ, tc.ns, tc.name, tc.version); got != tc.want {
			t.Errorf("PURL(%q, %q, %q, %q) = %q; want %q", tc.typ, tc.ns, tc.name, tc.version, got, tc.want)
		}
	}
	for in, want := range map[string]string{"Friendly-Bard": "friendly-bard", "FRIENDLY._-BARD": "friendly-bard", "a__b..c": "a-b-c", "_x_": "-x-"} {
		if got := NormalizePyPIName(in); got != want {
			t.Errorf("NormalizePyPIName(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestDecompressionBound(t *testing.T) {
	// A gzip bomb: one entry far larger than MaxUnpackedBytes would be
	// costly to build, so the bound is checked on the reader itself.
	l := &limitedReader{r: strings.NewReader("abcdef"), n: 3}
	buf := make([]byte, 10)
	n, _ := l.Read(buf)
	if n != 3 {
		t.Fatalf("read %d", n)
	}
	if _, err := l.Read(buf); !errors.Is(err, ErrTooLarge) || !l.over {
		t.Fatalf("err %v over %v", err, l.over)
	}
}

// TestNPMPack reads a tarball made by the real npm pack.
func TestNPMPack(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("MCPSIGN_REQUIRE_E2E") == "1" {
			t.Fatal("npm not on PATH")
		}
		t.Skip("npm not on PATH")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"@acme/notes-mcp","version":"1.2.0","files":["index.js"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.js"), []byte("console.log(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, "pack", "--json", "--pack-destination", dir)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "npm_config_update_notifier=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	a, err := Read(filepath.Join(dir, "acme-notes-mcp-1.2.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if a.PURL != "pkg:npm/%40acme/notes-mcp@1.2.0" {
		t.Errorf("purl %s", a.PURL)
	}
	// npm's own integrity of the tarball.
	if !strings.Contains(string(out), `"integrity": "`+a.Integrity()+`"`) {
		t.Errorf("integrity %s not in npm pack's output:\n%s", a.Integrity(), out)
	}
}

// TestZipEntryBound: a zip announcing more entries than MaxEntries is
// refused from its end of central directory record, before the directory
// is read.
func TestZipEntryBound(t *testing.T) {
	var files []entry
	for i := 0; i < 3; i++ {
		files = append(files, entry{name: "f" + string(rune('a'+i))})
	}
	z := makeZip(t, files...)
	// The record is the last 22 bytes (no comment); its total count is at
	// offset 10.
	forged := append([]byte{}, z...)
	forged[len(forged)-12], forged[len(forged)-11] = 0xFF, 0xFF
	if _, err := Parse("n.mcpb", forged); !errors.Is(err, ErrTooLarge) {
		t.Errorf("count 65535: %v", err)
	}
	n := MaxEntries + 1
	forged[len(forged)-12], forged[len(forged)-11] = byte(n), byte(n>>8)
	if _, err := Parse("n.mcpb", forged); !errors.Is(err, ErrTooLarge) {
		t.Errorf("count %d: %v", n, err)
	}
	if _, err := Parse("n.mcpb", z); !errors.Is(err, ErrArtifact) || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("3 entries: %v", err)
	}
	if _, err := Parse("n.mcpb", []byte("PK\x05\x06")); !errors.Is(err, ErrArtifact) {
		t.Errorf("truncated record: %v", err)
	}
}

// TestReadPackage: the package of a file Read reads, and Read's error.
func TestReadPackage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "acme-notes-mcp-1.2.0.tgz")
	if err := os.WriteFile(file, makeTGZ(t, entry{name: "package/package.json", body: pkgJSON}), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Read(file)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := ReadPackage(file)
	if err != nil || pkg.PURL != "pkg:npm/%40acme/notes-mcp@1.2.0" || pkg.Digest["sha512"] != a.Package().Digest["sha512"] || len(pkg.Digest) != 1 {
		t.Errorf("ReadPackage: %+v, %v", pkg, err)
	}
	if _, err := ReadPackage(filepath.Join(dir, "missing.tgz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
