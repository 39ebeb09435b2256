package registry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"net/http"

	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

// The steps a Result may fail at, in order (docs/REGISTRY.md, "Output").
const (
	StepEntry       = "entry"       // the entry does not read
	StepStatus      = "status"      // the registry's status says it is deleted (or is unknown)
	StepDuplicate   = "duplicate"   // the source lists its name and version twice
	StepPolicy      = "policy"      // no policy server name matches it
	StepAttestation = "attestation" // it points at no bundle, or the pointer does not read
	StepFetch       = "fetch"       // a bundle could not be fetched, or its digest differs
	StepSigner      = "signer"      // the repository signer is not the entry's repository
	StepBinding     = "binding"     // the statement does not bind the entry's packages and version
)

// Signer is who signed an entry, as the verification established.
type Signer struct {
	Method   string `json:"method"`
	Identity string `json:"identity"`
	Issuer   string `json:"issuer,omitempty"`
	// SourceRepository is the certificate's source repository (Fulcio
	// extension 1.3.6.1.4.1.57264.1.12), when it has one.
	SourceRepository string `json:"sourceRepository,omitempty"`
}

// Result is the verification of one entry: one JSON line of
// `mcpsign registry verify --format json` (docs/JSON.md).
type Result struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Verified bool   `json:"verified"`
	// Position is where the source gave the entry (its page and index,
	// or its line in a file): an entry without a name is known by it.
	Position Position `json:"position"`
	// Status is the registry's status of the entry (active, deprecated,
	// deleted), when the source gives one.
	Status string `json:"status,omitempty"`
	// Policy is the policy server name that governs the entry (its name,
	// or the namespace pattern).
	Policy  string   `json:"policy,omitempty"`
	Signers []Signer `json:"signers,omitempty"`
	// Bundles are the digests of the bundles verified.
	Bundles []string `json:"bundles,omitempty"`
	// Step and Reason say where and why an entry failed. Step is one of
	// the Step constants or a verification step (docs/VERIFY.md).
	Step   string `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Pointer is the JSON Pointer (RFC 6901) of the member refused, in
	// the entry as the source gave it (an API entry's server.json is under
	// /server), when the refusal is of one member.
	Pointer string `json:"pointer,omitempty"`
	// VerifiedAt is when the verification ended (a passing entry).
	VerifiedAt string `json:"verifiedAt,omitempty"`

	entry *Entry
	err   error
}

// Entry is the entry the result is about (nil when it did not read).
func (r *Result) Entry() *Entry { return r.entry }

// Err is why the entry failed (its chain holds the sentinel errors of the
// step: source.ErrAddressRefused, policy.ErrNoServer, ...), nil when it
// verified.
func (r *Result) Err() error { return r.err }

// Options configure a Verifier.
type Options struct {
	// Policy is the policy file; its server names match entries
	// (policy.File.MatchRegistry).
	Policy *policy.File
	// Decider makes the policy decision; nil: one of its own with
	// DeciderOptions (one trusted material load, shared by every entry).
	Decider        *policy.Decider
	DeciderOptions policy.DeciderOptions
	// HTTPClient fetches bundles (TLS roots); nil: http.DefaultClient.
	HTTPClient *http.Client
	// BundleAddresses are the addresses a bundle fetch may connect to:
	// the zero value, source.PublicAddresses, refuses loopback, private,
	// link-local and every other non-public address, checked as each
	// connection is made (an entry is untrusted: its bundle URL must not
	// reach the machine's or its network's services). BundleAddresses
	// gives the scope for a source.
	BundleAddresses source.AddressScope
	// SourceHost, when not "", is the host:port of a registry on a
	// loopback host (SourceHost gives it): a bundle URL at that host and
	// port may be fetched though BundleAddresses refuses loopback (a local
	// registry serving its bundles beside it), and no other loopback
	// address and port is.
	SourceHost string
	// MaxBundleBytes caps one bundle; 0: the bundle file cap.
	MaxBundleBytes int64
	// FetchTimeout bounds one bundle fetch; 0: source's default.
	FetchTimeout time.Duration
	// Fetch, when set, gets a bundle's bytes instead of an https fetch (a
	// local mirror of the bundles); its bytes must still have the
	// pointer's digest.
	Fetch func(ctx context.Context, p Pointer) ([]byte, error)
	// Limits bound the entries.
	Limits Limits
	// Now is the verification time recorded; nil: time.Now.
	Now func() time.Time
}

// Verifier verifies registry entries under one policy. It is safe for
// concurrent use.
type Verifier struct {
	opts    Options
	decider *policy.Decider
	// entries caches the prepared policy entry of each policy server
	// name (those without a repository signer: theirs depends on the
	// entry).
	mu      sync.Mutex
	entries map[string]*policy.Entry
	// fetcher fetches the bundles (nil with Options.Fetch).
	fetcher *Fetcher
}

// New returns a Verifier with opts.
func New(opts Options) (*Verifier, error) {
	if opts.Policy == nil {
		return nil, errors.New("registry: no policy")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := opts.Decider
	if d == nil {
		d = policy.NewDecider(opts.DeciderOptions)
	}
	v := &Verifier{opts: opts, decider: d, entries: map[string]*policy.Entry{}}
	if opts.Fetch == nil {
		f, err := newFetcher(opts.SourceHost, source.BundleOptions{HTTPClient: opts.HTTPClient, Timeout: opts.FetchTimeout, Addresses: opts.BundleAddresses})
		if err != nil {
			return nil, err
		}
		v.fetcher = f
	}
	return v, nil
}

// Close releases the verifier's idle connections.
func (v *Verifier) Close() {
	if v.fetcher != nil {
		v.fetcher.Close()
	}
}

func failed(r *Result, step string, err error) *Result {
	r.Verified, r.Step, r.Reason, r.err = false, step, err.Error(), err
	var me *MemberError
	if errors.As(err, &me) {
		r.Pointer = me.Pointer
	}
	return r
}

// VerifyEntry verifies one entry, raw as a page or a dump gives it (an API
// entry or a bare server.json). It never returns nil: an entry that fails
// says at which step and why.
func (v *Verifier) VerifyEntry(ctx context.Context, raw []byte) *Result {
	return v.shardVerify(ctx, raw, Position{}, Shard{})
}

// Verify verifies a parsed entry: the policy server that governs it,
// its bundles (fetched and digest-checked first), the policy decision on
// them, the repository signer, and what each statement binds.
func (v *Verifier) Verify(ctx context.Context, e *Entry) *Result {
	r := &Result{Name: e.Name, Version: e.Version, Position: e.Pos, Status: e.Status, entry: e}
	switch e.Status {
	case "", StatusActive, StatusDeprecated:
	case StatusDeleted:
		return failed(r, StepStatus, &MemberError{Pointer: e.statusPtr, Err: ErrStatus, Rule: "the registry deleted this entry (a takedown): not verified"})
	default:
		return failed(r, StepStatus, &MemberError{Pointer: e.statusPtr, Err: ErrStatus, Rule: fmt.Sprintf("status %s is none of active, deprecated, deleted: not verified", textsafe.RawQuote(textsafe.Cut(e.Status, 40)))})
	}
	name, ok := v.opts.Policy.MatchRegistry(e.Name)
	if !ok {
		return failed(r, StepPolicy, fmt.Errorf("%w: no policy server is %s or %s: not verified", policy.ErrNoServer, textsafe.RawQuote(e.Name), textsafe.RawQuote(Namespace(e.Name)+"/*")))
	}
	r.Policy = name
	if e.AttestationErr != nil {
		return failed(r, StepAttestation, e.AttestationErr)
	}
	// The policy entry is prepared (its trust loaded, once) only for an
	// entry that has bundles to verify.
	pe, err := v.prepare(ctx, name, e)
	if err != nil {
		step := StepPolicy
		if errors.Is(err, policy.ErrNoRepositorySigner) {
			step = StepSigner
		}
		return failed(r, step, err)
	}
	// The entry's bundles share one bound of bytes and one of time (a
	// bundle is 5 to 11 KB): its 32 bundles never cost 32 times a
	// bundle's bound in memory or in a worker's time.
	limit, timeout := v.opts.MaxBundleBytes, v.opts.FetchTimeout
	if limit <= 0 {
		limit = boundedfile.MaxBundleBytes
	}
	if timeout <= 0 {
		timeout = source.DefaultBundleTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	left := limit
	bundles := make([][]byte, 0, len(e.Pointers))
	for i, p := range e.Pointers {
		if left <= 0 {
			return failed(r, StepFetch, fmt.Errorf("%w: bundles %d to %d: the entry's bundles exceed %d bytes together", source.ErrBundleTooLarge, i+1, len(e.Pointers), limit))
		}
		b, err := v.fetch(fctx, p, left)
		if err != nil {
			return failed(r, StepFetch, err)
		}
		left -= int64(len(b))
		bundles = append(bundles, b)
	}
	dec, err := pe.Decide(ctx, bundles, nil)
	if err != nil {
		var se *verify.StepError
		step := "verify"
		if errors.As(err, &se) {
			step = string(se.Step)
		}
		return failed(r, step, err)
	}
	if err := checkRepositorySigner(pe.Resolved(), e, dec); err != nil {
		return failed(r, StepSigner, err)
	}
	for i, res := range dec.Results {
		if err := CheckBinding(e, res.Statement); err != nil {
			if len(dec.Results) > 1 {
				err = fmt.Errorf("bundle %d: %w", i, err)
			}
			return failed(r, StepBinding, err)
		}
		r.Bundles = append(r.Bundles, res.BundleDigest)
	}
	for _, s := range dec.Signers {
		if s.Counted < 0 {
			continue
		}
		sg := Signer{Method: string(s.Result.Method), Identity: s.Result.Identity, Issuer: s.Result.Issuer}
		if c := s.Result.Certificate; c != nil {
			sg.SourceRepository = c.Extensions.SourceRepositoryURI
		}
		r.Signers = append(r.Signers, sg)
	}
	r.Verified, r.VerifiedAt = true, v.opts.Now().UTC().Format(time.RFC3339)
	return r
}

// fetch gets the bundle p points at, its digest checked before anything
// parses it.
func (v *Verifier) fetch(ctx context.Context, p Pointer, maxBytes int64) ([]byte, error) {
	if v.opts.Fetch == nil {
		return v.fetcher.Fetch(ctx, p.URL, p.Digest, maxBytes)
	}
	b, err := v.opts.Fetch(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", source.ErrBundleFetch, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the %d left of the entry's bound", source.ErrBundleTooLarge, textsafe.RawQuote(p.URL), len(b), maxBytes)
	}
	if got := PointerDigest(b); got != p.Digest {
		return nil, fmt.Errorf("%w: %s has %s, the entry lists %s", source.ErrBundleDigest, textsafe.RawQuote(p.URL), got, p.Digest)
	}
	return b, nil
}

// prepare returns the prepared policy entry that governs e: cached per
// policy server, except with a repository signer, whose identity is the
// entry's own.
func (v *Verifier) prepare(ctx context.Context, name string, e *Entry) (*policy.Entry, error) {
	v.mu.Lock()
	pe, cached := v.entries[name]
	v.mu.Unlock()
	if cached {
		return pe, nil
	}
	r, err := v.opts.Policy.ResolveRegistry(e.Name)
	if err != nil {
		return nil, err
	}
	derived := r.RepositorySigner != nil
	if derived {
		if err := checkNamespaceOwner(e); err != nil {
			return nil, err
		}
	}
	if r, err = r.ForRepository(e.RepositoryURL); err != nil {
		return nil, err
	}
	if pe, err = v.decider.Prepare(ctx, r); err != nil {
		return nil, err
	}
	if !derived {
		v.mu.Lock()
		v.entries[name] = pe
		v.mu.Unlock()
	}
	return pe, nil
}

// checkRepositorySigner requires, of every signer that counted for the
// identity derived from the entry's repository (the last one), that the
// certificate's source repository is that repository.
func checkRepositorySigner(r *policy.Resolved, e *Entry, dec *policy.Decision) error {
	if r.RepositorySigner == nil {
		return nil
	}
	want, err := policy.RepositoryURI(e.RepositoryURL)
	if err != nil {
		return err
	}
	derived := len(r.Identities) - 1
	for _, s := range dec.Signers {
		if !slices.Contains(s.Identities, derived) {
			continue
		}
		got := ""
		if c := s.Result.Certificate; c != nil {
			got = c.Extensions.SourceRepositoryURI
		}
		if got != want {
			return fmt.Errorf("%w: the certificate's source repository is %s, the entry's repository is %s", policy.ErrNoRepositorySigner, textsafe.RawQuote(got), textsafe.RawQuote(want))
		}
	}
	return nil
}

// RunOptions configure Run.
type RunOptions struct {
	// Workers verify in parallel; 0: GOMAXPROCS.
	Workers int
	// Shard keeps only the entries of one shard; the zero value keeps all.
	Shard Shard
	// Verified, when not nil, gets each result that verified (its Add)
	// before Emit; its error stops the run. An entry withdrawn later (its
	// name and version listed again) is withdrawn from it too.
	Verified *DumpWriter
	// Emit receives each result in the order of the source; its error
	// stops the run. After the source's results come the withdrawals of
	// the earlier entries of a duplicated name and version (Step
	// StepDuplicate, at their first position).
	Emit func(*Result) error
}

// Summary counts a run's results: Unmatched are the entries no policy
// server governs, Failed the others that did not verify (duplicates
// among them), OtherShards those of other shards, Interrupted those not
// verified because the run was stopped (ErrInterrupted).
type Summary struct {
	Entries, Verified, Failed, Unmatched, OtherShards, Interrupted int
}

// ErrInterrupted: the run was stopped (its context cancelled: a signal, a
// deadline) before every entry was verified. Run's error wraps it and the
// context's cause; RunSource then leaves VerifiedOut as it was.
var ErrInterrupted = errors.New("the run was interrupted")

// Markers of a job that has no line: another shard's entry, an entry not
// verified because the run was stopped.
var otherShard, interrupted = &Result{}, &Result{}

// dupKey identifies a name and version for the duplicate check (SHA-256,
// cut to 16 bytes: 70 bytes or so per entry of the run). The name's ASCII
// case is folded: a reader that stores names without case would keep one
// of two entries that differ only in it.
func dupKey(name, version string) [16]byte {
	n := strings.ToLower(name)
	h := sha256.Sum256([]byte(strconv.Itoa(len(n)) + ":" + n + version))
	return [16]byte(h[:16])
}

// Run verifies every entry that list gives (Client.Each, or ReadDump
// over a file; each result's Position is its index in the listing), in parallel, and emits the results in the source's order.
// At most a few entries per worker are in flight, so memory stays flat in
// the number of entries (besides about 70 bytes per entry to find
// duplicates). An error of the source (a cursor loop, a page over the
// bounds) ends the run after the results before it; one bad entry does
// not. A name and version listed twice refuses both (StepDuplicate): the
// later at its turn, the earlier by a withdrawal emitted at the end. When
// ctx is cancelled the entries not verified are counted as Interrupted,
// not emitted, and the error wraps ErrInterrupted.
func (v *Verifier) Run(ctx context.Context, list func(fn func(raw []byte) error) error, o RunOptions) (Summary, error) {
	return v.RunAt(ctx, func(fn func(raw []byte, pos Position) error) error {
		i := 0
		return list(func(raw []byte) error {
			i++
			return fn(raw, Position{Index: i - 1})
		})
	}, o)
}

// RunAt is Run over a listing that gives each entry's position
// (ListAt): the results carry it.
func (v *Verifier) RunAt(ctx context.Context, list func(fn func(raw []byte, pos Position) error) error, o RunOptions) (Summary, error) {
	var sum Summary
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		raw []byte
		pos Position
		res chan *Result
	}
	jobs := make(chan job)
	order := make(chan job, 4*workers) // the window: results in source order
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := v.shardVerify(ctx, j.raw, j.pos, o.Shard)
				if r != otherShard && !r.Verified && ctx.Err() != nil {
					r = interrupted // it failed because the run stopped
				}
				j.res <- r
			}
		}()
	}
	var listErr error
	go func() {
		defer close(order)
		defer close(jobs)
		listErr = list(func(raw []byte, pos Position) error {
			j := job{raw: slices.Clone(raw), pos: pos, res: make(chan *Result, 1)}
			select {
			case order <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				j.res <- interrupted // in the window: its turn must not wait
				return ctx.Err()
			}
			return nil
		})
	}()
	type first struct {
		pos      Position
		verified bool
		later    *Position // the first duplicate, when one came
		name     string
		version  string
	}
	seen := map[[16]byte]*first{}
	var withdrawn []*first
	var emitErr error
	count := func(r *Result) {
		sum.Entries++
		switch {
		case r.Verified:
			sum.Verified++
		case r.Step == StepPolicy && r.Policy == "":
			sum.Unmatched++
		default:
			sum.Failed++
		}
	}
	for j := range order {
		r := <-j.res
		switch {
		case r == otherShard:
			sum.OtherShards++
			continue
		case r == interrupted:
			sum.Interrupted++
			continue
		case emitErr != nil:
			continue
		}
		if r.Name != "" && r.Version != "" {
			k := dupKey(r.Name, r.Version)
			if f, ok := seen[k]; ok {
				if f.later == nil {
					f.later = &r.Position
					withdrawn = append(withdrawn, f)
				}
				failed(r, StepDuplicate, fmt.Errorf("the source lists %s %s again (first at %s): both refused, whichever a reader keeps", textsafe.RawQuote(r.Name), textsafe.RawQuote(r.Version), f.pos))
				r.Signers, r.Bundles, r.VerifiedAt = nil, nil, ""
			} else {
				seen[k] = &first{pos: r.Position, verified: r.Verified, name: r.Name, version: r.Version}
			}
		}
		count(r)
		if o.Verified != nil && r.Verified {
			emitErr = o.Verified.add(r, dupKey(r.Name, r.Version))
		}
		if o.Emit != nil && emitErr == nil {
			emitErr = o.Emit(r)
		}
		if emitErr != nil {
			cancel()
		}
	}
	wg.Wait()
	if emitErr != nil {
		return sum, emitErr
	}
	if parent.Err() != nil {
		return sum, fmt.Errorf("%w (%d entries not verified): %w", ErrInterrupted, sum.Interrupted, context.Cause(parent))
	}
	// The earlier entry of each duplicated name and version is refused
	// too: its line is followed by its withdrawal, and it leaves the dump.
	for _, f := range withdrawn {
		r := &Result{Name: f.name, Version: f.version, Position: f.pos}
		failed(r, StepDuplicate, fmt.Errorf("the source lists %s %s again (at %s): both refused; this withdraws the line of %s", textsafe.RawQuote(f.name), textsafe.RawQuote(f.version), *f.later, f.pos))
		if f.verified {
			sum.Verified--
			sum.Failed++
			if o.Verified != nil {
				o.Verified.withdraw(dupKey(f.name, f.version))
			}
		}
		if o.Emit != nil {
			if err := o.Emit(r); err != nil {
				return sum, err
			}
		}
	}
	return sum, listErr
}

// shardVerify verifies raw, given at pos, when its entry belongs to shard
// s; otherShard when it does not. An entry whose name cannot be read
// belongs to shard 0.
func (v *Verifier) shardVerify(ctx context.Context, raw []byte, pos Position, s Shard) *Result {
	e, err := ParseEntry(raw, v.opts.Limits)
	if err != nil {
		name := ""
		if e != nil {
			name = e.Name
		}
		if !s.Contains(name) {
			return otherShard
		}
		r := &Result{Name: name, Position: pos}
		if e != nil {
			r.Version, r.Status = e.Version, e.Status
		}
		return failed(r, StepEntry, err)
	}
	if !s.Contains(e.Name) {
		return otherShard
	}
	e.Pos = pos
	return v.Verify(ctx, e)
}

// List returns the listing of src for Run: a registry base URL (http or
// https: Client.Each), "-" for r, or a file (ReadDump).
func List(ctx context.Context, src string, c Client, r io.Reader) func(fn func(raw []byte) error) error {
	l := ListAt(ctx, src, c, r)
	return func(fn func(raw []byte) error) error {
		return l(func(raw []byte, _ Position) error { return fn(raw) })
	}
}

// ListAt is List with each entry's position (Client.EachAt, ReadDumpAt).
func ListAt(ctx context.Context, src string, c Client, r io.Reader) func(fn func(raw []byte, pos Position) error) error {
	if strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://") {
		c.Base = src
		return func(fn func(raw []byte, pos Position) error) error { return c.EachAt(ctx, fn) }
	}
	return func(fn func(raw []byte, pos Position) error) error {
		in := r
		if src != "-" {
			f, err := os.Open(src)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		return ReadDumpAt(in, c.Limits, fn)
	}
}

// Text is the result as one line for people, every server string escaped.
func (r *Result) Text() string {
	name := textsafe.Quote(r.Name) + " " + textsafe.Quote(r.Version) + " (" + r.Position.String()
	if r.Status != "" && r.Status != StatusActive {
		name += ", " + textsafe.Escape(r.Status)
	}
	name += ")"
	if r.Verified {
		var who []string
		for _, s := range r.Signers {
			who = append(who, textsafe.Escape(s.Identity))
		}
		return "VERIFIED " + name + " signed by " + strings.Join(who, ", ")
	}
	return "FAILED   " + name + " at step " + r.Step + ": " + textsafe.Escape(r.Reason)
}

// WriteResults returns an Emit that writes each result to w: as its Text
// line, or, with asJSON, as one JSON line (docs/JSON.md).
func WriteResults(w io.Writer, asJSON bool) func(*Result) error {
	enc := json.NewEncoder(w)
	return func(r *Result) error {
		if asJSON {
			return enc.Encode(r)
		}
		_, err := fmt.Fprintln(w, r.Text())
		return err
	}
}

// Table is the summary of a run as a small table for a terminal.
func (s Summary) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %8d\n", "entries", s.Entries)
	fmt.Fprintf(&b, "%-28s %8d\n", "verified", s.Verified)
	fmt.Fprintf(&b, "%-28s %8d\n", "failed", s.Failed)
	fmt.Fprintf(&b, "%-28s %8d\n", "no policy server matches", s.Unmatched)
	if s.OtherShards > 0 {
		fmt.Fprintf(&b, "%-28s %8d\n", "in other shards", s.OtherShards)
	}
	if s.Interrupted > 0 {
		fmt.Fprintf(&b, "%-28s %8d\n", "not verified: interrupted", s.Interrupted)
	}
	return b.String()
}
