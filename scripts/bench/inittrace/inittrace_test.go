package inittrace

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// TestMain: the shared mcpsign build is removed when the go test run ends
// (fixtures.Main starts the reaper of a shared build this process made).
func TestMain(m *testing.M) { fixtures.Main(m) }

// EnvBinary names a prebuilt mcpsign to check instead of building this
// tree's (to see what the test says of another build).
const EnvBinary = "MCPSIGN_INITTRACE_BIN"

// rounds: each program runs this many times, alternated; a package's time
// is its fastest, so that the load of the machine does not count.
const rounds = 7

// measurable is the time at start above which a package's initializer is
// taken to do work, in its fastest run. An initializer that copies a few
// pointers takes well under a microsecond; this leaves room for the page
// faults of touching its code and data on a loaded machine (the whole
// test suite runs beside it). Work that allocates fails at any time.
const measurable = 0.05 // ms

// allowed are the third-party packages that initialize with work in mcpsign
// and not in the minimal verifier, by import path prefix, each with why
// mcpsign links them. Keep it short: a package that the verify path does
// not need and that can be left out (by importing a narrower package) does
// not belong here.
var allowed = []allowance{
	{[]string{"github.com/ProtonMail/go-crypto/", "github.com/cloudflare/circl/", "compress/bzip2", "image/jpeg",
		"golang.org/x/sys/cpu", "github.com/theupdateframework/go-tuf/", "github.com/sassoftware/relic/",
		"github.com/sigstore/rekor/pkg/pki"},
		"signing: sigstore-go v1.3.0's pkg/sign imports rekor's pkg/pki, which links every Rekor v1 key type " +
			"(PGP: go-crypto's curves, its bzip2 and JPEG readers; minisign: blake2b; PKCS #7: relic; TUF: go-tuf)"},
	{[]string{"github.com/modelcontextprotocol/go-sdk/", "github.com/google/jsonschema-go/", "github.com/segmentio/"},
		"the MCP SDK (the transport of every command that talks to a server), its JSON Schema package and JSON codec"},
	{[]string{"github.com/sigstore/sigstore/pkg/oauthflow", "github.com/coreos/go-oidc/", "github.com/go-jose/go-jose/"},
		"keyless signing: the OIDC identity token (sign and sigstore-go's pkg/sign import oauthflow)"},
	{[]string{"github.com/hashicorp/go-retryablehttp"}, "signing: the Rekor v1 client of sigstore-go's pkg/sign"},
	{[]string{"github.com/gowebpki/jcs"}, "digest: RFC 8785 canonical JSON, on the verify path of a snapshot"},
	{[]string{"github.com/schollz/progressbar/", "github.com/mitchellh/colorstring"}, "the progress spinner of the commands that wait on a network"},
	{[]string{"github.com/spf13/cobra", "github.com/spf13/pflag"}, "the command line"},
	{[]string{"archive/tar", "archive/zip"}, "attest/pkgfile: npm tarballs, wheels and MCPB bundles for sign --package-file"},
	{[]string{"github.com/tailscale/hujson"}, "hosts: the JSONC configuration files of MCP hosts"},
	{[]string{"github.com/prometheus/client_golang/", "github.com/prometheus/client_model/", "github.com/prometheus/common/",
		"github.com/prometheus/procfs", "expvar", "runtime/metrics"},
		"serve and registry serve: /metrics through prometheus/client_golang, which builds its default registry, " +
			"its Go and process collectors' tables and procfs's at start (about 0.5 ms of every command: " +
			"docs/PERFORMANCE.md, \"What the services cost every command\")"},
}

type allowance struct {
	prefixes []string
	why      string
}

// allows says whether a covers pkg.
func (a allowance) allows(pkg string) bool {
	return slices.ContainsFunc(a.prefixes, func(pre string) bool { return pkg == pre || strings.HasPrefix(pkg, pre) })
}

// ours says whether pkg is one of mcpsign's packages (the command itself
// is "main").
func ours(pkg string) bool {
	return pkg == "main" || pkg == "github.com/mcpsign/mcpsign" || strings.HasPrefix(pkg, "github.com/mcpsign/mcpsign/")
}

// initRun is one package's initialization in one run.
type initRun struct {
	ms            float64
	bytes, allocs int64
}

var traceLine = regexp.MustCompile(`^init (\S+) @\S+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// parseTrace reads the init lines of a GODEBUG=inittrace=1 trace.
func parseTrace(stderr []byte) (map[string]initRun, error) {
	out := map[string]initRun{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("unexpected trace line %q", line)
		}
		ms, err1 := strconv.ParseFloat(m[2], 64)
		b, err2 := strconv.ParseInt(m[3], 10, 64)
		a, err3 := strconv.ParseInt(m[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("unexpected trace line %q", line)
		}
		out[m[1]] = initRun{ms, b, a}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no init trace in %q", stderr)
	}
	return out, sc.Err()
}

// fastest merges runs: per package its fastest time and fewest bytes and
// allocations.
func fastest(runs []map[string]initRun) map[string]initRun {
	out := map[string]initRun{}
	for _, r := range runs {
		for p, x := range r {
			if y, ok := out[p]; ok {
				x.ms, x.bytes, x.allocs = min(x.ms, y.ms), min(x.bytes, y.bytes), min(x.allocs, y.allocs)
			}
			out[p] = x
		}
	}
	return out
}

// findings are what a trace shows against the rules: the mcpsign packages
// that work at start, the other packages that do work the minimal verifier
// does not, and the allowlist entries that no package needed.
func findings(mcpsign, minimal map[string]initRun) (ourWork, extra, unused []string) {
	used := make([]bool, len(allowed))
	for _, p := range slices.Sorted(maps.Keys(mcpsign)) {
		x := mcpsign[p]
		work := x.allocs > 0 || x.bytes > 0 || x.ms >= measurable
		desc := fmt.Sprintf("%s: %.3f ms, %d bytes, %d allocs", p, x.ms, x.bytes, x.allocs)
		switch {
		case !work:
		case ours(p):
			ourWork = append(ourWork, desc)
		case hasKey(minimal, p):
			// sigstore-go's own dependencies: the minimal verifier pays them too.
		default:
			i := slices.IndexFunc(allowed, func(a allowance) bool { return a.allows(p) })
			if i < 0 {
				extra = append(extra, desc)
			} else {
				used[i] = true
			}
		}
	}
	for i, u := range used {
		if !u {
			unused = append(unused, strings.Join(allowed[i].prefixes, ", ")+" ("+allowed[i].why+")")
		}
	}
	return ourWork, extra, unused
}

func hasKey(m map[string]initRun, k string) bool { _, ok := m[k]; return ok }

// TestVerifyInitTrace builds the minimal verifier and gets mcpsign (built
// once per go test run, fixtures.BuildMcpsign), verifies a
// public-good bundle (sigstore-conformance happy-path-intoto-in-dsse-v3,
// offline) with each under GODEBUG=inittrace=1, and checks the rules of
// docs/PERFORMANCE.md, "Start-up: no work in package initializers".
func TestVerifyInitTrace(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the trace is read on Unix")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	minimal := filepath.Join(dir, "minverify")
	built := make(chan error, 1)
	go func() {
		cmd := exec.Command("go", "build", "-o", minimal, "./scripts/bench/minimal-verifier")
		cmd.Dir = root
		cmd.Env = fixtures.BuildEnv() // as mcpsign below is built: the two start alike
		b, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build ./scripts/bench/minimal-verifier: %w\n%s", err, b)
		}
		built <- err
	}()
	// mcpsign: the go test run's shared build (the difftest harness links
	// the same), unless EnvBinary names another.
	mcpsign := os.Getenv(EnvBinary)
	if mcpsign == "" {
		mcpsign = fixtures.BuildMcpsign(t)
	}
	if err := <-built; err != nil {
		t.Fatal(err)
	}

	c := filepath.Join(root, "testdata/sigstore-conformance/happy-path-intoto-in-dsse-v3")
	tr := filepath.Join(root, "testdata/sigstore-conformance/_shared/production_trusted_root.json")
	const id = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
	const issuer = "https://token.actions.githubusercontent.com"
	bundle, artifact := filepath.Join(c, "bundle.sigstore.json"), filepath.Join(c, "artifact")
	progs := [][]string{
		{mcpsign, "verify", "bundle", "--bundle", bundle, "--certificate-identity", id,
			"--certificate-oidc-issuer", issuer, "--trusted-root", tr, artifact},
		{minimal, bundle, tr, id, issuer, artifact},
	}
	runs := make([][]map[string]initRun, len(progs))
	for range rounds {
		for i, argv := range progs {
			cmd := exec.Command(argv[0], argv[1:]...)
			// Offline: no TUF, no home configuration.
			cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "HOME="+dir, "TUF_ROOT="+dir, "XDG_CACHE_HOME="+dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s%s", filepath.Base(argv[0]), err, stdout.Bytes(), stderr.Bytes())
			}
			r, err := parseTrace(stderr.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(argv[0]), err)
			}
			runs[i] = append(runs[i], r)
		}
	}
	ourWork, extra, unused := findings(fastest(runs[0]), fastest(runs[1]))
	for _, d := range ourWork {
		t.Errorf("an mcpsign package works at start (build it on first use, internal/lazy): %s", d)
	}
	for _, d := range extra {
		t.Errorf("a package the minimal verifier does not initialize works at start in mcpsign (leave it out, or add it to allowed with why): %s", d)
	}
	for _, d := range unused {
		t.Errorf("an allowlist entry no package needs any more (remove it): %s", d)
	}
}

// TestFindings: the rules on traces made up for them.
func TestFindings(t *testing.T) {
	mcpsign := map[string]initRun{
		"main":                                       {0, 0, 0},
		"github.com/mcpsign/mcpsign/pin":             {0.002, 0, 0},
		"github.com/mcpsign/mcpsign/policy":          {0.13, 59904, 864},
		"github.com/mcpsign/mcpsign/hosts":           {0.01, 16, 1},
		"github.com/asaskevich/govalidator":          {1.6, 951560, 6202},
		"github.com/example/slow":                    {0.5, 0, 0},
		"github.com/example/quiet":                   {0.001, 0, 0},
		"github.com/google/jsonschema-go/jsonschema": {0.19, 81240, 296},
	}
	minimal := map[string]initRun{"github.com/asaskevich/govalidator": {1.5, 951560, 6202}}
	ourWork, extra, unused := findings(mcpsign, minimal)
	want := []string{
		"github.com/mcpsign/mcpsign/hosts: 0.010 ms, 16 bytes, 1 allocs",
		"github.com/mcpsign/mcpsign/policy: 0.130 ms, 59904 bytes, 864 allocs",
	}
	if !slices.Equal(ourWork, want) {
		t.Errorf("ours = %q, want %q", ourWork, want)
	}
	if want := []string{"github.com/example/slow: 0.500 ms, 0 bytes, 0 allocs"}; !slices.Equal(extra, want) {
		t.Errorf("extra = %q, want %q", extra, want)
	}
	if len(unused) != len(allowed)-1 {
		t.Errorf("unused = %d entries, want all but the MCP SDK's (%d)", len(unused), len(allowed)-1)
	}
	if _, err := parseTrace([]byte("init x @1 ms, garbage\n")); err == nil {
		t.Error("a malformed trace line parsed")
	}
	r, err := parseTrace([]byte("OK\ninit github.com/a/b @21 ms, 7.4 ms clock, 951560 bytes, 6202 allocs\n"))
	if err != nil || r["github.com/a/b"] != (initRun{7.4, 951560, 6202}) {
		t.Errorf("parseTrace = %v, %v", r, err)
	}
}
