package monitor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/cputime"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/verify"
)

// fill logs n more keyless entries, each by its own identity (so each
// has its own certificate, as in a public log), eight at a time, for a
// benchmark over more than the few entries the other tests leave.
// MCPSIGN_MONITOR_BENCH_FILL=n asks for it.
func (s *stackLog) fill(b *testing.B, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		p := statement(b, "fill "+strconv.Itoa(i))
		tok := s.env.FreshToken(b, "fill-"+strconv.Itoa(i)+"@bench.monitor.example.com")
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			it, err := sign.IDToken(context.Background(), sign.TokenOptions{Flag: tok})
			if err != nil {
				errs <- err
				return
			}
			signer, err := sign.NewSigstoreSigner(it, s.svc.FulcioURL)
			if err != nil {
				errs <- err
				return
			}
			_, err = sign.Sign(context.Background(), p, sign.Options{Signer: signer, TransparencyLogs: s.svc.TransparencyLogs, TimestampAuthorities: s.svc.TimestampAuthorities, TrustedMaterial: s.tr})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// fileTransport serves a tlog-tiles storage directory without a network,
// so that a benchmark measures the monitor, not loopback HTTP.
type fileTransport string

func (d fileTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	data, err := os.ReadFile(filepath.Join(string(d), filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/"))))
	if err != nil {
		return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(data)), ContentLength: int64(len(data)), Request: r}, nil
}

// BenchmarkRange reads the whole local log and matches it against
// watched signers that made none of it, against reading the same tiles and
// proving their hashes alone (floor), in the same run: an exact identity
// (its bytes are in no certificate), an identity regexp with a literal
// start, an identity whose issuer every entry has (each certificate's
// identity view is matched), an identity regexp and an issuer regexp that
// name no bytes (likewise), a watched key. docs/PERFORMANCE.md.
func BenchmarkRange(b *testing.B) {
	s := newStackLogTB(b)
	if n, _ := strconv.Atoi(os.Getenv("MCPSIGN_MONITOR_BENCH_FILL")); n > 0 {
		s.fill(b, n)
	}
	client := &http.Client{Transport: fileTransport(s.storage)}
	ident := func(id verify.Identity) *verify.CertificateMatcher {
		m, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{id})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	key, _ := newKeySigner(b)
	keyID, err := verify.KeyID(key.Public())
	if err != nil {
		b.Fatal(err)
	}
	zero := uint64(0)
	cases := []struct {
		name     string
		m        *verify.CertificateMatcher
		keys     []string
		hashOnly bool
	}{
		{"floor", nil, nil, true},
		{"exact-identity", ident(verify.Identity{SAN: "nobody@monitor.example.com", Issuer: s.env.OIDCIssuer}), nil, false},
		{"identity-regexp", ident(verify.Identity{SANRegexp: `^https://github\.com/nobody/.*`, Issuer: s.env.OIDCIssuer}), nil, false},
		{"shared-issuer", ident(verify.Identity{SANRegexp: `(?i)nobody@.*`, Issuer: s.env.OIDCIssuer}), nil, false},
		{"no-literal", ident(verify.Identity{SANRegexp: `(?i)nobody@.*`, IssuerRegexp: `.*`}), nil, false},
		{"key", nil, []string{keyID}, false},
	}
	// Each iteration runs every case once, in turn, so that all share the
	// machine's load; the fastest run of each is reported, by the wall
	// clock and by the process's CPU time (which a loaded machine
	// disturbs less: it does not count the time the process waits for a
	// core).
	best := make([]time.Duration, len(cases))
	bestCPU := make([]time.Duration, len(cases))
	var entries uint64
	b.ReportAllocs()
	for b.Loop() {
		for i, bc := range cases {
			runtime.GC()
			start, cpu := time.Now(), cputime.Self()
			res, err := Run(context.Background(), Options{LogURL: "http://log.invalid", TrustedMaterial: s.tr, Identities: bc.m, KeyIDs: bc.keys,
				StartIndex: &zero, HTTPClient: client, hashOnly: bc.hashOnly}, nil)
			d, dc := time.Since(start), cputime.Self()-cpu
			if err != nil {
				b.Fatal(err)
			}
			if res.Watched != 0 {
				b.Fatalf("%s: %d watched entries", bc.name, res.Watched)
			}
			entries = res.To
			if best[i] == 0 || d < best[i] {
				best[i] = d
			}
			if bestCPU[i] == 0 || dc < bestCPU[i] {
				bestCPU[i] = dc
			}
		}
	}
	for i, bc := range cases {
		b.ReportMetric(float64(best[i].Nanoseconds())/float64(max(entries, 1)), bc.name+"-ns/entry")
		if i > 0 {
			b.ReportMetric(float64(best[i])/float64(best[0]), bc.name+"/floor")
			if bestCPU[0] > 0 {
				b.ReportMetric(float64(bestCPU[i])/float64(bestCPU[0]), bc.name+"/floor-cpu")
			}
		}
	}
	b.Logf("%d entries", entries)
}
