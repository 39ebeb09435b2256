package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrNotServable: a dump holds an entry that `registry serve` does not
// serve: it does not read strictly, or it has no valid
// _meta["dev.mcpsign/verified"] block (docs/REGISTRY.md, "Serving a
// verified dump"). The whole dump is refused.
var ErrNotServable = errors.New("not an entry mcpsign verified")

// ServeLoadError is the refusal of a dump by LoadServed: the entry (its
// position, name and version, as far as they read) and why. It wraps
// ErrNotServable, and the reader's error (ErrPage, ErrEntry, a
// *MemberError) when there is one.
type ServeLoadError struct {
	Pos           Position
	Name, Version string
	Err           error
}

func (e *ServeLoadError) Error() string {
	who := ""
	if e.Name != "" {
		who = " " + textsafe.RawQuote(e.Name) + " " + textsafe.RawQuote(e.Version)
	}
	return fmt.Sprintf("registry: the dump's entry%s (%s) is refused, and the dump with it: %v", who, e.Pos, e.Err)
}

func (e *ServeLoadError) Unwrap() []error { return []error{ErrNotServable, e.Err} }

// servedEntry is one server version of a ServedSet, its API entry
// ({"server", "_meta"}) built once when the set is loaded.
type servedEntry struct {
	name, version string
	lname         string // name in lower case, for search
	verifiedAt    time.Time
	status        string
	latest        bool
	order         int // position in the dump
	resp          []byte
}

// ServedSet is a verified dump read whole and strictly, indexed for the
// registry API's read routes. It never changes once loaded: a new dump
// makes a new set (Server.Swap).
type ServedSet struct {
	// all is every entry by name then version (byte order, as the
	// official registry's listing); latest the latest version of each.
	all, latest []*servedEntry
	// versions holds each name's versions, newest first.
	versions map[string][]*servedEntry
	// Bytes is the size of the dump read; LoadedAt when.
	Bytes    int64
	LoadedAt time.Time
}

// Len is the number of server versions the set serves.
func (s *ServedSet) Len() int { return len(s.all) }

// countingReader counts the bytes read, and whether one was not JSON
// white space.
type countingReader struct {
	r     io.Reader
	n     int64
	value bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if !c.value && len(bytes.TrimLeft(p[:n], " \t\r\n")) > 0 {
		c.value = true
	}
	return n, err
}

// errEmptyDump: a dump file with no JSON value in it. A dump registry
// verify wrote holds an array, [] when nothing verified; an empty file is
// one being rewritten in place, and served it would take every entry down.
var errEmptyDump = errors.New("the file is empty: a verified dump is a JSON array ([] when nothing verified); write a dump to another file and rename it over this one")

// LoadServed reads a verified dump (docs/REGISTRY.md, "Verified dump")
// with the reader every registry source goes through (ReadDumpAt,
// ParseEntry), and keeps it for serving. Every entry must read strictly
// and carry a valid _meta["dev.mcpsign/verified"] block that agrees with
// the entry (checkVerified); the first that does not refuses the whole
// dump with a *ServeLoadError. A name and version listed twice refuses it
// too.
func LoadServed(ctx context.Context, r io.Reader, lim Limits) (*ServedSet, error) {
	l := newServeLoader()
	if err := l.read(ctx, r, lim); err != nil {
		return nil, err
	}
	l.set.index()
	return l.set, nil
}

// LoadServedFiles is LoadServed of the dumps at paths together (the
// shards of a sharded run, each one file): one set, refused whole when
// any file is, and when two files list the same name and version. The
// error names the file.
func LoadServedFiles(ctx context.Context, paths []string, lim Limits) (*ServedSet, error) {
	l := newServeLoader()
	for _, p := range paths {
		f, err := boundedfile.Open(p)
		if err != nil {
			return nil, err
		}
		err = l.read(ctx, f, lim)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	l.set.index()
	return l.set, nil
}

type serveLoader struct {
	set  *ServedSet
	seen map[[16]byte]Position
}

func newServeLoader() *serveLoader {
	return &serveLoader{set: &ServedSet{versions: map[string][]*servedEntry{}, LoadedAt: time.Now().UTC()}, seen: map[[16]byte]Position{}}
}

func (l *serveLoader) read(ctx context.Context, r io.Reader, lim Limits) error {
	cr := &countingReader{r: r}
	err := ReadDumpAt(cr, lim, func(raw []byte, pos Position) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := ParseEntry(raw, lim)
		if err != nil {
			le := &ServeLoadError{Pos: pos, Err: err}
			if e != nil {
				le.Name, le.Version = e.Name, e.Version
			}
			return le
		}
		se, err := servable(e)
		if err != nil {
			return &ServeLoadError{Pos: pos, Name: e.Name, Version: e.Version, Err: err}
		}
		k := dupKey(e.Name, e.Version)
		if first, dup := l.seen[k]; dup {
			return &ServeLoadError{Pos: pos, Name: e.Name, Version: e.Version, Err: fmt.Errorf("the same name and version as the entry at %s", first)}
		}
		l.seen[k] = pos
		se.order = len(l.set.all)
		l.set.all = append(l.set.all, se)
		return nil
	})
	l.set.Bytes += cr.n
	if err == nil && !cr.value {
		err = &ServeLoadError{Err: errEmptyDump}
	}
	if err != nil {
		var le *ServeLoadError
		if errors.As(err, &le) || ctx.Err() != nil {
			return err
		}
		return &ServeLoadError{Err: err}
	}
	return nil
}

// LoadServedFile is LoadServed of the file at path.
func LoadServedFile(ctx context.Context, path string, lim Limits) (*ServedSet, error) {
	f, err := boundedfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadServed(ctx, f, lim)
}

// servable checks an entry read strictly from a dump and builds what is
// served of it, but its API entry (index builds it, knowing the latest).
func servable(e *Entry) (*servedEntry, error) {
	if len(e.Unbound) > 0 {
		return nil, e.Unbound[0]
	}
	if e.AttestationErr != nil {
		return nil, e.AttestationErr
	}
	m, err := digest.ReadMembers(e.Server, serverMembers...)
	if err != nil {
		return nil, err
	}
	meta, ok := m["_meta"]
	if !ok {
		return nil, fmt.Errorf("no /_meta/%s", digest.PointerToken(VerifiedMember))
	}
	mm, err := digest.ReadMembers(meta, PublisherProvided, VerifiedMember)
	if err != nil {
		return nil, fmt.Errorf("/_meta: %w", err)
	}
	raw, ok := mm[VerifiedMember]
	if !ok {
		return nil, fmt.Errorf("no /_meta/%s: mcpsign did not verify it", digest.PointerToken(VerifiedMember))
	}
	b, at, err := checkVerified(e, raw)
	if err != nil {
		return nil, fmt.Errorf("/_meta/%s: %w", digest.PointerToken(VerifiedMember), err)
	}
	status := b.Status
	if status == "" {
		status = StatusActive
	}
	return &servedEntry{name: e.Name, version: e.Version, lname: strings.ToLower(e.Name), verifiedAt: at, status: status,
		resp: compact(e.Server)}, nil
}

// checkVerified reads a dev.mcpsign/verified block strictly (no member
// VerifiedBlock does not define) and checks that it is whole and agrees
// with its entry: a signer with a method and an identity, the digests of
// bundles the entry lists, a policy server, an RFC 3339 time, a status
// mcpsign serves that is the entry's, and /version among the bound.
func checkVerified(e *Entry, raw []byte) (*VerifiedBlock, time.Time, error) {
	// encoding/json matches member names ignoring case, a registry client
	// does not: a case variant beside a member ("Signers", "ſigners") would
	// be read as it here and not there.
	m, err := digest.ReadMembers(raw, "signers", "bundles", "policy", "verifiedAt", "status", "bound")
	if err != nil {
		return nil, time.Time{}, err
	}
	if sv, ok := m["signers"]; ok {
		els, err := digest.Elements(sv)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("signers: %w", err)
		}
		for i, el := range els {
			if _, err := digest.ReadMembers(el, "method", "identity", "issuer", "sourceRepository"); err != nil {
				return nil, time.Time{}, fmt.Errorf("signers/%d: %w", i, err)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var b VerifiedBlock
	if err := dec.Decode(&b); err != nil {
		return nil, time.Time{}, err
	}
	if len(b.Signers) == 0 {
		return nil, time.Time{}, errors.New("no signers")
	}
	for i, s := range b.Signers {
		if s.Method == "" || s.Identity == "" {
			return nil, time.Time{}, fmt.Errorf("signers/%d: a method and an identity are required", i)
		}
	}
	if len(b.Bundles) == 0 {
		return nil, time.Time{}, errors.New("no bundles")
	}
	for i, d := range b.Bundles {
		if !slices.ContainsFunc(e.Pointers, func(p Pointer) bool { return p.Digest == d }) {
			return nil, time.Time{}, fmt.Errorf("bundles/%d: %s is not a bundle the entry lists", i, textsafe.RawQuote(d))
		}
	}
	if b.Policy == "" {
		return nil, time.Time{}, errors.New("no policy")
	}
	at, err := time.Parse(time.RFC3339, b.VerifiedAt)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("verifiedAt: %w", err)
	}
	switch b.Status {
	case "", StatusActive, StatusDeprecated:
	default:
		return nil, time.Time{}, fmt.Errorf("status %s: not one that is served", textsafe.RawQuote(b.Status))
	}
	if e.Status != "" && e.Status != b.Status {
		return nil, time.Time{}, fmt.Errorf("status %s, but the entry's is %s", textsafe.RawQuote(b.Status), textsafe.RawQuote(e.Status))
	}
	if !slices.Contains(b.Bound, "/version") {
		return nil, time.Time{}, errors.New("bound does not name /version")
	}
	return &b, at.UTC(), nil
}

// newer orders two versions of one server as the official registry does
// (semantic versions by precedence, above any other; others by time),
// the later in the dump when that does not decide.
func newer(a, b *servedEntry) bool {
	va, vb := "v"+a.version, "v"+b.version
	sa, sb := semver.IsValid(va), semver.IsValid(vb)
	switch {
	case sa && sb:
		if c := semver.Compare(va, vb); c != 0 {
			return c > 0
		}
	case sa != sb:
		return sa
	default:
		if !a.verifiedAt.Equal(b.verifiedAt) {
			return a.verifiedAt.After(b.verifiedAt)
		}
	}
	return a.order > b.order
}

// index sorts the entries, finds each name's latest version and builds
// every API entry.
func (s *ServedSet) index() {
	for _, e := range s.all {
		s.versions[e.name] = append(s.versions[e.name], e)
	}
	for _, vs := range s.versions {
		slices.SortStableFunc(vs, func(a, b *servedEntry) int {
			if newer(a, b) {
				return -1
			}
			if newer(b, a) {
				return 1
			}
			return 0
		})
		vs[0].latest = true
	}
	slices.SortFunc(s.all, func(a, b *servedEntry) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.version, b.version)
	})
	for _, e := range s.all {
		if e.latest {
			s.latest = append(s.latest, e)
		}
		e.resp = apiEntry(e, e.resp)
	}
}

// apiEntry is the registry API's entry for a served server.json: the
// document as the dump has it but for its _meta["dev.mcpsign/verified"],
// which moves to the registry-managed _meta beside the generic API's
// io.modelcontextprotocol.registry/official (status, the verification
// time as publishedAt and updatedAt, isLatest). The block is served once,
// where a registry client reads registry metadata.
func apiEntry(e *servedEntry, server []byte) []byte {
	names, m, _ := digest.Members(server)
	metaNames, meta, _ := digest.Members(m["_meta"])
	block := meta[VerifiedMember]
	at, _ := json.Marshal(e.verifiedAt.Format(time.RFC3339))
	st, _ := json.Marshal(e.status)
	var b bytes.Buffer
	b.Grow(len(server) + 200)
	b.WriteString(`{"server":{`)
	first := true
	member := func(name string, v func()) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		v()
	}
	for _, n := range names {
		if n != "_meta" {
			member(n, func() { b.Write(m[n]) })
			continue
		}
		if len(metaNames) == 1 {
			continue // only the block: no _meta left
		}
		member(n, func() {
			b.WriteByte('{')
			i := 0
			for _, mn := range metaNames {
				if mn == VerifiedMember {
					continue
				}
				if i++; i > 1 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(mn)
				b.Write(k)
				b.WriteByte(':')
				b.Write(meta[mn])
			}
			b.WriteByte('}')
		})
	}
	b.WriteString(`},"_meta":{"` + OfficialMeta + `":{"status":`)
	b.Write(st)
	b.WriteString(`,"publishedAt":`)
	b.Write(at)
	b.WriteString(`,"updatedAt":`)
	b.Write(at)
	if e.latest {
		b.WriteString(`,"isLatest":true},"`)
	} else {
		b.WriteString(`,"isLatest":false},"`)
	}
	b.WriteString(VerifiedMember + `":`)
	b.Write(block)
	b.WriteString(`}}`)
	return slices.Clip(b.Bytes())
}

// VerifyServed runs v over src (RunSource: the verify code path of
// `mcpsign registry verify`), the entries that verified written as a dump
// to o.VerifiedOut (a temporary file when ""), and loads that dump with
// LoadServed. It returns a set only when the whole run ended without
// error: entries that failed are not in it; an error (the source cannot be
// read, the run was interrupted) returns no set.
func (v *Verifier) VerifyServed(ctx context.Context, src string, o SourceOptions, lim Limits) (*ServedSet, Summary, error) {
	// The run writes its dump into a directory of its own (0700), the set
	// is loaded from there, and only then is the dump renamed to
	// VerifiedOut (same directory, so the rename is atomic): what is
	// served is what this run verified, never what another writer put at
	// VerifiedOut meanwhile.
	out := o.VerifiedOut
	parent := ""
	if out != "" {
		parent = filepath.Dir(out)
	}
	dir, err := os.MkdirTemp(parent, ".mcpsign-serve-")
	if err != nil {
		return nil, Summary{}, err
	}
	defer os.RemoveAll(dir)
	o.VerifiedOut = filepath.Join(dir, "verified.json")
	sum, err := v.RunSource(ctx, src, o)
	if err != nil {
		return nil, sum, err
	}
	set, err := LoadServedFile(ctx, o.VerifiedOut, lim)
	if err != nil {
		return nil, sum, err
	}
	if out != "" {
		if err := os.Rename(o.VerifiedOut, out); err != nil {
			return nil, sum, err
		}
	}
	return set, sum, nil
}
