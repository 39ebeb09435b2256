package policy

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/verify"
)

// ErrNothingWatchable: the chosen servers of a policy have no identity a
// transparency-log monitor can watch (docs/MONITOR.md).
var ErrNothingWatchable = errors.New("no identity a log monitor can watch")

// Watchlist is what a transparency-log monitor watches for some servers of
// a policy (docs/MONITOR.md, "Identities from a policy"): their sigstore
// identities, matched as verify matches them, and their keys.
type Watchlist struct {
	// Identities are the sigstore identities, as the Decider verifies
	// them.
	Identities []verify.Identity
	// KeyIDs are the key identities' key IDs ("sha256:HEX").
	KeyIDs []string
	// Skipped say which servers, or which of their identities, are not
	// watched and why; nothing else is left out.
	Skipped []Skipped
}

// Skipped is a server, or one identity of it, a monitor cannot watch.
type Skipped struct {
	// Server is the server's name in the policy.
	Server string
	// Identity describes the identity (Identity.String); empty: the
	// whole server.
	Identity string
	// Reason says why (not escaped).
	Reason string
}

// String describes s for a notice, raw: the edge printing it escapes it
// once (textsafe.Escape).
func (s Skipped) String() string {
	if s.Identity == "" {
		return fmt.Sprintf("policy server %s not watched: %s", textsafe.RawQuote(s.Server), s.Reason)
	}
	return fmt.Sprintf("policy server %s: %s not watched: %s", textsafe.RawQuote(s.Server), s.Identity, s.Reason)
}

// Watchlist returns the identities of the servers names (every server of
// the file when names is empty) that a log monitor watches. A certificate
// identity (an enterprise CA, with no log) and a server with no identity
// (unsigned, or derived from a registry entry) are Skipped; a name the
// file does not list is ErrNoServer, and nothing left to watch is
// ErrNothingWatchable. f must have its keys loaded (Read does it).
func (f *File) Watchlist(names []string) (*Watchlist, error) {
	if len(names) == 0 {
		names = f.Names
	}
	w := &Watchlist{}
	for _, name := range names {
		// The lock is not used: any state directory will do.
		r, err := f.resolveAny(name, ResolveOptions{StateDir: filepath.Dir(f.Path)})
		switch {
		case errors.Is(err, ErrNoIdentity):
			w.Skipped = append(w.Skipped, Skipped{Server: name, Reason: "it names no identity"})
			continue
		case err != nil:
			return nil, err
		}
		if err := w.add(r); err != nil {
			return nil, err
		}
	}
	if len(w.Identities) == 0 && len(w.KeyIDs) == 0 {
		return w, fmt.Errorf("policy %s: %w", f.Path, ErrNothingWatchable)
	}
	return w, nil
}

func (w *Watchlist) add(r *Resolved) error {
	var sigstore []int
	for i, id := range r.Identities {
		switch id.Method {
		case verify.MethodSigstore:
			sigstore = append(sigstore, i)
		case verify.MethodKey:
			if id.KeyID == "" {
				return fmt.Errorf("server %s: %s: the key is not loaded", textsafe.RawQuote(r.Name), id.Key)
			}
			w.KeyIDs = appendNew(w.KeyIDs, id.KeyID)
		default:
			w.Skipped = append(w.Skipped, Skipped{Server: r.Name, Identity: id.String(), Reason: "its certificates are in no transparency log"})
		}
	}
	for _, id := range verifierIdentities(r.Identities, sigstore) {
		w.Identities = appendNew(w.Identities, id)
	}
	switch {
	case len(r.Identities) == 0 && r.RepositorySigner != nil:
		w.Skipped = append(w.Skipped, Skipped{Server: r.Name, Reason: "its signer is derived from a registry entry's repository"})
	case len(r.Identities) == 0:
		w.Skipped = append(w.Skipped, Skipped{Server: r.Name, Reason: "it names no identity"})
	case len(sigstore) == 0 && !hasKey(r.Identities):
		w.Skipped = append(w.Skipped, Skipped{Server: r.Name, Reason: "none of its identities is in a transparency log"})
	}
	return nil
}

func hasKey(ids []Identity) bool {
	for _, id := range ids {
		if id.Method == verify.MethodKey {
			return true
		}
	}
	return false
}

func appendNew[T comparable](s []T, v T) []T {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
