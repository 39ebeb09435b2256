package actiontest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
)

// The GitHub Actions job of jobEnv, as its token claims say it.
const (
	ghRepo        = "acme/notes-mcp"
	ghSHA         = "0123456789abcdef0123456789abcdef01234567"
	ghRef         = "refs/tags/v1.2.0"
	ghWorkflowRef = ghRepo + "/.github/workflows/release.yml@" + ghRef
)

// githubClaims are the claims token.actions.githubusercontent.com puts in a
// job's token (those Fulcio's github-workflow type requires).
func githubClaims() url.Values {
	v := url.Values{"sub": {"repo:" + ghRepo + ":ref:" + ghRef}, "ttl": {"10m"}}
	for k, c := range map[string]string{
		"repository": ghRepo, "repository_id": "4242", "repository_owner": "acme", "repository_owner_id": "42",
		"repository_visibility": "public", "sha": ghSHA, "ref": ghRef, "event_name": "push", "workflow": "release",
		"job_workflow_ref": ghWorkflowRef, "job_workflow_sha": ghSHA, "workflow_ref": ghWorkflowRef, "workflow_sha": ghSHA,
		"runner_environment": "github-hosted", "run_id": "1", "run_attempt": "1",
	} {
		v.Set("claim."+k, c)
	}
	return v
}

// TestActionGitHubCertificate signs with a GitHub Actions-shaped token from
// the stack's second issuer (OIDC_ISSUER/github, Fulcio type
// github-workflow): the certificate carries the GitHub extensions, which
// `mcpsign verify --certificate-github-workflow-*` and cosign check.
func TestActionGitHubCertificate(t *testing.T) {
	env := sigstack.Require(t)
	ghIssuer := env.OIDCIssuer + "/github"
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(ghIssuer + "/.well-known/openid-configuration")
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		msg := "the stack's OIDC issuer serves no " + ghIssuer + " (a stack started before scripts/sigstore-local had it)"
		if os.Getenv(sigstack.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sr := runOnStack(t, env, ghIssuer+"/token", githubClaims())
	san := "https://github.com/" + ghWorkflowRef
	if got := sr.res.Outputs["certificate-identity"]; got != san {
		t.Fatalf("certificate-identity %q, want %q", got, san)
	}
	if got := sr.res.Outputs["certificate-oidc-issuer"]; got != ghIssuer {
		t.Fatalf("certificate-oidc-issuer %q, want %q", got, ghIssuer)
	}
	// The source the certificate vouches for, agreeing with the statement's
	// claims (from GITHUB_*), is in the summary.
	for _, want := range []string{
		"| source repository | `https://github.com/" + ghRepo + "` (certificate) |",
		"| source commit | `" + ghSHA + "` (certificate) |",
		"| source ref | `" + ghRef + "` (certificate) |",
	} {
		if !strings.Contains(sr.res.Summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}

	verifyCmd := ""
	for _, l := range strings.Split(sr.res.Summary, "\n") {
		if strings.HasPrefix(l, "mcpsign verify ") {
			verifyCmd = l
		}
	}
	gh := map[string]string{"repository": ghRepo, "sha": ghSHA, "ref": ghRef, "trigger": "push", "name": "release"}
	flags := func(override string, value string) string {
		var b strings.Builder
		for _, k := range []string{"repository", "sha", "ref", "trigger", "name"} {
			v := gh[k]
			if k == override {
				v = value
			}
			b.WriteString(" --certificate-github-workflow-" + k + " '" + v + "'")
		}
		return b.String()
	}
	if o, err := sr.host(verifyCmd + flags("", "")); err != nil {
		t.Fatalf("verify with the GitHub workflow checks: %v\n%s", err, o)
	}
	for _, k := range []string{"repository", "sha", "ref", "trigger", "name"} {
		o, err := sr.host(verifyCmd + flags(k, "other"))
		if err == nil || !strings.Contains(string(o), "FAILED at step identity") {
			t.Errorf("verify with another workflow %s: %v\n%s", k, err, o)
		}
	}

	// cosign checks the same extensions.
	if env.Bin == "" {
		t.Skip("no SIGSTACK_BIN: cannot run cosign")
	}
	var bundle struct {
		DSSEEnvelope struct{ Payload string } `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(mustRead(t, sr.res.Outputs["bundle-path"]), &bundle); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(bundle.DSSEEnvelope.Payload)
	var st struct {
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(payload, &st); err != nil || len(st.Subject) == 0 {
		t.Fatalf("statement: %v", err)
	}
	home := t.TempDir()
	cosign := func(override, value string) ([]byte, error) {
		args := []string{"verify-blob-attestation", "--new-bundle-format", "--bundle", sr.res.Outputs["bundle-path"],
			"--type", st.PredicateType, "--digest", st.Subject[0].Digest["sha256"], "--digestAlg", "sha256",
			"--trusted-root", filepath.Join(sr.ws, "trusted_root.json"), "--use-signed-timestamps",
			"--certificate-identity", san, "--certificate-oidc-issuer", ghIssuer}
		for _, k := range []string{"repository", "sha", "ref", "trigger", "name"} {
			v := gh[k]
			if k == override {
				v = value
			}
			args = append(args, "--certificate-github-workflow-"+k, v)
		}
		cmd := exec.CommandContext(sr.ctx, filepath.Join(env.Bin, "cosign"), args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=1")
		return cmd.CombinedOutput()
	}
	if o, err := cosign("", ""); err != nil || !strings.Contains(string(o), "Verified OK") {
		t.Fatalf("cosign: %v\n%s", err, o)
	}
	if o, err := cosign("repository", "acme/other"); err == nil {
		t.Fatalf("cosign verified another repository:\n%s", o)
	}
}
