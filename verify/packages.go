package verify

import (
	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/attest/pkgfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// PackageFile is the requirement that the statement binds the released
// artifact at path (an npm tarball, wheel, sdist or MCP Bundle, read and
// digested by attest/pkgfile), named by its path and purl.
func PackageFile(path string) (PackageRequirement, error) {
	a, err := pkgfile.Read(path)
	if err != nil {
		return PackageRequirement{}, err
	}
	return PackageRequirement{Name: textsafe.RawQuote(path) + " (" + a.PURL + ")", Digests: a.Digests()}, nil
}

// PackageIntegrity is the requirement that the statement binds the npm
// package of the integrity string s, as a package-lock writes it
// (attest.ParseIntegrity: sha512-BASE64 or sha256-BASE64).
func PackageIntegrity(s string) (PackageRequirement, error) {
	d, err := attest.ParseIntegrity(s)
	if err != nil {
		return PackageRequirement{}, err
	}
	return PackageRequirement{Name: "of integrity " + textsafe.RawQuote(s), Digests: d}, nil
}
