package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/attest/pkgfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrBinding: the statement does not bind what the entry installs.
var ErrBinding = errors.New("the statement does not bind the entry")

// isHex64 reports whether s is 64 lowercase hex digits (a SHA-256).
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// publicRegistry is the registryBaseUrl of a purl-bound type's public
// registry, as the official registry spells them (a switch: no table is
// built at start).
func publicRegistry(registryType string) (string, bool) {
	switch registryType {
	case "npm":
		return "https://registry.npmjs.org", true
	case "pypi":
		return "https://pypi.org", true
	case "nuget":
		return "https://api.nuget.org", true
	}
	return "", false
}

// Binding says how one packages[] entry must appear in the statement's
// predicate.package: by purl, by SHA-256 digest, or both.
type Binding struct {
	PURL   string
	SHA256 string
}

// PackageBinding returns what the statement must carry for package p
// (docs/REGISTRY.md, "What the statement must bind"): npm, PyPI and NuGet
// packages by their purl (identifier and version), an MCPB by its
// fileSha256, an OCI image by the digest of its reference
// (NAME@sha256:HEX); a fileSha256 given beside a purl must be the digest
// of the package entry the purl names. A package mcpsign cannot bind (an
// OCI reference without a digest, an unknown registryType, npm without a
// version) is an error: fail closed.
func PackageBinding(p Package) (Binding, error) {
	var b Binding
	if p.FileSHA256 != "" {
		if !isHex64(p.FileSHA256) {
			return b, fmt.Errorf("fileSha256 %s is not 64 lowercase hex digits", textsafe.RawQuote(textsafe.Cut(p.FileSHA256, 80)))
		}
		b.SHA256 = p.FileSHA256
	}
	// A purl names a package of its type's public registry: installed
	// from another (registryBaseUrl), the name may be anything.
	if def, ok := publicRegistry(p.RegistryType); ok && p.RegistryBaseURL != "" && strings.TrimSuffix(p.RegistryBaseURL, "/") != def {
		return b, fmt.Errorf("%s package from registryBaseUrl %s: a purl binds only %s", p.RegistryType, textsafe.RawQuote(textsafe.Cut(p.RegistryBaseURL, 200)), def)
	}
	switch p.RegistryType {
	case "npm":
		if p.Version == "" {
			return b, errors.New("an npm package without a version")
		}
		ns, name := "", p.Identifier
		if strings.HasPrefix(name, "@") {
			var ok bool
			if ns, name, ok = strings.Cut(name, "/"); !ok || name == "" {
				return b, fmt.Errorf("npm identifier %s is not @scope/name", textsafe.RawQuote(p.Identifier))
			}
		}
		b.PURL = pkgfile.PURL("npm", ns, name, p.Version)
	case "pypi":
		if p.Version == "" {
			return b, errors.New("a PyPI package without a version")
		}
		b.PURL = pkgfile.PURL("pypi", "", pkgfile.NormalizePyPIName(p.Identifier), p.Version)
	case "nuget":
		if p.Version == "" {
			return b, errors.New("a NuGet package without a version")
		}
		b.PURL = pkgfile.PURL("nuget", "", p.Identifier, p.Version)
	case "mcpb":
		if b.SHA256 == "" {
			return b, errors.New("an MCPB package without fileSha256")
		}
	case "oci":
		_, d, ok := strings.Cut(p.Identifier, "@sha256:")
		if !ok || !isHex64(d) {
			return b, fmt.Errorf("OCI image %s has no @sha256: digest: nothing binds the image", textsafe.RawQuote(textsafe.Cut(p.Identifier, 200)))
		}
		if b.SHA256 != "" && b.SHA256 != d {
			return b, errors.New("OCI image: fileSha256 and the reference's digest differ")
		}
		b.SHA256 = d
	default:
		return b, fmt.Errorf("registryType %s: mcpsign cannot bind it", textsafe.RawQuote(textsafe.Cut(p.RegistryType, 40)))
	}
	return b, nil
}

// CheckBinding checks that st binds what entry e installs: the
// predicate's server version is the entry's version, and every
// packages[] entry has its Binding among the predicate's package entries
// (the purl equal, and the sha256 equal where both give one; for an MCPB
// or an OCI image, the sha256 equal). What no statement member can bind
// and that decides what is installed, how it starts, with what
// environment or where a host connects fails closed (Entry.Unbound, a
// *MemberError): remotes, a package transport other than stdio, runtime
// arguments, registry-chosen arguments and environment variables
// (docs/REGISTRY.md, "What each member of server.json is"). The error
// wraps ErrBinding and says which member.
func CheckBinding(e *Entry, st *attest.Statement) error {
	if st.Predicate.Server.Version != e.Version {
		return e.memberErr(ErrBinding, "/version", "the statement signs version %s, the entry is version %s",
			textsafe.RawQuote(st.Predicate.Server.Version), textsafe.RawQuote(e.Version))
	}
	if len(e.Unbound) > 0 {
		return e.Unbound[0]
	}
	for i, p := range e.Packages {
		b, err := PackageBinding(p)
		if err != nil {
			return e.memberErr(ErrBinding, "/packages/"+strconv.Itoa(i), "%v", err)
		}
		if !bound(b, st.Predicate.Package) {
			return e.memberErr(ErrBinding, "/packages/"+strconv.Itoa(i), "(%s %s) needs %s; the statement binds %s",
				textsafe.RawQuote(p.RegistryType), textsafe.RawQuote(textsafe.Cut(p.Identifier, 200)), b, boundList(st.Predicate.Package))
		}
	}
	return nil
}

func bound(b Binding, pkgs []attest.Package) bool {
	for _, sp := range pkgs {
		h, hasSHA := sp.Digest["sha256"]
		if b.PURL != "" {
			// A purl binds npm, PyPI and NuGet packages; a fileSha256 the
			// registry states must then agree with the statement's, when
			// the statement gives one (an npm tarball's is sha512).
			if sp.PURL == b.PURL && (b.SHA256 == "" || !hasSHA || h == b.SHA256) {
				return true
			}
			continue
		}
		if hasSHA && h == b.SHA256 {
			return true
		}
	}
	return false
}

func (b Binding) String() string {
	var s []string
	if b.PURL != "" {
		s = append(s, "purl "+textsafe.RawQuote(b.PURL))
	}
	if b.SHA256 != "" {
		s = append(s, "sha256:"+b.SHA256)
	}
	return strings.Join(s, " with ")
}

func boundList(pkgs []attest.Package) string {
	if len(pkgs) == 0 {
		return "no package"
	}
	var s []string
	for _, p := range pkgs {
		x := textsafe.RawQuote(textsafe.Cut(p.PURL, 200))
		if h, ok := p.Digest["sha256"]; ok {
			x += " sha256:" + textsafe.Cut(h, 64)
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}
