package policy

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// Errors of a decision (docs/POLICY.md "Thresholds").
var (
	// ErrThreshold: the bundles verify, but fewer distinct signers than the
	// threshold each satisfy a different listed identity.
	ErrThreshold = errors.New("policy threshold not met")
	// ErrNoSignature: the entry lists no identity ("unsigned": "tofu"), so
	// no bundle can be decided on.
	ErrNoSignature = errors.New("no signature to verify")
	// ErrSignerCounted is the reason of an identity that a signer satisfied
	// but that signer counted for another identity: one signer counts once.
	ErrSignerCounted = errors.New("its signer counted for another identity: one signer counts once")
	// ErrNotSigned is the reason of an identity that no bundle was
	// checked against (the decision stopped at an earlier bundle).
	ErrNotSigned = errors.New("no bundle signed by it was checked")
)

// DeciderOptions configure a Decider: what the host adds to every entry's
// policy.
type DeciderOptions struct {
	// Trust loads the trusted material the entries name; nil: a cache of
	// the Decider's own. Give one TrustCache to several Deciders to load
	// each trusted root once between them.
	Trust *verify.TrustCache
	// Offline forbids TUF from fetching: only its cache is read
	// (trustroot.Options.Offline).
	Offline bool
	// AllowCurrentTime lets a certificate identity's bundle that has no
	// timestamp be checked at the current time (verify.Policy).
	AllowCurrentTime bool
	// Packages are released artifacts every statement must bind
	// (verify.Policy.Packages), besides the entry's own package.
	Packages []verify.PackageRequirement
	// Now is the current time, for the entry's maxBundleAge; nil:
	// time.Now.
	Now func() time.Time
}

// Decider makes the policy decision of docs/POLICY.md for resolved policy
// entries: which bundles verify under which listed identities, and whether
// enough distinct signers signed. The trusted material is loaded once per
// source (DeciderOptions.Trust) and shared, with its chain cache, by every
// entry, and each key file once. A Decider is safe for concurrent use by
// many goroutines.
type Decider struct {
	opts  DeciderOptions
	trust *verify.TrustCache
	keys  sync.Map // key file path → crypto.PublicKey, read once
}

// NewDecider returns a Decider with opts.
func NewDecider(opts DeciderOptions) *Decider {
	d := &Decider{opts: opts, trust: opts.Trust}
	if d.trust == nil {
		d.trust = &verify.TrustCache{}
	}
	if d.opts.Now == nil {
		d.opts.Now = time.Now
	}
	return d
}

// Decide decides whether bundles satisfy the policy entry r for snap, the
// definitions a server serves (Entry.Decide); it is Prepare, then Decide
// on the Entry. A host that decides on one entry many times (a proxy's
// roll-forward) keeps the Entry instead.
func (d *Decider) Decide(ctx context.Context, r *Resolved, bundles [][]byte, snap *digest.Snapshot) (*Decision, error) {
	e, err := d.Prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	return e.Decide(ctx, bundles, snap)
}

// IdentityError is an identity of an entry that cannot be verified under:
// its key file or its trusted material does not load, or the policy it
// makes is incomplete. Err is the cause (a *verify.TrustError when the
// trust does not load).
type IdentityError struct {
	// Index is the identity's index in Resolved.Identities, and Identity
	// describes it (Identity.String; "" when the key did not load).
	Index    int
	Identity string
	Err      error
}

func (e *IdentityError) Error() string {
	if e.Identity == "" {
		return fmt.Sprintf("policy identity %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("policy identity %d (%s): %v", e.Index, e.Identity, e.Err)
}

func (e *IdentityError) Unwrap() error { return e.Err }

// Entry decides under one resolved policy entry, its verifiers built:
// safe for concurrent use.
type Entry struct {
	d  *Decider
	r  *Resolved
	vs []entryVerifier
}

// entryVerifier verifies under some of the identities of an entry: ids
// are their indices in Resolved.Identities, in the order of the
// verifier's verify.Policy.Identities (one index for a key).
type entryVerifier struct {
	v   *verify.Verifier
	ids []int
}

// Resolved returns the entry's policy.
func (e *Entry) Resolved() *Resolved { return e.r }

// Prepare builds the verifiers of r, one for all its sigstore identities
// and one for all its certificate identities (a bundle passes when any of
// them matches, and the result says which), and one per key, loading the
// trust they need. An entry with no identity is ErrNoSignature; an
// identity that cannot be verified under is an *IdentityError.
func (d *Decider) Prepare(ctx context.Context, r *Resolved) (*Entry, error) {
	if len(r.Identities) == 0 {
		return nil, fmt.Errorf("server %s has no identity in the policy (unsigned: tofu): %w", textsafe.RawQuote(r.Name), ErrNoSignature)
	}
	var groups [][]int // identity indices, one group per verifier
	byMethod := map[verify.Method]int{}
	for i, id := range r.Identities {
		if g, ok := byMethod[id.Method]; ok && id.Method != verify.MethodKey {
			groups[g] = append(groups[g], i)
			continue
		}
		byMethod[id.Method] = len(groups)
		groups = append(groups, []int{i})
	}
	e := &Entry{d: d, r: r}
	for _, g := range groups {
		first := r.Identities[g[0]]
		m := first.Method
		p := verify.Policy{
			Method:           m,
			RequireTlog:      r.RequireTlog && m != verify.MethodSigstore,
			RequireTimestamp: r.RequireTimestamp,
			AllowCurrentTime: d.opts.AllowCurrentTime && m == verify.MethodCertificate,
			Packages:         d.opts.Packages,
		}
		if m == verify.MethodKey {
			pub, err := d.key(first.Key)
			if err != nil {
				return nil, &IdentityError{Index: g[0], Err: err}
			}
			p.PublicKey = pub
		} else {
			p.Identities = verifierIdentities(r.Identities, g)
		}
		src := verify.TrustSources{Root: trustroot.Options{TrustedRootPath: r.Trust.TrustedRoot, CacheDir: r.Trust.TUFCache, Mirror: r.Trust.TUFMirror, Offline: d.opts.Offline}}
		if m == verify.MethodCertificate {
			src.CARoots, src.CAIntermediates = r.Trust.CARoots, r.Trust.CAIntermediates
		}
		trust, err := d.trust.Load(ctx, src, p)
		if err != nil {
			return nil, &IdentityError{Index: g[0], Identity: first.String(), Err: err}
		}
		v, err := verify.New(trust, p)
		if err != nil {
			return nil, &IdentityError{Index: g[0], Identity: first.String(), Err: err}
		}
		e.vs = append(e.vs, entryVerifier{v: v, ids: g})
	}
	return e, nil
}

// verifierIdentities are the certificate identities ids[idx...] as verify
// matches them (sigstore and certificate methods): one conversion for the
// Decider and a log monitor's Watchlist.
func verifierIdentities(ids []Identity, idx []int) []verify.Identity {
	out := make([]verify.Identity, 0, len(idx))
	for _, i := range idx {
		out = append(out, ids[i].Identity)
	}
	return out
}

// key is the public key of the key file at path, read on first use.
func (d *Decider) key(path string) (crypto.PublicKey, error) {
	if k, ok := d.keys.Load(path); ok {
		return k, nil
	}
	k, err := readKey(path)
	if err != nil {
		return nil, err
	}
	d.keys.Store(path, k)
	return k, nil
}

// readKey reads the PEM public key file of a key identity.
func readKey(path string) (crypto.PublicKey, error) {
	pub, err := trustroot.ReadPublicKeyFile(path)
	var fe *trustroot.KeyFileError
	switch {
	case errors.As(err, &fe) && fe.Read:
		return nil, fmt.Errorf("key: %w", fe.Err)
	case errors.As(err, &fe):
		return nil, fmt.Errorf("key %s: %w", path, fe.Err)
	}
	return pub, err
}

// Decision is what a decision established. It is returned with a
// *DecisionError too, holding what did verify.
type Decision struct {
	// Policy is the entry decided under.
	Policy *Resolved
	// Results has the result of each bundle that verified, in order (the
	// result under the first verifier it passed): Results[i] is bundle
	// i's. A decision stops at the first bundle that verifies under no
	// identity, so every bundle has one when the decision holds. Each
	// holds the verified statement (Result.Statement) and, with a
	// snapshot, the definitions it matched.
	Results []*verify.Result
	// Signers are the distinct signers, in the order of their first
	// bundle: two bundles by one signer are one signer.
	Signers []Signer
	// Matched is how many distinct identities a one-to-one assignment of
	// signers covers; the decision holds when it is at least
	// Policy.Threshold.
	Matched int
}

// Signer is one distinct signer: an identity (method, certificate
// identity, issuer) or a private key, whatever bundles it signed.
type Signer struct {
	// Result is the result of its first bundle.
	Result *verify.Result
	// Identities are the indices (in Resolved.Identities) of the listed
	// identities it satisfies, ascending.
	Identities []int
	// Counted is the identity it counts for in the assignment of signers
	// to identities; -1 when it counts for none.
	Counted int

	// keys tell the signer apart: its method, identity and issuer, and
	// the key ID of every key it signed with.
	keys []string
}

// First is the result of the first bundle: the one reported, and the
// evidence of a lock written from the decision; nil when it did not
// verify.
func (d *Decision) First() *verify.Result {
	if d == nil || len(d.Results) == 0 {
		return nil
	}
	return d.Results[0]
}

// Approval is the lock approval of the decision: the first bundle's
// evidence (pinbundle.ApprovalOf). It approves definitions only when the
// decision was made against them (a snapshot): a decision on statements
// alone matched none.
func (d *Decision) Approval() pin.Approval { return pinbundle.ApprovalOf(d.First()) }

// Verified is what a proxy records of the decision (pinbundle.VerifiedOf).
func (d *Decision) Verified() pin.Verified { return pinbundle.VerifiedOf(d.First()) }

// DecisionError is a decision that does not hold. Err is the failure as a
// report names it: a *verify.StepError naming the step (the failure that
// got furthest of the bundle that failed, "bundle i of n" when there are
// several; ErrThreshold at the identity step when every bundle verified
// but too few distinct signers signed). Reasons says, for each listed
// identity, why it did not count: Reasons[i] is nil for identity i when a
// signer counted for it.
type DecisionError struct {
	Err error
	// Bundle is the index of the bundle that failed; -1 when every bundle
	// verified and the threshold is not met.
	Bundle  int
	Reasons []error
}

func (e *DecisionError) Error() string { return e.Err.Error() }
func (e *DecisionError) Unwrap() error { return e.Err }

// stepRank orders the steps, to report the failure that got furthest.
var stepRank = []verify.Step{verify.StepBundle, verify.StepSignature, verify.StepChain, verify.StepTlog,
	verify.StepTime, verify.StepIdentity, verify.StepStatement, verify.StepMatch}

func rank(err error) int {
	s, ok := verify.FailedStep(err)
	if !ok {
		return -1
	}
	return slices.Index(stepRank, s)
}

// Decide verifies every bundle against snap under every identity of the
// entry: each bundle must verify under at least one, and pass the entry's
// checks (revocation, maxBundleAge, package). Signers are told apart by
// what the verification established (method, identity, issuer, key),
// never by bundle: two bundles by one key are one signer. The decision
// holds when Threshold distinct identities can each be assigned a
// different signer.
//
// A nil snap decides on the bundles and their statements alone
// (verify.Verifier.VerifyStatement): the caller checks what each
// Result.Statement binds. A failure is a *DecisionError, returned with
// the Decision of what verified; any other error (a cancelled context) is
// returned as it is.
func (e *Entry) Decide(ctx context.Context, bundles [][]byte, snap *digest.Snapshot) (*Decision, error) {
	r := e.r
	n := len(r.Identities)
	dec := &Decision{Policy: r}
	reasons := make([][]error, n) // per identity, per bundle checked
	fail := func(bi int, err error) (*Decision, error) {
		owner := assign(dec, n)
		return dec, &DecisionError{Err: numbered(err, bi, len(bundles)), Bundle: bi, Reasons: identityReasons(dec, owner, reasons, len(bundles))}
	}
	for bi, data := range bundles {
		var best error
		var passed []*verify.Result // the first is reported
		var ids []int
		for _, ev := range e.vs {
			var rr *verify.Result
			var err error
			if snap != nil {
				rr, err = ev.v.Verify(ctx, data, snap)
			} else {
				rr, err = ev.v.VerifyStatement(ctx, data)
			}
			if cerr := ctx.Err(); cerr != nil {
				return dec, cerr
			}
			if err != nil {
				ev.record(reasons, bi, err)
				if best == nil || rank(err) > rank(best) {
					best = err
				}
				continue
			}
			passed = append(passed, rr)
			matched := ev.ids // a key: the verifier's one identity
			if rr.MatchedIdentities != nil {
				matched = nil
				for _, j := range rr.MatchedIdentities {
					matched = append(matched, ev.ids[j])
				}
			}
			for _, i := range ev.ids {
				if !slices.Contains(matched, i) {
					reasons[i] = append(reasons[i], fmt.Errorf("%w: the signer matches another identity", verify.ErrIdentityMismatch))
				}
			}
			// A derived repository signer counts only when the
			// certificate's claims say what its rule requires.
			var claimErr error
			matched, claimErr = claimsHold(r.Identities, matched, rr, reasons)
			if len(matched) == 0 {
				// Verified, but under no identity that may count.
				passed = passed[:len(passed)-1]
				if best == nil || rank(claimErr) > rank(best) {
					best = claimErr
				}
				continue
			}
			ids = append(ids, matched...)
		}
		slices.Sort(ids)
		if len(passed) == 0 {
			return fail(bi, best)
		}
		if err := e.checks(passed, snap); err != nil {
			for _, i := range ids {
				reasons[i] = append(reasons[i], err)
			}
			return fail(bi, err)
		}
		res := passed[0]
		if snap == nil && len(dec.Results) > 0 {
			// No snapshot holds each bundle to the same definitions: the
			// statements must sign the same ones, or the signers of one
			// are counted for the other.
			if err := sameSubjects(dec.Results[0].Statement, res.Statement); err != nil {
				for _, i := range ids {
					reasons[i] = append(reasons[i], err)
				}
				return fail(bi, err)
			}
		}
		dec.Results = append(dec.Results, res)
		key := string(res.Method) + "\x00" + res.Identity + "\x00" + res.Issuer
		dec.Signers = addSigner(dec.Signers, Signer{keys: []string{key, "key\x00" + res.SignerKeyID}, Result: res, Identities: ids})
	}
	owner := assign(dec, n)
	if dec.Matched < r.Threshold {
		err := &verify.StepError{Step: verify.StepIdentity, Err: fmt.Errorf("%w: %d of the %d listed identities signed these definitions as distinct signers, %d required (%d bundle(s), %d distinct signer(s): two bundles by one signer count once)",
			ErrThreshold, dec.Matched, n, r.Threshold, len(bundles), len(dec.Signers))}
		return dec, &DecisionError{Err: err, Bundle: -1, Reasons: identityReasons(dec, owner, reasons, len(bundles))}
	}
	return dec, nil
}

// claimsHold returns the identities of matched that may count for the
// signer of rr: all but a derived repository signer (ForRepository) whose
// rule the certificate's claims do not satisfy (CheckClaims). Such an
// identity's reason is recorded, and the last one is returned.
func claimsHold(ids []Identity, matched []int, rr *verify.Result, reasons [][]error) ([]int, error) {
	var claimErr error
	out := make([]int, 0, len(matched))
	for _, i := range matched {
		if d := ids[i].repo; d != nil {
			if err := d.rs.CheckClaims(d.owner, d.repo, rr.Certificate); err != nil {
				claimErr = &verify.StepError{Step: verify.StepIdentity, Err: err}
				reasons[i] = append(reasons[i], claimErr)
				continue
			}
		}
		out = append(out, i)
	}
	return out, claimErr
}

// record keeps, for each identity of ev, why bundle bi did not verify
// under it, and names the identities of an identity failure by their
// index in the policy.
func (ev entryVerifier) record(reasons [][]error, bi int, err error) {
	var ie *verify.IdentitiesError
	if errors.As(err, &ie) {
		ie.Names = nil
		for _, i := range ev.ids {
			ie.Names = append(ie.Names, fmt.Sprintf("identity %d", i))
		}
		if len(ie.Errs) == len(ev.ids) {
			for j, i := range ev.ids {
				reasons[i] = append(reasons[i], &verify.StepError{Step: verify.StepIdentity, Err: ie.Errs[j]})
			}
			return
		}
	}
	for _, i := range ev.ids {
		reasons[i] = append(reasons[i], err)
	}
}

// identityReasons is DecisionError.Reasons: nil for an identity a signer
// counts for, ErrSignerCounted for one satisfied by a signer that counts
// for another, else why each bundle checked did not count for it.
func identityReasons(dec *Decision, owner []int, reasons [][]error, nb int) []error {
	out := make([]error, len(owner))
	for i := range owner {
		switch {
		case owner[i] >= 0:
		case slices.ContainsFunc(dec.Signers, func(s Signer) bool { return slices.Contains(s.Identities, i) }):
			out[i] = ErrSignerCounted
		case len(reasons[i]) == 0:
			out[i] = ErrNotSigned
		case len(reasons[i]) == 1 && nb < 2:
			out[i] = reasons[i][0]
		default:
			errs := make([]error, len(reasons[i]))
			for bi, err := range reasons[i] {
				errs[bi] = fmt.Errorf("bundle %d of %d: %w", bi+1, nb, err)
			}
			out[i] = errors.Join(errs...)
		}
	}
	return out
}

// numbered names bundle i of n in err, keeping its step.
func numbered(err error, i, n int) error {
	if n < 2 {
		return err
	}
	var se *verify.StepError
	if errors.As(err, &se) {
		return &verify.StepError{Step: se.Step, Err: fmt.Errorf("bundle %d of %d: %w", i+1, n, se.Err)}
	}
	return fmt.Errorf("bundle %d of %d: %w", i+1, n, err)
}

// addSigner adds s to signers, merged with every signer that shares one
// of its keys: one identity is one signer whatever keys it signed with,
// and one private key is one signer whatever identities its certificates
// name (a key listed as a key and certified by an enterprise CA, or
// certified twice, signs once).
// The merged signer takes the place, and the result, of the first.
func addSigner(signers []Signer, s Signer) []Signer {
	out := signers[:0:0]
	at := -1
	for _, o := range signers {
		if !slices.ContainsFunc(o.keys, func(k string) bool { return slices.Contains(s.keys, k) }) {
			out = append(out, o)
			continue
		}
		if at < 0 {
			at, s.Result = len(out), o.Result
		}
		for _, k := range o.keys {
			if !slices.Contains(s.keys, k) {
				s.keys = append(s.keys, k)
			}
		}
		for _, i := range o.Identities {
			if !slices.Contains(s.Identities, i) {
				s.Identities = append(s.Identities, i)
			}
		}
	}
	slices.Sort(s.Identities)
	if at < 0 {
		return append(out, s)
	}
	return slices.Insert(out, at, s)
}

// assign sets dec.Matched to the size of a maximum one-to-one assignment
// of its signers to the identities each satisfies (augmenting paths; at
// most 32 identities) and each signer's Counted, and returns the signer of
// each identity (-1: none).
func assign(dec *Decision, n int) []int {
	signers := dec.Signers
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	var try func(s int, seen []bool) bool
	try = func(s int, seen []bool) bool {
		for _, id := range signers[s].Identities {
			if seen[id] {
				continue
			}
			seen[id] = true
			if owner[id] < 0 || try(owner[id], seen) {
				owner[id] = s
				return true
			}
		}
		return false
	}
	count := 0
	for s := range signers {
		if try(s, make([]bool, n)) {
			count++
		}
	}
	for s := range signers {
		signers[s].Counted = -1
	}
	for id, s := range owner {
		if s >= 0 {
			signers[s].Counted = id
		}
	}
	dec.Matched = count
	return owner
}

// checks are the entry's checks beyond verify's, on the results of one
// bundle under each verifier it passed (the first is reported):
// revocation, the bundle's age and the package. An identity is revoked
// when any of what the verifications established names it: the identity
// each reports, the certificate's subject, or the key that signed (a
// revoked key ID refuses a certificate for that key too). A revoked
// definition is one of snap's, or with no snap one the statement binds.
func (e *Entry) checks(results []*verify.Result, snap *digest.Snapshot) error {
	r := e.r
	res := results[0]
	var defs []string
	if len(r.Revoked.Definitions) > 0 {
		if snap == nil {
			for _, s := range res.Statement.Subject {
				if h, ok := s.Digest["sha256"]; ok {
					defs = append(defs, "sha256:"+h)
				}
			}
		} else {
			l, err := pin.NewLock(snap, pinbundle.ApprovalOf(res))
			if err != nil {
				return err
			}
			for _, d := range l.Definitions {
				defs = append(defs, d.Digest)
			}
		}
	}
	if err := r.Revoked.Check(res.Identity, res.BundleDigest, defs); err != nil {
		return &verify.StepError{Step: verify.StepIdentity, Err: err}
	}
	for _, rr := range results {
		for _, id := range []string{rr.Identity, rr.Subject, rr.SignerKeyID} {
			if err := r.Revoked.Check(id, "", nil); err != nil {
				return &verify.StepError{Step: verify.StepIdentity, Err: err}
			}
		}
	}
	if r.MaxBundleAge > 0 {
		if res.SigningTime.IsZero() {
			return &verify.StepError{Step: verify.StepTime, Err: fmt.Errorf("policy maxBundleAge %s: the bundle has no verified signing time (require a timestamp or a log entry)", r.MaxBundleAge)}
		}
		if age := e.d.opts.Now().Sub(res.SigningTime); age > r.MaxBundleAge {
			return &verify.StepError{Step: verify.StepTime, Err: fmt.Errorf("policy maxBundleAge %s: the bundle was signed %s ago (%s)", r.MaxBundleAge, age.Round(time.Second), res.SigningTime.UTC().Format(time.RFC3339))}
		}
	}
	if r.Package != "" {
		found := false
		for _, c := range res.Claims {
			if strings.HasPrefix(c.Name, "package[") && strings.HasSuffix(c.Name, "].purl") && c.Value == r.Package {
				found = true
			}
		}
		if !found {
			return &verify.StepError{Step: verify.StepStatement, Err: fmt.Errorf("policy package %s: the statement binds no package of that purl", textsafe.RawQuote(r.Package))}
		}
	}
	return nil
}

// sameSubjects requires statement b to sign the definitions a signs
// (the same subjects, by name and digest, in any order).
func sameSubjects(a, b *attest.Statement) error {
	key := func(st *attest.Statement) []string {
		var k []string
		for _, sub := range st.Subject {
			for alg, h := range sub.Digest {
				k = append(k, sub.Name+"\x00"+alg+"\x00"+h)
			}
			if len(sub.Digest) == 0 {
				k = append(k, sub.Name)
			}
		}
		slices.Sort(k)
		return k
	}
	if a == nil || b == nil || !slices.Equal(key(a), key(b)) {
		return &verify.StepError{Step: verify.StepStatement, Err: errors.New("its statement signs other definitions than the first bundle's: signers of different definitions do not count together")}
	}
	return nil
}
