package monitor

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
	"github.com/mcpsign/mcpsign/internal/testkit/publisher"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// These tests read the local Sigstore stack's Rekor v2 log
// (scripts/sigstore-local/start.sh); they skip without it unless
// MCPSIGN_REQUIRE_SIGSTACK=1. The rekor-tiles posix server serves only the
// write API over HTTP: the log's tiles are its storage directory, which a
// static file server publishes here, as a bucket or CDN does in front of a
// production Rekor v2 log.

type stackLog struct {
	env     *sigstack.Env
	tr      *root.TrustedRoot
	svc     sign.Services
	storage string
	// url serves storage read-only.
	url string
}

func newStackLog(t *testing.T) *stackLog {
	t.Helper()
	s := newStackLogTB(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(s.storage)))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func newStackLogTB(t testing.TB) *stackLog {
	t.Helper()
	env := sigstack.Require(t)
	tr, err := trustroot.LoadTrustedRootFile(env.TrustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := root.NewSigningConfigFromPath(env.SigningConfig)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sign.SelectServices(sc, sign.ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(env.State, "data", "rekor")
	if _, err := os.Stat(filepath.Join(storage, "checkpoint")); err != nil {
		t.Fatalf("the stack's Rekor v2 storage: %v", err)
	}
	return &stackLog{env: env, tr: tr, svc: svc, storage: storage}
}

// uniqueEmail is an identity no other test signs as.
func uniqueEmail(t *testing.T, who string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return who + "-" + hex.EncodeToString(b) + "@monitor.example.com"
}

// sign signs a fresh statement as email, keyless, and returns the bundle
// and its log index, once the log's published checkpoint includes it.
func (s *stackLog) sign(t *testing.T, email string) ([]byte, int64) {
	t.Helper()
	payload := statement(t, "nonce "+uniqueEmail(t, "n"))
	tok, err := sign.IDToken(context.Background(), sign.TokenOptions{Flag: s.env.FreshToken(t, email)})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.NewSigstoreSigner(tok, s.svc.FulcioURL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sign.Sign(context.Background(), payload, sign.Options{
		Signer: signer, TransparencyLogs: s.svc.TransparencyLogs, TimestampAuthorities: s.svc.TimestampAuthorities, TrustedMaterial: s.tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TlogEntries) != 1 {
		t.Fatalf("tlog entries %+v", res.TlogEntries)
	}
	idx := res.TlogEntries[0].LogIndex
	s.waitSize(t, uint64(idx)+1)
	return res.Bundle, idx
}

// statement is the example snapshot's statement with instructions ins, so
// that each is a different artifact.
func statement(t testing.TB, ins string) []byte {
	t.Helper()
	snap := testsnap.Example()
	snap.Instructions = &ins
	p := publisher.Statement(t, snap)
	return p
}

// newKeySigner is a fresh P-256 key and its signer.
func newKeySigner(t testing.TB) (crypto.Signer, *sign.KeySigner) {
	t.Helper()
	key, err := sign.GenerateKey(sign.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.NewKeySigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, signer
}

// waitSize waits until the published checkpoint has at least n entries.
func (s *stackLog) waitSize(t *testing.T, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(s.storage, "checkpoint"))
		if err == nil {
			lines := strings.SplitN(string(data), "\n", 3)
			if len(lines) == 3 {
				if size, err := strconv.ParseUint(lines[1], 10, 64); err == nil && size >= n {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log's checkpoint did not reach %d entries", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// released is an empty released set whose bundles must verify as signed
// by email on the stack, or by keys.
func (s *stackLog) released(t testing.TB, email string, keys ...string) *Released {
	t.Helper()
	return mustReleased(t, s.tr, email, s.env.OIDCIssuer, keys...)
}

// mustReleased is NewReleased for the identity email of issuer (none when
// empty) and keys under tm.
func mustReleased(t testing.TB, tm root.TrustedMaterial, email, issuer string, keys ...string) *Released {
	t.Helper()
	c := ReleaseCheck{TrustedMaterial: tm, KeyIDs: keys}
	if email != "" {
		c.Identities = []verify.Identity{{SAN: email, Issuer: issuer}}
	}
	r, err := NewReleased(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *stackLog) matcher(t *testing.T, email string) *verify.CertificateMatcher {
	return s.matcherTB(t, email)
}

func (s *stackLog) matcherTB(t testing.TB, email string) *verify.CertificateMatcher {
	t.Helper()
	m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{{SAN: email, Issuer: s.env.OIDCIssuer}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type collector struct {
	mu sync.Mutex
	fs []Finding
}

func (c *collector) add(f Finding) { c.mu.Lock(); c.fs = append(c.fs, f); c.mu.Unlock() }

// run runs the monitor over logURL with findings collected.
func (s *stackLog) run(t *testing.T, ctx context.Context, logURL string, m *verify.CertificateMatcher, rel *Released, prev *State, client *http.Client) (*Result, []Finding, error) {
	t.Helper()
	c := &collector{}
	res, err := Run(ctx, Options{LogURL: logURL, TrustedMaterial: s.tr, Identities: m, Released: rel, OnFinding: c.add, HTTPClient: client}, prev)
	return res, c.fs, err
}

func TestStackMonitor(t *testing.T) {
	s := newStackLog(t)
	watched, other := uniqueEmail(t, "publisher"), uniqueEmail(t, "someone")
	m := s.matcher(t, watched)
	ctx := context.Background()

	// The first run records the log's checkpoint and reads nothing.
	res, fs, err := s.run(t, ctx, s.url, m, nil, nil, nil)
	if err != nil || len(fs) != 0 || res.State == nil || res.From != res.To {
		t.Fatalf("first run: %+v %v %v", res, fs, err)
	}
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	if err := WriteState(statePath, res.State); err != nil {
		t.Fatal(err)
	}
	state0, err := ReadState(statePath)
	if err != nil {
		t.Fatal(err)
	}

	releasedBundle, releasedIdx := s.sign(t, watched)
	// A genuine state part of the way, for the proofs between two sizes.
	resA, _, err := s.run(t, ctx, s.url, nil, nil, state0, nil)
	if err != nil || resA.State == nil {
		t.Fatal(err)
	}
	stateA := resA.State
	_, rogueIdx := s.sign(t, watched)
	_, otherIdx := s.sign(t, other)
	relDir := filepath.Join(dir, "released")
	if err := os.MkdirAll(relDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(relDir, "v1.sigstore.json"), releasedBundle, 0o644); err != nil {
		t.Fatal(err)
	}
	rel := s.released(t, watched)
	if n, skipped, err := rel.AddDir(ctx, relDir); err != nil || n != 1 || len(skipped) != 0 {
		t.Fatalf("released: %d %v %v", n, skipped, err)
	}

	t.Run("alert on the entry that was not released", func(t *testing.T) {
		res, fs, err := s.run(t, ctx, s.url, m, rel, state0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Kind != KindUnreleased || !fs[0].Alert || fs[0].LogIndex != rogueIdx ||
			fs[0].Identity != watched || fs[0].Issuer != s.env.OIDCIssuer || !strings.HasPrefix(fs[0].Digest, "sha256:") {
			t.Fatalf("findings %+v (released %d, rogue %d, other %d)", fs, releasedIdx, rogueIdx, otherIdx)
		}
		if res.Watched != 2 || res.Released != 1 || res.Alerts != 1 || res.State == nil || res.From != mustSize(t, state0) || res.To <= uint64(otherIdx) {
			t.Fatalf("result %+v", res)
		}
		// The next run from the new state reads only what came after.
		res2, fs2, err := s.run(t, ctx, s.url, m, rel, res.State, nil)
		if err != nil || len(fs2) != 0 || res2.From != res.To {
			t.Fatalf("second run: %+v %+v %v", res2, fs2, err)
		}
	})

	t.Run("released by a digest", func(t *testing.T) {
		// Everything by the watched identity released: nothing to report.
		all := s.released(t, watched)
		c := &collector{}
		_, err := Run(ctx, Options{LogURL: s.url, TrustedMaterial: s.tr, Identities: m, Released: rel, OnFinding: c.add}, state0)
		if err != nil || len(c.fs) != 1 {
			t.Fatalf("%v %+v", err, c.fs)
		}
		if err := all.AddDigest(c.fs[0].Digest); err != nil {
			t.Fatal(err)
		}
		if _, _, err := all.AddDir(ctx, relDir); err != nil {
			t.Fatal(err)
		}
		res, fs, err := s.run(t, ctx, s.url, m, all, state0, nil)
		if err != nil || len(fs) != 0 || res.Watched != 2 || res.Released != 2 {
			t.Fatalf("%+v %+v %v", res, fs, err)
		}
	})

	t.Run("other identities are not reported", func(t *testing.T) {
		res, fs, err := s.run(t, ctx, s.url, s.matcher(t, uniqueEmail(t, "nobody")), nil, state0, nil)
		if err != nil || len(fs) != 0 || res.Watched != 0 {
			t.Fatalf("%+v %+v %v", res, fs, err)
		}
	})

	t.Run("interrupted run leaves the range to the next", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/tile/entries/") {
				cancel()
			}
			return http.DefaultTransport.RoundTrip(r)
		})}
		res, fs, err := s.run(t, cctx, s.url, m, rel, state0, client)
		if !errors.Is(err, context.Canceled) || (res != nil && res.State != nil) || len(fs) != 0 {
			t.Fatalf("interrupted: %+v %+v %v", res, fs, err)
		}
		// The state file was not touched; the next run checks the range.
		again, err := ReadState(statePath)
		if err != nil || again.Checkpoint != state0.Checkpoint {
			t.Fatalf("state changed: %v", err)
		}
		res, fs, err = s.run(t, ctx, s.url, m, rel, again, nil)
		if err != nil || len(fs) != 1 || fs[0].LogIndex != rogueIdx || res.From != mustSize(t, state0) {
			t.Fatalf("after the interruption: %+v %+v %v", res, fs, err)
		}
	})

	t.Run("a stored checkpoint of another tree is an alert", func(t *testing.T) {
		for _, size := range []uint64{0, mustSize(t, stateA), uint64(otherIdx) + 1} {
			prev := *state0
			prev.Checkpoint = s.forgeCheckpoint(t, size, bytes.Repeat([]byte{7}, 32))
			res, fs, err := s.run(t, ctx, s.url, m, rel, &prev, nil)
			if !errors.Is(err, ErrInconsistent) || len(fs) != 1 || fs[0].Kind != KindInconsistent || !fs[0].Alert || res == nil || res.State != nil {
				t.Fatalf("size %d: %+v %+v %v", size, res, fs, err)
			}
		}
	})

	t.Run("hostile log", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			path    string
			corrupt func([]byte) []byte
			want    error
			check   string
		}{
			{"checkpoint signature", "/checkpoint", func(b []byte) []byte {
				i := bytes.LastIndex(b, []byte(" ")) + 10
				b[i] ^= 1
				return b
			}, ErrCheckpoint, "checkpoint"},
			{"entry bytes", "/tile/entries/", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, ErrTileHash, "tile hash"},
			{"entry bundle framing", "/tile/entries/", func(b []byte) []byte { return b[:len(b)-1] }, ErrBundleFormat, "entry bundle"},
			// The right edge is in the consistency proof: the log shows a
			// tree that does not extend the stored one.
			{"hash tile in the proof", "/tile/0/", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrInconsistent, "consistency"},
			// The left edge is in the range before the new entries, and in
			// the proof unless the stored size is a power of two.
			{"hash tile before the range", "/tile/0/", func(b []byte) []byte { b[0] ^= 1; return b }, nil, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				proxy := httptest.NewServer(corrupting(s.storage, tc.path, tc.corrupt))
				defer proxy.Close()
				_, _, err := s.run(t, ctx, proxy.URL, m, rel, stateA, nil)
				var ce *CheckError
				if tc.want == nil {
					if !errors.Is(err, ErrTileHash) && !errors.Is(err, ErrInconsistent) {
						t.Fatalf("err %v, want a tile hash or consistency failure", err)
					}
					return
				}
				if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Check != tc.check {
					t.Fatalf("err %v, want %v at %s", err, tc.want, tc.check)
				}
			})
		}
	})
}

func mustSize(t *testing.T, st *State) uint64 {
	t.Helper()
	lines := strings.SplitN(st.Checkpoint, "\n", 3)
	n, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// forgeCheckpoint signs a checkpoint of size and root with the stack's own
// log key: a log that shows two different trees.
func (s *stackLog) forgeCheckpoint(t *testing.T, size uint64, rootHash []byte) string {
	t.Helper()
	sv, err := signature.LoadSignerFromPEMFile(filepath.Join(s.env.State, "keys", "rekor-priv.pem"), crypto.Hash(0), nil)
	if err != nil {
		t.Skipf("the stack's log key: %v", err)
	}
	ns, err := rekornote.NewNoteSigner(context.Background(), "127.0.0.1", sv)
	if err != nil {
		t.Fatal(err)
	}
	body := flog.Checkpoint{Origin: "127.0.0.1", Size: size, Hash: rootHash}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, ns)
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// corrupting serves the log's storage and corrupts the bodies of paths
// starting with prefix.
func corrupting(storage, prefix string, corrupt func([]byte) []byte) http.Handler {
	fs := http.FileServer(http.Dir(storage))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		fs.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK && strings.HasPrefix(r.URL.Path, prefix) && len(body) > 0 {
			body = corrupt(bytes.Clone(body))
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestStackMonitorKey watches a key: an entry it signed that was not
// released is an alert, another key's entry is nothing.
func TestStackMonitorKey(t *testing.T) {
	s := newStackLog(t)
	ctx := context.Background()
	res, _, err := s.run(t, ctx, s.url, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	state0 := res.State
	keySign := func() (string, []byte, int64) {
		key, signer := newKeySigner(t)
		p := statement(t, "key "+uniqueEmail(t, "n"))
		r, err := sign.Sign(ctx, p, sign.Options{Signer: signer, TransparencyLogs: s.svc.TransparencyLogs, TrustedMaterial: s.tr})
		if err != nil {
			t.Fatal(err)
		}
		kid, err := verify.KeyID(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		idx := r.TlogEntries[0].LogIndex
		s.waitSize(t, uint64(idx)+1)
		return kid, r.Bundle, idx
	}
	watched, bundle, idx := keySign()
	_, _, _ = keySign()
	c := &collector{}
	res, err = Run(ctx, Options{LogURL: s.url, TrustedMaterial: s.tr, KeyIDs: []string{watched}, OnFinding: c.add}, state0)
	if err != nil || len(c.fs) != 1 || c.fs[0].LogIndex != idx || c.fs[0].KeyID != watched || !c.fs[0].Alert || res.Watched != 1 {
		t.Fatalf("%+v %+v %v", res, c.fs, err)
	}
	rel := s.released(t, "", watched)
	if err := rel.AddBundle(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	c = &collector{}
	res, err = Run(ctx, Options{LogURL: s.url, TrustedMaterial: s.tr, KeyIDs: []string{watched}, Released: rel, OnFinding: c.add}, state0)
	if err != nil || len(c.fs) != 0 || res.Released != 1 {
		t.Fatalf("released: %+v %+v %v", res, c.fs, err)
	}
}

// TestStackMonitorEntryInProvenTree serves the first five entries of the
// real log with one replaced, under a checkpoint of their tree signed with
// the stack's own log key: the tree proofs pass and the entry itself is
// what fails (or is noted, for an unknown kind).
func TestStackMonitorEntryInProvenTree(t *testing.T) {
	s := newStackLog(t)
	s.waitSize(t, 5)
	data, err := os.ReadFile(filepath.Join(s.storage, "tile", "entries", "000"))
	if err != nil {
		// The first tile is still partial: read at least 5 of its entries.
		matches, _ := filepath.Glob(filepath.Join(s.storage, "tile", "entries", "000.p", "*"))
		best := 0
		for _, m := range matches {
			if n, _ := strconv.Atoi(filepath.Base(m)); n > best {
				if d, err := os.ReadFile(m); err == nil {
					best, data = n, d
				}
			}
		}
		if best < 5 {
			t.Fatalf("no entry bundle of 5 entries in %s", s.storage)
		}
	}
	real, err := splitBundle(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, entry string
		want        error
	}{
		{"malformed", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"}}}}`, ErrEntry},
		{"unknown kind", `{"kind":"rekord","apiVersion":"0.0.1","spec":{}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := append([][]byte{}, real[:5]...)
			entries[3] = []byte(tc.entry)
			var bundle, hashTile []byte
			rng := rangeFactory.NewEmptyRange(0)
			for _, e := range entries {
				bundle = append(bundle, byte(len(e)>>8), byte(len(e)))
				bundle = append(bundle, e...)
				hashTile = append(hashTile, rfc6962.DefaultHasher.HashLeaf(e)...)
				if err := rng.Append(rfc6962.DefaultHasher.HashLeaf(e), nil); err != nil {
					t.Fatal(err)
				}
			}
			rootHash, err := rng.GetRootHash(nil)
			if err != nil {
				t.Fatal(err)
			}
			cp := s.forgeCheckpoint(t, 5, rootHash)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/checkpoint":
					_, _ = w.Write([]byte(cp))
				case "/tile/entries/000.p/5":
					_, _ = w.Write(bundle)
				case "/tile/0/000.p/5":
					_, _ = w.Write(hashTile)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			zero := uint64(0)
			c := &collector{}
			_, err = Run(context.Background(), Options{LogURL: srv.URL, TrustedMaterial: s.tr, Identities: s.matcher(t, "nobody@monitor.example.com"),
				StartIndex: &zero, OnFinding: c.add}, nil)
			if tc.want != nil {
				var ce *CheckError
				if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Check != "entry" || ce.Index != 3 {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || len(c.fs) != 1 || c.fs[0].Kind != KindUnknownEntry || c.fs[0].Alert || c.fs[0].LogIndex != 3 {
				t.Fatalf("%+v %v", c.fs, err)
			}
		})
	}
}

// TestStackMonitorGitHubSource signs with a GitHub Actions-shaped token
// from the stack's GitHub issuer (OIDC_ISSUER/github, which the stack's
// Fulcio turns into its GitHub certificate extensions), and the monitor's
// alert names the repository, commit and ref the certificate vouches for.
func TestStackMonitorGitHubSource(t *testing.T) {
	s := newStackLog(t)
	ghIssuer := s.env.OIDCIssuer + "/github"
	repo := "acme/" + strings.TrimSuffix(uniqueEmail(t, "notes"), "@monitor.example.com")
	const sha, ref = "0123456789abcdef0123456789abcdef01234567", "refs/tags/v1.2.0"
	workflowRef := repo + "/.github/workflows/release.yml@" + ref
	q := url.Values{"sub": {"repo:" + repo + ":ref:" + ref}, "ttl": {"10m"}}
	for k, v := range map[string]string{
		"repository": repo, "repository_id": "4242", "repository_owner": "acme", "repository_owner_id": "42",
		"repository_visibility": "public", "sha": sha, "ref": ref, "event_name": "push", "workflow": "release",
		"job_workflow_ref": workflowRef, "job_workflow_sha": sha, "workflow_ref": workflowRef, "workflow_sha": sha,
		"runner_environment": "github-hosted", "run_id": "1", "run_attempt": "1",
	} {
		q.Set("claim."+k, v)
	}
	resp, err := http.Get(ghIssuer + "/token?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		msg := "the stack's OIDC issuer serves no " + ghIssuer + " token: " + resp.Status
		if os.Getenv(sigstack.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx := context.Background()
	res, _, err := s.run(t, ctx, s.url, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	state0 := res.State

	it, err := sign.IDToken(ctx, sign.TokenOptions{Flag: strings.TrimSpace(string(tok))})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.NewSigstoreSigner(it, s.svc.FulcioURL)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := sign.Sign(ctx, statement(t, "github "+repo), sign.Options{Signer: signer, TransparencyLogs: s.svc.TransparencyLogs,
		TimestampAuthorities: s.svc.TimestampAuthorities, TrustedMaterial: s.tr})
	if err != nil {
		t.Fatal(err)
	}
	idx := sr.TlogEntries[0].LogIndex
	s.waitSize(t, uint64(idx)+1)

	san := "https://github.com/" + workflowRef
	for _, id := range []verify.Identity{
		{SAN: san, Issuer: ghIssuer},
		{SANRegexp: `^https://github\.com/` + regexp.QuoteMeta(repo) + `/.*`, Issuer: ghIssuer, GitHubWorkflowRepository: repo, GitHubWorkflowRef: ref},
	} {
		m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{id})
		if err != nil {
			t.Fatal(err)
		}
		_, fs, err := s.run(t, ctx, s.url, m, nil, state0, nil)
		want := attest.Source{Repository: "https://github.com/" + repo, Commit: sha, Ref: ref}
		if err != nil || len(fs) != 1 || fs[0].LogIndex != idx || !fs[0].Alert || fs[0].Identity != san || fs[0].Issuer != ghIssuer ||
			fs[0].Source == nil || *fs[0].Source != want {
			t.Fatalf("%+v: %+v %v", id, fs, err)
		}
	}
	// Another repository's workflow is not this publisher's.
	m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{{SANRegexp: `^https://github\.com/acme/.*`, Issuer: ghIssuer, GitHubWorkflowRepository: "acme/other"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, fs, err := s.run(t, ctx, s.url, m, nil, state0, nil); err != nil || len(fs) != 0 {
		t.Fatalf("other repository: %+v %v", fs, err)
	}
}
