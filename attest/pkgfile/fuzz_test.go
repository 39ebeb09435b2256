package pkgfile

import (
	"errors"
	"testing"
)

// FuzzParse feeds every reader: Parse either names the artifact with a
// purl of its type, or fails with ErrArtifact or ErrTooLarge.
func FuzzParse(f *testing.F) {
	f.Add("x.tgz", makeTGZ(f, entry{name: "package/package.json", body: pkgJSON}))
	f.Add("x.tgz", makeTGZ(f, entry{name: "package/package.json", body: pkgJSON}, entry{name: "package/package.json", body: pkgJSON}))
	f.Add("x.tgz", makeTGZ(f, entry{name: "package/package.json", body: pkgJSON}, entry{name: "other/package.json", body: `{"name":"evil-pkg","version":"6.6.6"}`}))
	f.Add("x.whl", makeZip(f, entry{name: "a-1.dist-info/METADATA", body: wheelMeta("a", "1")}, entry{name: "b-1.dist-info/METADATA", body: wheelMeta("b", "1")}))
	f.Add("notes_mcp-0.3.1-py3-none-any.whl", makeZip(f, entry{name: "notes_mcp-0.3.1.dist-info/METADATA", body: wheelMeta("notes-mcp", "0.3.1")}))
	f.Add("notes_mcp-0.3.1.tar.gz", makeTGZ(f, entry{name: "notes_mcp-0.3.1/PKG-INFO", body: wheelMeta("notes_mcp", "0.3.1")}))
	f.Add("n.mcpb", makeZip(f, entry{name: "manifest.json", body: `{"name":"n","version":"1.0.0"}`}))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		a, err := Parse(name, data)
		if err != nil {
			if !errors.Is(err, ErrArtifact) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if a.PURL == "" || len(a.SHA256) != 64 || len(a.SHA512) != 128 || a.Name == "" || a.Version == "" {
			t.Fatalf("artifact %+v", a)
		}
	})
}
