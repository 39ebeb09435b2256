package mcpwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Defaults of [Limits].
const (
	// DefaultMaxPages is the most pages read of one kind (docs/DIGEST.md:
	// more than 1000 pages is an error).
	DefaultMaxPages = 1000
	// DefaultMaxListingBytes is the budget of one listing: the bytes of
	// every page of every kind together, as the snapshot-file cap.
	DefaultMaxListingBytes = 64 << 20
)

// Caller sends one request to a server and returns the raw bytes of its
// result; an error answer is an *RPCError. Params are the request's params
// as JSON.
type Caller interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Limits bound a listing.
type Limits struct {
	// MaxPages is the most pages of one kind. Zero means DefaultMaxPages.
	MaxPages int
	// MaxBytes is the most bytes of results, all pages of all kinds
	// together. Zero means DefaultMaxListingBytes.
	MaxBytes int64
	// Progress, when set, is told each page before it is asked for.
	Progress func(method string, page int)
	// Resources also lists the static resources (resources/list, every
	// page) into the snapshot's Resources, when the hello announced
	// resources (or its capabilities are unknown): what a policy that pins
	// them checks (docs/POLICY.md, "resources"). Without it Resources stays
	// nil: not listed.
	Resources bool
}

func (l Limits) withDefaults() Limits {
	if l.MaxPages <= 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxListingBytes
	}
	if l.Progress == nil {
		l.Progress = func(string, int) {}
	}
	return l
}

// ListAll lists every page of every kind the hello announced (every kind
// when its capabilities are unknown), and the static resources when
// lim.Resources is set, and returns them, with what the hello said, as a
// snapshot of the exact bytes received. A kind the server does
// not implement (method not found on its first page) counts as empty when
// its capabilities are unknown, and for resource templates, which servers
// that announce resources often lack.
func ListAll(ctx context.Context, c Caller, h *Hello, lim Limits) (*digest.Snapshot, error) {
	lim = lim.withDefaults()
	snap := &digest.Snapshot{
		Kind:            digest.SnapshotKind,
		SnapshotVersion: digest.SnapshotVersion,
		Server:          h.Server,
		ProtocolVersion: h.ProtocolVersion,
		Instructions:    h.Instructions,
		Advertised:      h.Advertised(),
	}
	budget := lim.MaxBytes
	for _, k := range digest.Kinds {
		defs := []json.RawMessage{}
		if h.Announced(k.Capability()) {
			var err error
			defs, err = listKind(ctx, c, h, k, &lim, &budget)
			if err != nil {
				return nil, err
			}
		}
		snap.SetDefinitions(k, defs)
	}
	if lim.Resources {
		defs := []json.RawMessage{}
		if h.Announced(digest.KindResource.Capability()) {
			var err error
			if defs, err = listKind(ctx, c, h, digest.KindResource, &lim, &budget); err != nil {
				return nil, err
			}
		}
		snap.Resources = defs
	}
	snap.CapturedAt = time.Now().UTC()
	return snap, nil
}

// listParams are the params of a list request.
type listParams struct {
	Meta   json.RawMessage `json:"_meta,omitempty"`
	Cursor *string         `json:"cursor,omitempty"`
}

// listKind reads every page of one kind, charging budget with each page.
func listKind(ctx context.Context, c Caller, h *Hello, k digest.Kind, lim *Limits, budget *int64) ([]json.RawMessage, error) {
	method := k.ListMethod()
	all := []json.RawMessage{}
	seen := map[string]bool{}
	var cursor *string
	for page := 1; ; page++ {
		lim.Progress(method, page)
		p := listParams{Cursor: cursor}
		if h.Modern {
			p.Meta = h.Meta
		}
		params, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		raw, err := c.Call(ctx, method, params)
		if err != nil {
			var re *RPCError
			if page == 1 && errors.As(err, &re) && re.Code == CodeMethodNotFound &&
				(h.Caps == nil || k == digest.KindResourceTemplate) {
				return all, nil
			}
			return nil, &ListError{Method: method, Page: page, Err: err}
		}
		if *budget -= int64(len(raw)); *budget < 0 {
			return nil, &ListError{Method: method, Page: page, Err: fmt.Errorf("%w: the pages of this listing hold more than %d bytes", ErrListingTooLarge, lim.MaxBytes)}
		}
		items, next, hasNext, err := digest.SplitList(k, raw)
		if err != nil {
			return nil, &ListError{Method: method, Page: page, Err: fmt.Errorf("%w: %w", ErrProtocol, err)}
		}
		all = append(all, items...)
		if !hasNext {
			return all, nil
		}
		if seen[next] || (cursor == nil && next == "") {
			return nil, &ListError{Method: method, Page: page, Err: fmt.Errorf("cursor %s repeated (%w)", textsafe.RawQuote(textsafe.Cut(next, 80)), ErrCursorLoop)}
		}
		if page >= lim.MaxPages {
			return nil, &ListError{Method: method, Page: page, Err: fmt.Errorf("%w: page %d still has a nextCursor (at most %d pages are read)", ErrTooManyPages, page, lim.MaxPages)}
		}
		seen[next] = true
		cursor = &next
	}
}
