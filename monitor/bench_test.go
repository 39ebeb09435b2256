package monitor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/verify"
)

// fill logs n more entries (key method, Rekor v2 only), four at a time,
// for a benchmark over more than the few entries the other tests leave.
// MCPSIGN_MONITOR_BENCH_FILL=n asks for it.
func (s *stackLog) fill(b *testing.B, n int) {
	_, signer := newKeySigner(b)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 4)
	for i := range n {
		p := statement(b, "fill "+strconv.Itoa(i))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := sign.Sign(context.Background(), p, sign.Options{Signer: signer, TransparencyLogs: s.svc.TransparencyLogs, TrustedMaterial: s.tr})
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

// BenchmarkRange reads the whole local log and matches it against an
// identity that signed none of it (match: the prefilter skips what cannot
// be the identity's; parse-every-entry: every entry parsed and matched, as
// when every entry has the watched issuer), against reading the same tiles
// and proving their hashes alone (floor), in the same run.
// docs/PERFORMANCE.md.
func BenchmarkRange(b *testing.B) {
	s := newStackLogTB(b)
	if n, _ := strconv.Atoi(os.Getenv("MCPSIGN_MONITOR_BENCH_FILL")); n > 0 {
		s.fill(b, n)
	}
	client := &http.Client{Transport: fileTransport(s.storage)}
	exact := s.matcherTB(b, "nobody@monitor.example.com")
	re, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{{SANRegexp: `^https://github\.com/nobody/.*`, Issuer: s.env.OIDCIssuer}})
	if err != nil {
		b.Fatal(err)
	}
	zero := uint64(0)
	var entries uint64
	for _, bc := range []struct {
		name        string
		m           *verify.CertificateMatcher
		hashOnly    bool
		noPrefilter bool
	}{{"floor", exact, true, false}, {"match", exact, false, false}, {"match-regexp", re, false, false}, {"parse-every-entry", exact, false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(context.Background(), Options{LogURL: "http://log.invalid", TrustedMaterial: s.tr, Identities: bc.m,
					StartIndex: &zero, HTTPClient: client, hashOnly: bc.hashOnly, noPrefilter: bc.noPrefilter}, nil)
				if err != nil {
					b.Fatal(err)
				}
				entries = res.To
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(entries, 1)), "ns/entry")
		})
	}
	b.Logf("%d entries", entries)
}
