package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrErasDiffer is in the chain of the error of a live listing when the
// server serves different definitions or instructions under two protocol
// versions a client may speak: the two eras (2026-07-28 server/discover
// and the initialize handshake), or two versions of the initialize
// handshake (2025-11-25 and 2025-06-18, say). The error is an *EraError.
var ErrErasDiffer = errors.New("the server serves different definitions or instructions under different protocol versions")

// Face is one listing of a server: the handshake it was read through and
// the protocol version it was read under.
type Face struct {
	// Handshake is mcpwire.MethodDiscover ("server/discover") or
	// mcpwire.MethodInitialize ("initialize").
	Handshake string
	// Version is the protocol version of the listing: the one the server
	// chose.
	Version string
	// Asked is the version the initialize request asked for, when the
	// server chose another; "" otherwise.
	Asked string
}

// String names the face: `server/discover, protocol "2026-07-28"`,
// `initialize, protocol "2025-06-18"`, or `initialize asking for
// "2024-11-05", protocol "2025-11-25"`.
func (f Face) String() string {
	if f.Asked != "" {
		return fmt.Sprintf("%s asking for %s, protocol %s", f.Handshake, textsafe.RawQuote(f.Asked), textsafe.RawQuote(f.Version))
	}
	return f.Handshake + ", protocol " + textsafe.RawQuote(f.Version)
}

// short is how a difference names the face: the handshake alone when the
// other face was read through the other one.
func (f Face) short(other Face) string {
	if f.Handshake != other.Handshake {
		return f.Handshake
	}
	return f.String()
}

// faceOf is the face of a listing that asked for asked ("" when
// server/discover was asked first).
func faceOf(snap *digest.Snapshot, asked string) Face {
	if snap.ProtocolVersion >= ProtocolModern {
		return Face{Handshake: mcpwire.MethodDiscover, Version: snap.ProtocolVersion}
	}
	f := Face{Handshake: mcpwire.MethodInitialize, Version: snap.ProtocolVersion}
	if asked != "" && asked != snap.ProtocolVersion {
		f.Asked = asked
	}
	return f
}

// EraError says what a server serves differently under two protocol
// versions (docs/DISCOVERY.md, "Both eras").
type EraError struct {
	// First is the face of the first listing (server/discover's, or the
	// initialize handshake's when the server speaks that era only), Other
	// the face that differs from it (an initialize handshake's).
	First, Other Face
	// Item names the first thing that differs: `tool "x"`, "the instructions".
	Item string
	// How says how: "differs between them" ("differ …" for the
	// instructions), or "is served only under " and the face that serves
	// it ("are sent only under …" for the instructions).
	How string
}

// Error names both faces and the item that differs.
func (e *EraError) Error() string {
	return fmt.Sprintf("%s: %s %s (%s; %s); "+
		"a client of either version is shown what that version serves, so neither stands for the other",
		ErrErasDiffer.Error(), e.Item, e.How, e.First, e.Other)
}

// Is makes errors.Is(err, ErrErasDiffer) true.
func (e *EraError) Is(target error) bool { return target == ErrErasDiffer }

// errFaceStopped is the cause that stops the listings of older versions
// once a newer one has decided the outcome.
var errFaceStopped = errors.New("stopped: another listing of the server failed or differed")

// loadEras lists a live server with load, and, unless a version was
// forced, lists it again under every version of the initialize handshake
// a client may ask for (mcpwire.LegacyVersions; the one the first listing
// already asked for is not asked again), each in a session of its own (a
// new process, a new HTTP session), all at once. It returns the first
// listing when every other serves the same definitions (by Definition
// Digest, of every kind, and of the static resources when they are listed)
// and instructions, a version the server refuses with an error answer
// counting as one it does not speak; otherwise a *StageError wrapping an
// *EraError (the first version, newest first, that differs), or the error
// of another listing, which names its version. docs/DISCOVERY.md, "Both
// eras".
func loadEras(ctx context.Context, o *Options, load func(context.Context, *Options) (*digest.Snapshot, error)) (*digest.Snapshot, error) {
	snap, err := load(ctx, o)
	if err != nil || o.ProtocolVersion != "" {
		return snap, err
	}
	first := faceOf(snap, ProtocolLegacy)
	var asks []string
	for _, v := range mcpwire.LegacyVersions() {
		if first.Handshake == mcpwire.MethodInitialize && v == ProtocolLegacy {
			continue // what the first listing asked for
		}
		asks = append(asks, v)
	}
	type result struct {
		face      Face
		err       error
		item, how string
	}
	results := make([]result, len(asks))
	// A listing that differs or fails stops those of older versions, whose
	// outcome no longer matters: what is reported is the first of the
	// versions, newest first, that differs or fails, whichever ends first.
	ctxs := make([]context.Context, len(asks))
	stops := make([]context.CancelCauseFunc, len(asks))
	for i := range asks {
		ctxs[i], stops[i] = context.WithCancelCause(ctx)
		defer stops[i](nil)
	}
	// The listings run at once: the hooks they share are called one at a
	// time.
	var mu sync.Mutex
	progress := func(stage string, page int) {
		mu.Lock()
		defer mu.Unlock()
		o.Progress(stage, page)
	}
	var stderr io.Writer
	if o.Stderr != nil {
		stderr = &lockedWriter{mu: &mu, w: o.Stderr}
	}
	var wg sync.WaitGroup
	for i, v := range asks {
		wg.Go(func() {
			lo := *o
			lo.ProtocolVersion, lo.Progress, lo.Stderr = v, progress, stderr
			s, err := load(ctxs[i], &lo)
			r := result{err: err}
			if err == nil {
				r.face = faceOf(s, v)
				r.item, r.how = faceDifference(snap, s, first, r.face)
			}
			if r.item != "" || err != nil && !refused(err) {
				for _, stop := range stops[i+1:] {
					stop(errFaceStopped)
				}
			}
			results[i] = r
		})
	}
	wg.Wait()
	for i, v := range asks {
		r := results[i]
		if r.err != nil {
			if refused(r.err) || errors.Is(r.err, errFaceStopped) && ctx.Err() == nil {
				continue // this version shows no client anything; or stopped
			}
			var se *StageError
			if !errors.As(r.err, &se) {
				return nil, r.err
			}
			return nil, &StageError{Stage: se.Stage, Page: se.Page, Err: fmt.Errorf(
				"reading the server again through initialize, asking for protocol %s, after reading it under %s (every protocol version a client may ask for is read: docs/DISCOVERY.md, \"Both eras\"): %w",
				textsafe.RawQuote(v), first, se.Err)}
		}
		if r.item != "" {
			return nil, &StageError{Stage: StageInitialize, Err: &EraError{First: first, Other: r.face, Item: r.item, How: r.how}}
		}
	}
	return snap, nil
}

// refused reports whether err is the server's refusal of the initialize
// handshake (an error answer, or over HTTP a 4xx status): a version it does
// not speak, under which no client is shown anything.
func refused(err error) bool {
	var se *StageError
	if !errors.As(err, &se) || se.Stage != StageInitialize {
		return false
	}
	var rpc *RPCError
	var rej *rejectedError
	return errors.As(err, &rpc) || errors.As(err, &rej)
}

// lockedWriter serializes the writes of listings that run at once.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// faceDifference names the first thing two listings of one server, read
// under faces fa and fb, differ in (instructions, then each kind by key,
// then the static resources when both listed them), and how; "" when they
// serve the same. It is the one comparison of two faces of a server.
func faceDifference(a, b *digest.Snapshot, fa, fb Face) (item, how string) {
	only := func(inA, inB bool) string {
		switch {
		case inA && !inB:
			return "is served only under " + fa.short(fb)
		case !inA && inB:
			return "is served only under " + fb.short(fa)
		}
		return "differs between them"
	}
	if !equalText(a.Instructions, b.Instructions) {
		switch how := only(a.Instructions != nil, b.Instructions != nil); how {
		case "differs between them":
			return "the instructions", "differ between them"
		default:
			return "the instructions", strings.Replace(how, "is served", "are sent", 1)
		}
	}
	ra, rb := digest.Compute(a), digest.Compute(b)
	for _, k := range digest.Kinds {
		if item, how := kindDifference(k, ra, rb, only); item != "" {
			return item, how
		}
	}
	if a.Resources != nil && b.Resources != nil {
		return kindDifference(digest.KindResource, digest.ComputeResources(a), digest.ComputeResources(b), only)
	}
	return "", ""
}

// kindDifference compares the definitions of kind k of two digests: by key,
// each key's digests as a multiset (a definition without a digest by its
// bytes); only says how a key differs by where it is present.
func kindDifference(k digest.Kind, a, b *digest.Result, only func(inA, inB bool) string) (item, how string) {
	am, bm := byKey(k, a), byKey(k, b)
	keys := make([]string, 0, len(am)+len(bm))
	for key := range am {
		keys = append(keys, key)
	}
	for key := range bm {
		if _, ok := am[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		x, inA := am[key]
		y, inB := bm[key]
		if !slices.Equal(x, y) {
			return string(k) + " " + textsafe.RawQuote(key), only(inA, inB)
		}
	}
	return "", ""
}

func byKey(k digest.Kind, r *digest.Result) map[string][]string {
	m := map[string][]string{}
	for _, d := range r.Definitions {
		if d.Kind != k {
			continue
		}
		v := d.Digest
		if d.Err != nil {
			v = "invalid:" + string(d.Raw)
		}
		m[d.Key] = append(m[d.Key], v)
	}
	for _, v := range m {
		slices.Sort(v)
	}
	return m
}

func equalText(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
