package monitor

import (
	"context"
	"testing"

	"github.com/sigstore/rekor/pkg/util"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/transparency-dev/merkle/rfc6962"
)

// TestV1Checkpoint: a Rekor v1 signed tree head verifies under any of the
// trusted root's keys for its origin's host ("HOST - TREE_ID"), a key with
// no signature hash named as SHA-256, and not under another key or for
// another origin. No Rekor v1 stack needed: the checkpoints are signed
// with rekor's own util.CreateAndSignCheckpoint.
func TestV1Checkpoint(t *testing.T) {
	t.Parallel()
	const host = "v1.monitor.example"
	l1, l2, other := newFakeLog(t, host), newFakeLog(t, host), newFakeLog(t, host)
	noHash := l1.transparencyLog()
	noHash.SignatureHashFunc = 0
	sth := func(l *fakeLog, host string, tree int64) string {
		b, err := util.CreateAndSignCheckpoint(context.Background(), host, tree, 3, rfc6962.DefaultHasher.EmptyRoot(), l.signer)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	origin := host + " - 7"
	for _, c := range []struct {
		name   string
		logs   []*root.TransparencyLog
		sth    string
		origin string
		ok     bool
	}{
		{"the log key", []*root.TransparencyLog{l1.transparencyLog()}, sth(l1, host, 7), origin, true},
		{"no signature hash named", []*root.TransparencyLog{noHash}, sth(l1, host, 7), origin, true},
		{"the second key of two", []*root.TransparencyLog{l1.transparencyLog(), l2.transparencyLog()}, sth(l2, host, 7), origin, true},
		{"another key", []*root.TransparencyLog{l1.transparencyLog(), l2.transparencyLog()}, sth(other, host, 7), origin, false},
		{"another tree", []*root.TransparencyLog{l1.transparencyLog()}, sth(l1, host, 8), origin, false},
		{"not a checkpoint", []*root.TransparencyLog{l1.transparencyLog()}, "v1.monitor.example - 7\n3\n", origin, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := map[string]*root.TransparencyLog{}
			for _, tl := range c.logs {
				m[hexID(&fakeLog{id: tl.ID})] = tl
			}
			tm, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, m)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := v1Verifiers(tm, c.origin)
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&v1Log{verifiers: vs}).checkpoint(c.sth, c.origin)
			if (err == nil) != c.ok {
				t.Fatalf("checkpoint: %v, want ok %v", err, c.ok)
			}
			if c.ok && (got.Origin != c.origin || got.Size != 3) {
				t.Fatalf("checkpoint %+v", got)
			}
		})
	}
}
