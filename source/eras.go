package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrErasDiffer is in the chain of the error of a live listing when the
// server speaks both protocol eras (2026-07-28 server/discover and the
// initialize handshake) and serves different definitions or instructions in
// each: the error is an *EraError.
var ErrErasDiffer = errors.New("the server's two protocol eras serve different definitions or instructions")

// EraError says what a server that speaks both protocol eras serves
// differently in each (docs/DISCOVERY.md, "Both eras").
type EraError struct {
	// Modern and Legacy are the protocol versions of the two readings:
	// server/discover's and the initialize handshake's.
	Modern, Legacy string
	// Item names the first thing that differs: `tool "x"`, "instructions".
	Item string
	// How says how: "differs between them" ("differ …" for the instructions), "is served
	// only under server/discover", "is served only under initialize" ("are
	// sent only under …" for the instructions).
	How string
}

// Error names both eras and the item that differs.
func (e *EraError) Error() string {
	return fmt.Sprintf("%s: %s %s (server/discover, protocol %s; initialize, protocol %s); "+
		"a client of either era is shown what that era serves, so neither stands for the other",
		ErrErasDiffer.Error(), e.Item, e.How, textsafe.RawQuote(e.Modern), textsafe.RawQuote(e.Legacy))
}

// Is makes errors.Is(err, ErrErasDiffer) true.
func (e *EraError) Is(target error) bool { return target == ErrErasDiffer }

// loadEras lists a live server with load, and, when it answered
// server/discover (the 2026-07-28 era) and no version was forced, lists it
// again in a new session (a new process, a new HTTP session) through the
// initialize handshake alone, as a client of that era (go-sdk's, and the
// TypeScript SDK's by default) connects. It returns the first listing when
// both serve the same definitions (by Definition Digest, of every kind, and
// of the static resources when they are listed) and instructions, or when
// the server refuses initialize with an error answer (it speaks one era);
// otherwise a *StageError wrapping an *EraError, or the error of the second
// listing, which names the era. docs/DISCOVERY.md, "Both eras".
func loadEras(ctx context.Context, o *Options, load func(context.Context, *Options) (*digest.Snapshot, error)) (*digest.Snapshot, error) {
	snap, err := load(ctx, o)
	if err != nil || o.ProtocolVersion != "" || snap.ProtocolVersion < ProtocolModern {
		return snap, err
	}
	lo := *o
	lo.ProtocolVersion = ProtocolLegacy
	legacy, err := load(ctx, &lo)
	if err != nil {
		var se *StageError
		if !errors.As(err, &se) {
			return nil, err
		}
		var rpc *RPCError
		var rej *rejectedError
		if se.Stage == StageInitialize && (errors.As(err, &rpc) || errors.As(err, &rej)) {
			// It refuses the initialize handshake: no client is shown
			// anything there.
			return snap, nil
		}
		return nil, &StageError{Stage: se.Stage, Page: se.Page, Err: fmt.Errorf(
			"reading the initialize era of a server that also speaks %s (both are read: docs/DISCOVERY.md, \"Both eras\"): %w", ProtocolModern, se.Err)}
	}
	if item, how := eraDifference(snap, legacy); item != "" {
		return nil, &StageError{Stage: StageInitialize, Err: &EraError{Modern: snap.ProtocolVersion, Legacy: legacy.ProtocolVersion, Item: item, How: how}}
	}
	return snap, nil
}

// eraDifference names the first thing two listings of one server differ
// in (instructions, then each kind by key, then the static resources when
// both listed them), and how; "" when they serve the same.
func eraDifference(modern, legacy *digest.Snapshot) (item, how string) {
	if !equalText(modern.Instructions, legacy.Instructions) {
		switch how := presence(modern.Instructions != nil, legacy.Instructions != nil); how {
		case "differs between them":
			return "the instructions", "differ between them"
		default:
			return "the instructions", strings.Replace(how, "is served", "are sent", 1)
		}
	}
	a, b := digest.Compute(modern), digest.Compute(legacy)
	for _, k := range digest.Kinds {
		if item, how := kindDifference(k, a, b); item != "" {
			return item, how
		}
	}
	if modern.Resources != nil && legacy.Resources != nil {
		return kindDifference(digest.KindResource, digest.ComputeResources(modern), digest.ComputeResources(legacy))
	}
	return "", ""
}

// kindDifference compares the definitions of kind k of two digests: by key,
// each key's digests as a multiset (a definition without a digest by its
// bytes).
func kindDifference(k digest.Kind, a, b *digest.Result) (item, how string) {
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
			return string(k) + " " + textsafe.RawQuote(key), presence(inA, inB)
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

func presence(inModern, inLegacy bool) string {
	switch {
	case inModern && !inLegacy:
		return "is served only under server/discover"
	case !inModern && inLegacy:
		return "is served only under initialize"
	}
	return "differs between them"
}

func equalText(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
