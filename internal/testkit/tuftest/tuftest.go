// Package tuftest serves real TUF repositories (go-tuf metadata, ed25519
// keys, consistent snapshots) on 127.0.0.1 for tests of TUF clients.
package tuftest

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// Repo is a real TUF repository (go-tuf metadata, ed25519 keys,
// consistent snapshots) served over HTTP on 127.0.0.1. It is not safe for
// concurrent changes.
type Repo struct {
	t   *testing.T
	dir string
	// Server serves the repository on 127.0.0.1.
	Server *httptest.Server
	// Requests counts the HTTP requests served.
	Requests atomic.Int64

	// Keys are the current private key of each role.
	Keys map[string]ed25519.PrivateKey
	// Root and the other roles are the current metadata.
	Root      *metadata.Metadata[metadata.RootType]
	Targets   *metadata.Metadata[metadata.TargetsType]
	Snapshot  *metadata.Metadata[metadata.SnapshotType]
	Timestamp *metadata.Metadata[metadata.TimestampType]
	// Files are the targets, by name; change them and Publish.
	Files map[string][]byte
}

// NewRepo publishes files as the targets of a new repository (version 1
// of every role, consistent snapshots) and serves it until the test ends.
func NewRepo(t *testing.T, files map[string][]byte) *Repo {
	t.Helper()
	r := &Repo{t: t, dir: t.TempDir(), Keys: map[string]ed25519.PrivateKey{}, Files: files}
	exp := time.Now().Add(365 * 24 * time.Hour)
	r.Root = metadata.Root(exp)
	r.Targets = metadata.Targets(exp)
	r.Snapshot = metadata.Snapshot(exp)
	r.Timestamp = metadata.Timestamp(exp)
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		r.NewKey(role)
	}
	r.Publish()
	r.WriteRoot()
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		http.FileServer(http.Dir(r.dir)).ServeHTTP(w, req)
	}))
	t.Cleanup(r.Server.Close)
	return r
}

// NewKey gives role a new key in the root metadata (revoking the old one);
// write the root and publish to take it into use.
func (r *Repo) NewKey(role string) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	key, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		r.t.Fatal(err)
	}
	if old, ok := r.Keys[role]; ok {
		oldKey, _ := metadata.KeyFromPublicKey(old.Public())
		id, _ := oldKey.ID()
		if err := r.Root.Signed.RevokeKey(id, role); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.Root.Signed.AddKey(key, role); err != nil {
		r.t.Fatal(err)
	}
	r.Keys[role] = priv
}

func (r *Repo) signer(role string) signature.Signer {
	s, err := signature.LoadSigner(r.Keys[role], crypto.Hash(0))
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *Repo) write(name string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(filepath.Join(r.dir, name)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, name), data, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Publish writes the targets, then new versions of targets, snapshot and
// timestamp metadata.
func (r *Repo) Publish() {
	t := r.t
	r.Targets.Signed.Targets = map[string]*metadata.TargetFiles{}
	for name, data := range r.Files {
		tf, err := metadata.TargetFile().FromBytes(name, data, "sha256")
		if err != nil {
			t.Fatal(err)
		}
		r.Targets.Signed.Targets[name] = tf
		r.write(filepath.Join("targets", tf.Hashes["sha256"].String()+"."+name), data)
	}
	r.Targets.Signed.Version++
	r.Targets.Signatures = nil
	if _, err := r.Targets.Sign(r.signer("targets")); err != nil {
		t.Fatal(err)
	}
	b, err := r.Targets.ToBytes(true)
	if err != nil {
		t.Fatal(err)
	}
	r.write(fmt.Sprintf("%d.targets.json", r.Targets.Signed.Version), b)

	r.Snapshot.Signed.Meta["targets.json"] = metadata.MetaFile(r.Targets.Signed.Version)
	r.Snapshot.Signed.Version++
	r.Snapshot.Signatures = nil
	if _, err := r.Snapshot.Sign(r.signer("snapshot")); err != nil {
		t.Fatal(err)
	}
	if b, err = r.Snapshot.ToBytes(true); err != nil {
		t.Fatal(err)
	}
	r.write(fmt.Sprintf("%d.snapshot.json", r.Snapshot.Signed.Version), b)
	r.SignTimestamp(time.Now().Add(24 * time.Hour))
}

// SignTimestamp writes a new timestamp.json expiring at expires and
// returns it.
func (r *Repo) SignTimestamp(expires time.Time) []byte {
	r.Timestamp.Signed.Meta["snapshot.json"] = metadata.MetaFile(r.Snapshot.Signed.Version)
	r.Timestamp.Signed.Version++
	r.Timestamp.Signed.Expires = expires
	r.Timestamp.Signatures = nil
	if _, err := r.Timestamp.Sign(r.signer("timestamp")); err != nil {
		r.t.Fatal(err)
	}
	b, err := r.Timestamp.ToBytes(true)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write("timestamp.json", b)
	return b
}

// WriteRoot signs the root with the current root key (and with previous,
// when given) and writes it as VERSION.root.json.
func (r *Repo) WriteRoot(previous ...ed25519.PrivateKey) []byte {
	r.Root.Signatures = nil
	if _, err := r.Root.Sign(r.signer("root")); err != nil {
		r.t.Fatal(err)
	}
	for _, p := range previous {
		s, err := signature.LoadSigner(p, crypto.Hash(0))
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := r.Root.Sign(s); err != nil {
			r.t.Fatal(err)
		}
	}
	b, err := r.Root.ToBytes(true)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(fmt.Sprintf("%d.root.json", r.Root.Signed.Version), b)
	return b
}

// RootJSON returns VERSION.root.json.
func (r *Repo) RootJSON(version int) []byte {
	b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("%d.root.json", version)))
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}
