package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

// TestConsistencyProofs: the monitor proves each new checkpoint consistent
// with the stored one, with no stack: a Rekor v2 tiles log in memory
// (transparency-dev/merkle's reference tree) whose key the test's trusted
// root trusts, and which then serves a fork of itself under a checkpoint
// signed with that very key. A fork, another root for the stored size and
// a log that shrank are inconsistent-log alerts; no state is written.
func TestConsistencyProofs(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "log.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	a, b := k.signStatement(t, "a").body, k.signStatement(t, "b").body
	// The honest tree: 300 entries (a full tile, a partial one, a level-1
	// tile). The fork: the same 300 but entry 99 (before the stored size
	// of 100).
	const size = 300
	fork := testonly.New(rfc6962.DefaultHasher)
	var forkEntries [][]byte
	for i := range size {
		l.add(a)
		e := a
		if i == 99 {
			e = b
		}
		forkEntries = append(forkEntries, e)
		fork.AppendData(e)
	}
	stored := func(tr *testonly.Tree, n uint64) *State {
		return &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: l.origin, URL: url}, Checkpoint: l.signCheckpoint(t, n, tr.HashAt(n))}
	}
	serveFork := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveTiles(t, w, r, l, forkEntries, fork, "") })
	honest := testonly.New(rfc6962.DefaultHasher)
	for range size {
		honest.AppendData(a)
	}
	// The honest log cut back to 200 entries, its checkpoint signed.
	shrunk := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkpoint" {
			w.Write([]byte(l.signCheckpoint(t, 200, honest.HashAt(200))))
			return
		}
		l.serveLog(t, w, r)
	})
	for _, c := range []struct {
		name  string
		serve http.Handler // nil: the honest log
		prev  *State
		// inconsistent: an inconsistent-log alert and ErrInconsistent.
		inconsistent bool
		detail       string
	}{
		{"honest growth from 100 to 300", nil, stored(honest, 100), false, ""},
		{"honest, same size", nil, stored(honest, size), false, ""},
		{"a fork of an entry before the stored size", serveFork, stored(honest, 100), true, "from 100 to 300 entries"},
		{"the stored size, another root", serveFork, stored(honest, size), true, "two different roots for 300 entries"},
		{"the log shrank", shrunk, stored(honest, size), true, "shrank from 300 to 200"},
		{"a fork before the stored size, seen from the fork", nil, stored(fork, 100), true, "from 100 to 300 entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l.mu.Lock()
			l.serve = c.serve
			l.mu.Unlock()
			var fs []Finding
			opts := Options{LogURL: url, TrustedMaterial: fakeRoot(t, l), OnFinding: func(f Finding) { fs = append(fs, f) }}
			statePath := filepath.Join(t.TempDir(), "state.json")
			if err := WriteState(statePath, c.prev); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(statePath)
			alerts, err := Watch(context.Background(), opts, c.prev, WatchOptions{StatePath: statePath})
			after, _ := os.ReadFile(statePath)
			if !c.inconsistent {
				if err != nil || alerts != 0 || len(fs) != 0 {
					t.Fatalf("%v, %d alerts %+v", err, alerts, fs)
				}
				return
			}
			if !errors.Is(err, ErrInconsistent) || alerts != 1 || len(fs) != 1 || fs[0].Kind != KindInconsistent || !fs[0].Alert ||
				!strings.Contains(fs[0].Detail, c.detail) {
				t.Fatalf("err %v, %d alerts, findings %+v; want an inconsistent-log alert saying %q", err, alerts, fs, c.detail)
			}
			if !bytes.Equal(before, after) {
				t.Error("the state was written after an inconsistent log")
			}
		})
	}
}

// TestRunStateOrigin: a first run (no state) starts at the log's
// checkpoint and keeps it; a state is for one log: an origin given that is
// not the state's is ErrState, none given is the state's; a checkpoint of
// another origin than the one given is ErrCheckpoint.
func TestRunStateOrigin(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "origin.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	l.add(k.signStatement(t, "a").body)
	other := l.state(t, url)
	other.Log.Origin = "other.monitor.example"
	for _, c := range []struct {
		name   string
		origin string
		prev   *State
		err    error
	}{
		{"first run", "", nil, nil},
		{"first run, the origin given", l.origin, nil, nil},
		{"the state's origin", "", l.state(t, url), nil},
		{"the state's origin, given", l.origin, l.state(t, url), nil},
		{"another log's state", l.origin, other, ErrState},
		{"the checkpoint of another origin", "other.monitor.example", nil, ErrCheckpoint},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), Options{LogURL: url, Origin: c.origin, TrustedMaterial: fakeRoot(t, l)}, c.prev)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error %v, want %v", err, c.err)
				}
				// A check that concerns no entry names none (-1).
				if ce := (*CheckError)(nil); errors.As(err, &ce) && ce.Index != -1 {
					t.Errorf("the check names log index %d: %v", ce.Index, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.State == nil || res.State.Log.Origin != l.origin || res.To != 1 {
				t.Fatalf("result %+v, state %+v", res, res.State)
			}
		})
	}
}

// TestRunLogURL: the log is read over http or https, nothing else.
func TestRunLogURL(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "url.monitor.example")
	l.add(newKeyPair(t).signStatement(t, "a").body)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serveLog(t, w, r) }))
	t.Cleanup(tlsSrv.Close)
	for _, c := range []struct {
		name, url string
		ok        bool
	}{
		{"https", tlsSrv.URL, true},
		{"http", l.start(t), true},
		{"another scheme", "ftp://" + strings.TrimPrefix(tlsSrv.URL, "https://"), false},
		{"no host", "https:///checkpoint", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), Options{LogURL: c.url, HTTPClient: tlsSrv.Client(), TrustedMaterial: fakeRoot(t, l)}, nil)
			switch {
			case c.ok && err != nil:
				t.Fatal(err)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), "is not an http(s) URL")):
				t.Fatalf("error %v, want the URL refused", err)
			}
		})
	}
}

// TestRunStartIndex: a first run reads from StartIndex, at most the log's
// size (nothing to read); beyond it is refused.
func TestRunStartIndex(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "start.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	l.add(k.signStatement(t, "a").body, k.signStatement(t, "b").body)
	for _, c := range []struct {
		start uint64
		ok    bool
	}{{0, true}, {1, true}, {2, true}, {3, false}} {
		t.Run(fmt.Sprint(c.start), func(t *testing.T) {
			start := c.start
			res, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: fakeRoot(t, l)}, nil)
			switch {
			case !c.ok:
				if err == nil || !strings.Contains(err.Error(), "start index 3 is beyond the log's size 2") {
					t.Fatalf("error %v, want the start index refused", err)
				}
			case err != nil:
				t.Fatal(err)
			case res.From != c.start || res.To != 2:
				t.Fatalf("read %d to %d, want %d to 2", res.From, res.To, c.start)
			}
		})
	}
}

// TestNoteVerifierKeys: the checkpoint of an origin verifies under any of
// the trusted root's keys for it, but a key whose validity ended only
// when it is the origin's one key (a rotated log's old key signs no new
// checkpoint; none left is ErrNoLog); a key with no signature hash named
// is SHA-256.
func TestNoteVerifierKeys(t *testing.T) {
	t.Parallel()
	const origin = "keys.monitor.example"
	l1, l2 := newFakeLog(t, origin), newFakeLog(t, origin)
	ended := func(l *fakeLog) *root.TransparencyLog {
		tl := l.transparencyLog()
		tl.ValidityPeriodEnd = time.Now().Add(-time.Minute)
		return tl
	}
	noHash := func(l *fakeLog) *root.TransparencyLog {
		tl := l.transparencyLog()
		tl.SignatureHashFunc = 0
		return tl
	}
	hash := rfc6962.DefaultHasher.EmptyRoot()
	for _, c := range []struct {
		name    string
		logs    map[*fakeLog]*root.TransparencyLog
		signers []*fakeLog // whose checkpoints verify
		refused []*fakeLog // whose checkpoints do not
	}{
		{"two keys", map[*fakeLog]*root.TransparencyLog{l1: l1.transparencyLog(), l2: l2.transparencyLog()}, []*fakeLog{l1, l2}, nil},
		{"a rotated key", map[*fakeLog]*root.TransparencyLog{l1: ended(l1), l2: l2.transparencyLog()}, []*fakeLog{l2}, []*fakeLog{l1}},
		{"the one key, ended", map[*fakeLog]*root.TransparencyLog{l1: ended(l1)}, []*fakeLog{l1}, []*fakeLog{l2}},
		{"every key ended", map[*fakeLog]*root.TransparencyLog{l1: ended(l1), l2: ended(l2)}, nil, nil},
		{"no signature hash named", map[*fakeLog]*root.TransparencyLog{l1: noHash(l1)}, []*fakeLog{l1}, []*fakeLog{l2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]*root.TransparencyLog{}
			for l, tl := range c.logs {
				m[hexID(l)] = tl
			}
			tm, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, m)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := noteVerifiers(tm, origin)
			if c.signers == nil {
				if !errors.Is(err, ErrNoLog) {
					t.Fatalf("error %v, want ErrNoLog", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range c.signers {
				if _, err := parseCheckpoint([]byte(l.signCheckpoint(t, 0, hash)), origin, vs); err != nil {
					t.Errorf("a checkpoint of a trusted key: %v", err)
				}
			}
			for _, l := range c.refused {
				if _, err := parseCheckpoint([]byte(l.signCheckpoint(t, 0, hash)), origin, vs); err == nil {
					t.Error("a checkpoint of a key not trusted verifies")
				}
			}
		})
	}
}

// TestTilesBeforeTheRange: the tiles left of the range read must hash to
// the stored checkpoint, which the consistency proof from a stored size
// that is a power of two does not use: a log that serves the honest
// checkpoint and the honest right edge, but a forged tile before the
// stored size, is caught there, naming where the range starts.
func TestTilesBeforeTheRange(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "left.monitor.example")
	url := l.start(t)
	k := newKeyPair(t)
	a, b := k.signStatement(t, "a").body, k.signStatement(t, "b").body
	const size, stored = 300, 64
	honest, forged := testonly.New(rfc6962.DefaultHasher), testonly.New(rfc6962.DefaultHasher)
	var entries [][]byte
	for i := range size {
		honest.AppendData(a)
		e := a
		if i == 10 {
			e = b
		}
		entries = append(entries, e)
		forged.AppendData(e)
	}
	cp := l.signCheckpoint(t, size, honest.Hash())
	l.mu.Lock()
	l.serve = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveTiles(t, w, r, l, entries, forged, cp) })
	l.mu.Unlock()
	prev := &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: l.origin, URL: url}, Checkpoint: l.signCheckpoint(t, stored, honest.HashAt(stored))}
	_, err := Run(context.Background(), Options{LogURL: url, TrustedMaterial: fakeRoot(t, l)}, prev)
	if !errors.Is(err, ErrTileHash) || !strings.Contains(err.Error(), "the tiles before index 64 do not hash to the stored checkpoint") {
		t.Fatalf("error %v, want the tiles before the range refused", err)
	}
}

// TestFromAnEmptyTree: a state stored when the log was empty is consistent
// with any growth, and the run reads from its first entry.
func TestFromAnEmptyTree(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "empty.monitor.example")
	url := l.start(t)
	prev := &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: l.origin, URL: url},
		Checkpoint: l.signCheckpoint(t, 0, rfc6962.DefaultHasher.EmptyRoot())}
	l.add(newKeyPair(t).signStatement(t, "a").body)
	res, err := Run(context.Background(), Options{LogURL: url, TrustedMaterial: fakeRoot(t, l)}, prev)
	if err != nil || res.From != 0 || res.To != 1 {
		t.Fatalf("result %+v, %v; want entries 0 to 1 read", res, err)
	}
}

// TestRunFullTile: a log of exactly one full tile is read to its end and no
// further.
func TestRunFullTile(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "full.monitor.example")
	url := l.start(t)
	e := newKeyPair(t).signStatement(t, "a").body
	for range tileWidth {
		l.add(e)
	}
	start := uint64(0)
	res, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: fakeRoot(t, l)}, nil)
	if err != nil || res.To != tileWidth || res.Bundles != 1 || res.HashTiles != 1 {
		t.Fatalf("result %+v, %v; want one entry bundle of %d entries, one hash tile read once", res, err, tileWidth)
	}
}

// TestRunPartialFromFullTile: a log that has grown past the checkpoint
// read, and serves only full tiles (its partial ones gone), is read from
// the full tiles, each cut to the checkpoint's size.
func TestRunPartialFromFullTile(t *testing.T) {
	t.Parallel()
	l := newFakeLog(t, "grown.monitor.example")
	url := l.start(t)
	e := newKeyPair(t).signStatement(t, "a").body
	tree := testonly.New(rfc6962.DefaultHasher)
	var entries [][]byte
	for range tileWidth {
		entries = append(entries, e)
		tree.AppendData(e)
	}
	const size = 100
	cp := l.signCheckpoint(t, size, tree.HashAt(size))
	l.mu.Lock()
	l.serve = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, ".p/") {
			http.NotFound(w, r)
			return
		}
		serveTiles(t, w, r, l, entries, tree, cp)
	})
	l.mu.Unlock()
	start := uint64(0)
	res, err := Run(context.Background(), Options{LogURL: url, StartIndex: &start, TrustedMaterial: fakeRoot(t, l)}, nil)
	if err != nil || res.To != size {
		t.Fatalf("result %+v, %v; want the %d entries read", res, err, size)
	}
}
