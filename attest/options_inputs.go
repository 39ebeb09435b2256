package attest

import "fmt"

// Inputs are the optional parts of a statement as a release tool is given
// them: released package files, package URLs with their digests by
// position, a claimed source revision that defaults to GitHub Actions',
// and whether the definitions are left out.
type Inputs struct {
	// PackageFiles are released artifact files, each read with
	// ReadPackage (attest/pkgfile.ReadPackage); their packages come
	// first.
	PackageFiles []string
	ReadPackage  func(path string) (Package, error)
	// PURLs are package URLs, and Digests their ALG:HEX digests by
	// position: none, or one per package URL (ParsePackage).
	PURLs, Digests []string
	// Source is the source revision claimed; each part left "" defaults
	// to the GitHub Actions environment's (SourceWithDefaults).
	Source          Source
	OmitDefinitions bool
}

// The parts of a CountError.
const (
	CountPURLs    = "purl"
	CountDigests  = "digest"
	CountPackages = "packages"
)

// CountError is a number of package inputs that Inputs.Options refuses.
type CountError struct {
	// Part is CountPURLs (Got package URLs, more than MaxPackages),
	// CountDigests (Got digests for Want package URLs: neither none nor
	// one each) or CountPackages (Got package files and URLs in all, more
	// than MaxPackages).
	Part      string
	Got, Want int
}

func (e *CountError) Error() string {
	if e.Part == CountDigests {
		return fmt.Sprintf("%d digests for %d package URLs: give one digest per package, in the same order, or none", e.Got, e.Want)
	}
	return fmt.Sprintf("%d packages: at most %d", e.Got, MaxPackages)
}

// PackageFileError is a package file that Inputs.ReadPackage could not
// read.
type PackageFileError struct {
	Path string
	Err  error
}

func (e *PackageFileError) Error() string { return e.Err.Error() }
func (e *PackageFileError) Unwrap() error { return e.Err }

// Options checks and reads the inputs into the Options of Build, the
// GitHub Actions environment read with getenv, in this order: the package
// URLs and their digests (a *CountError, or an *InputError of ParsePackage),
// the number of packages in all (a *CountError), the package files (a
// *PackageFileError), the source (an *InputError of SourceWithDefaults).
func (in Inputs) Options(getenv func(string) string) (Options, error) {
	switch {
	case len(in.PURLs) > MaxPackages:
		return Options{}, &CountError{Part: CountPURLs, Got: len(in.PURLs)}
	case len(in.Digests) > 0 && len(in.Digests) != len(in.PURLs):
		return Options{}, &CountError{Part: CountDigests, Got: len(in.Digests), Want: len(in.PURLs)}
	}
	var fromURLs []Package
	for i, p := range in.PURLs {
		d := ""
		if len(in.Digests) > 0 {
			d = in.Digests[i]
		}
		pkg, err := ParsePackage(p, d)
		if err != nil {
			return Options{}, err
		}
		fromURLs = append(fromURLs, pkg)
	}
	if n := len(in.PackageFiles) + len(fromURLs); n > MaxPackages {
		return Options{}, &CountError{Part: CountPackages, Got: n}
	}
	var pkgs []Package
	for _, f := range in.PackageFiles {
		pkg, err := in.ReadPackage(f)
		if err != nil {
			return Options{}, &PackageFileError{Path: f, Err: err}
		}
		pkgs = append(pkgs, pkg)
	}
	src, err := SourceWithDefaults(in.Source, getenv)
	if err != nil {
		return Options{}, err
	}
	return Options{Packages: append(pkgs, fromURLs...), OmitDefinitions: in.OmitDefinitions, Source: src}, nil
}
