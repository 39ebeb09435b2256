package monitor

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/go-openapi/runtime"
	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	rekorclient "github.com/sigstore/rekor/pkg/generated/client"
	"github.com/sigstore/rekor/pkg/generated/client/entries"
	"github.com/sigstore/rekor/pkg/generated/client/tlog"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/util"
	rekorverify "github.com/sigstore/rekor/pkg/verify"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Bounds on what a Rekor v1 log may send.
const (
	// maxV1Response bounds one API response (ten entries of at most
	// maxEntryV1, base64, with their proofs).
	maxV1Response = 16 << 20
	// v1Batch is how many entries one retrieve request asks for (the
	// API's limit).
	v1Batch = 10
)

// v1Log reads a Rekor v1 log through rekor's generated client
// (docs/MONITOR.md "Rekor v1").
type v1Log struct {
	c         *rekorclient.Rekor
	verifiers []signature.Verifier
}

func newV1Log(base *url.URL, hc *http.Client) *v1Log {
	bounded := *hc
	inner := hc.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	bounded.Transport = boundedTransport{inner, maxV1Response}
	rt := httptransport.NewWithClient(base.Host, path.Join("/", base.Path, rekorclient.DefaultBasePath), []string{base.Scheme}, &bounded)
	rt.Consumers["application/json"] = runtime.JSONConsumer()
	formats := strfmt.NewFormats()
	formats.Add("signedCheckpoint", &util.SignedNote{}, util.SignedCheckpointValidator)
	return &v1Log{c: rekorclient.New(rt, formats)}
}

// boundedTransport fails a response body longer than limit.
type boundedTransport struct {
	rt    http.RoundTripper
	limit int64
}

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: b.limit}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the log's response is longer than %d bytes", maxV1Response)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// v1Verifiers are the keys of the trusted root's logs for origin.
func v1Verifiers(tm root.TrustedMaterial, origin string) ([]signature.Verifier, error) {
	logs, err := findLog(tm, origin)
	if err != nil {
		return nil, err
	}
	var vs []signature.Verifier
	for _, tl := range logs {
		h := tl.SignatureHashFunc
		if h == 0 {
			h = crypto.SHA256
		}
		v, err := signature.LoadVerifier(tl.PublicKey, h)
		if err != nil {
			return nil, fmt.Errorf("%w: the log key for %s: %v", ErrNoLog, textsafe.RawQuote(origin), err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// checkpoint parses a signed tree head and checks its signature and
// origin.
func (l *v1Log) checkpoint(text, origin string) (*util.SignedCheckpoint, error) {
	var sth util.SignedCheckpoint
	if err := sth.UnmarshalText([]byte(text)); err != nil {
		return nil, err
	}
	if sth.Origin != origin {
		return nil, fmt.Errorf("the checkpoint's origin is %s, want %s", textsafe.RawQuote(sth.Origin), textsafe.RawQuote(origin))
	}
	for _, v := range l.verifiers {
		if sth.Verify(v) {
			return &sth, nil
		}
	}
	return nil, errors.New("the checkpoint is not signed by the log key of the trusted root")
}

func asCheckpoint(sth *util.SignedCheckpoint) *flog.Checkpoint {
	return &flog.Checkpoint{Origin: sth.Origin, Size: sth.Size, Hash: sth.Hash}
}

// runV1 is Run on a Rekor v1 log: its signed tree head from the log info,
// one consistency proof from the stored one, then the entries by index,
// ten a request, each proven in the tree by its inclusion proof.
func runV1(ctx context.Context, opts Options, prev *State, origin string, base *url.URL, client *http.Client, res *Result) (*Result, error) {
	l := newV1Log(base, client)
	info, err := l.c.Tlog.GetLogInfo(tlog.NewGetLogInfoParamsWithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Neither a tlog-tiles checkpoint nor the v1 API: say so, not
		// what the v1 client makes of a 404 page.
		f := &fetcher{base: base, client: client}
		if _, perr := f.get(ctx, "api/v1/log", 1<<20); errors.Is(perr, errNotFound) {
			return nil, checkErr("fetch", -1, ErrNotLog, "%s serves neither checkpoint (a Rekor v2 log read as tlog-tiles) nor api/v1/log (a Rekor v1 log): HTTP 404 for both", textsafe.RawQuote(base.String()))
		}
		return nil, checkErr("fetch", -1, ErrFetch, "the log info: %v", err)
	}
	p := info.GetPayload()
	if p == nil || p.SignedTreeHead == nil || p.TreeID == nil {
		return nil, checkErr("checkpoint", -1, ErrCheckpoint, "the log info has no signed tree head")
	}
	var sth util.SignedCheckpoint
	if err := sth.UnmarshalText([]byte(*p.SignedTreeHead)); err != nil {
		return nil, checkErr("checkpoint", -1, ErrCheckpoint, "%v", err)
	}
	if origin == "" {
		origin = sth.Origin
	}
	res.Log = origin
	if l.verifiers, err = v1Verifiers(opts.TrustedMaterial, origin); err != nil {
		return nil, err
	}
	cpS, err := l.checkpoint(*p.SignedTreeHead, origin)
	if err != nil {
		return nil, checkErr("checkpoint", -1, ErrCheckpoint, "%v", err)
	}
	cp := asCheckpoint(cpS)
	var old *flog.Checkpoint
	if prev != nil {
		o, err := l.checkpoint(prev.Checkpoint, origin)
		if err != nil {
			return nil, fmt.Errorf("%w: the stored checkpoint: %v", ErrState, err)
		}
		old = asCheckpoint(o)
	}
	// Entries are addressed by their index across the log's shards.
	var offset int64
	for _, s := range p.InactiveShards {
		if s != nil && s.TreeSize != nil {
			offset += *s.TreeSize
		}
	}
	proofs := func(ctx context.Context, from, to uint64) ([][]byte, error) {
		return l.consistencyProof(ctx, from, to, *p.TreeID)
	}
	start, err := rangeStart(ctx, opts, res, proofs, old, cp)
	if err != nil {
		return res, err
	}
	res.From, res.To = start, cp.Size
	if err := l.readRange(ctx, opts, res, cp, start, offset, proofs); err != nil {
		return res, err
	}
	res.State = &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: origin, URL: res.URL}, Checkpoint: *p.SignedTreeHead}
	return res, nil
}

// consistencyProof fetches the proof between two tree sizes.
func (l *v1Log) consistencyProof(ctx context.Context, from, to uint64, treeID string) ([][]byte, error) {
	first := int64(from)
	params := tlog.NewGetLogProofParamsWithContext(ctx)
	params.FirstSize, params.LastSize, params.TreeID = &first, int64(to), &treeID
	resp, err := l.c.Tlog.GetLogProof(params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, checkErr("fetch", int64(to), ErrFetch, "the consistency proof from %d to %d: %v", from, to, err)
	}
	var hashes [][]byte
	for _, h := range resp.GetPayload().Hashes {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != hashSize {
			return nil, checkErr("consistency", int64(to), ErrInconsistent, "a proof hash %s is not a SHA-256 hash", truncate([]byte(h)))
		}
		hashes = append(hashes, b)
	}
	return hashes, nil
}

// readRange reads entries [start, cp.Size), proving each included in cp's
// tree: its inclusion proof leads to a root that is cp's, or that of a
// larger tree the log proves consistent with cp (once per size, when the
// log grew during the run).
func (l *v1Log) readRange(ctx context.Context, opts Options, res *Result, cp *flog.Checkpoint, start uint64, offset int64,
	proofs func(context.Context, uint64, uint64) ([][]byte, error)) error {
	c := newChecker(&opts, res)
	larger := map[uint64][]byte{} // proven roots of larger trees
	for first := start; first < cp.Size; first += v1Batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(uint64(v1Batch), cp.Size-first)
		q := &models.SearchLogQuery{}
		for i := range n {
			idx := offset + int64(first+i)
			q.LogIndexes = append(q.LogIndexes, &idx)
		}
		params := entries.NewSearchLogQueryParamsWithContext(ctx)
		params.Entry = q
		resp, err := l.c.Entries.SearchLogQuery(params)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return checkErr("fetch", offset+int64(first), ErrFetch, "entries %d to %d: %v", offset+int64(first), offset+int64(first+n-1), err)
		}
		res.Bundles++
		got := map[int64]models.LogEntryAnon{}
		for _, le := range resp.GetPayload() {
			for _, e := range le {
				if e.LogIndex != nil {
					got[*e.LogIndex] = e
				}
			}
		}
		for i := range n {
			index := offset + int64(first+i)
			e, ok := got[index]
			if !ok {
				return checkErr("fetch", index, ErrFetch, "the log did not return entry %d", index)
			}
			body, err := l.proveIncluded(ctx, &e, first+i, cp, larger, proofs)
			if err != nil {
				return err
			}
			t, err := l.integratedTime(ctx, &e)
			if err != nil {
				return err
			}
			re, perr := parseEntryV1(body)
			if perr == nil {
				re.integrated = &t
			}
			if err := c.checkEntry(index, re, perr); err != nil {
				return err
			}
		}
	}
	c.flush()
	return nil
}

// integratedTime is e's integrated time, once its signed entry timestamp
// verifies with the log key.
func (l *v1Log) integratedTime(ctx context.Context, e *models.LogEntryAnon) (time.Time, error) {
	if e.IntegratedTime == nil || e.LogID == nil || e.LogIndex == nil || e.Verification == nil || e.Verification.SignedEntryTimestamp == nil {
		return time.Time{}, checkErr("entry timestamp", int64(-1), ErrInclusion, "the entry has no signed entry timestamp")
	}
	var err error
	for _, v := range l.verifiers {
		if err = rekorverify.VerifySignedEntryTimestamp(ctx, e, v); err == nil {
			return time.Unix(*e.IntegratedTime, 0).UTC(), nil
		}
	}
	return time.Time{}, checkErr("entry timestamp", *e.LogIndex, ErrInclusion, "the signed entry timestamp does not verify with the log key: %v", err)
}

// proveIncluded checks that e is the entry at tree index i of cp's tree
// and returns its body.
func (l *v1Log) proveIncluded(ctx context.Context, e *models.LogEntryAnon, i uint64, cp *flog.Checkpoint, larger map[uint64][]byte,
	proofs func(context.Context, uint64, uint64) ([][]byte, error)) ([]byte, error) {
	index := int64(-1)
	if e.LogIndex != nil {
		index = *e.LogIndex
	}
	fail := func(format string, args ...any) ([]byte, error) {
		return nil, checkErr("inclusion", index, ErrInclusion, format, args...)
	}
	s, _ := e.Body.(string)
	body, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fail("the entry body is not base64: %v", err)
	}
	ip := (*models.InclusionProof)(nil)
	if e.Verification != nil {
		ip = e.Verification.InclusionProof
	}
	if ip == nil || ip.LogIndex == nil || ip.TreeSize == nil || ip.RootHash == nil || ip.Checkpoint == nil {
		return fail("the entry has no inclusion proof")
	}
	if uint64(*ip.LogIndex) != i {
		return fail("the inclusion proof is for tree index %d, not %d", *ip.LogIndex, i)
	}
	if err := rekorverify.VerifyInclusion(ctx, e); err != nil {
		return fail("the entry is not in the tree its inclusion proof names: %v", err)
	}
	root, err := hex.DecodeString(*ip.RootHash)
	if err != nil {
		return fail("the inclusion proof's root: %v", err)
	}
	size := uint64(*ip.TreeSize)
	switch {
	case size == cp.Size:
		if !bytes.Equal(root, cp.Hash) {
			return fail("the inclusion proof's root for %d entries is not the checkpoint's", size)
		}
	case size < cp.Size:
		return fail("the inclusion proof is for %d entries, fewer than the checkpoint's %d", size, cp.Size)
	default:
		if r, ok := larger[size]; ok {
			if !bytes.Equal(r, root) {
				return fail("two roots for %d entries", size)
			}
			break
		}
		// A larger tree: its root must be signed, and consistent with cp.
		sth, err := l.checkpoint(*ip.Checkpoint, cp.Origin)
		if err != nil || sth.Size != size || !bytes.Equal(sth.Hash, root) {
			return fail("the inclusion proof's checkpoint does not sign its root: %v", err)
		}
		hashes, err := proofs(ctx, cp.Size, size)
		if err != nil {
			return nil, err
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, cp.Size, size, hashes, cp.Hash, root); err != nil {
			return nil, checkErr("consistency", int64(size), ErrInconsistent, "from %d to %d entries: %v", cp.Size, size, err)
		}
		larger[size] = root
	}
	return body, nil
}
