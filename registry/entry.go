package registry

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/mcpwire"
)

// The members of server.json that carry mcpsign's blocks (docs/REGISTRY.md).
const (
	// PublisherProvided is the member of server.json's _meta that the
	// official registry keeps as the publisher wrote it (at most 4,096
	// bytes).
	PublisherProvided = "io.modelcontextprotocol.registry/publisher-provided"
	// AttestationMember is the member of PublisherProvided that points at
	// the publisher's bundles: {"bundleUrl","bundleDigest"} or a list of
	// them.
	AttestationMember = "dev.mcpsign/attestation"
	// VerifiedMember is the member of server.json's _meta that a verified
	// dump adds: who signed the entry, the bundle digests, when it was
	// verified.
	VerifiedMember = "dev.mcpsign/verified"
)

// Errors of reading entries and pages; test with errors.Is.
var (
	// ErrEntry: a server.json (or API entry) that does not read.
	ErrEntry = errors.New("invalid registry entry")
	// ErrPage: an API page or dump that does not read, or exceeds a bound.
	ErrPage = errors.New("invalid registry page")
	// ErrNoAttestation: the entry points at no bundle.
	ErrNoAttestation = errors.New("the entry lists no attestation (no " + AttestationMember + " in _meta." + PublisherProvided + ")")
	// ErrAttestation: the attestation pointer does not read.
	ErrAttestation = errors.New("invalid attestation pointer")
)

// Package is one entry of server.json's packages[], the members mcpsign
// binds (docs/REGISTRY.md, "What the statement must bind").
type Package struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version,omitempty"`
	FileSHA256   string `json:"fileSha256,omitempty"`
	// RegistryBaseURL is the registry the package is installed from
	// ("" : its type's public registry).
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	// RuntimeArguments says that the package gives its runtime arguments
	// (runtimeArguments, not empty): `npx --package=…`, `docker run
	// --pull`, `uvx --from` change what is fetched and run, and no
	// statement member binds them.
	RuntimeArguments bool `json:"-"`
}

// Pointer is one bundle an entry points at: an https URL and the SHA-256
// of the bundle's bytes, "sha256:" and 64 lowercase hex digits.
type Pointer struct {
	URL    string `json:"bundleUrl"`
	Digest string `json:"bundleDigest"`
}

// Entry is one server version of a registry, read strictly.
type Entry struct {
	Name    string
	Version string
	// RepositoryURL and RepositorySource are server.json's repository.url
	// and repository.source ("" when absent).
	RepositoryURL    string
	RepositorySource string
	Packages         []Package
	// Remotes is the number of remotes[] entries: URLs a host connects to,
	// which no statement member binds.
	Remotes int
	// Pointers are the bundles the publisher lists; AttestationErr says
	// why there are none (ErrNoAttestation) or why they do not read.
	Pointers       []Pointer
	AttestationErr error
	// Server is the server.json document, its bytes as the source gave
	// them (inside an API entry, the value of "server").
	Server []byte
}

// Limits bound what a source may make mcpsign read. The zero value of a
// field means its default (DefaultLimits).
type Limits struct {
	// MaxEntryBytes bounds one server.json document.
	MaxEntryBytes int
	// MaxPageBytes bounds one API page, and one top-level value of a file.
	MaxPageBytes int
	// MaxPageEntries bounds the servers of one page.
	MaxPageEntries int
	// MaxPages bounds the pages of one listing.
	MaxPages int
	// MaxEntries bounds the entries of one run.
	MaxEntries int
	// MaxDepth bounds the nesting of a document.
	MaxDepth int
	// MaxPointers bounds the bundles one entry may list.
	MaxPointers int
	// MaxPackages bounds packages[].
	MaxPackages int
}

// DefaultLimits are the documented bounds (docs/REGISTRY.md, "Bounds").
var DefaultLimits = Limits{
	MaxEntryBytes:  256 << 10,
	MaxPageBytes:   16 << 20,
	MaxPageEntries: 1000,
	MaxPages:       100000,
	MaxEntries:     10000000,
	MaxDepth:       64,
	MaxPointers:    32,
	MaxPackages:    64,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxEntryBytes, d.MaxEntryBytes)
	set(&l.MaxPageBytes, d.MaxPageBytes)
	set(&l.MaxPageEntries, d.MaxPageEntries)
	set(&l.MaxPages, d.MaxPages)
	set(&l.MaxEntries, d.MaxEntries)
	set(&l.MaxDepth, d.MaxDepth)
	set(&l.MaxPointers, d.MaxPointers)
	set(&l.MaxPackages, d.MaxPackages)
	return l
}

// checkDepth refuses a text nested deeper than max.
func checkDepth(data []byte, max int) error {
	s := &jsonscan.Scanner{In: data, MaxDepth: max, Escapes: true}
	s.Space()
	if _, err := s.Value(0); err != nil {
		return err
	}
	s.Space()
	if s.Pos != len(data) {
		return s.Fail("unexpected data after the JSON value")
	}
	return nil
}

var (
	serverMembers  = []string{"name", "version", "repository", "packages", "remotes", "_meta"}
	repoMembers    = []string{"url", "source"}
	packageMembers = []string{"registryType", "identifier", "version", "fileSha256", "registryBaseUrl", "runtimeArguments"}
	entryMembers   = []string{"server", "_meta"}
)

// ParseServer reads one server.json document strictly (docs/REGISTRY.md,
// "Reading"): a repeated member, or a case variant of one mcpsign reads, is
// refused; name and version are required strings; the attestation pointer
// is read into Pointers, or its refusal kept in AttestationErr (the entry
// still reads: its line says why it fails).
func ParseServer(raw []byte, lim Limits) (*Entry, error) {
	lim = lim.withDefaults()
	raw = bytes.TrimSpace(raw)
	if len(raw) > lim.MaxEntryBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrEntry, len(raw), lim.MaxEntryBytes)
	}
	if err := checkDepth(raw, lim.MaxDepth); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEntry, err)
	}
	m, err := digest.ReadMembers(raw, serverMembers...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEntry, err)
	}
	e := &Entry{Server: raw}
	if e.Name, err = reqString(m, "name"); err != nil {
		return nil, err
	}
	if e.Version, err = reqString(m, "version"); err != nil {
		return e, err
	}
	if v, ok := m["repository"]; ok && string(v) != "null" {
		rm, err := digest.ReadMembers(v, repoMembers...)
		if err != nil {
			return e, fmt.Errorf("%w: repository: %w", ErrEntry, err)
		}
		if e.RepositoryURL, err = optString(rm, "url", "repository.url"); err != nil {
			return e, err
		}
		if e.RepositorySource, err = optString(rm, "source", "repository.source"); err != nil {
			return e, err
		}
	}
	if v, ok := m["packages"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return e, fmt.Errorf("%w: packages: %w", ErrEntry, err)
		}
		if len(items) > lim.MaxPackages {
			return e, fmt.Errorf("%w: more than %d packages", ErrEntry, lim.MaxPackages)
		}
		for i, it := range items {
			p, err := parsePackage(it)
			if err != nil {
				return e, fmt.Errorf("%w: packages[%d]: %w", ErrEntry, i, err)
			}
			e.Packages = append(e.Packages, p)
		}
	}
	if v, ok := m["remotes"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return e, fmt.Errorf("%w: remotes: %w", ErrEntry, err)
		}
		e.Remotes = len(items)
	}
	e.Pointers, e.AttestationErr = pointers(m["_meta"], lim)
	return e, nil
}

// ParseEntry reads one entry as the registry API serves it
// ({"server": server.json, "_meta": …}) or a bare server.json.
func ParseEntry(raw []byte, lim Limits) (*Entry, error) {
	lim = lim.withDefaults()
	raw = bytes.TrimSpace(raw)
	if len(raw) > lim.MaxEntryBytes+lim.MaxEntryBytes/4 {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrEntry, len(raw), lim.MaxEntryBytes)
	}
	if err := checkDepth(raw, lim.MaxDepth); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEntry, err)
	}
	m, err := digest.ReadMembers(raw, entryMembers...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEntry, err)
	}
	if s, ok := m["server"]; ok {
		if _, hasName := m["name"]; hasName {
			return nil, fmt.Errorf("%w: both \"server\" and \"name\": an API entry or a server.json, not both", ErrEntry)
		}
		return ParseServer(s, lim)
	}
	return ParseServer(raw, lim)
}

func reqString(m map[string][]byte, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("%w: no %q", ErrEntry, name)
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrEntry, name, err)
	}
	if s == "" || len(s) > 1024 {
		return "", fmt.Errorf("%w: %s is empty or longer than 1024 bytes", ErrEntry, name)
	}
	return s, nil
}

func optString(m map[string][]byte, name, what string) (string, error) {
	v, ok := m[name]
	if !ok || string(v) == "null" {
		return "", nil
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrEntry, what, err)
	}
	return s, nil
}

func parsePackage(raw []byte) (Package, error) {
	var p Package
	m, err := digest.ReadMembers(raw, packageMembers...)
	if err != nil {
		return p, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"registryType", &p.RegistryType}, {"identifier", &p.Identifier}, {"version", &p.Version}, {"fileSha256", &p.FileSHA256}, {"registryBaseUrl", &p.RegistryBaseURL}} {
		if *f.dst, err = optString(m, f.name, f.name); err != nil {
			return p, err
		}
	}
	if p.RegistryType == "" || p.Identifier == "" {
		return p, errors.New("registryType and identifier are required")
	}
	if v, ok := m["runtimeArguments"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return p, fmt.Errorf("runtimeArguments: %w", err)
		}
		p.RuntimeArguments = len(items) > 0
	}
	return p, nil
}

// pointers reads _meta[PublisherProvided][AttestationMember]: one
// {bundleUrl, bundleDigest} object or a non-empty list of them, each
// with both members (the digest is checked before the bundle is parsed).
func pointers(meta []byte, lim Limits) ([]Pointer, error) {
	if len(meta) == 0 || string(meta) == "null" {
		return nil, ErrNoAttestation
	}
	mm, err := digest.ReadMembers(meta, PublisherProvided, VerifiedMember) // the dump's member: no case variant beside it
	if err != nil {
		return nil, fmt.Errorf("%w: _meta: %w", ErrAttestation, err)
	}
	pp, ok := mm[PublisherProvided]
	if !ok || string(pp) == "null" {
		return nil, ErrNoAttestation
	}
	pm, err := digest.ReadMembers(pp, AttestationMember)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrAttestation, PublisherProvided, err)
	}
	a, ok := pm[AttestationMember]
	if !ok || string(a) == "null" {
		return nil, ErrNoAttestation
	}
	var items [][]byte
	if a[0] == '[' {
		if items, err = digest.Elements(a); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAttestation, err)
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("%w: an empty list", ErrAttestation)
		}
		if len(items) > lim.MaxPointers {
			return nil, fmt.Errorf("%w: more than %d bundles", ErrAttestation, lim.MaxPointers)
		}
	} else {
		items = [][]byte{a}
	}
	out := make([]Pointer, 0, len(items))
	for i, it := range items {
		at, err := mcpwire.ParseAttestation(it)
		if err != nil {
			return nil, fmt.Errorf("%w: %d: %w", ErrAttestation, i, err)
		}
		if at.Bundle != nil {
			return nil, fmt.Errorf("%w: %d: an inline bundle: a registry entry points at its bundle (bundleUrl and bundleDigest)", ErrAttestation, i)
		}
		if at.Digest == "" {
			return nil, fmt.Errorf("%w: %d: no bundleDigest", ErrAttestation, i)
		}
		for _, p := range out {
			if p.Digest == at.Digest {
				return nil, fmt.Errorf("%w: %d: the same bundle twice (%s)", ErrAttestation, i, at.Digest)
			}
		}
		out = append(out, Pointer{URL: at.URL, Digest: at.Digest})
	}
	return out, nil
}

// Namespace is the part of a registry name before its first "/".
func Namespace(name string) string {
	ns, _, _ := strings.Cut(name, "/")
	return ns
}

// digestMembers is digest.Members (for the tests).
var digestMembers = digest.Members
