package actiontest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/oidcissuer"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
)

// repoRoot is the action's directory: this repository's root.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// jobEnv is the environment a GitHub-hosted runner gives a job's steps,
// with the Go caches of this machine so that `go install` is warm.
func jobEnv(t *testing.T, workspace, temp string) []string {
	t.Helper()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CI=true",
		"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + workspace, "GITHUB_REPOSITORY=acme/notes-mcp",
		"GITHUB_REPOSITORY_OWNER=acme", "GITHUB_SERVER_URL=https://github.com", "GITHUB_API_URL=https://api.github.com",
		"GITHUB_SHA=0123456789abcdef0123456789abcdef01234567", "GITHUB_REF=refs/tags/v1.2.0", "GITHUB_REF_NAME=v1.2.0",
		"GITHUB_REF_TYPE=tag", "GITHUB_EVENT_NAME=push", "GITHUB_WORKFLOW=release", "GITHUB_WORKFLOW_REF=acme/notes-mcp/.github/workflows/release.yml@refs/tags/v1.2.0",
		"GITHUB_RUN_ID=1", "GITHUB_RUN_ATTEMPT=1", "GITHUB_JOB=sign", "GITHUB_ACTOR=release-bot",
		"RUNNER_TEMP=" + temp, "RUNNER_OS=Linux", "RUNNER_ARCH=X64", "GOTOOLCHAIN=local",
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		if v := strings.TrimSpace(string(out)); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// TestActionWithoutIDToken: a job without 'permissions: id-token: write'
// has no ACTIONS_ID_TOKEN_REQUEST_URL; the action fails in its first step
// with one line naming the permission, before building or signing.
func TestActionWithoutIDToken(t *testing.T) {

	ws, temp := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	r := &Runner{ActionDir: repoRoot(t), Workspace: ws, Temp: temp, Env: jobEnv(t, ws, temp),
		Inputs: map[string]string{"server": "node server.js"}, Stdout: &stdout, Stderr: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "step preflight") {
		t.Fatalf("run: %v, want a failure of step preflight", err)
	}
	lines := strings.Split(strings.TrimRight(stderr.String()+stdout.String(), "\n"), "\n")
	want := "::error title=mcpsign::no OIDC identity token in this job: add 'permissions: id-token: write' to the job (or the workflow) that uses the mcpsign action"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("output %q, want the one line %q", lines, want)
	}
	if strings.Join(res.Ran, ",") != "preflight" {
		t.Fatalf("ran %v, want only preflight", res.Ran)
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Fatalf("workspace not empty: %v", ents)
	}
}

// TestActionRefusesFlagLikeServer: a server input that mcpsign would read
// as a flag is refused in the first step.
func TestActionRefusesFlagLikeServer(t *testing.T) {
	ws, temp := t.TempDir(), t.TempDir()
	var stderr bytes.Buffer
	r := &Runner{ActionDir: repoRoot(t), Workspace: ws, Temp: temp,
		Env:    append(jobEnv(t, ws, temp), "ACTIONS_ID_TOKEN_REQUEST_URL=http://127.0.0.1:9/", "ACTIONS_ID_TOKEN_REQUEST_TOKEN=x"),
		Inputs: map[string]string{"server": "--force"}, Stderr: &stderr}
	_, err := r.Run(context.Background())
	if err == nil || !strings.Contains(stderr.String(), "input 'server' starts with '-'") {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
}

// actionsTokenServer answers ACTIONS_ID_TOKEN_REQUEST_URL as GitHub does,
// {"value": JWT}, the JWT minted by the stack's OIDC issuer at tokenURL
// with the query claims.
func actionsTokenServer(t *testing.T, tokenURL, requestToken string, claims url.Values) *httptest.Server {
	t.Helper()
	mint := func(ctx context.Context, audience string) (string, error) {
		u, err := url.Parse(tokenURL)
		if err != nil {
			return "", err
		}
		q := u.Query()
		for k, v := range claims {
			q[k] = v
		}
		q.Set("aud", audience)
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", err
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("stack token endpoint: %s", resp.Status)
		}
		return strings.TrimSpace(string(b)), nil
	}
	srv := httptest.NewServer(oidcissuer.ActionsTokenHandler(requestToken, mint))
	t.Cleanup(srv.Close)
	return srv
}

func npmPack(t *testing.T, dir string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("MCPSIGN_REQUIRE_E2E") == "1" {
			t.Fatal("npm not on PATH (MCPSIGN_REQUIRE_E2E=1)")
		}
		t.Skip("npm not on PATH")
	}
	src := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"package.json": `{"name":"@acme/notes-mcp","version":"1.2.0","files":["index.js"]}`,
		"index.js":     "console.log('notes')\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(npm, "pack", "--pack-destination", dir)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "npm_config_update_notifier=false", "npm_config_offline=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	return filepath.Join(dir, "acme-notes-mcp-1.2.0.tgz")
}

// stackRun is one run of the action against the local stack.
type stackRun struct {
	ws, mcpsign, server string
	res                 *Result
	ctx                 context.Context
}

// runOnStack runs action.yml as a runner would, with the ambient token
// endpoint answered by the stack's OIDC issuer at tokenURL for claims, the
// trust files of the stack in the workspace and an npm pack tarball as the
// package.
func runOnStack(t *testing.T, env *sigstack.Env, tokenURL string, claims url.Values) *stackRun {
	t.Helper()
	return runOnStackWith(t, env, tokenURL, claims, nil, nil)
}

// runOnStackWith is runOnStack with more inputs, and files (name →
// content) written in the workspace first.
func runOnStackWith(t *testing.T, env *sigstack.Env, tokenURL string, claims url.Values, inputs, files map[string]string) *stackRun {
	t.Helper()
	ws, temp := t.TempDir(), t.TempDir()
	tokens := actionsTokenServer(t, tokenURL, "runner-request-token", claims)
	for src, dst := range map[string]string{env.TrustedRoot: "trusted_root.json", env.SigningConfig: "signing_config.json"} {
		if err := os.WriteFile(filepath.Join(ws, dst), mustRead(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npmPack(t, ws)
	preinstall(t, temp)
	// The server: the example server of the mcpsign the action installs
	// (its install step puts it at RUNNER_TEMP/mcpsign-action/bin).
	mcpsign := filepath.Join(temp, "mcpsign-action", "bin", "mcpsign")
	server := mcpsign + " example-server"
	var out bytes.Buffer
	r := &Runner{
		ActionDir: repoRoot(t), Workspace: ws, Temp: temp,
		Env: append(jobEnv(t, ws, temp),
			"ACTIONS_ID_TOKEN_REQUEST_URL="+tokens.URL+"/_apis/distributedtask/token?api-version=2.0",
			"ACTIONS_ID_TOKEN_REQUEST_TOKEN=runner-request-token"),
		Inputs: map[string]string{
			"server": server, "package": "acme-notes-mcp-1.2.0.tgz", "output": "notes.sigstore.json",
			"signing-config": "signing_config.json", "trusted-root": "trusted_root.json",
		},
		Stdout: &out, Stderr: &out,
	}
	maps.Copy(r.Inputs, inputs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("action: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "runner-request-token") || strings.Contains(res.Summary, "eyJ") || strings.Contains(out.String(), "eyJ") {
		t.Fatal("a token was printed")
	}
	t.Logf("step summary:\n%s", res.Summary)
	return &stackRun{ws: ws, mcpsign: mcpsign, server: server, res: res, ctx: ctx}
}

// host runs a command line as a host would, in the workspace (which holds
// the bundle, the trusted root and the package), with the installed mcpsign.
func (sr *stackRun) host(cmdline string) ([]byte, error) {
	c := exec.CommandContext(sr.ctx, "bash", "--noprofile", "--norc", "-c", cmdline)
	c.Dir = sr.ws
	c.Env = []string{"PATH=" + filepath.Dir(sr.mcpsign) + ":" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return c.CombinedOutput()
}

// TestActionSignsOnStack runs the action with an e-mail identity, checks
// its outputs, and runs the commands its step summary tells hosts to run.
func TestActionSignsOnStack(t *testing.T) {
	env := sigstack.Require(t)
	if env.OIDCTokenURL == "" {
		t.Skip("the stack cannot mint tokens (no SIGSTACK_OIDC_TOKEN_URL)")
	}
	const email = "release-bot@example.com"
	sr := runOnStack(t, env, env.OIDCTokenURL, url.Values{"email": {email}, "ttl": {"10m"}})
	res, ws, server, hostRun := sr.res, sr.ws, sr.server, sr.host
	pkg := filepath.Join(ws, "acme-notes-mcp-1.2.0.tgz")
	if got := strings.Join(res.Ran, ","); got != "preflight,install,sign" {
		t.Fatalf("ran %s (setup-go must be skipped when Go is installed)", got)
	}

	bundlePath := filepath.Join(ws, "notes.sigstore.json")
	if res.Outputs["bundle-path"] != bundlePath {
		t.Fatalf("bundle-path %q, want %q", res.Outputs["bundle-path"], bundlePath)
	}
	if res.Outputs["certificate-identity"] != email || res.Outputs["certificate-oidc-issuer"] != env.OIDCIssuer {
		t.Fatalf("identity outputs %q %q", res.Outputs["certificate-identity"], res.Outputs["certificate-oidc-issuer"])
	}
	b, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct {
		DSSEEnvelope struct {
			Payload string `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(b, &bundle); err != nil {
		t.Fatal(err)
	}
	payload, err := base64.StdEncoding.DecodeString(bundle.DSSEEnvelope.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	if want := "sha256:" + hex.EncodeToString(sum[:]); res.Outputs["statement-digest"] != want {
		t.Fatalf("statement-digest %q, want %q", res.Outputs["statement-digest"], want)
	}
	if !bytes.Contains(payload, []byte(`pkg:npm/%40acme/notes-mcp@1.2.0`)) {
		t.Fatal("statement does not bind the package")
	}

	for _, want := range []string{"### mcpsign: signed `mcpsign-example", "| tools | 5, set `sha256:", "| identity | `" + email + "` |", "--package-file 'acme-notes-mcp-1.2.0.tgz'",
		"| package | `pkg:npm/%40acme/notes-mcp@1.2.0` |",
		"| source commit | `0123456789abcdef0123456789abcdef01234567` (statement only"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Summary)
		}
	}
	verifyCmd, proxyCmd := "", ""
	for _, l := range strings.Split(res.Summary, "\n") {
		switch {
		case strings.HasPrefix(l, "mcpsign verify "):
			verifyCmd = l
		case strings.HasPrefix(l, "mcpsign proxy "):
			proxyCmd = l
		}
	}
	if verifyCmd == "" || !strings.Contains(proxyCmd, "--lock ") || !strings.HasSuffix(proxyCmd, "-- "+server) {
		t.Fatalf("summary lacks the host commands:\n%s", res.Summary)
	}

	// The host's command, as printed, verifies.
	if o, err := hostRun(verifyCmd + " --format json"); err != nil {
		t.Fatalf("%s: %v\n%s", verifyCmd, err, o)
	}
	// The proxy line's flags are the proxy's: --help parses them all.
	if strings.Contains(proxyCmd, "--package-file") {
		t.Fatalf("proxy has no --package-file: %s", proxyCmd)
	}
	if o, err := hostRun(strings.Replace(proxyCmd, " -- ", " --help -- ", 1)); err != nil {
		t.Fatalf("%s: %v\n%s", proxyCmd, err, o)
	}
	// and refuses another signer: the printed identity is what decides.
	other := strings.Replace(verifyCmd, "'"+email+"'", "'someone@example.com'", 1)
	o, err := hostRun(other)
	t.Logf("other identity: %s", o)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(o), "FAILED at step identity") {
		t.Fatalf("verify with another identity: %v\n%s", err, o)
	}
	// and a tampered package.
	if err := os.WriteFile(pkg, append(mustRead(t, pkg), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = hostRun(verifyCmd)
	t.Logf("tampered package: %s", o)
	if err == nil || !strings.Contains(string(o), "FAILED at step statement: the statement does not bind the required package") {
		t.Fatalf("verify with a tampered package: %v\n%s", err, o)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
