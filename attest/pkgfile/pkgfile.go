// Package pkgfile reads a released package artifact (an npm tarball, a
// Python wheel or sdist, an MCPB bundle) and names it: its package URL and
// digest, the predicate's package entry (docs/STATEMENT.md, "Package
// binding from the artifact"), so that a publisher never spells either.
//
// Every input is bounded: the file, the bytes decompressed from it, its
// entries and the manifest read; an entry whose name could leave the
// archive's directory, an archive holding its manifest twice, and one whose
// top level holds a second package manifest (another directory's
// package.json, a second .dist-info/METADATA, PKG-INFO), are refused.
package pkgfile

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Bounds of what Read and Parse accept.
const (
	// MaxFileBytes bounds the artifact file.
	MaxFileBytes = 256 << 20
	// MaxUnpackedBytes bounds the bytes decompressed from a gzip stream
	// (npm tarball, sdist) or the sum of the declared sizes of a zip's
	// entries that are read.
	MaxUnpackedBytes = 1 << 30
	// MaxEntries bounds an archive's entries (a zip's are counted from its
	// end of central directory record, before the directory is read).
	MaxEntries = 65_000
	// MaxManifestBytes bounds package.json, METADATA, PKG-INFO and
	// manifest.json.
	MaxManifestBytes = 1 << 20
)

// Kind is the kind of an artifact.
type Kind string

// Artifact kinds, told apart by the file name's ending.
const (
	KindNPM   Kind = "npm"   // NAME-VERSION.tgz, as npm pack writes it
	KindWheel Kind = "wheel" // *.whl (PEP 427)
	KindSdist Kind = "sdist" // *.tar.gz (PEP 625)
	KindMCPB  Kind = "mcpb"  // *.mcpb (MCP Bundle)
)

// Errors wrapped by every failure of Read and Parse.
var (
	// ErrArtifact: the file is not an artifact of a kind read here, or
	// not a well-formed one.
	ErrArtifact = errors.New("invalid package artifact")
	// ErrTooLarge: a bound above was passed.
	ErrTooLarge = errors.New("package artifact too large")
)

// Artifact is a package artifact, named and digested.
type Artifact struct {
	Kind    Kind
	Name    string // as the registry names it (npm: "@scope/name"; PyPI: normalized)
	Version string
	// PURL is the package URL of Name at Version.
	PURL string
	// SHA256 and SHA512 are the hex digests of the file.
	SHA256, SHA512 string
}

// Package returns the predicate's package entry: the package URL and the
// digest the artifact's registry publishes, sha512 for npm (its
// "integrity"), sha256 for the others.
func (a *Artifact) Package() attest.Package {
	if a.Kind == KindNPM {
		return attest.Package{PURL: a.PURL, Digest: map[string]string{"sha512": a.SHA512}}
	}
	return attest.Package{PURL: a.PURL, Digest: map[string]string{"sha256": a.SHA256}}
}

// Integrity returns the file's npm integrity string, "sha512-" and the
// base64 of its SHA-512.
func (a *Artifact) Integrity() string {
	raw, _ := hex.DecodeString(a.SHA512)
	return "sha512-" + base64.StdEncoding.EncodeToString(raw)
}

// Digests returns the file's digests by algorithm.
func (a *Artifact) Digests() map[string]string {
	return map[string]string{"sha256": a.SHA256, "sha512": a.SHA512}
}

// Read reads the artifact file at path (at most MaxFileBytes) and parses
// it; its kind comes from the file name.
func Read(p string) (*Artifact, error) {
	data, err := boundedfile.Read(p, MaxFileBytes, ErrTooLarge)
	if err != nil {
		return nil, err
	}
	a, err := Parse(path.Base(strings.ReplaceAll(p, "\\", "/")), data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return a, nil
}

// ReadPackage reads the artifact file at path (Read) and returns its
// package, for attest.Inputs.
func ReadPackage(path string) (attest.Package, error) {
	a, err := Read(path)
	if err != nil {
		return attest.Package{}, err
	}
	return a.Package(), nil
}

// Parse names and digests the artifact data whose file name (without
// directory) is name:
//
//   - *.tgz: an npm tarball; name and version from the archive's one
//     package/package.json (purl pkg:npm/%40scope/name@version).
//   - *.whl: a wheel; name and version from the file name (PEP 427), the
//     name normalized as PyPI does (PEP 503), and the same name and version
//     in its one NAME-VERSION.dist-info/METADATA (purl pkg:pypi/name@version).
//   - *.tar.gz: an sdist; name and version from the file name (PEP 625),
//     and the same in its one NAME-VERSION/PKG-INFO.
//   - *.mcpb: an MCP Bundle (a zip); name and version from its one
//     manifest.json (purl pkg:generic/name@version: the purl specification
//     has no type for MCPB).
func Parse(name string, data []byte) (*Artifact, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, MaxFileBytes)
	}
	var (
		a   *Artifact
		err error
	)
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".tgz"):
		a, err = parseNPM(data)
	case strings.HasSuffix(lower, ".whl"):
		a, err = parseWheel(name, data)
	case strings.HasSuffix(lower, ".tar.gz"):
		a, err = parseSdist(name, data)
	case strings.HasSuffix(lower, ".mcpb"):
		a, err = parseMCPB(data)
	default:
		return nil, fmt.Errorf("%w: %s: want an npm tarball (.tgz), a wheel (.whl), an sdist (.tar.gz) or an MCP Bundle (.mcpb)", ErrArtifact, textsafe.RawQuote(name))
	}
	if err != nil {
		return nil, err
	}
	s256, s512 := sha256.Sum256(data), sha512.Sum512(data)
	a.SHA256, a.SHA512 = hex.EncodeToString(s256[:]), hex.EncodeToString(s512[:])
	return a, nil
}

func fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrArtifact, fmt.Sprintf(format, args...))
}

// cleanName returns an archive entry's name cleaned, refusing one that is
// absolute, has a ".." segment, a backslash, a NUL or control character,
// or that names no file.
func cleanName(n string) (string, error) {
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsAny(n, "\\") ||
		strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fail("entry %s: not a relative path", textsafe.RawQuote(n))
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." {
			return "", fail("entry %s: leaves the archive's directory", textsafe.RawQuote(n))
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", fail("entry %s: names no file", textsafe.RawQuote(n))
	}
	return c, nil
}

// A manifest reports whether an archive entry (its name as written, and
// cleaned) is a package manifest at the archive's top level, where an
// installer may take it for the package's: an archive holding two (the one
// read and another) is refused, since which one a tool installs is not
// defined.
type manifest func(raw, clean string) bool

// topLevel is the manifest rule of a file named base one directory down
// (any directory, for npm strips the first of every entry: package/ is a
// convention, not a rule) whose directory satisfies dir.
func topLevel(base string, dir func(string) bool) manifest {
	return func(_, c string) bool {
		d, f, ok := strings.Cut(c, "/")
		return ok && !strings.Contains(f, "/") && strings.EqualFold(f, base) && dir(d)
	}
}

// npmManifest is npm's manifest rule: topLevel, and any entry that npm
// unpacks as the package's package.json. npm (node-tar's strip: 1) drops
// the first element of the name as written, split at "/", before the name
// is resolved: "./package.json" and ".//package.json" become package.json,
// though cleaned they have no directory.
func npmManifest(raw, clean string) bool {
	if topLevel("package.json", anyDir)(raw, clean) {
		return true
	}
	_, rest, ok := strings.Cut(raw, "/")
	return ok && strings.EqualFold(strings.TrimPrefix(path.Clean("/"+rest), "/"), "package.json")
}

func anyDir(string) bool { return true }

// twoManifests is the error of an archive holding the manifests a and b.
func twoManifests(a, b, why string) error {
	return fail("two package manifests at the top level, %s and %s: %s", textsafe.RawQuote(a), textsafe.RawQuote(b), why)
}

// scanTar reads a gzip tarball, checking every entry name and the bounds,
// and returns the content of the one regular file named want (cleaned). A
// second entry that other says is a manifest is refused (twoManifests,
// with why).
func scanTar(data []byte, want string, other manifest, why string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fail("not a gzip file: %v", err)
	}
	zr.Multistream(false)
	lim := &limitedReader{r: zr, n: MaxUnpackedBytes}
	tr := tar.NewReader(lim)
	var found []byte
	seen := false
	var manifests []string
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if lim.over {
				return nil, fmt.Errorf("%w: more than %d bytes decompressed", ErrTooLarge, MaxUnpackedBytes)
			}
			return nil, fail("not a tar archive: %v", err)
		}
		if entries >= MaxEntries {
			return nil, fmt.Errorf("%w: more than %d entries", ErrTooLarge, MaxEntries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		c, err := cleanName(h.Name)
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			if _, err := cleanName(h.Linkname); err != nil || path.IsAbs(h.Linkname) {
				return nil, fail("link %s: target %s leaves the archive's directory", textsafe.RawQuote(h.Name), textsafe.RawQuote(h.Linkname))
			}
			if strings.HasPrefix(path.Clean(path.Join(path.Dir(c), h.Linkname)), "../") {
				return nil, fail("link %s: target %s leaves the archive's directory", textsafe.RawQuote(h.Name), textsafe.RawQuote(h.Linkname))
			}
		}
		if !strings.EqualFold(c, want) {
			if h.Typeflag != tar.TypeDir && other(h.Name, c) {
				if manifests = append(manifests, h.Name); len(manifests) > 1 {
					return nil, twoManifests(manifests[0], manifests[1], why)
				}
			}
			continue
		}
		if seen {
			return nil, fail("two entries named %s: which one a tool reads is not defined", textsafe.RawQuote(want))
		}
		seen = true
		if c != want {
			return nil, fail("entry %s: want %s, spelled so", textsafe.RawQuote(h.Name), textsafe.RawQuote(want))
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fail("%s is not a regular file", textsafe.RawQuote(want))
		}
		if h.Size > MaxManifestBytes {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, want, MaxManifestBytes)
		}
		found, err = io.ReadAll(io.LimitReader(tr, MaxManifestBytes+1))
		if err != nil {
			return nil, fail("reading %s: %v", textsafe.RawQuote(want), err)
		}
		if manifests = append(manifests, h.Name); len(manifests) > 1 {
			return nil, twoManifests(manifests[0], manifests[1], why)
		}
	}
	// The gzip stream must end with the tar archive (no second member).
	if _, err := io.Copy(io.Discard, lim); err != nil {
		return nil, fail("gzip stream: %v", err)
	}
	if lim.over {
		return nil, fmt.Errorf("%w: more than %d bytes decompressed", ErrTooLarge, MaxUnpackedBytes)
	}
	if !seen {
		return nil, fail("no %s in the archive", textsafe.RawQuote(want))
	}
	return found, nil
}

// limitedReader reads at most n bytes and records an attempt to read more.
// At the bound it probes for one byte more: an error of that read (a gzip
// checksum that fails at the stream's end) is returned, not taken for EOF.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		k, err := l.r.Read(one[:])
		if k > 0 {
			l.over = true
			return 0, ErrTooLarge
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

var (
	npmNameRe = lazy.NewRegexp(`^(?:@([a-z0-9~][a-z0-9._~-]*)/)?([a-z0-9~][a-z0-9._~-]*)$`)
	// A version of printable ASCII without spaces (npm's are semver).
	versionRe = lazy.NewRegexp(`^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,127}$`)
)

func parseNPM(data []byte) (*Artifact, error) {
	pj, err := scanTar(data, "package/package.json", npmManifest,
		"npm strips the first directory of every entry and installs the package.json it unpacks last, which need not be the one read here")
	if err != nil {
		return nil, err
	}
	vals, err := digest.ReadMembers(pj, "name", "version")
	if err != nil {
		return nil, fail("package/package.json: %v", err)
	}
	str := func(m string) (string, error) {
		v, ok := vals[m]
		if !ok {
			return "", fail("package/package.json has no %s", textsafe.RawQuote(m))
		}
		s, err := digest.DecodeString(v)
		if err != nil {
			return "", fail("package/package.json %s: %v", textsafe.RawQuote(m), err)
		}
		return s, nil
	}
	name, err := str("name")
	if err != nil {
		return nil, err
	}
	version, err := str("version")
	if err != nil {
		return nil, err
	}
	m := npmNameRe.Get().FindStringSubmatch(name)
	if m == nil || len(name) > 214 {
		return nil, fail("package/package.json name %s: not an npm package name", textsafe.RawQuote(name))
	}
	if !versionRe.MatchString(version) {
		return nil, fail("package/package.json version %s: not a package version", textsafe.RawQuote(version))
	}
	ns := ""
	if m[1] != "" {
		ns = "@" + m[1]
	}
	return &Artifact{Kind: KindNPM, Name: name, Version: version, PURL: PURL("npm", ns, m[2], version)}, nil
}

// A distribution name as PEP 508 allows it (a wheel's and an sdist's file
// name escape it further, "-" written "_").
var pyNameRe = lazy.NewRegexp(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)

func parseWheel(name string, data []byte) (*Artifact, error) {
	base := name[:len(name)-len(".whl")]
	parts := strings.Split(base, "-")
	if len(parts) != 5 && len(parts) != 6 {
		return nil, fail("wheel file name %s: want NAME-VERSION(-BUILD)-PYTHON-ABI-PLATFORM.whl (PEP 427)", textsafe.RawQuote(name))
	}
	dist, version := parts[0], parts[1]
	if !pyNameRe.MatchString(dist) || !versionRe.MatchString(version) {
		return nil, fail("wheel file name %s: not a distribution name and version", textsafe.RawQuote(name))
	}
	zr, err := openZip(data)
	if err != nil {
		return nil, err
	}
	meta, err := zipFile(zr, dist+"-"+version+".dist-info/METADATA", topLevel("METADATA", func(d string) bool {
		return strings.HasSuffix(strings.ToLower(d), ".dist-info")
	}), "a wheel has one .dist-info directory (PEP 427); which one an installer reads is not defined")
	if err != nil {
		return nil, err
	}
	if err := checkCoreMetadata("METADATA", meta, dist, version); err != nil {
		return nil, err
	}
	n := NormalizePyPIName(dist)
	return &Artifact{Kind: KindWheel, Name: n, Version: version, PURL: PURL("pypi", "", n, version)}, nil
}

func parseSdist(name string, data []byte) (*Artifact, error) {
	base := name[:len(name)-len(".tar.gz")]
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return nil, fail("sdist file name %s: want NAME-VERSION.tar.gz (PEP 625)", textsafe.RawQuote(name))
	}
	dist, version := base[:i], base[i+1:]
	if !pyNameRe.MatchString(dist) || !versionRe.MatchString(version) {
		return nil, fail("sdist file name %s: not a distribution name and version", textsafe.RawQuote(name))
	}
	info, err := scanTar(data, base+"/PKG-INFO", topLevel("PKG-INFO", anyDir),
		"an sdist has one top-level directory (PEP 625); which one a tool builds is not defined")
	if err != nil {
		return nil, err
	}
	if err := checkCoreMetadata("PKG-INFO", info, dist, version); err != nil {
		return nil, err
	}
	n := NormalizePyPIName(dist)
	return &Artifact{Kind: KindSdist, Name: n, Version: version, PURL: PURL("pypi", "", n, version)}, nil
}

// checkCoreMetadata checks that the Name and Version headers of core
// metadata (METADATA, PKG-INFO) name what the file name does.
func checkCoreMetadata(what string, meta []byte, dist, version string) error {
	var gotName, gotVersion string
	nName, nVersion := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(meta))
	sc.Buffer(make([]byte, 0, 4096), MaxManifestBytes)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			break // the body (long description) begins
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "name":
			gotName, nName = strings.TrimSpace(v), nName+1
		case "version":
			gotVersion, nVersion = strings.TrimSpace(v), nVersion+1
		}
	}
	if err := sc.Err(); err != nil {
		return fail("%s: %v", what, err)
	}
	if nName != 1 || nVersion != 1 {
		return fail("%s: want one Name and one Version header, have %d and %d", what, nName, nVersion)
	}
	if NormalizePyPIName(gotName) != NormalizePyPIName(dist) || gotVersion != version {
		return fail("%s names %s %s, the file name %s %s", what, textsafe.RawQuote(gotName), textsafe.RawQuote(gotVersion), textsafe.RawQuote(dist), textsafe.RawQuote(version))
	}
	return nil
}

// openZip opens a zip archive after reading the entry count of its end of
// central directory record (the last one, as archive/zip finds it), so that
// a directory of millions of entries is refused before it is read.
func openZip(data []byte) (*zip.Reader, error) {
	const eocdLen = 22
	start := max(0, len(data)-eocdLen-0xFFFF)
	var rec []byte
	// archive/zip takes the last signature whose comment fits in the file.
	for end := len(data); ; {
		i := bytes.LastIndex(data[start:end], []byte("PK\x05\x06"))
		if i < 0 {
			return nil, fail("not a zip archive: no end of central directory record")
		}
		p := start + i
		if p+eocdLen <= len(data) && p+eocdLen+(int(data[p+20])|int(data[p+21])<<8) <= len(data) {
			rec = data[p:]
			break
		}
		end = p
	}
	if n := int(rec[10]) | int(rec[11])<<8; n > MaxEntries {
		return nil, fmt.Errorf("%w: %d entries, at most %d", ErrTooLarge, n, MaxEntries)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fail("not a zip archive: %v", err)
	}
	return zr, nil
}

// zipFile checks every entry name of a zip and the bounds, and returns the
// content of its one file named want. A second entry that other says is a
// manifest is refused (twoManifests, with why).
func zipFile(zr *zip.Reader, want string, other manifest, why string) ([]byte, error) {
	if len(zr.File) > MaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries", ErrTooLarge, MaxEntries)
	}
	var f *zip.File
	var manifests []string
	for _, e := range zr.File {
		c, err := cleanName(e.Name)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(c, want) {
			if !e.FileInfo().IsDir() && other(e.Name, c) {
				if manifests = append(manifests, e.Name); len(manifests) > 1 {
					return nil, twoManifests(manifests[0], manifests[1], why)
				}
			}
			continue
		}
		if f != nil {
			return nil, fail("two entries named %s: which one a tool reads is not defined", textsafe.RawQuote(want))
		}
		if c != want {
			return nil, fail("entry %s: want %s, spelled so", textsafe.RawQuote(e.Name), textsafe.RawQuote(want))
		}
		f = e
		if manifests = append(manifests, e.Name); len(manifests) > 1 {
			return nil, twoManifests(manifests[0], manifests[1], why)
		}
	}
	if f == nil {
		return nil, fail("no %s in the archive", textsafe.RawQuote(want))
	}
	if f.FileInfo().IsDir() || f.UncompressedSize64 > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %s is a directory or larger than %d bytes", ErrTooLarge, want, MaxManifestBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fail("%s: %v", textsafe.RawQuote(want), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxManifestBytes+1))
	if err != nil {
		return nil, fail("reading %s: %v", textsafe.RawQuote(want), err)
	}
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, want, MaxManifestBytes)
	}
	return b, nil
}

// An MCPB name: what a file name and a purl carry safely.
var mcpbNameRe = lazy.NewRegexp(`^[A-Za-z0-9@][A-Za-z0-9@._/-]{0,213}$`)

func parseMCPB(data []byte) (*Artifact, error) {
	zr, err := openZip(data)
	if err != nil {
		return nil, err
	}
	mf, err := zipFile(zr, "manifest.json", func(_, c string) bool { return strings.EqualFold(c, "manifest.json") },
		"an MCPB bundle has one manifest.json")
	if err != nil {
		return nil, err
	}
	vals, err := digest.ReadMembers(mf, "name", "version")
	if err != nil {
		return nil, fail("manifest.json: %v", err)
	}
	var nv [2]string
	for i, m := range []string{"name", "version"} {
		v, ok := vals[m]
		if !ok {
			return nil, fail("manifest.json has no %s", textsafe.RawQuote(m))
		}
		if nv[i], err = digest.DecodeString(v); err != nil {
			return nil, fail("manifest.json %s: %v", textsafe.RawQuote(m), err)
		}
	}
	if !mcpbNameRe.MatchString(nv[0]) || strings.Contains(nv[0], "//") || strings.HasSuffix(nv[0], "/") {
		return nil, fail("manifest.json name %s: not a package name", textsafe.RawQuote(nv[0]))
	}
	if !versionRe.MatchString(nv[1]) {
		return nil, fail("manifest.json version %s: not a package version", textsafe.RawQuote(nv[1]))
	}
	return &Artifact{Kind: KindMCPB, Name: nv[0], Version: nv[1], PURL: PURL("generic", "", nv[0], nv[1])}, nil
}
