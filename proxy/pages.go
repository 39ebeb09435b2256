package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/yosida95/uritemplate/v3"

	"github.com/mcpsign/mcpsign/digest"
)

// approvedSet is the snapshot the policy last approved as a whole, indexed
// so that a list result made of the very bytes approved passes without
// asking the policy again.
type approvedSet struct {
	snap *digest.Snapshot
	// byRaw maps the SHA-256 of each approved definition's exact bytes to
	// its index, per kind (the digest, not a copy of the bytes: a relay
	// keeps its approved set for as long as its session, and the snapshot
	// holds the bytes already); a definition repeated in the approved
	// listing is left out (the policy refuses duplicates, so this does not
	// happen in practice).
	byRaw map[digest.Kind]map[[sha256.Size]byte]int
	// keys are the approved definitions' keys by index, per kind.
	keys map[digest.Kind][]string
	// approvedKeys are the keys of the approved definitions, per kind
	// (static resources too, when the snapshot listed them).
	approvedKeys map[digest.Kind]map[string]bool
	// templates are the approved resource templates, parsed on the first
	// resources/read the mode checks (resources.go, once: a set may be
	// shared by relays, ApprovedSets).
	templates     []*uritemplate.Template
	templatesOnce sync.Once
}

// digested returns the digested definitions of s: the signed kinds', and
// its static resources' when it listed them.
func digested(s *digest.Snapshot) []digest.Definition {
	defs := digest.Compute(s).Definitions
	if rr := digest.ComputeResources(s); rr != nil {
		defs = append(defs, rr.Definitions...)
	}
	return defs
}

// hasKey reports whether a definition of kind k with key is approved.
func (a *approvedSet) hasKey(k digest.Kind, key string) bool {
	return a.approvedKeys[k][key]
}

func newApprovedSet(s *digest.Snapshot) *approvedSet {
	a := &approvedSet{snap: s, byRaw: map[digest.Kind]map[[sha256.Size]byte]int{}, keys: map[digest.Kind][]string{}, approvedKeys: map[digest.Kind]map[string]bool{}}
	for _, k := range kindsWithResources {
		defs := s.Definitions(k)
		if len(defs) == 0 {
			continue // nothing to index: a nil map and slice read as empty
		}
		m := make(map[[sha256.Size]byte]int, len(defs))
		var dup map[[sha256.Size]byte]bool
		for i, raw := range defs {
			h := sha256.Sum256(raw)
			if _, ok := m[h]; ok {
				if dup == nil {
					dup = map[[sha256.Size]byte]bool{}
				}
				dup[h] = true
			}
			m[h] = i
		}
		for d := range dup {
			delete(m, d)
		}
		a.byRaw[k] = m
		a.keys[k] = make([]string, len(defs))
	}
	for _, d := range digested(s) {
		a.keys[d.Kind][d.Index] = d.Key
		if a.approvedKeys[d.Kind] == nil {
			a.approvedKeys[d.Kind] = map[string]bool{}
		}
		a.approvedKeys[d.Kind][d.Key] = true
	}
	return a
}

// covers reports whether items are all approved definitions of kind k,
// byte for byte, none twice, and, for a complete listing, all of them.
func (a *approvedSet) covers(k digest.Kind, items []json.RawMessage, complete bool) bool {
	m := a.byRaw[k]
	var used []bool
	defs := a.snap.Definitions(k)
	for _, it := range items {
		i, ok := m[sha256.Sum256(it)]
		if !ok || !bytes.Equal(defs[i], it) {
			return false
		}
		if used == nil {
			used = make([]bool, len(defs))
		}
		if used[i] {
			return false
		}
		used[i] = true
	}
	return !complete || len(items) == len(defs)
}

// with returns the approved snapshot with the definitions of the page's kind
// replaced by what the client received. For an incomplete listing, the
// approved definitions of keys the client has not received yet are kept:
// their absence cannot be judged until the last page.
func (a *approvedSet) with(pc *pageCheck) *digest.Snapshot {
	s := *a.snap
	defs := make([]json.RawMessage, 0, len(pc.items))
	defs = append(defs, pc.items...)
	if !pc.complete {
		seen := map[string]bool{}
		tmp := &digest.Snapshot{}
		tmp.SetDefinitions(pc.kind, pc.items)
		for _, d := range digested(tmp) {
			seen[d.Key] = true
		}
		for i, raw := range a.snap.Definitions(pc.kind) {
			if key := a.keys[pc.kind][i]; key == "" || !seen[key] {
				defs = append(defs, raw)
			}
		}
	}
	s.SetDefinitions(pc.kind, defs)
	return &s
}
