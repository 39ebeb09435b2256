package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/monitor"
	"github.com/mcpsign/mcpsign/oauth"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// flagHints are the flags that fix the errors of libraries, which name no
// flags: the first hint whose error is in an error's chain is added to it.
var flagHints = []struct {
	err  error
	hint string
}{
	{atomicfile.ErrExists, "pass --force to replace it"},
	{verify.ErrNoTimestamp, "--require-tlog requires a log entry, --allow-current-time allows the current time"},
	{verify.ErrTimestampNoRoot, "pass it with --trusted-root"},
	{sign.ErrNoTrustedRoot, "pass --trusted-root"},
	{sign.ErrNoToken, "--identity-token takes a token or a file"},
	{sign.ErrTokenAudience, "--oidc-client-id sets the client ID"},
	{sign.ErrChainOrder, "--certificate-chain is the issuing intermediates in order, then the root"},
	{sign.ErrClaimMismatch, "the claims come from --source-repository, --source-commit and --source-ref, in GitHub Actions by default from GITHUB_REPOSITORY, GITHUB_SHA and GITHUB_REF"},
	{sign.ErrNoRootCA, "end --certificate-chain with the root certificate, or pass it with --ca-roots"},
	{trustroot.ErrNoTUFRoot, "pass its root.json once: mcpsign trustroot fetch --tuf-root FILE"},
	{mcpwire.ErrUnauthorized, "--oauth signs in if the server offers OAuth; or send a token with --header 'Authorization: Bearer ${TOKEN}', TOKEN set in the environment"},
	{mcpwire.ErrForbidden, "check the token sent with --header, and what it is allowed"},
	{oauth.ErrNoMetadata, "if it takes a token some other way, pass it with --header 'Authorization: Bearer ${TOKEN}'"},
	{oauth.ErrNoRegistration, "pass a client ID registered with it: --oauth-client-id"},
	{oauth.ErrDenied, "run again to sign in; --no-browser prints the URL to open by hand"},
	{oauth.ErrCacheDir, "--oauth-cache-dir takes a directory whose path has no symbolic link; without it the cache is under the user's config directory"},
	{source.ErrAddressRefused, "--allow-private-bundles fetches bundles from non-public addresses"},
	{netguard.ErrInsecureCredentials, "give the server's https:// URL: --allow-insecure-http never lets --header or --oauth over plain http"},
	{netguard.ErrInsecureURL, "give the server's https:// URL, or --allow-insecure-http to read it over plain http (never with --header or --oauth)"},
	{source.ErrNoResources, "take the snapshot with mcpsign snapshot --resources"},
	{source.ErrErasDiffer, "its publisher must serve the same under every protocol version; --protocol-version reads one version only, and a lock then speaks for that version's clients"},
	{monitor.ErrNoLog, "--trusted-root must hold the log whose URL host is the checkpoint origin; --log names where to read it"},
	{monitor.ErrNotLog, "--log is where the log is read: a Rekor v2 log's tiles (its read URL, or for a local stack its storage directory served over HTTP, not the write API; docs/MONITOR.md \"Monitoring a local stack\"), or a Rekor v1 URL"},
	{monitor.ErrUnverifiedRelease, "a bundle under --released must verify under the watched identity or key, its log entry proven (docs/MONITOR.md \"Released\"): remove that file, or find out who made it"},
	{monitor.ErrUnverifiedListing, "until the registry takes the listing down, or the server is no longer named by --registry-server, every run alerts on it again (docs/MONITOR.md)"},
	{monitor.ErrNoState, "run once with --init to start watching"},
	{monitor.ErrStateExists, "--init starts a new state: leave it out to go on from this one"},
	{monitor.ErrSeveralLogs, "name the one to watch with --log"},
	{auditevent.ErrUnwrittenLock, "audit verify --lock finds it"},
	{monitor.ErrNothingWatched, "give the identity flags (--certificate-identity or --certificate-identity-regexp, and --certificate-oidc-issuer), --key or --policy"},
}

// flagHint returns the flags that fix err, or "" when no flag does.
func flagHint(err error) string {
	var se *sign.ServiceError
	if errors.As(err, &se) {
		switch se.Service {
		case sign.ServiceRekor:
			return "the Rekor URL comes from --signing-config, or --rekor-url and --rekor-version"
		case sign.ServiceTSA:
			return "the timestamp authority URL comes from --signing-config, or --tsa-url"
		}
	}
	for _, h := range flagHints {
		if errors.Is(err, h.err) {
			return h.hint
		}
	}
	return ""
}

// withFlagHint returns err with the flags that fix it added in
// parentheses, or err itself when no flag fixes it or it says the hint
// already. A failed verification stays a *verify.StepError of the same
// step, with the hint in its reason.
func withFlagHint(err error) error {
	if err == nil {
		return nil
	}
	h := flagHint(err)
	if h == "" || strings.Contains(err.Error(), h) {
		return err
	}
	if se, ok := err.(*verify.StepError); ok {
		return &verify.StepError{Step: se.Step, Err: fmt.Errorf("%w (%s)", se.Err, h)}
	}
	return fmt.Errorf("%w (%s)", err, h)
}
