package monitor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/internal/testkit/rekorv1"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
)

// These tests read a real Rekor v1 log on 127.0.0.1: rekor-server v1.5.4
// on Trillian and MariaDB (scripts/rekor-v1/rekor-v1.sh start;
// internal/testkit/rekorv1), with the local Sigstore stack's Fulcio for
// the certificates. They skip without it unless MCPSIGN_REQUIRE_REKOR_V1=1.

type v1Stack struct {
	*stackLog
	url string
	// tm is the stack's trusted root with the Rekor v1 log's key.
	tm  root.TrustedMaterial
	svc sign.Services
}

func newV1Stack(t *testing.T) *v1Stack {
	t.Helper()
	v1 := rekorv1.Require(t)
	s := newStackLog(t)
	tm, err := trustroot.LoadTrustedRootFile(v1.TrustedRoot(t, s.env.TrustedRoot, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	svc := s.svc
	svc.TransparencyLogs = []sign.RekorService{{URL: v1.URL, Version: 1}}
	return &v1Stack{stackLog: s, url: v1.URL, tm: tm, svc: svc}
}

// sign signs a fresh statement as email into the Rekor v1 log and returns
// the bundle and the entry's log index.
func (v *v1Stack) sign(t *testing.T, email string) ([]byte, int64) {
	t.Helper()
	tok, err := sign.IDToken(context.Background(), sign.TokenOptions{Flag: v.env.FreshToken(t, email)})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := sign.NewSigstoreSigner(tok, v.svc.FulcioURL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sign.Sign(context.Background(), statement(t, "v1 "+uniqueEmail(t, "n")), sign.Options{
		Signer: signer, TransparencyLogs: v.svc.TransparencyLogs, TrustedMaterial: v.tm,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Bundle, res.TlogEntries[0].LogIndex
}

func (v *v1Stack) run(t *testing.T, logURL string, email string, rel *Released, prev *State) (*Result, []Finding, error) {
	t.Helper()
	c := &collector{}
	res, err := Run(context.Background(), Options{LogURL: logURL, TrustedMaterial: v.tm, Identities: v.matcher(t, email), Released: rel, OnFinding: c.add}, prev)
	return res, c.fs, err
}

func TestRekorV1Monitor(t *testing.T) {
	v := newV1Stack(t)
	watched, other := uniqueEmail(t, "publisher"), uniqueEmail(t, "someone")
	res, fs, err := v.run(t, v.url, watched, nil, nil)
	if err != nil || len(fs) != 0 || res.State == nil || !strings.Contains(res.Log, " - ") {
		t.Fatalf("first run: %+v %+v %v", res, fs, err)
	}
	state0 := res.State
	released, _ := v.sign(t, watched)
	_, rogue := v.sign(t, watched)
	_, _ = v.sign(t, other)
	rel := mustReleased(t, v.tm, watched, v.env.OIDCIssuer)
	if err := rel.AddBundle(context.Background(), released); err != nil {
		t.Fatal(err)
	}
	res, fs, err = v.run(t, v.url, watched, rel, state0)
	if err != nil || len(fs) != 1 || fs[0].LogIndex != rogue || !fs[0].Alert || fs[0].Kind != KindUnreleased || fs[0].Identity != watched ||
		fs[0].IntegratedTime == nil || time.Since(*fs[0].IntegratedTime) > time.Hour || !strings.HasPrefix(fs[0].Digest, "sha256:") || !strings.HasPrefix(fs[0].EntryKind, "dsse ") && !strings.HasPrefix(fs[0].EntryKind, "intoto ") && !strings.HasPrefix(fs[0].EntryKind, "hashedrekord ") {
		t.Fatalf("%+v %+v %v", res, fs, err)
	}
	if res.Watched != 2 || res.Released != 1 || res.State == nil || res.From != mustSize(t, state0) {
		t.Fatalf("result %+v", res)
	}
	// The next run reads what came after.
	res2, fs2, err := v.run(t, v.url, watched, rel, res.State)
	if err != nil || len(fs2) != 0 || res2.From != res.To {
		t.Fatalf("second run: %+v %+v %v", res2, fs2, err)
	}

	// One more entry, so that a run from res.State needs a consistency
	// proof.
	stateMid := res.State
	_, _ = v.sign(t, other)

	t.Run("hostile log", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			corrupt    func(t *testing.T, body []byte) []byte
			want       error
			check      string
		}{
			{"checkpoint signature", "/api/v1/log", func(t *testing.T, b []byte) []byte {
				return editJSON(t, b, func(m map[string]any) {
					sth := m["signedTreeHead"].(string)
					i := strings.LastIndex(sth, " ") + 12
					m["signedTreeHead"] = sth[:i] + flipB64(sth[i]) + sth[i+1:]
				})
			}, ErrCheckpoint, "checkpoint"},
			{"entry not in the tree", "/api/v1/log/entries/retrieve", func(t *testing.T, b []byte) []byte {
				var es []map[string]map[string]any
				if err := json.Unmarshal(b, &es); err != nil {
					t.Fatal(err)
				}
				for _, le := range es {
					for _, e := range le {
						body, _ := base64.StdEncoding.DecodeString(e["body"].(string))
						e["body"] = base64.StdEncoding.EncodeToString(bytes.Replace(body, []byte(`"kind"`), []byte(` "kind"`), 1))
					}
				}
				out, _ := json.Marshal(es)
				return out
			}, ErrInclusion, "inclusion"},
			{"signed entry timestamp", "/api/v1/log/entries/retrieve", func(t *testing.T, b []byte) []byte {
				var es []map[string]map[string]any
				if err := json.Unmarshal(b, &es); err != nil {
					t.Fatal(err)
				}
				for _, le := range es {
					for _, e := range le {
						e["integratedTime"] = e["integratedTime"].(float64) - 3600
					}
				}
				out, _ := json.Marshal(es)
				return out
			}, ErrInclusion, "entry timestamp"},
			{"consistency proof", "/api/v1/log/proof", func(t *testing.T, b []byte) []byte {
				return editJSON(t, b, func(m map[string]any) {
					hs := m["hashes"].([]any)
					hs[0] = strings.Repeat("00", 32)
				})
			}, ErrInconsistent, "consistency"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				proxy := httptest.NewServer(corruptingV1(t, v.url, tc.path, tc.corrupt))
				defer proxy.Close()
				from := state0
				if tc.want == ErrInconsistent {
					from = stateMid
				}
				res, fs, err := v.run(t, proxy.URL, watched, rel, from)
				var ce *CheckError
				if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Check != tc.check || (res != nil && res.State != nil) {
					t.Fatalf("err %v, want %v at %s (%+v)", err, tc.want, tc.check, fs)
				}
				if tc.want == ErrInclusion && ce.Index < int64(mustSize(t, state0)) {
					t.Errorf("index %d", ce.Index)
				}
				if tc.want == ErrInconsistent && (len(fs) != 1 || fs[0].Kind != KindInconsistent) {
					t.Errorf("findings %+v", fs)
				}
			})
		}
	})

	t.Run("a stored checkpoint that is not the log's", func(t *testing.T) {
		bad := *state0
		bad.Checkpoint = strings.Replace(bad.Checkpoint, "\n"+strings.Split(bad.Checkpoint, "\n")[1]+"\n", "\n999999\n", 1)
		if _, _, err := v.run(t, v.url, watched, rel, &bad); !errors.Is(err, ErrState) {
			t.Fatalf("err %v", err)
		}
		other := *state0
		other.Log.Origin = "127.0.0.1 - 1"
		if _, _, err := v.run(t, v.url, watched, rel, &other); !errors.Is(err, ErrCheckpoint) && !errors.Is(err, ErrState) {
			t.Fatalf("other tree: err %v", err)
		}
	})
}

func flipB64(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func editJSON(t *testing.T, b []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// corruptingV1 forwards to the Rekor v1 log at upstream and corrupts the
// bodies of the responses to path.
func corruptingV1(t *testing.T, upstream, path string, corrupt func(*testing.T, []byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && r.URL.Path == path {
			body = corrupt(t, body)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	})
}
