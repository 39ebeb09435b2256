package registry

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
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
	// RuntimeHint is the program a host runs the package with ("npx",
	// "uvx", "dnx", "docker"; "" when not given).
	RuntimeHint string `json:"runtimeHint,omitempty"`
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
	// Status is the registry's status of the entry
	// (_meta["io.modelcontextprotocol.registry/official"].status: active,
	// deprecated, deleted), "" when the source gives none.
	Status string
	// Unbound are the members that decide what is installed, how it
	// starts, with what environment or where a host connects, and that no
	// statement binds (docs/REGISTRY.md, "What each member of server.json
	// is"): the entry fails at binding with the first.
	Unbound []*MemberError
	// Bound are the JSON Pointers (in server.json) of the members the
	// statement binds when the entry verifies: the dump's
	// dev.mcpsign/verified names them.
	Bound []string
	// Pos is where the source gave the entry (set by Run).
	Pos Position
	// statusPtr is the JSON Pointer of the status read, in the entry as
	// the source gave it.
	statusPtr string
	// base is the JSON Pointer of server.json in the entry as the source
	// gave it: "/server" in an API entry, "" for a bare server.json.
	base string
}

// MemberError is the refusal of one member of an entry: where it is (a
// JSON Pointer, RFC 6901, in the entry as the source gave it: an API
// entry's server.json is under /server) and the rule it breaks. It wraps
// the sentinel of its step (ErrEntry, ErrBinding, ErrStatus).
type MemberError struct {
	Pointer string
	Rule    string
	Err     error
}

func (e *MemberError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "(the whole entry)"
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, p, e.Rule)
}

func (e *MemberError) Unwrap() error { return e.Err }

// memberErr is a *MemberError at base+ptr.
func (e *Entry) memberErr(sentinel error, ptr, format string, args ...any) *MemberError {
	return &MemberError{Pointer: e.base + ptr, Rule: fmt.Sprintf(format, args...), Err: sentinel}
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
	// MaxListingBytes bounds the bytes of all the pages of one listing
	// together; ListingTimeout its time (pages are read as entries are
	// verified, so this bounds the run of a registry source).
	MaxListingBytes int64
	ListingTimeout  time.Duration
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
	// The official registry's listing is some tens of MB; these bound a
	// cursor that never repeats, each page new (docs/REGISTRY.md).
	MaxListingBytes: 4 << 30,
	ListingTimeout:  6 * time.Hour,
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
	if l.MaxListingBytes <= 0 {
		l.MaxListingBytes = d.MaxListingBytes
	}
	if l.ListingTimeout <= 0 {
		l.ListingTimeout = d.ListingTimeout
	}
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
	// The members of server.json that the published schema
	// (static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json)
	// defines, and "status" of its 2025-09 versions: any other refuses the
	// entry at binding (docs/REGISTRY.md, "What each member of server.json
	// is").
	serverMembers = []string{"$schema", "name", "version", "description", "title", "websiteUrl", "icons", "repository", "packages", "remotes", "status", "_meta"}
	repoMembers   = []string{"url", "source", "id", "subfolder"}
	// packageMembers are Package's members in the schema.
	packageMembers = []string{"registryType", "identifier", "version", "fileSha256", "registryBaseUrl", "runtimeHint", "transport", "runtimeArguments", "packageArguments", "environmentVariables"}
	entryMembers   = []string{"server", "_meta"}
	// inputMembers are the members of an Input, KeyValueInput and
	// Argument (schema: Input, InputWithVariables, KeyValueInput,
	// PositionalArgument, NamedArgument).
	inputMembers = []string{"name", "type", "description", "format", "isRequired", "isSecret", "placeholder", "valueHint", "isRepeated", "value", "default", "choices", "variables"}
)

// OfficialMeta is the member of an API entry's _meta (and, in the
// registry's 2025-09 API, of server.json's) where the official registry
// says the entry's status.
const OfficialMeta = "io.modelcontextprotocol.registry/official"

// The registry statuses (docs/REGISTRY.md, "Registry status").
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// ErrStatus: the registry's status says the entry is not to be installed
// (deleted), or is not one mcpsign knows.
var ErrStatus = errors.New("registry status")

// ParseServer reads one server.json document strictly (docs/REGISTRY.md,
// "Reading"): a repeated member at any depth, invalid UTF-8 anywhere, or a
// case variant of a member mcpsign reads, is refused; name and version
// are required strings; the attestation pointer is read into Pointers, or
// its refusal kept in AttestationErr (the entry still reads: its line
// says why it fails). A refusal of one member is a *MemberError.
func ParseServer(raw []byte, lim Limits) (*Entry, error) {
	lim = lim.withDefaults()
	raw = bytes.TrimSpace(raw)
	if len(raw) > lim.MaxEntryBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrEntry, len(raw), lim.MaxEntryBytes)
	}
	if err := strictRead(raw, lim); err != nil {
		return nil, err
	}
	return parseServer(raw, lim, "")
}

// strictRead reads raw with the strict reader (digest.Canonicalize): the
// nesting within lim.MaxDepth, no repeated member at any depth, valid
// UTF-8 and no lone surrogate in every string, numbers RFC 8259 spells.
// A dump carries only bytes that this reader read (docs/REGISTRY.md,
// "Reading").
func strictRead(raw []byte, lim Limits) error {
	if err := checkDepth(raw, lim.MaxDepth); err != nil {
		return &MemberError{Rule: err.Error(), Err: ErrEntry}
	}
	if _, err := digest.Canonicalize(raw); err != nil {
		var se *digest.SyntaxError
		if errors.As(err, &se) {
			return &MemberError{Pointer: se.Pointer, Rule: fmt.Sprintf("%s (byte %d): the strict reader refuses it, and a dump carries only what it read", se.Reason, se.Offset), Err: ErrEntry}
		}
		return fmt.Errorf("%w: %w", ErrEntry, err)
	}
	return nil
}

func parseServer(raw []byte, lim Limits, base string) (*Entry, error) {
	m, err := digest.ReadMembers(raw, serverMembers...)
	if err != nil {
		return nil, &MemberError{Pointer: base, Rule: err.Error(), Err: ErrEntry}
	}
	e := &Entry{Server: raw, base: base}
	// Both are read before either refuses: the line names what it can.
	name, nerr := e.reqString(m, "name")
	version, verr := e.reqString(m, "version")
	e.Name, e.Version = name, version
	if nerr != nil {
		return e, nerr
	}
	if verr != nil {
		return e, verr
	}
	e.Bound = append(e.Bound, "/version")
	if v, ok := m["repository"]; ok && string(v) != "null" {
		rm, err := digest.ReadMembers(v, repoMembers...)
		if err != nil {
			return e, e.memberErr(ErrEntry, "/repository", "%v", err)
		}
		if e.RepositoryURL, err = e.optString(rm, "url", "/repository/url"); err != nil {
			return e, err
		}
		if e.RepositorySource, err = e.optString(rm, "source", "/repository/source"); err != nil {
			return e, err
		}
	}
	if v, ok := m["packages"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return e, e.memberErr(ErrEntry, "/packages", "%v", err)
		}
		if len(items) > lim.MaxPackages {
			return e, e.memberErr(ErrEntry, "/packages", "more than %d packages", lim.MaxPackages)
		}
		for i, it := range items {
			p, err := e.parsePackage(it, "/packages/"+strconv.Itoa(i))
			if err != nil {
				return e, err
			}
			e.Packages = append(e.Packages, p)
		}
	}
	if v, ok := m["remotes"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return e, e.memberErr(ErrEntry, "/remotes", "%v", err)
		}
		e.Remotes = len(items)
		if len(items) > 0 {
			e.unbound("/remotes", "a statement binds packages, not the URLs of remotes, which a registry could point anywhere")
		}
	}
	for name := range m {
		if !slices.Contains(serverMembers, name) {
			e.unbound("/"+digest.PointerToken(name), "a member the published server.json schema does not define: nothing says what it decides, and no statement binds it")
		}
	}
	if e.Status, err = e.optString(m, "status", "/status"); err != nil {
		return e, err
	}
	if e.Status != "" {
		e.statusPtr = e.base + "/status"
	}
	if err := e.readOfficial(m["_meta"], base+"/_meta"); err != nil {
		return e, err
	}
	e.Pointers, e.AttestationErr = pointers(m["_meta"], lim)
	return e, nil
}

// readOfficial reads the status in meta[OfficialMeta] (meta at the JSON
// Pointer ptr of the entry as the source gave it), if any, into e.Status;
// two statuses that differ refuse the entry.
func (e *Entry) readOfficial(meta []byte, ptr string) error {
	if len(meta) == 0 || string(meta) == "null" {
		return nil
	}
	refuse := func(sentinel error, p string, format string, args ...any) error {
		return &MemberError{Pointer: p, Rule: fmt.Sprintf(format, args...), Err: sentinel}
	}
	mm, err := digest.ReadMembers(meta, OfficialMeta)
	if err != nil {
		return refuse(ErrEntry, ptr, "%v", err)
	}
	o, ok := mm[OfficialMeta]
	if !ok || string(o) == "null" {
		return nil
	}
	ptr += "/" + digest.PointerToken(OfficialMeta)
	om, err := digest.ReadMembers(o, "status")
	if err != nil {
		return refuse(ErrEntry, ptr, "%v", err)
	}
	v, ok := om["status"]
	if !ok || string(v) == "null" {
		return nil
	}
	st, err := digest.DecodeString(v)
	if err != nil {
		return refuse(ErrEntry, ptr+"/status", "%v", err)
	}
	if e.Status != "" && e.Status != st {
		return refuse(ErrStatus, ptr+"/status", "the registry gives two statuses, %s and %s", textsafe.RawQuote(e.Status), textsafe.RawQuote(st))
	}
	e.Status, e.statusPtr = st, ptr+"/status"
	return nil
}

// unbound records a member no statement binds.
func (e *Entry) unbound(ptr, format string, args ...any) {
	e.Unbound = append(e.Unbound, e.memberErr(ErrBinding, ptr, format, args...))
}

// ParseEntry reads one entry as the registry API serves it
// ({"server": server.json, "_meta": …}) or a bare server.json, strictly
// as a whole (ParseServer): the API entry's _meta too.
func ParseEntry(raw []byte, lim Limits) (*Entry, error) {
	lim = lim.withDefaults()
	raw = bytes.TrimSpace(raw)
	if len(raw) > lim.MaxEntryBytes+lim.MaxEntryBytes/4 {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrEntry, len(raw), lim.MaxEntryBytes)
	}
	if err := strictRead(raw, lim); err != nil {
		// The name and version, when they read, still name the line.
		if _, m, merr := digest.Members(raw); merr == nil {
			if s, ok := m["server"]; ok {
				_, m, _ = digest.Members(s)
			}
			e := &Entry{}
			e.Name, _ = e.reqString(m, "name")
			e.Version, _ = e.reqString(m, "version")
			return e, err
		}
		return nil, err
	}
	m, err := digest.ReadMembers(raw, entryMembers...)
	if err != nil {
		return nil, &MemberError{Rule: err.Error(), Err: ErrEntry}
	}
	if s, ok := m["server"]; ok {
		if _, hasName := m["name"]; hasName {
			return nil, &MemberError{Rule: `both "server" and "name": an API entry or a server.json, not both`, Err: ErrEntry}
		}
		if len(s) > lim.MaxEntryBytes {
			return nil, fmt.Errorf("%w: /server: %d bytes, at most %d", ErrEntry, len(s), lim.MaxEntryBytes)
		}
		e, err := parseServer(s, lim, "/server")
		if err != nil {
			return e, err
		}
		if err := e.readOfficial(m["_meta"], "/_meta"); err != nil {
			return e, err
		}
		return e, nil
	}
	if len(raw) > lim.MaxEntryBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrEntry, len(raw), lim.MaxEntryBytes)
	}
	return parseServer(raw, lim, "")
}

func (e *Entry) reqString(m map[string][]byte, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", e.memberErr(ErrEntry, "/"+name, "required, absent")
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", e.memberErr(ErrEntry, "/"+name, "%v", err)
	}
	if s == "" || len(s) > 1024 {
		return "", e.memberErr(ErrEntry, "/"+name, "empty or longer than 1024 bytes")
	}
	return s, nil
}

func (e *Entry) optString(m map[string][]byte, name, ptr string) (string, error) {
	v, ok := m[name]
	if !ok || string(v) == "null" {
		return "", nil
	}
	s, err := digest.DecodeString(v)
	if err != nil {
		return "", e.memberErr(ErrEntry, ptr, "%v", err)
	}
	return s, nil
}

func (e *Entry) parsePackage(raw []byte, ptr string) (Package, error) {
	var p Package
	m, err := digest.ReadMembers(raw, packageMembers...)
	if err != nil {
		return p, e.memberErr(ErrEntry, ptr, "%v", err)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"registryType", &p.RegistryType}, {"identifier", &p.Identifier}, {"version", &p.Version}, {"fileSha256", &p.FileSHA256}, {"registryBaseUrl", &p.RegistryBaseURL}, {"runtimeHint", &p.RuntimeHint}} {
		if *f.dst, err = e.optString(m, f.name, ptr+"/"+f.name); err != nil {
			return p, err
		}
	}
	if p.RegistryType == "" || p.Identifier == "" {
		return p, e.memberErr(ErrEntry, ptr, "registryType and identifier are required")
	}
	for _, n := range []string{"registryType", "identifier", "version", "fileSha256", "registryBaseUrl"} {
		if _, ok := m[n]; ok && (n != "version" || versionBound(p.RegistryType)) {
			e.Bound = append(e.Bound, ptr+"/"+n)
		}
	}
	for name := range m {
		if !slices.Contains(packageMembers, name) {
			e.unbound(ptr+"/"+digest.PointerToken(name), "a member of a package the published server.json schema does not define: it may decide how the package is installed, and no statement binds it")
		}
	}
	if v, ok := m["runtimeArguments"]; ok && string(v) != "null" {
		items, err := digest.Elements(v)
		if err != nil {
			return p, e.memberErr(ErrEntry, ptr+"/runtimeArguments", "%v", err)
		}
		p.RuntimeArguments = len(items) > 0
		if p.RuntimeArguments {
			e.unbound(ptr+"/runtimeArguments", "they choose what the runtime fetches and runs (npx --package, docker run, uvx --from), which no statement binds")
		}
	}
	if p.RuntimeHint != "" {
		if want := runtimesFor(p.RegistryType); !slices.Contains(want, p.RuntimeHint) {
			e.unbound(ptr+"/runtimeHint", "%s runs the package with another program than a %s package's (%s): no statement binds it", textsafe.RawQuote(textsafe.Cut(p.RuntimeHint, 80)), textsafe.RawQuote(p.RegistryType), strings.Join(want, ", "))
		} else {
			e.Bound = append(e.Bound, ptr+"/runtimeHint")
		}
	}
	if err := e.checkTransport(m["transport"], ptr+"/transport"); err != nil {
		return p, err
	}
	if err := e.checkInputs(m["packageArguments"], ptr+"/packageArguments", false); err != nil {
		return p, err
	}
	if err := e.checkInputs(m["environmentVariables"], ptr+"/environmentVariables", true); err != nil {
		return p, err
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

// versionBound reports whether a package's version is bound by the
// statement (bind.go): in the package URL of an npm, PyPI or NuGet
// package; an MCPB file and an OCI image are bound by their SHA-256, and
// their version member is only information.
func versionBound(registryType string) bool {
	switch registryType {
	case "npm", "pypi", "nuget":
		return true
	}
	return false
}
