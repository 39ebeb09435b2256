package monitor

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	rekorpb "github.com/sigstore/rekor-tiles/v2/pkg/generated/protobuf"
	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/verify"
)

// A Rekor v2 log in memory, served as tlog-tiles by httptest, with a log
// key the test's trusted root trusts: the monitor's proofs and its
// "released means verified" rule tested with no Sigstore stack. The tree
// and the proofs of the bundles come from transparency-dev/merkle's
// reference tree (testonly.Tree).

// fakeLog is one log: its origin (the host name of its BaseURL in the
// trusted root), its key, its entries.
type fakeLog struct {
	origin string
	signer signature.Signer
	pub    crypto.PublicKey
	id     []byte

	mu      sync.Mutex
	entries [][]byte
	tree    *testonly.Tree
	// serve, when set, replaces what the log serves: a forked log.
	serve http.Handler
	// checkpoint, when set, is served instead of the log's own.
	checkpoint string
}

func newFakeLog(t testing.TB, origin string) *fakeLog {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(der)
	return &fakeLog{origin: origin, signer: sv, pub: key.Public(), id: id[:], tree: testonly.New(rfc6962.DefaultHasher)}
}

// transparencyLog is the log as a trusted root names it.
func (l *fakeLog) transparencyLog() *root.TransparencyLog {
	return &root.TransparencyLog{BaseURL: "https://" + l.origin, ID: l.id, HashFunc: crypto.SHA256, PublicKey: l.pub,
		SignatureHashFunc: crypto.SHA256, ValidityPeriodStart: time.Now().Add(-time.Hour)}
}

// fakeRoot is a trusted root of logs only.
func fakeRoot(t testing.TB, logs ...*fakeLog) root.TrustedMaterial {
	t.Helper()
	m := map[string]*root.TransparencyLog{}
	for _, l := range logs {
		m[hex.EncodeToString(l.id)] = l.transparencyLog()
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// add appends entries and returns the index of the first.
func (l *fakeLog) add(entries ...[]byte) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := len(l.entries)
	for _, e := range entries {
		l.entries = append(l.entries, e)
		l.tree.AppendData(e)
	}
	return int64(first)
}

// signCheckpoint signs a checkpoint of size and root with the log's key.
func (l *fakeLog) signCheckpoint(t testing.TB, size uint64, rootHash []byte) string {
	t.Helper()
	ns, err := rekornote.NewNoteSigner(context.Background(), l.origin, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(flog.Checkpoint{Origin: l.origin, Size: size, Hash: rootHash}.Marshal())}, ns)
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// current is the log's own signed checkpoint now.
func (l *fakeLog) current(t testing.TB) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.signCheckpoint(t, l.tree.Size(), l.tree.Hash())
}

// state is a monitor state at the log's current checkpoint.
func (l *fakeLog) state(t testing.TB, url string) *State {
	return &State{Kind: StateKind, StateVersion: StateVersion, Log: StateLog{Origin: l.origin, URL: url}, Checkpoint: l.current(t)}
}

// start serves the log over HTTP on 127.0.0.1.
func (l *fakeLog) start(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		h := l.serve
		l.mu.Unlock()
		if h != nil {
			h.ServeHTTP(w, r)
			return
		}
		l.serveLog(t, w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveLog serves the checkpoint, the hash tiles and the entry bundles
// (https://c2sp.org/tlog-tiles) of the tree as it is.
func (l *fakeLog) serveLog(t testing.TB, w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	entries, tree, forced := l.entries, l.tree, l.checkpoint
	l.mu.Unlock()
	serveTiles(t, w, r, l, entries, tree, forced)
}

// serveTiles serves entries (hashed into tree) as a tlog-tiles log whose
// checkpoint is cp, or the log's own when cp is empty.
func serveTiles(t testing.TB, w http.ResponseWriter, r *http.Request, l *fakeLog, entries [][]byte, tree *testonly.Tree, cp string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	if p == "checkpoint" {
		if cp == "" {
			cp = l.signCheckpoint(t, tree.Size(), tree.Hash())
		}
		fmt.Fprint(w, cp)
		return
	}
	level, n, width, ok := parseTilePath(p)
	size := tree.Size()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if level == "entries" {
		first := n * tileWidth
		if width == 0 {
			width = tileWidth
		}
		if first+width > size {
			http.NotFound(w, r)
			return
		}
		var out []byte
		for _, e := range entries[first : first+width] {
			out = binary.BigEndian.AppendUint16(out, uint16(len(e)))
			out = append(out, e...)
		}
		w.Write(out)
		return
	}
	lv, err := strconv.Atoi(level)
	if err != nil || lv > 1 {
		http.NotFound(w, r)
		return
	}
	// Level 0: leaf hashes; level 1: the roots of 256-leaf subtrees.
	nodes := size >> (8 * lv)
	if width == 0 {
		width = tileWidth
	}
	if n*tileWidth+width > nodes {
		http.NotFound(w, r)
		return
	}
	var out []byte
	for i := n * tileWidth; i < n*tileWidth+width; i++ {
		if lv == 0 {
			out = append(out, tree.LeafHash(i)...)
			continue
		}
		sub := testonly.New(rfc6962.DefaultHasher)
		for j := i * tileWidth; j < (i+1)*tileWidth; j++ {
			sub.Append(tree.LeafHash(j))
		}
		out = append(out, sub.Hash()...)
	}
	w.Write(out)
}

// parseTilePath reads tile/L/[xNNN/]NNN[.p/W].
func parseTilePath(p string) (level string, n, width uint64, ok bool) {
	rest, found := strings.CutPrefix(p, "tile/")
	if !found {
		return "", 0, 0, false
	}
	level, rest, found = strings.Cut(rest, "/")
	if !found {
		return "", 0, 0, false
	}
	if idx, w, partial := strings.Cut(rest, ".p/"); partial {
		v, err := strconv.ParseUint(w, 10, 64)
		if err != nil || v == 0 || v >= tileWidth {
			return "", 0, 0, false
		}
		rest, width = idx, v
	}
	for _, part := range strings.Split(rest, "/") {
		part = strings.TrimPrefix(part, "x")
		v, err := strconv.ParseUint(part, 10, 64)
		if err != nil || len(part) != 3 {
			return "", 0, 0, false
		}
		n = n*1000 + v
	}
	return level, n, width, true
}

// keyPair is a release key.
type keyPair struct {
	key *ecdsa.PrivateKey
	der []byte
	id  string
}

func newKeyPair(t testing.TB) *keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	id, err := verify.KeyID(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return &keyPair{key: key, der: der, id: id}
}

// signed is a DSSE envelope a key signed and its Rekor v2 hashedrekord
// entry (over the envelope's pre-authentication encoding, as sigstore-go
// logs a DSSE bundle in Rekor v2).
type signed struct {
	payload, sig []byte
	// body is the canonical log entry; digest what it logs.
	body   []byte
	digest string
}

const inTotoType = "application/vnd.in-toto+json"

// signStatement signs an in-toto statement naming subject.
func (k *keyPair) signStatement(t testing.TB, subject string) *signed {
	t.Helper()
	sum := sha256.Sum256([]byte(subject))
	payload := []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"` + subject + `","digest":{"sha256":"` + hex.EncodeToString(sum[:]) + `"}}],"predicateType":"https://example.com/p","predicate":{}}`)
	pae := sha256.Sum256(dsse.PAE(inTotoType, payload))
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, pae[:])
	if err != nil {
		t.Fatal(err)
	}
	return &signed{payload: payload, sig: sig, body: hashedRekordBody(t, pae[:], sig, k.der), digest: "sha256:" + hex.EncodeToString(pae[:])}
}

// hashedRekordBody is the canonical JSON of a Rekor v2 hashedrekord entry.
func hashedRekordBody(t testing.TB, dg, sig, keyDER []byte) []byte {
	t.Helper()
	e := &rekorpb.Entry{Kind: "hashedrekord", ApiVersion: "0.0.2", Spec: &rekorpb.Spec{Spec: &rekorpb.Spec_HashedRekordV002{HashedRekordV002: &rekorpb.HashedRekordLogEntryV002{
		Data: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: dg},
		Signature: &rekorpb.Signature{Content: sig, Verifier: &rekorpb.Verifier{
			Verifier:   &rekorpb.Verifier_PublicKey{PublicKey: &rekorpb.PublicKey{RawBytes: keyDER}},
			KeyDetails: protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256,
		}},
	}}}}
	j, err := protojson.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jcs.Transform(j)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tlogEntry is the log entry at index with its inclusion proof in the
// log's current tree and that tree's signed checkpoint.
func (l *fakeLog) tlogEntry(t testing.TB, index int64) *protorekor.TransparencyLogEntry {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.tree.Size()
	hashes, err := l.tree.InclusionProof(uint64(index), size)
	if err != nil {
		t.Fatal(err)
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex: index, LogId: &protocommon.LogId{KeyId: l.id},
		KindVersion:       &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.2"},
		CanonicalizedBody: l.entries[index],
		InclusionProof: &protorekor.InclusionProof{LogIndex: index, RootHash: l.tree.Hash(), TreeSize: int64(size), Hashes: hashes,
			Checkpoint: &protorekor.Checkpoint{Envelope: l.signCheckpoint(t, size, l.tree.Hash())}},
	}
}

// dsseBundle is a v0.3 bundle of s, signed by a key, with entries.
func dsseBundle(t testing.TB, s *signed, entries ...*protorekor.TransparencyLogEntry) []byte {
	t.Helper()
	b := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:     &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "release"}},
			TlogEntries: entries,
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: s.payload, PayloadType: inTotoType,
			Signatures: []*protodsse.Signature{{Sig: s.sig}}}},
	}
	j, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// messageBundle is a v0.3 bundle of a message signature over dg.
func messageBundle(t testing.TB, dg, sig []byte, entries ...*protorekor.TransparencyLogEntry) []byte {
	t.Helper()
	b := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:     &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "release"}},
			TlogEntries: entries,
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: dg}, Signature: sig}},
	}
	j, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
