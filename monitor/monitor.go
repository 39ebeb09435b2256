package monitor

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// Finding kinds (docs/MONITOR.md).
const (
	// KindUnreleased: an entry signed by a watched identity (a certificate
	// of the trusted root's CAs) or a watched key, whose artifact was not
	// released. An alert.
	KindUnreleased = "unreleased-entry"
	// KindInconsistent: the log's checkpoint is not consistent with the
	// stored one. An alert.
	KindInconsistent = "inconsistent-log"
	// KindUntrustedCertificate: an entry whose certificate names a watched
	// identity but does not chain to a CA of the trusted root (anyone can
	// log such an entry; no verifier accepts it). A notice.
	KindUntrustedCertificate = "untrusted-certificate"
	// KindUnknownEntry: an entry of a kind this monitor cannot read. A
	// notice.
	KindUnknownEntry = "unknown-entry"
	// KindUnverifiedRelease: a registry lists, for a watched server, a
	// bundle that claims a watched signer and does not verify (its
	// signature, its certificate, or its log entry's proof): it releases
	// nothing. An alert; the run writes no state (docs/MONITOR.md).
	KindUnverifiedRelease = "unverified-release"
	// KindUnwatchedRelease: a registry lists, for a watched server, a
	// bundle signed by a signer that is not watched: it releases nothing.
	// A notice.
	KindUnwatchedRelease = "unwatched-release"
)

// Finding is one thing a run reports.
type Finding struct {
	Kind string `json:"kind"`
	// Alert is true for what the publisher must look at (exit code 1).
	Alert bool `json:"alert"`
	// LogIndex is the entry's index; for KindInconsistent the size of the
	// log's new checkpoint.
	LogIndex int64 `json:"logIndex"`
	// Log is the checkpoint origin.
	Log string `json:"log"`
	// Identity is the certificate SAN that matched a watched identity.
	Identity string `json:"identity,omitempty"`
	// Issuer is the certificate's Fulcio OIDC issuer.
	Issuer string `json:"issuer,omitempty"`
	// KeyID is the watched key ("sha256:HEX") that signed the entry.
	KeyID string `json:"keyId,omitempty"`
	// Digest is the logged artifact digest.
	Digest string `json:"digest,omitempty"`
	// EntryKind is the entry's kind and version, e.g. "hashedrekord 0.0.2".
	EntryKind string `json:"entryKind,omitempty"`
	// Source is the repository, commit and ref the certificate's Fulcio
	// extensions vouch for.
	Source *attest.Source `json:"source,omitempty"`
	// IntegratedTime is the log's time of the entry, when the log gives
	// one (Rekor v2 does not).
	IntegratedTime *time.Time `json:"integratedTime,omitempty"`
	// Registry, Server, Version and Bundle name, for a finding about a
	// registry's listing (KindUnverifiedRelease, KindUnwatchedRelease),
	// the registry source, the entry and the bundle's URL.
	Registry string `json:"registry,omitempty"`
	Server   string `json:"server,omitempty"`
	Version  string `json:"version,omitempty"`
	Bundle   string `json:"bundle,omitempty"`
	// Detail says more, in words.
	Detail string `json:"detail,omitempty"`
}

// Options configure a run.
type Options struct {
	// LogURL is the log's tlog-tiles base URL (where checkpoint and tile/
	// are). Empty: the BaseURL of the trusted root's log for the state's
	// origin (Origin must then be set, or the state given).
	LogURL string
	// Origin, if set, is the checkpoint origin expected.
	Origin string
	// TrustedMaterial holds the log keys and the CAs certificates must
	// chain to.
	TrustedMaterial root.TrustedMaterial
	// Identities are the watched certificate identities (nil: none).
	Identities *verify.CertificateMatcher
	// KeyIDs are the watched public keys ("sha256:HEX", verify.KeyID); Run
	// refuses one of another form (ErrKeyID).
	KeyIDs []string
	// Released are the released artifact digests.
	Released *Released
	// StartIndex is where a run without a previous state starts reading;
	// nil: at the log's current size (the first run records the
	// checkpoint and reads nothing).
	StartIndex *uint64
	// HTTPClient reads the log (nil: a client with a 30 s timeout).
	HTTPClient *http.Client
	// OnFinding receives each finding as it is found, in log order.
	OnFinding func(Finding)

	// hashOnly reads and proves the tiles without parsing entries (the
	// benchmark's floor).
	hashOnly bool
}

// Result is what a run checked.
type Result struct {
	// Log is the checkpoint origin, URL where it was read.
	Log, URL string
	// From and To bound the entries read: [From, To).
	From, To uint64
	// Bundles and HashTiles count the tiles read.
	Bundles, HashTiles int
	// Watched counts entries by a watched identity or key; Released those
	// of them that were released.
	Watched, Released int
	// Alerts and Notices count the findings.
	Alerts, Notices int
	// State is the state to write for the next run: set only when the
	// whole range was checked.
	State *State
}

// Run checks the log from prev (nil for a first run) to its latest
// checkpoint. It returns a Result with the new State only when everything
// was checked; an inconsistency is reported as a finding and the error
// wraps ErrInconsistent; other failures are *CheckError values. A
// cancelled ctx stops it between tiles, with no State.
//
// Once the range is checked, the findings opts.Released holds about a
// registry's bundles (ReleasedFromRegistry) are reported after the log's;
// when one is an alert (KindUnverifiedRelease) the Result has no State and
// the error wraps ErrUnverifiedListing: the range is checked again by the
// next run.
func Run(ctx context.Context, opts Options, prev *State) (*Result, error) {
	res, err := run(ctx, opts, prev)
	if err != nil || opts.Released == nil {
		return res, err
	}
	unverified := 0
	for _, fd := range opts.Released.findings {
		fd.Log = res.Log
		if fd.Alert {
			res.Alerts++
			unverified++
		} else {
			res.Notices++
		}
		emit(opts, fd)
	}
	if unverified > 0 {
		res.State = nil
		return res, fmt.Errorf("%w: %d listed for a watched server (the unverified-release alerts); the state was not written: the next run checks this range again", ErrUnverifiedListing, unverified)
	}
	return res, nil
}

func run(ctx context.Context, opts Options, prev *State) (*Result, error) {
	// A key ID that does not read would watch nothing (fail closed).
	for _, id := range opts.KeyIDs {
		if !digest.ValidDigest(id) {
			return nil, fmt.Errorf("%w: %s is not sha256: and 64 lowercase hex digits (verify.KeyID)", ErrKeyID, textsafe.RawQuote(id))
		}
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	origin := opts.Origin
	if prev != nil {
		if origin != "" && origin != prev.Log.Origin {
			return nil, fmt.Errorf("%w: the state is for the log %s, not %s", ErrState, textsafe.RawQuote(prev.Log.Origin), textsafe.RawQuote(origin))
		}
		origin = prev.Log.Origin
	}
	logURL := opts.LogURL
	if logURL == "" {
		if origin == "" {
			return nil, fmt.Errorf("%w: no log URL and no origin to find one in the trusted root", ErrNoLog)
		}
		tl, err := findLog(opts.TrustedMaterial, origin)
		if err != nil {
			return nil, err
		}
		logURL = tl[0].BaseURL
	}
	base, err := url.Parse(logURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("log URL %s is not an http(s) URL", textsafe.RawQuote(logURL))
	}
	f := &fetcher{base: base, client: client}
	res := &Result{URL: logURL}

	raw, err := f.get(ctx, "checkpoint", maxCheckpoint)
	if errors.Is(err, errNotFound) {
		// No tlog-tiles checkpoint: a Rekor v1 log, or no log.
		return runV1(ctx, opts, prev, origin, base, client, res)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, checkErr("fetch", -1, ErrFetch, "%w", err)
	}
	cpOrigin, _, _ := strings.Cut(string(raw), "\n")
	if origin == "" {
		origin = cpOrigin
	}
	if cpOrigin != origin {
		return nil, checkErr("checkpoint", -1, ErrCheckpoint, "the checkpoint's origin is %s, want %s", textsafe.RawQuote(cpOrigin), textsafe.RawQuote(origin))
	}
	res.Log = origin
	verifiers, err := noteVerifiers(opts.TrustedMaterial, origin)
	if err != nil {
		return nil, err
	}
	cp, err := parseCheckpoint(raw, origin, verifiers)
	if err != nil {
		return nil, checkErr("checkpoint", -1, ErrCheckpoint, "%v", err)
	}
	var old *flog.Checkpoint
	if prev != nil {
		old, err = parseCheckpoint([]byte(prev.Checkpoint), origin, verifiers)
		if err != nil {
			return nil, fmt.Errorf("%w: the stored checkpoint is not signed by the log key: %v", ErrState, err)
		}
	}
	t := newTree(f, cp.Size)
	defer func() { res.HashTiles = t.fetched }()

	proofs := func(ctx context.Context, from, _ uint64) ([][]byte, error) { return t.consistencyProof(ctx, from) }
	start, err := rangeStart(ctx, opts, res, proofs, old, cp)
	if err != nil {
		return res, err
	}
	res.From, res.To = start, cp.Size
	if err := readRange(ctx, opts, t, f, cp, old, start, res); err != nil {
		return res, err
	}
	res.State = &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: origin, URL: logURL}, Checkpoint: string(raw)}
	return res, nil
}

// rangeStart is where the entries to read begin: the stored size, once
// cp is proven consistent with old (an inconsistency is also a finding),
// else opts.StartIndex, else cp's size.
func rangeStart(ctx context.Context, opts Options, res *Result, proofs func(context.Context, uint64, uint64) ([][]byte, error), old, cp *flog.Checkpoint) (uint64, error) {
	switch {
	case old != nil:
		if err := consistentBy(ctx, proofs, old, cp); err != nil {
			if errors.Is(err, ErrInconsistent) {
				res.Alerts++
				emit(opts, Finding{Kind: KindInconsistent, Alert: true, LogIndex: int64(cp.Size), Log: res.Log, Detail: err.Error()})
			}
			return 0, err
		}
		return old.Size, nil
	case opts.StartIndex != nil:
		if *opts.StartIndex > cp.Size {
			return 0, fmt.Errorf("start index %d is beyond the log's size %d", *opts.StartIndex, cp.Size)
		}
		return *opts.StartIndex, nil
	}
	return cp.Size, nil
}

func emit(opts Options, fd Finding) {
	if opts.OnFinding != nil {
		opts.OnFinding(fd)
	}
}

// findLog returns the trusted root's logs whose checkpoint origin (the
// host name of the BaseURL, as sigstore-go verifies Rekor v2 checkpoints)
// is origin.
func findLog(tm root.TrustedMaterial, origin string) ([]*root.TransparencyLog, error) {
	if tm == nil {
		return nil, fmt.Errorf("%w: no trusted root", ErrNoLog)
	}
	// A Rekor v1 origin is the host name, " - " and the tree ID.
	host, _, _ := strings.Cut(origin, " - ")
	var out []*root.TransparencyLog
	for _, tl := range tm.RekorLogs() {
		u, err := url.Parse(tl.BaseURL)
		if err == nil && u.Hostname() == host && tl.PublicKey != nil {
			out = append(out, tl)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: origin %s", ErrNoLog, textsafe.RawQuote(origin))
	}
	return out, nil
}

// logIDs are the IDs (hex, as the trusted root keys them) of the trusted
// root's logs for origin, those findLog gives.
func logIDs(tm root.TrustedMaterial, origin string) []string {
	logs, err := findLog(tm, origin)
	if err != nil {
		return nil
	}
	var out []string
	for id, tl := range tm.RekorLogs() {
		if slices.Contains(logs, tl) {
			out = append(out, id)
		}
	}
	return out
}

// noteVerifiers are the signed-note verifiers of the log keys for origin,
// one per key (parseCheckpoint).
func noteVerifiers(tm root.TrustedMaterial, origin string) ([]note.Verifier, error) {
	logs, err := findLog(tm, origin)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var vs []note.Verifier
	for _, tl := range logs {
		if !tl.ValidityPeriodEnd.IsZero() && now.After(tl.ValidityPeriodEnd) && len(logs) > 1 {
			continue
		}
		h := tl.SignatureHashFunc
		if h == 0 {
			h = crypto.SHA256
		}
		sv, err := signature.LoadVerifier(tl.PublicKey, h)
		if err != nil {
			return nil, fmt.Errorf("%w: the log key for %s: %v", ErrNoLog, textsafe.RawQuote(origin), err)
		}
		nv, err := rekornote.NewNoteVerifier(origin, sv)
		if err != nil {
			return nil, fmt.Errorf("%w: the log key for %s: %v", ErrNoLog, textsafe.RawQuote(origin), err)
		}
		vs = append(vs, nv)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%w: every log key for %s has ended its validity", ErrNoLog, textsafe.RawQuote(origin))
	}
	return vs, nil
}

// parseCheckpoint parses the checkpoint raw of origin signed by one of the
// log keys vs: flog.ParseCheckpoint wants the signature of its one log
// verifier (by name and key hash), and each key of a log has its own key
// hash, so each is tried in turn. The error is the first key's.
func parseCheckpoint(raw []byte, origin string, vs []note.Verifier) (*flog.Checkpoint, error) {
	var first error
	for _, v := range vs {
		cp, _, _, err := flog.ParseCheckpoint(raw, origin, v)
		if err == nil {
			return cp, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// consistentBy proves cp consistent with old, with the RFC 6962
// consistency proof that proofs returns (built from cp's tiles, or fetched
// from a Rekor v1 log).
func consistentBy(ctx context.Context, proofs func(ctx context.Context, from, to uint64) ([][]byte, error), old, cp *flog.Checkpoint) error {
	switch {
	case cp.Size < old.Size:
		return checkErr("consistency", int64(cp.Size), ErrInconsistent, "the log shrank from %d to %d entries", old.Size, cp.Size)
	case cp.Size == old.Size:
		if !bytes.Equal(cp.Hash, old.Hash) {
			return checkErr("consistency", int64(cp.Size), ErrInconsistent, "two different roots for %d entries", cp.Size)
		}
		return nil
	case old.Size == 0:
		if empty := rfc6962.DefaultHasher.EmptyRoot(); !bytes.Equal(old.Hash, empty) {
			return checkErr("consistency", 0, ErrInconsistent, "the stored checkpoint of an empty tree has a root that is not the empty tree's")
		}
		return nil
	}
	hashes, err := proofs(ctx, old.Size, cp.Size)
	if err != nil {
		return err
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old.Size, cp.Size, hashes, old.Hash, cp.Hash); err != nil {
		return checkErr("consistency", int64(cp.Size), ErrInconsistent, "from %d to %d entries: %v", old.Size, cp.Size, err)
	}
	return nil
}

// readRange reads entries [start, cp.Size), one entry bundle at a time.
// Each entry's leaf hash is compared with the log's level-0 hash tile
// (which names the entry a bad tile holds) and added to a compact range
// that starts at the stored tree's proven left edge; at the end the range
// must hash to cp's root: one check for the whole range, after the one
// consistency proof. The findings are reported only then.
func readRange(ctx context.Context, opts Options, t *tree, f *fetcher, cp, old *flog.Checkpoint, start uint64, res *Result) error {
	if start == cp.Size {
		return nil
	}
	ids := compact.RangeNodes(0, start, nil)
	hashes, err := t.nodes(ctx, ids)
	if err != nil {
		return err
	}
	rng, err := rangeFactory.NewRange(0, start, hashes)
	if err != nil {
		return err
	}
	if old != nil && old.Size > 0 {
		r, err := rng.GetRootHash(nil)
		if err != nil {
			return err
		}
		if !bytes.Equal(r, old.Hash) {
			return checkErr("tile hash", int64(start), ErrTileHash, "the tiles before index %d do not hash to the stored checkpoint", start)
		}
	}
	var c *checker
	if !opts.hashOnly {
		c = newChecker(&opts, res)
	}
	var entries [][]byte
	leaf := make([]byte, 0, hashSize)
	for k := start / tileWidth; k*tileWidth < cp.Size; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := k * tileWidth
		w := partialWidth(0, k, cp.Size)
		data, path, full, err := f.getTile(ctx, "entries", k, w, maxEntryBundle)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return checkErr("fetch", int64(max(first, start)), ErrFetch, "%w", err)
		}
		res.Bundles++
		if entries, err = splitBundle(data, entries); err != nil {
			return checkErr("entry bundle", int64(first), ErrBundleFormat, "%s: %v", path, err)
		}
		if full && len(entries) == tileWidth {
			entries = entries[:w]
		}
		if uint64(len(entries)) != w {
			return checkErr("entry bundle", int64(first), ErrBundleFormat, "%s holds %d entries, the tree has %d there", path, len(entries), w)
		}
		tile, err := t.hashTile(ctx, 0, k)
		if err != nil {
			return err
		}
		from := max(first, start) - first
		for j, e := range entries[from:] {
			i := from + uint64(j)
			leaf = leafHash(leaf[:0], e)
			if !bytes.Equal(leaf, tile[i*hashSize:(i+1)*hashSize]) {
				return checkErr("tile hash", int64(first+i), ErrTileHash, "%s: entry %d does not hash to the log's hash tile %s", path, first+i, tilePath("0", k, w))
			}
			if err := rng.Append(tile[i*hashSize:(i+1)*hashSize], nil); err != nil {
				return err
			}
		}
		if c == nil {
			continue
		}
		for j, e := range entries[from:] {
			if err := c.check(int64(first+from+uint64(j)), e); err != nil {
				return err
			}
		}
	}
	root, err := rng.GetRootHash(nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(root, cp.Hash) {
		return checkErr("tile hash", int64(start), ErrTileHash, "the entries %d to %d do not hash to the checkpoint's root", start, cp.Size-1)
	}
	if c != nil {
		c.flush()
	}
	return nil
}

// leafHash appends the RFC 6962 leaf hash of e to dst.
func leafHash(dst, e []byte) []byte {
	h := sha256.New()
	h.Write([]byte{rfc6962.RFC6962LeafHashPrefix})
	h.Write(e)
	return h.Sum(dst)
}

// TrustedLogURLs returns the BaseURLs of the trusted root's transparency
// logs, sorted.
func TrustedLogURLs(tm root.TrustedMaterial) []string {
	var out []string
	if tm == nil {
		return nil
	}
	for _, tl := range tm.RekorLogs() {
		if !slices.Contains(out, tl.BaseURL) {
			out = append(out, tl.BaseURL)
		}
	}
	slices.Sort(out)
	return out
}
