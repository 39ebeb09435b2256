package monitor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	client := &http.Client{Transport: fileTransport(s.storage)}
	m := s.matcherTB(b, "nobody@monitor.example.com")
	zero := uint64(0)
	var entries uint64
	for _, bc := range []struct {
		name        string
		hashOnly    bool
		noPrefilter bool
	}{{"floor", true, false}, {"match", false, false}, {"parse-every-entry", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(context.Background(), Options{LogURL: "http://log.invalid", TrustedMaterial: s.tr, Identities: m,
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
