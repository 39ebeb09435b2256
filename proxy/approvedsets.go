package proxy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"runtime"
	"strconv"
	"sync"
	"weak"

	"github.com/mcpsign/mcpsign/digest"
)

// ApprovedSets lets the relays of one process share what they approved
// (Options.Approved): relays whose approved snapshots are the same, byte
// for byte in every member but the time they were captured, hold one copy
// of it and of its index (an idle session of the HTTP front then holds no
// copy of the server's listing of its own, docs/PERFORMANCE.md "HTTP
// front"). A shared set is never changed: a relay that approves other
// definitions gets another set. It keeps no set alive by itself: a set no
// relay holds any more is forgotten. The zero value is ready; it is safe
// for concurrent use.
type ApprovedSets struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]weak.Pointer[approvedSet]
}

// intern returns the approved set of s: the one a relay holds already for
// the same snapshot, or a new one (always a new one when c is nil).
func (c *ApprovedSets) intern(s *digest.Snapshot) *approvedSet {
	if c == nil {
		return newApprovedSet(s)
	}
	key := snapshotKey(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.m[key].Value(); a != nil {
		return a
	}
	a := newApprovedSet(s)
	if c.m == nil {
		c.m = map[[sha256.Size]byte]weak.Pointer[approvedSet]{}
	}
	c.m[key] = weak.Make(a)
	runtime.AddCleanup(a, c.forget, key)
	return a
}

// forget drops the entry of key once its set is gone (and no newer set
// took its place).
func (c *ApprovedSets) forget(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok && wp.Value() == nil {
		delete(c.m, key)
	}
}

// len returns how many sets are remembered.
func (c *ApprovedSets) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// snapshotKey is the SHA-256 of every member of s but CapturedAt, each
// length-prefixed, raw values as their exact bytes: two snapshots with one
// key are the same to every reader of an approved set.
func snapshotKey(s *digest.Snapshot) [sha256.Size]byte {
	h := sha256.New()
	str := func(v string) { writeField(h, []byte(v)) }
	str(s.Kind)
	str(strconv.Itoa(s.SnapshotVersion))
	server, _ := json.Marshal(s.Server)
	writeField(h, server)
	str(s.ProtocolVersion)
	if s.Instructions == nil {
		writeField(h, nil)
	} else {
		str("=" + *s.Instructions)
	}
	for _, list := range [][]json.RawMessage{s.Tools, s.Prompts, s.ResourceTemplates, s.Resources} {
		if list == nil {
			str("nil")
		} else {
			str(strconv.Itoa(len(list)))
		}
		for _, raw := range list {
			writeField(h, raw)
		}
	}
	for _, raw := range [][]byte{s.ClientCapabilities, s.Advertised} {
		if raw == nil {
			str("nil")
		} else {
			writeField(h, append([]byte("="), raw...))
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// writeField writes b with its length before it.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
