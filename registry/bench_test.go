package registry_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/cputime"
	"github.com/mcpsign/mcpsign/internal/testkit/registrylocal"
	"github.com/mcpsign/mcpsign/internal/testkit/rekorv1"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
)

// benchSet is what the benchmarks verify: entries pointing at four
// distinct good bundles, from memory (the bundles as local files would
// give them: no HTTPS).
type benchSet struct {
	f       *fixture
	tr      *root.TrustedRoot
	policy  string            // the policy file's text
	bundles map[string][]byte // bundle name → bundle
	names   []string          // bundle names, in entry order
	entries [][]byte
	subject map[string][]byte // bundle name → its first subject digest
}

// The logs the benchmarks' bundles are entered in.
const (
	rekor2 = "rekor2" // the local stack's Rekor v2 (the fixture's bundles)
	rekor1 = "rekor1" // the Rekor v1 of scripts/rekor-v1 (internal/testkit/rekorv1)
)

// newBenchSet makes n entries over four distinct bundles whose log entry
// is in log: the fixture's (Rekor v2), or four signed here through the
// stack's Fulcio and TSA into the Rekor v1 log, verified against the
// stack's trusted root with that log's key added.
func newBenchSet(b *testing.B, n int, log string) *benchSet {
	f := stack(b)
	env := sigstack.Require(b)
	trPath := env.TrustedRoot
	bundles := map[string][]byte{}
	versions := map[string]string{}
	switch log {
	case rekor2:
		for _, name := range []string{"good", "bench1", "bench2", "bench3"} {
			bundles[name], versions[name] = f.bundles[name], bundleSpecs[name].version
		}
	case rekor1:
		v1 := rekorv1.Require(b)
		trPath = v1.TrustedRoot(b, env.TrustedRoot, b.TempDir())
		svc, tr, err := registrylocal.StackServices(trPath, env.SigningConfig)
		if err != nil {
			b.Fatal(err)
		}
		svc.TransparencyLogs = []sign.RekorService{{URL: v1.URL, Version: 1}}
		for i := range 4 {
			name, version := fmt.Sprintf("v1-%d", i), fmt.Sprintf("4.0.%d", i)
			bun, err := signBundle(f.ghIssuer, svc, tr, bundleSpec{"acme/notes", version, []attest.Package{{PURL: "pkg:npm/%40acme/notes@" + version}}, ""})
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(string(bun), `"kindVersion"`) || !strings.Contains(string(bun), `"inclusionPromise"`) {
				b.Fatalf("%s: not a Rekor v1 entry (no inclusion promise)", name)
			}
			bundles[name], versions[name] = bun, version
		}
	}
	tr, err := trustroot.LoadTrustedRootFile(trPath)
	if err != nil {
		b.Fatal(err)
	}
	s := &benchSet{f: f, tr: tr, bundles: bundles, subject: map[string][]byte{},
		policy: fmt.Sprintf(`{"kind":"mcpsign.policy","policyVersion":1,"trust":{"trustedRoot":%q},
"servers":{%q:{"repositorySigner":{"issuer":%q,"owner":"acme","repositories":["notes"]}}}}`, trPath, anonNS+"/*", f.ghIssuer)}
	good := slices.Sorted(maps.Keys(bundles))
	for _, name := range good {
		s.subject[name] = firstSubject(b, bundles[name])
	}
	for i := range n {
		name := good[i%len(good)]
		s.names = append(s.names, name)
		s.entries = append(s.entries, fmt.Appendf(nil, `{"name":%q,"description":"bench","version":%q,"repository":{"url":"https://github.com/acme/notes","source":"github"},`+
			`"packages":[{"registryType":"npm","identifier":"@acme/notes","version":%q,"transport":{"type":"stdio"}}],"_meta":{%q:{%q:{"bundleUrl":%q,"bundleDigest":%q}}}}`,
			fmt.Sprintf("%s/bench-%d", anonNS, i), versions[name], versions[name], registry.PublisherProvided, registry.AttestationMember,
			"https://bundles.example.com/"+name, digestOf(bundles[name])))
	}
	return s
}

func firstSubject(b *testing.B, bun []byte) []byte {
	var env struct {
		DSSEEnvelope struct{ Payload string } `json:"dsseEnvelope"`
	}
	json.Unmarshal(bun, &env)
	payload, _ := base64.StdEncoding.DecodeString(env.DSSEEnvelope.Payload)
	var st struct {
		Subject []struct{ Digest map[string]string } `json:"subject"`
	}
	if err := json.Unmarshal(payload, &st); err != nil || len(st.Subject) == 0 {
		b.Fatalf("statement: %v", err)
	}
	d, _ := hex.DecodeString(st.Subject[0].Digest["sha256"])
	return d
}

// verifier is a registry verifier reading the bundles from memory.
func (s *benchSet) verifier(b *testing.B) *registry.Verifier {
	p := filepath.Join(b.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(s.policy), 0o644); err != nil {
		b.Fatal(err)
	}
	pf, err := policy.Read(p)
	if err != nil {
		b.Fatal(err)
	}
	byURL := map[string][]byte{}
	for name, bun := range s.bundles {
		byURL["https://bundles.example.com/"+name] = bun
	}
	v, err := registry.New(registry.Options{Policy: pf, Fetch: func(_ context.Context, p registry.Pointer) ([]byte, error) {
		return byURL[p.URL], nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func (s *benchSet) run(b *testing.B, v *registry.Verifier, workers int) {
	list := func(fn func([]byte) error) error {
		for _, e := range s.entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	sum, err := v.Run(context.Background(), list, registry.RunOptions{Workers: workers})
	if err != nil || sum.Verified != len(s.entries) {
		b.Fatalf("%+v %v", sum, err)
	}
}

// plainLoop is the peer: a loop of sigstore-go parse and verify calls
// over the same bundles, one verifier on the plain trusted root, with the
// policy cosign applies (SCT, log entry, observer timestamp, identity,
// artifact digest).
func (s *benchSet) plainLoop(b *testing.B) func(names []string) {
	v, err := sgverify.NewVerifier(s.tr, sgverify.WithSignedCertificateTimestamps(1), sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1))
	if err != nil {
		b.Fatal(err)
	}
	id, err := sgverify.NewShortCertificateIdentity(s.f.ghIssuer, "", "", `^https://github\.com/acme/notes/\.github/workflows/[^/@]+@.+$`)
	if err != nil {
		b.Fatal(err)
	}
	return func(names []string) {
		for _, name := range names {
			var bun bundle.Bundle
			if err := bun.UnmarshalJSON(s.bundles[name]); err != nil {
				b.Fatal(err)
			}
			if _, err := v.Verify(&bun, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", s.subject[name]), sgverify.WithCertificateIdentity(id))); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// floor is trustroot's per-bundle floor (docs/PERFORMANCE.md, "Trusted
// material and the chain cache") for one local bundle: the leaf under its
// CA, four P-256 checks (DSSE, SCT, the log's checkpoint, a signed entry
// timestamp: the same signature standing for each, as trustroot's
// BenchmarkFloor does) and the timestamp response parsed and checked once.
func (s *benchSet) floor(b *testing.B) func() {
	var bun bundle.Bundle
	if err := bun.UnmarshalJSON(s.bundles[s.names[0]]); err != nil {
		b.Fatal(err)
	}
	vc, _ := bun.VerificationContent()
	leaf := vc.Certificate()
	var issuer *x509.Certificate
	for _, ca := range s.tr.FulcioCertificateAuthorities() {
		f := ca.(*root.FulcioCertificateAuthority)
		issuer = f.Root
		if len(f.Intermediates) > 0 {
			issuer = f.Intermediates[0]
		}
	}
	env := bun.GetDsseEnvelope()
	sum := sha256.Sum256(dsse.PAE(env.GetPayloadType(), env.GetPayload()))
	sig := env.GetSignatures()[0].GetSig()
	key := leaf.PublicKey.(*ecdsa.PublicKey)
	tsr := bun.GetVerificationMaterial().GetTimestampVerificationData().GetRfc3161Timestamps()[0].GetSignedTimestamp()
	return func() {
		if err := leaf.CheckSignatureFrom(issuer); err != nil {
			b.Fatal(err)
		}
		for range 4 {
			if !ecdsa.VerifyASN1(key, sum[:], sig) {
				b.Fatal("DSSE")
			}
		}
		if _, err := timestamp.ParseResponse(tsr); err != nil {
			b.Fatal(err)
		}
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkRegistryVerify verifies 64 entries per iteration six ways,
// interleaved so that each sees the same load: the plain sigstore-go loop
// (and, as the control of what two cores give, the same loop split over
// two goroutines; and the loop at GOMAXPROCS 1, the one-core peer),
// mcpsign registry's Run on one core (GOMAXPROCS 1) and on two, and the
// floor work for as many bundles. It reports the medians per entry and
// the ratios docs/PERFORMANCE.md gives: throughput over the plain loop
// (two cores), one core ÷ floor, and two cores' speed-up over one. Its
// sub-benchmarks are the bundles' log: rekor2 (the local stack's) and
// rekor1 (scripts/rekor-v1's, skipped when it does not run).
func BenchmarkRegistryVerify(b *testing.B) {
	for _, log := range []string{rekor2, rekor1} {
		b.Run(log, func(b *testing.B) { benchRegistryVerify(b, log) })
	}
}

func benchRegistryVerify(b *testing.B, log string) {
	s := newBenchSet(b, 64, log)
	v := s.verifier(b)
	plain, floor := s.plainLoop(b), s.floor(b)
	s.run(b, v, 1) // warm: trust loaded, chain cache filled
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	var tp, tp1, tp2, t1, t2, tf []time.Duration
	var cp1, c1, cf []time.Duration // CPU time of the one-core runs and the floor
	half := len(s.names) / 2
	for b.Loop() {
		t0 := time.Now()
		plain(s.names)
		tp = append(tp, time.Since(t0))
		// The control: the plain loop split over two goroutines, with
		// nothing shared between them but the verifier: what two cores
		// give on this machine now.
		t0 = time.Now()
		var wg sync.WaitGroup
		for _, part := range [][]string{s.names[:half], s.names[half:]} {
			wg.Add(1)
			go func() { defer wg.Done(); plain(part) }()
		}
		wg.Wait()
		tp2 = append(tp2, time.Since(t0))
		runtime.GOMAXPROCS(1)
		// The plain loop on one core too (its collector's work on the same
		// core, as the registry's one-core run has it): the one-core peer.
		t0, c0 := time.Now(), cputime.Self()
		plain(s.names)
		tp1, cp1 = append(tp1, time.Since(t0)), append(cp1, cputime.Self()-c0)
		t0, c0 = time.Now(), cputime.Self()
		s.run(b, v, 1)
		t1, c1 = append(t1, time.Since(t0)), append(c1, cputime.Self()-c0)
		runtime.GOMAXPROCS(2)
		t0 = time.Now()
		s.run(b, v, 2)
		t2 = append(t2, time.Since(t0))
		runtime.GOMAXPROCS(1)
		t0, c0 = time.Now(), cputime.Self()
		for range s.entries {
			floor()
		}
		tf, cf = append(tf, time.Since(t0)), append(cf, cputime.Self()-c0)
		runtime.GOMAXPROCS(procs)
	}
	n := float64(len(s.entries))
	mp, mp1, m1, m2, mf := median(tp), median(tp1), median(t1), median(t2), median(tf)
	b.ReportMetric(float64(mp)/float64(median(tp2)), "plain-2goroutines-speedup")
	b.ReportMetric(float64(mp.Microseconds())/n, "plain-µs/entry")
	b.ReportMetric(float64(m1.Microseconds())/n, "1core-µs/entry")
	b.ReportMetric(float64(m2.Microseconds())/n, "2cores-µs/entry")
	b.ReportMetric(float64(mf.Microseconds())/n, "floor-µs/bundle")
	b.ReportMetric(float64(mp)/float64(m2), "x-plain(2cores)")
	b.ReportMetric(float64(mp1.Microseconds())/n, "plain1core-µs/entry")
	b.ReportMetric(float64(mp1)/float64(m1), "x-plain(1core)")
	b.ReportMetric(float64(m1)/float64(mf), "1core/floor")
	// The peer's own distance from the floor: what sigstore-go's parse
	// and Verify alone cost per bundle over it.
	b.ReportMetric(float64(mp1)/float64(mf), "plain1core/floor")
	b.ReportMetric(float64(m1)/float64(m2), "2cores-speedup")
	// The same one-core comparisons in CPU time, which the machine's
	// other work does not lengthen (on a shared machine the wall times of
	// a GOMAXPROCS 1 run wait for the core): per entry, and the ratios.
	mcp1, mc1, mcf := median(cp1), median(c1), median(cf)
	b.ReportMetric(float64(mc1.Microseconds())/n, "cpu-1core-µs/entry")
	b.ReportMetric(float64(mcp1.Microseconds())/n, "cpu-plain1core-µs/entry")
	b.ReportMetric(float64(mcf.Microseconds())/n, "cpu-floor-µs/bundle")
	b.ReportMetric(float64(mcp1)/float64(mc1), "cpu-x-plain(1core)")
	b.ReportMetric(float64(mc1)/float64(mcf), "cpu-1core/floor")
	b.ReportMetric(float64(mcp1)/float64(mcf), "cpu-plain1core/floor")
}

// BenchmarkRegistryEntry verifies the entries one after another in this
// goroutine (VerifyEntry, no Run), for a CPU profile of one entry's work:
//
//	go test ./registry -run X -bench RegistryEntry/rekor2 -cpu 1 -cpuprofile cpu.out
//
// and the same bundles through the plain sigstore-go loop, the peer.
func BenchmarkRegistryEntry(b *testing.B) {
	for _, log := range []string{rekor2, rekor1} {
		b.Run(log, func(b *testing.B) {
			s := newBenchSet(b, 64, log)
			v := s.verifier(b)
			s.run(b, v, 1) // warm
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if r := v.VerifyEntry(ctx, s.entries[i%len(s.entries)]); !r.Verified {
					b.Fatalf("%+v", r)
				}
				i++
			}
		})
		b.Run(log+"-plain", func(b *testing.B) {
			s := newBenchSet(b, 64, log)
			plain := s.plainLoop(b)
			i := 0
			for b.Loop() {
				plain(s.names[i%len(s.names) : i%len(s.names)+1])
				i++
			}
		})
	}
}

// BenchmarkRegistryMemory runs N entries (N the sub-benchmark's name:
// 1000 and 10000, or the list in MCPSIGN_REGISTRY_BENCH_ENTRIES, such as
// "1000,100000") through Run, each a full verification of a bundle from
// memory, and reports the peak heap in use sampled during the run (what
// the collector had not yet freed included) and the largest live heap
// (after a collection, once a second): flat in N.
func BenchmarkRegistryMemory(b *testing.B) {
	sizes := []int{1000, 10000}
	if e := os.Getenv("MCPSIGN_REGISTRY_BENCH_ENTRIES"); e != "" {
		sizes = nil
		for _, f := range strings.Split(e, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := newBenchSet(b, 4, rekor2)
			v := s.verifier(b)
			entries := s.entries
			list := func(fn func([]byte) error) error {
				for i := range n {
					// Each a name of its own: a name and version listed
					// twice is refused (docs/REGISTRY.md, "Duplicates").
					e := bytes.Replace(entries[i%len(entries)], []byte("/bench-"), fmt.Appendf(nil, "/bench-%d-", i), 1)
					if err := fn(e); err != nil {
						return err
					}
				}
				return nil
			}
			for b.Loop() {
				runtime.GC()
				var peak, live uint64
				done := make(chan struct{})
				go func() {
					var ms runtime.MemStats
					t := time.NewTicker(20 * time.Millisecond)
					defer t.Stop()
					for i := 0; ; i++ {
						select {
						case <-done:
							return
						case <-t.C:
							if i%50 == 49 { // every second: what is live
								runtime.GC()
								runtime.ReadMemStats(&ms)
								live = max(live, ms.HeapAlloc)
								continue
							}
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						}
					}
				}()
				sum, err := v.Run(context.Background(), list, registry.RunOptions{})
				close(done)
				if err != nil || sum.Verified != n {
					b.Fatalf("%+v %v", sum, err)
				}
				b.ReportMetric(float64(live)/(1<<20), "live-heap-MiB")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			}
		})
	}
}
