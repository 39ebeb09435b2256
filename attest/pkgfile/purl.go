package pkgfile

import (
	"strings"
)

// PURL formats a package URL, pkg:TYPE/NAMESPACE/NAME@VERSION, as the
// package-url specification writes one (github.com/package-url/purl-spec):
// the type lowercase, and the namespace segments, the name and the version
// each percent-encoded, every byte but the unreserved characters
// A–Z a–z 0–9 "." "-" "_" "~" written %XX in uppercase hex. So "@acme"
// becomes "%40acme" and a version "1.0+local" becomes "1.0%2Blocal". An
// empty namespace or version is left out with its separator.
func PURL(typ, namespace, name, version string) string {
	var b strings.Builder
	b.WriteString("pkg:")
	b.WriteString(strings.ToLower(typ))
	b.WriteByte('/')
	if namespace != "" {
		for _, seg := range strings.Split(namespace, "/") {
			b.WriteString(escape(seg))
			b.WriteByte('/')
		}
	}
	b.WriteString(escape(name))
	if version != "" {
		b.WriteByte('@')
		b.WriteString(escape(version))
	}
	return b.String()
}

func escape(s string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// NormalizePyPIName returns a Python project name as PyPI compares it
// (PEP 503): lowercase, every run of "-", "_" and "." one "-". The purl
// type pypi names a package so.
func NormalizePyPIName(name string) string {
	var b strings.Builder
	sep := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '-' || c == '_' || c == '.' {
			if !sep {
				b.WriteByte('-')
			}
			sep = true
			continue
		}
		sep = false
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}
