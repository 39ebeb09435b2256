package monitor

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-openapi/strfmt"
	"github.com/gowebpki/jcs"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/util"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

// A Rekor v1 log in memory, served as rekor-server's API (the log info,
// consistency proofs, entries by index with their inclusion proofs and
// signed entry timestamps) under the key of a fakeLog: the monitor's
// Rekor v1 checks tested with no Rekor v1 stack (docs/MONITOR.md "Rekor
// v1"). The proofs come from transparency-dev/merkle's reference tree.

// fakeV1 is one Rekor v1 log: a fakeLog's key, origin host and tree, a
// tree ID and the entries of its inactive shards.
type fakeV1 struct {
	*fakeLog
	treeID int64
	offset int64
	v1mu   sync.Mutex
	// entry, when set, changes each entry served (a forged log).
	entry func(e *models.LogEntryAnon)
	// proofTree, when set, is the tree the entries' inclusion proofs are
	// for (a log that grew during the run).
	proofTree *testonly.Tree
	// failRetrieve answers the entries' requests with HTTP 500.
	failRetrieve bool
}

func newFakeV1(t testing.TB, host string) (*fakeV1, string) {
	t.Helper()
	v := &fakeV1{fakeLog: newFakeLog(t, host), treeID: 4242, offset: 1000}
	url := v.start(t)
	v.serve = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { v.serveV1(t, w, r) })
	return v, url
}

func (v *fakeV1) origin() string { return v.fakeLog.origin + " - " + strconv.FormatInt(v.treeID, 10) }

// sth is the log's signed tree head of tree.
func (v *fakeV1) sth(t testing.TB, tree *testonly.Tree) string {
	t.Helper()
	b, err := util.CreateAndSignCheckpoint(context.Background(), v.fakeLog.origin, v.treeID, tree.Size(), tree.Hash(), v.signer)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// v1State is a monitor state at the log's current signed tree head.
func (v *fakeV1) v1State(t testing.TB, url string) *State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: v.origin(), URL: url}, Checkpoint: v.sth(t, v.tree)}
}

func (v *fakeV1) serveV1(t testing.TB, w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	tree, entries := v.tree, v.entries
	v.mu.Unlock()
	v.v1mu.Lock()
	edit, proofTree, fail := v.entry, v.proofTree, v.failRetrieve
	v.v1mu.Unlock()
	if proofTree == nil {
		proofTree = tree
	}
	reply := func(x any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(x); err != nil {
			t.Error(err)
		}
	}
	str := func(s string) *string { return &s }
	i64 := func(n int64) *int64 { return &n }
	switch r.URL.Path {
	case "/api/v1/log":
		size := int64(tree.Size())
		reply(&models.LogInfo{RootHash: str(hex.EncodeToString(tree.Hash())), TreeSize: &size, SignedTreeHead: str(v.sth(t, tree)),
			TreeID: str(strconv.FormatInt(v.treeID, 10)), InactiveShards: []*models.InactiveShardLogInfo{{TreeSize: &v.offset}}})
	case "/api/v1/log/proof":
		first, _ := strconv.ParseUint(r.URL.Query().Get("firstSize"), 10, 64)
		last, _ := strconv.ParseUint(r.URL.Query().Get("lastSize"), 10, 64)
		src := tree
		if last == proofTree.Size() {
			src = proofTree
		}
		hashes, err := src.ConsistencyProof(first, last)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply(&models.ConsistencyProof{Hashes: hexAll(hashes), RootHash: str(hex.EncodeToString(src.HashAt(last)))})
	case "/api/v1/log/entries/retrieve":
		if fail {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		var q models.SearchLogQuery
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var out []models.LogEntry
		for _, idx := range q.LogIndexes {
			i := uint64(*idx - v.offset)
			hashes, err := proofTree.InclusionProof(i, proofTree.Size())
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			hs := hexAll(hashes)
			body := base64.StdEncoding.EncodeToString(entries[i])
			e := models.LogEntryAnon{Body: body, IntegratedTime: i64(1700000000 + int64(i)), LogID: str(hexID(v.fakeLog)), LogIndex: i64(*idx),
				Verification: &models.LogEntryAnonVerification{InclusionProof: &models.InclusionProof{
					Checkpoint: str(v.sth(t, proofTree)), Hashes: hs, LogIndex: i64(int64(i)), RootHash: str(hex.EncodeToString(proofTree.Hash())), TreeSize: i64(int64(proofTree.Size())),
				}}}
			e.Verification.SignedEntryTimestamp = v.set(t, &e)
			if edit != nil {
				edit(&e)
			}
			out = append(out, models.LogEntry{"uuid" + strconv.FormatUint(i, 10): e})
		}
		reply(out)
	default:
		http.NotFound(w, r)
	}
}

// set is the log's signed entry timestamp of e, as rekor-server signs it.
func (v *fakeV1) set(t testing.TB, e *models.LogEntryAnon) strfmt.Base64 {
	t.Helper()
	payload, err := json.Marshal(struct {
		Body           any    `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	}{e.Body, *e.IntegratedTime, *e.LogIndex, *e.LogID})
	if err != nil {
		t.Fatal(err)
	}
	canon, err := jcs.Transform(payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := v.signer.SignMessage(strings.NewReader(string(canon)))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// v1KeyBody is a Rekor v1 hashedrekord 0.0.1 body of an artifact digest
// signed by k.
func v1KeyBody(k *keyPair, subject string) []byte {
	sum := strings.Repeat("0", 64-len(hex.EncodeToString([]byte(subject)))%64) + hex.EncodeToString([]byte(subject))
	key := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: k.der}))
	return []byte(`{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":"` + sum[len(sum)-64:] +
		`"}},"signature":{"content":"AA==","publicKey":{"content":"` + key + `"}}}}`)
}

// TestRekorV1Fake: a Rekor v1 log read without a stack: an entry of the
// watched key is an alert with the log's index (its inactive shards
// counted) and integrated time; each forgery of an entry's proof or
// timestamp is an error naming the check, with no state; a log that grew
// during the run (inclusion proofs for a larger tree, proven consistent)
// is read; another root for the larger size is an error.
func TestRekorV1Fake(t *testing.T) {
	t.Parallel()
	k, other := newKeyPair(t), newKeyPair(t)
	for _, c := range []struct {
		name  string
		edit  func(e *models.LogEntryAnon)
		grow  bool
		fail  bool   // the entries' requests fail
		check string // the failed check, "" for none
		index int64  // the index it names: the first entry read unless -1
	}{
		{name: "honest"},
		{name: "grown during the run", grow: true},
		{name: "another body", edit: func(e *models.LogEntryAnon) { e.Body = base64.StdEncoding.EncodeToString(v1KeyBody(k, "forged")) }, check: "inclusion"},
		{name: "no inclusion proof", edit: func(e *models.LogEntryAnon) { e.Verification.InclusionProof = nil }, check: "inclusion"},
		{name: "the proof of another index", edit: func(e *models.LogEntryAnon) {
			n := *e.Verification.InclusionProof.LogIndex + 1
			e.Verification.InclusionProof.LogIndex = &n
		}, check: "inclusion"},
		{name: "a proof of fewer entries", edit: func(e *models.LogEntryAnon) {
			n := *e.Verification.InclusionProof.TreeSize - 1
			e.Verification.InclusionProof.TreeSize = &n
		}, check: "inclusion"},
		{name: "another root", edit: func(e *models.LogEntryAnon) {
			r := strings.Repeat("ab", 32)
			e.Verification.InclusionProof.RootHash = &r
		}, check: "inclusion"},
		{name: "the entries not served", fail: true, check: "fetch"},
		{name: "no signed entry timestamp", edit: func(e *models.LogEntryAnon) { e.Verification.SignedEntryTimestamp = nil }, check: "entry timestamp", index: -1},
		{name: "another integrated time", edit: func(e *models.LogEntryAnon) { n := *e.IntegratedTime + 1; e.IntegratedTime = &n }, check: "entry timestamp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, url := newFakeV1(t, "v1fake.monitor.example")
			v.add(v1KeyBody(other, "filler"))
			prev := v.v1State(t, url)
			first := v.add(v1KeyBody(k, "release"), v1KeyBody(other, "other"))
			for i := range 17 {
				v.add(v1KeyBody(other, strconv.Itoa(i)))
			}
			v.add(v1KeyBody(k, "twentieth")) // 20 entries: two requests of ten
			if c.grow {
				// The log answers the entries with proofs for a tree of
				// three entries more than its tree head.
				grown := testonly.New(rfc6962.DefaultHasher)
				v.mu.Lock()
				grown.AppendData(v.entries...)
				v.mu.Unlock()
				grown.AppendData([]byte("x"), []byte("y"), []byte("z"))
				v.proofTree = grown
			}
			v.entry, v.failRetrieve = c.edit, c.fail
			var fs []Finding
			res, err := Run(context.Background(), Options{LogURL: url, TrustedMaterial: fakeRoot(t, v.fakeLog), KeyIDs: []string{k.id},
				OnFinding: func(f Finding) { fs = append(fs, f) }}, prev)
			if c.check != "" {
				var ce *CheckError
				want := v.offset + first
				if c.index == -1 {
					want = -1
				}
				sentinel := ErrInclusion
				if c.fail {
					sentinel = ErrFetch
					if !strings.Contains(err.Error(), "entries 1001 to 1010: ") {
						t.Errorf("error %v, want the entries named", err)
					}
				}
				if !errors.As(err, &ce) || ce.Check != c.check || ce.Index != want || !errors.Is(err, sentinel) || res == nil || res.State != nil || len(fs) != 0 {
					t.Fatalf("error %v, findings %+v; want check %q failed at %d, no finding, no state", err, fs, c.check, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Log != v.origin() || res.From != 1 || res.To != 21 || res.Bundles != 2 || res.State == nil || res.Watched != 2 || len(fs) != 2 {
				t.Fatalf("result %+v, findings %+v", res, fs)
			}
			for i, want := range []int64{v.offset + first, v.offset + first + 19} {
				f := fs[i]
				if f.Kind != KindUnreleased || f.LogIndex != want || f.KeyID != k.id || f.IntegratedTime == nil || f.IntegratedTime.Unix() != 1700000000+want-v.offset || f.EntryKind != "hashedrekord 0.0.1" {
					t.Errorf("finding %d: %+v, want an alert at %d", i, f, want)
				}
			}
		})
	}
}

// hexAll is each of hashes in hex, as Rekor v1's API gives a proof.
func hexAll(hashes [][]byte) []string {
	hs := make([]string, 0, len(hashes))
	for _, h := range hashes {
		hs = append(hs, hex.EncodeToString(h))
	}
	return hs
}
