package registrylocal

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/trustroot"
)

// Workflow is the GitHub Actions job a test bundle is signed as.
type Workflow struct {
	// Issuer is the local stack's GitHub-style issuer (OIDC_ISSUER/github,
	// Fulcio type github-workflow).
	Issuer string
	// Repository ran the job; WorkflowRepository holds the workflow (a
	// reusable one of another repository), "" for Repository's own.
	Repository, WorkflowRepository string
	// Version is the release: the statement's server version, tag vVERSION.
	Version string
}

// SignAsWorkflow signs the statement of testsnap.Example at w.Version,
// binding pkgs, with a token of the local stack's GitHub-style issuer
// carrying the claims GitHub Actions puts in a job's token, so that the
// certificate carries Fulcio's source repository extensions.
func SignAsWorkflow(ctx context.Context, w Workflow, svc sign.Services, tr root.TrustedMaterial, pkgs []attest.Package) ([]byte, error) {
	snap := testsnap.Example()
	snap.Server.Version = w.Version
	st, err := attest.Build(snap, attest.Options{Packages: pkgs})
	if err != nil {
		return nil, err
	}
	payload, err := st.Marshal()
	if err != nil {
		return nil, err
	}
	ref := "refs/tags/v" + w.Version
	wfRepo := w.WorkflowRepository
	if wfRepo == "" {
		wfRepo = w.Repository
	}
	wf := wfRepo + "/.github/workflows/release.yml@" + ref
	sha := strings.Repeat("ab", 20)
	q := url.Values{"sub": {"repo:" + w.Repository + ":ref:" + ref}, "ttl": {"10m"}, "aud": {"sigstore"}}
	for k, v := range map[string]string{
		"repository": w.Repository, "repository_id": "4242", "repository_owner": strings.Split(w.Repository, "/")[0], "repository_owner_id": "42",
		"repository_visibility": "public", "sha": sha, "ref": ref, "event_name": "push", "workflow": "release",
		"job_workflow_ref": wf, "job_workflow_sha": sha, "workflow_ref": wf, "workflow_sha": sha,
		"runner_environment": "github-hosted", "run_id": "1", "run_attempt": "1",
	} {
		q.Set("claim."+k, v)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.Issuer+"/token?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token: %s", resp.Status)
	}
	tok, err := sign.IDToken(ctx, sign.TokenOptions{Flag: strings.TrimSpace(string(raw))})
	if err != nil {
		return nil, err
	}
	signer, err := sign.NewSigstoreSigner(tok, svc.FulcioURL)
	if err != nil {
		return nil, err
	}
	res, err := sign.Sign(ctx, payload, sign.Options{Signer: signer, TransparencyLogs: svc.TransparencyLogs,
		TimestampAuthorities: svc.TimestampAuthorities, TrustedMaterial: tr})
	if err != nil {
		return nil, err
	}
	return res.Bundle, nil
}

// StackServices returns the local stack's trusted root and the services
// (Fulcio, Rekor, TSA) its signing config names, for SignAsWorkflow.
func StackServices(trustedRoot, signingConfig string) (sign.Services, *root.TrustedRoot, error) {
	tr, err := trustroot.LoadTrustedRootFile(trustedRoot)
	if err != nil {
		return sign.Services{}, nil, err
	}
	sc, err := root.NewSigningConfigFromPath(signingConfig)
	if err != nil {
		return sign.Services{}, nil, err
	}
	svc, err := sign.SelectServices(sc, sign.ServiceNeeds{Fulcio: true, Rekor: true, TSA: true}, time.Now())
	return svc, tr, err
}
