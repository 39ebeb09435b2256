// Package policy reads the mcpsign policy file (docs/POLICY.md): whom to
// trust for which MCP server, what a bundle must carry, where each server's
// lock lives, how the proxy enforces it and what is revoked. Parse checks
// the whole file strictly; Resolve gives one server's effective policy, the
// defaults merged with the server's own entry.
//
// The policy decision is a Decider's (docs/POLICY.md "The decision from
// Go"): Decide verifies bundles under an entry's identities and applies
// its threshold of distinct signers, revocations, bundle age and package,
// returning a Decision or a *DecisionError with one reason per identity;
// CheckLock decides whether a lock may be in force under the entry. A Gate
// makes these calls for one server of a host, with the bundles it reads,
// and decides how a proxy under the entry starts; the commands verify, pin,
// verify-pin and proxy decide through it.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// Kind and Version are the values of the file's "kind" and "policyVersion".
const (
	Kind    = "mcpsign.policy"
	Version = 1
)

// MaxFileBytes bounds a policy file.
const MaxFileBytes = 1 << 20

// Limits on lists, so that a hostile file cannot make verification costly.
const (
	MaxServers    = 1024
	MaxIdentities = 32
	MaxRevoked    = 4096
)

// Errors wrapped by Parse and Resolve.
var (
	// ErrSyntax: the file is not the strict JSON the policy is written in,
	// or a member has the wrong type or value.
	ErrSyntax = errors.New("invalid policy")
	// ErrUnknownMember: a member the format does not define (named).
	ErrUnknownMember = errors.New("unknown member")
	// ErrNoServer: Resolve was asked for a server the file does not name.
	ErrNoServer = errors.New("no such server in the policy")
	// ErrNoIdentity: the server's policy names no identity and refuses
	// unsigned servers, so the server is blocked.
	ErrNoIdentity = errors.New("no identity for the server")
	// ErrBadName: a server name that is not a safe file name.
	ErrBadName = errors.New("invalid server name")
	// ErrTooLarge: the file is larger than MaxFileBytes.
	ErrTooLarge = errors.New("policy file too large")
	// ErrDuplicate: an entry that repeats another of its list (or a server
	// name equal to another under case folding): it could never count
	// twice, and a reader would think it does.
	ErrDuplicate = errors.New("duplicate")
	// ErrNotCanonical: a key ID, digest, identity or issuer not written in
	// the one form mcpsign compares (docs/POLICY.md "Canonical forms").
	ErrNotCanonical = errors.New("not in canonical form")
	// ErrFile: a file the policy names (a key, the trusted root, the CA
	// certificates) cannot be read or is not what the member says.
	ErrFile = errors.New("invalid file named by the policy")
)

// Mode is how the proxy enforces a server's lock.
type Mode string

// The modes.
const (
	// ModeBlock blocks a server that drifts (the default: fail closed).
	ModeBlock Mode = "block"
	// ModeWarn relays a drifted server and reports the drift on stderr.
	ModeWarn Mode = "warn"
	// ModeAudit relays a drifted server and only records it in the audit log.
	ModeAudit Mode = "audit"
)

// Unsigned is what to do with a server that has no lock and no bundle.
type Unsigned string

// The unsigned choices.
const (
	UnsignedRefuse Unsigned = "refuse"
	UnsignedTOFU   Unsigned = "tofu"
)

// RollForward is how a change of a locked server may be approved.
type RollForward string

// The roll-forward choices (docs/LOCK.md).
const (
	RollForwardSigned RollForward = "signed"
	RollForwardManual RollForward = "manual"
)

// Resources is what the proxy does with a server's static resources
// (resources/list; docs/POLICY.md, "resources").
type Resources string

// The resources choices. A policy that gives none leaves the choice to the
// lock: ResourcesPin when the lock records resources, ResourcesPass when it
// does not (what every lock written before resources could be pinned
// means).
const (
	// ResourcesPass relays resources/list unchecked.
	ResourcesPass Resources = "pass"
	// ResourcesPin checks every resource the client receives against the
	// lock's, as definitions are checked.
	ResourcesPin Resources = "pin"
	// ResourcesHide answers resources/list with an empty list and refuses
	// resources/read of a URI no pinned resource template matches.
	ResourcesHide Resources = "hide"
)

// BundleKind says where a server's bundle comes from.
type BundleKind string

// The bundle sources.
const (
	BundleNone   BundleKind = ""
	BundleServer BundleKind = "server"
	BundleFile   BundleKind = "file"
	BundleURL    BundleKind = "url"
)

// Bundle is a bundle source: advertised by the server, a file (absolute
// path) or an https URL.
type Bundle struct {
	Kind     BundleKind
	Location string
}

func (b Bundle) String() string {
	switch b.Kind {
	case BundleServer:
		return "advertised by the server"
	case BundleNone:
		return "none"
	}
	return b.Location
}

// Trust is the trusted material, every path absolute (resolved against the
// policy file's directory).
type Trust struct {
	// TrustedRoot is a trusted_root.json; empty means TUF.
	TrustedRoot string
	// TUFMirror and TUFCache are the TUF repository and cache; empty means
	// the public-good repository and the default cache.
	TUFMirror string
	TUFCache  string
	// CARoots and CAIntermediates are PEM files of enterprise certificates
	// (each may hold several).
	CARoots         string
	CAIntermediates string
}

// Identity is one signer a server's policy accepts.
type Identity struct {
	Method verify.Method
	// Identity is the certificate identity (sigstore and certificate).
	Identity verify.Identity
	// Key is the PEM public key file (key method), absolute.
	Key string
	// KeyID is the key's ID, "sha256:" and lowercase hex (key method; set
	// by Read, which reads the key file, or LoadKeys; empty until then).
	KeyID string

	// at is the identity's JSON Pointer in the file.
	at string
	// repo is what a derived repository signer's certificate claims must
	// say (ForRepository); nil for an identity the file lists.
	repo *derivedRepo
}

// Pointer is the identity's JSON Pointer in the policy file
// ("/servers/notes/identities/1").
func (id Identity) Pointer() string { return id.at }

// same reports whether id and o name the same signer as written.
func (id Identity) same(o Identity) bool {
	return id.Method == o.Method && id.Identity == o.Identity && id.Key == o.Key
}

// String describes the identity for a report (not escaped).
func (id Identity) String() string {
	switch id.Method {
	case verify.MethodKey:
		if id.KeyID != "" {
			return "key " + id.Key + " (" + id.KeyID + ")"
		}
		return "key " + id.Key
	case verify.MethodSigstore:
		s := "sigstore issuer " + orRe(id.Identity.Issuer, id.Identity.IssuerRegexp) + " subject " + orRe(id.Identity.SAN, id.Identity.SANRegexp)
		if id.Identity.GitHubWorkflowRepository != "" {
			s += " repository " + id.Identity.GitHubWorkflowRepository
		}
		if id.Identity.GitHubWorkflowRef != "" {
			s += " ref " + id.Identity.GitHubWorkflowRef
		}
		return s
	}
	var parts []string
	for _, p := range [][2]string{{"subject", id.Identity.Subject}, {"san", orRe(id.Identity.SAN, id.Identity.SANRegexp)},
		{"email", id.Identity.Email}, {"uri", id.Identity.URI}, {"dns", id.Identity.DNS}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	return "certificate " + strings.Join(parts, " ")
}

func orRe(exact, re string) string {
	if exact != "" {
		return exact
	}
	if re != "" {
		return "~" + re
	}
	return ""
}

// Revoked lists what no longer approves anything.
type Revoked struct {
	// Bundles and Definitions are "sha256:…" digests: of a bundle file's
	// bytes, and Definition Digests (docs/DIGEST.md).
	Bundles     []string
	Definitions []string
	// Identities are signer identities exactly as a lock's approval and
	// verify's report record them: a certificate SAN or subject DN, or a
	// key's "sha256:…" key ID.
	Identities []string
}

// Server is one server's entry (or the defaults) as written: a nil pointer
// or slice is a member not given.
type Server struct {
	Identities       []Identity
	Threshold        *int
	RequireTlog      *bool
	RequireTimestamp *bool
	MaxBundleAge     *time.Duration
	Bundle           *Bundle
	Package          *string
	Lock             *string
	Mode             *Mode
	Unsigned         *Unsigned
	RollForward      *RollForward
	Resources        *Resources
	Audit            *string
	// ClientCapabilities are the client capabilities to announce when
	// reading the server (RFC 8785 form); nil when not given.
	ClientCapabilities *[]byte
	// RepositorySigner derives a registry entry's signer from its
	// repository (docs/POLICY.md, "Registry entries"); nil when not given.
	RepositorySigner *RepositorySigner
	// ServerRequests are the rules for what the server sends the client
	// on its own (docs/POLICY.md, "serverRequests"); nil when not given.
	ServerRequests *ServerRequests
}

// File is a parsed policy file.
type File struct {
	// Path is the file's absolute path.
	Path     string
	Trust    Trust
	Defaults Server
	// Names are the servers in the order the file lists them.
	Names   []string
	Servers map[string]Server
	Revoked Revoked
}

// Read reads and parses the policy file at path, and reads the key files
// it names (LoadKeys); a refusal names the file.
func Read(path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := boundedfile.Read(abs, MaxFileBytes, ErrTooLarge)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data, abs)
	if err == nil {
		err = f.LoadKeys()
	}
	if err != nil {
		// Named, so that a refusal says which policy file it is about.
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	return f, nil
}

// Parse parses a policy file's bytes; path is the file's path, against whose
// directory relative paths are resolved. Every refusal wraps ErrSyntax or
// ErrUnknownMember and names the member (as a JSON path).
func Parse(data []byte, path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	p := &parser{dir: filepath.Dir(abs)}
	f := &File{Path: abs, Servers: map[string]Server{}}
	// The whole document's syntax is checked here (nested values too), so
	// a syntax error's offset is one into data: say its line and column.
	names, m, err := digest.Members(data)
	if err != nil {
		var se *jsonscan.Error
		if errors.As(err, &se) && se.Offset >= 0 && se.Offset <= len(data) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			col := se.Offset - bytes.LastIndexByte(data[:se.Offset], '\n')
			return nil, fmt.Errorf("%w: line %d, column %d: %s", ErrSyntax, line, col, se.Reason)
		}
		return nil, p.fail("", "%v", err)
	}
	if err := p.knownNames(names, "", topTable().names()...); err != nil {
		return nil, err
	}
	if err := topTable().read(p, m, "", f); err != nil {
		return nil, err
	}
	return f, nil
}

// servers reads "servers" into f: each name under the one name rule
// (ValidServerName), none equal to another under case folding, each
// server's lock its own.
func (p *parser) servers(v []byte, at string, f *File) error {
	names, vals, err := digest.Members(v)
	if err != nil {
		return p.fail(at, "%v", err)
	}
	if len(names) > MaxServers {
		return p.fail(at, "more than %d servers", MaxServers)
	}
	for _, n := range names {
		at := at + "/" + digest.PointerToken(n)
		if err := ValidServerName(n); err != nil {
			return p.fail(at, "%v", err)
		}
		// On macOS and Windows the default locks of "ex" and "EX" are
		// one file, and a host may look a name up either way.
		if j := slices.IndexFunc(f.Names, func(o string) bool { return strings.EqualFold(o, n) }); j >= 0 {
			return p.failAs(at, ErrDuplicate, "server name %s equals %s under case folding (their default locks would be one file on macOS and Windows)", textsafe.RawQuote(n), textsafe.RawQuote(f.Names[j]))
		}
		s, err := p.server(vals[n], at)
		if err != nil {
			return err
		}
		if rs := s.RepositorySigner; rs != nil && ValidRegistryName(n) {
			if err := rs.checkOwner(n); err != nil {
				return p.fail(at+"/repositorySigner", "%v", err)
			}
		}
		if s.Lock != nil {
			for _, o := range f.Names {
				if ol := f.Servers[o].Lock; ol != nil && strings.EqualFold(*ol, *s.Lock) {
					return p.failAs(at+"/lock", ErrDuplicate, "server %s has the same lock file %s: each server needs its own", textsafe.RawQuote(o), textsafe.RawQuote(*s.Lock))
				}
			}
		}
		f.Names = append(f.Names, n)
		f.Servers[n] = s
	}
	return nil
}

var nameRe = lazy.NewRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether name can name a server: 1 to 64 ASCII letters,
// digits, '.', '_' and '-', the first a letter or digit (so that it is a
// safe file name on every system: the default lock is named after it).
func ValidName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("%w %s: want 1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadName, textsafe.RawQuote(name))
	}
	return nil
}

// ValidServerName reports whether name can name a server of a policy
// file: a local server name (ValidName), or a registry name or namespace
// pattern (ValidRegistryName), which governs registry entries only. It is
// the one rule for the names under "servers": Parse and 'policy check'
// both apply it.
func ValidServerName(name string) error {
	if ValidRegistryName(name) {
		return nil
	}
	if err := ValidName(name); err != nil {
		return fmt.Errorf("%w (or a registry name, NAMESPACE/NAME or NAMESPACE/*)", err)
	}
	return nil
}

// resolveAny resolves the server named name, a local server (Resolve) or
// a registry name or pattern (with no lock), as 'policy check' shows it
// and a log monitor watches it: every name Parse takes (ValidServerName).
func (f *File) resolveAny(name string, opts ResolveOptions) (*Resolved, error) {
	if !ValidRegistryName(name) {
		return f.Resolve(name, opts)
	}
	if _, ok := f.Servers[name]; !ok {
		return nil, fmt.Errorf("%w: %s (it lists %s)", ErrNoServer, textsafe.RawQuote(name), listNames(f.Names))
	}
	return f.resolveRegistryServer(name)
}

// DefaultStateDir is the directory default locks go under: mcpsign/locks in
// $XDG_STATE_HOME when it is set to an absolute path, else in
// ~/.local/state on Linux and the BSDs, else in os.UserConfigDir().
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpsign", "locks"), nil
	}
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "plan9":
	default:
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory for default locks: %w", err)
		}
		return filepath.Join(home, ".local", "state", "mcpsign", "locks"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no state directory for default locks: %w", err)
	}
	return filepath.Join(d, "mcpsign", "locks"), nil
}

// Resolved is one server's effective policy: the defaults, then the
// server's own members over them.
type Resolved struct {
	Name       string
	Trust      Trust
	Identities []Identity
	// Threshold is how many distinct identities must each have signed the
	// same definitions (1 when not given).
	Threshold        int
	RequireTlog      bool
	RequireTimestamp bool
	// MaxBundleAge is the oldest verified signing time accepted; 0: any.
	MaxBundleAge time.Duration
	Bundle       Bundle
	// Package is a purl the statement must bind; empty: none.
	Package string
	// Lock is the lock path; DefaultLock says it is the default, under the
	// state directory (which may not exist yet).
	Lock        string
	DefaultLock bool
	Mode        Mode
	Unsigned    Unsigned
	RollForward RollForward
	// Resources is the resources choice; "" when neither the server nor
	// the defaults give one (the lock decides: see Resources).
	Resources Resources
	Audit     string
	// ClientCapabilities are the client capabilities commands announce
	// when they read the server (RFC 8785 form); nil when neither the
	// server nor the defaults give them (the source's default then).
	ClientCapabilities []byte
	Revoked            Revoked
	// RepositorySigner derives a registry entry's signer from its
	// repository (ForRepository); nil when not given.
	RepositorySigner *RepositorySigner
	// ServerRequests are the rules for the requests and notifications
	// the server initiates (sampling, elicitation, roots, logging); the
	// zero value, when neither the server nor the defaults give them,
	// relays them all.
	ServerRequests ServerRequests

	// entry is the registry entry name ResolveRegistry resolved for.
	entry string
}

// ResolveOptions control Resolve.
type ResolveOptions struct {
	// StateDir is where a default lock goes; empty means DefaultStateDir.
	StateDir string
}

// Resolve returns the effective policy of the server name. A server the
// file does not list is ErrNoServer; a server with no identity whose
// policy refuses unsigned servers is ErrNoIdentity, with what to add.
func (f *File) Resolve(name string, opts ResolveOptions) (*Resolved, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	s, ok := f.Servers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s (it lists %s)", ErrNoServer, textsafe.RawQuote(name), listNames(f.Names))
	}
	d := f.Defaults
	r := &Resolved{Name: name, Trust: f.Trust, Revoked: f.Revoked,
		Threshold: 1, Mode: ModeBlock, Unsigned: UnsignedRefuse, RollForward: RollForwardSigned}
	r.Identities = d.Identities
	if s.Identities != nil {
		r.Identities = s.Identities
	}
	pick(&r.Threshold, d.Threshold, s.Threshold)
	pick(&r.RequireTlog, d.RequireTlog, s.RequireTlog)
	pick(&r.RequireTimestamp, d.RequireTimestamp, s.RequireTimestamp)
	pick(&r.MaxBundleAge, d.MaxBundleAge, s.MaxBundleAge)
	pick(&r.Bundle, d.Bundle, s.Bundle)
	pick(&r.Package, d.Package, s.Package)
	pick(&r.Mode, d.Mode, s.Mode)
	pick(&r.Unsigned, d.Unsigned, s.Unsigned)
	pick(&r.RollForward, d.RollForward, s.RollForward)
	pick(&r.Resources, d.Resources, s.Resources)
	pick(&r.Audit, d.Audit, s.Audit)
	pick(&r.ClientCapabilities, d.ClientCapabilities, s.ClientCapabilities)
	pick(&r.ServerRequests, d.ServerRequests, s.ServerRequests)
	for _, k := range serverRequestKinds {
		if rule := k.rule(&r.ServerRequests); *rule == "" {
			*rule = RuleRelay
		}
	}
	if r.RepositorySigner = d.RepositorySigner; s.RepositorySigner != nil {
		r.RepositorySigner = s.RepositorySigner
	}
	if s.Lock != nil {
		r.Lock = *s.Lock
	} else {
		// A lock in the defaults would be one file for every server: the
		// parser refuses it, and the default is keyed by name.
		dir := opts.StateDir
		if dir == "" {
			var err error
			if dir, err = DefaultStateDir(); err != nil {
				return nil, err
			}
		}
		r.Lock, r.DefaultLock = filepath.Join(dir, name+".mcpsign.lock"), true
	}
	if len(r.Identities) == 0 && r.RepositorySigner == nil && r.Unsigned == UnsignedRefuse {
		return nil, fmt.Errorf("%w %s: the policy names no identity and refuses unsigned servers: add \"identities\" to servers.%s (or to defaults), or set \"unsigned\": \"tofu\" to pin it on first use",
			ErrNoIdentity, textsafe.RawQuote(name), name)
	}
	if n := len(r.Identities) + r.RepositorySigner.count(); r.Threshold > n && n > 0 {
		return nil, fmt.Errorf("%w: server %s: threshold %d but only %d identities listed", ErrSyntax, textsafe.RawQuote(name), r.Threshold, n)
	}
	if len(r.Identities)+r.RepositorySigner.count() == 0 {
		r.Threshold = 0
	}
	return r, nil
}

func pick[T any](dst *T, def, own *T) {
	if def != nil {
		*dst = *def
	}
	if own != nil {
		*dst = *own
	}
}

func listNames(names []string) string {
	if len(names) == 0 {
		return "no server"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = textsafe.RawQuote(n)
	}
	return strings.Join(q, ", ")
}

// RevokedError is a revoked item a lock or a bundle rests on.
type RevokedError struct {
	// What is "bundle", "definition" or "identity"; Value is its digest or
	// identity.
	What  string
	Value string
}

func (e *RevokedError) Error() string {
	return fmt.Sprintf("revoked %s %s (policy \"revoked\")", e.What, textsafe.RawQuote(e.Value))
}

// Check returns a *RevokedError for the first of the approval's bundle
// digest, identity and definition digests (in that order) the policy
// revokes, nil if none. Identities compare under Unicode simple case folding (a
// revocation errs towards refusing: docs/POLICY.md "Canonical forms");
// digests are canonical, so they compare exactly.
func (r Revoked) Check(identity, bundleDigest string, definitions []string) error {
	if bundleDigest != "" && slices.Contains(r.Bundles, bundleDigest) {
		return &RevokedError{"bundle", bundleDigest}
	}
	if identity != "" && slices.ContainsFunc(r.Identities, func(x string) bool { return strings.EqualFold(x, identity) }) {
		return &RevokedError{"identity", identity}
	}
	for _, d := range definitions {
		if slices.Contains(r.Definitions, d) {
			return &RevokedError{"definition", d}
		}
	}
	return nil
}

// ValidBundleURL reports whether s is an https URL with a host.
func validBundleURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil
}
