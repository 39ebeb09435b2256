package main

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

// verifyFlags are the flag groups of a verify command.
type verifyFlags struct {
	src   options.SourceOptions
	out   options.OutputOptions
	trust options.TrustOptions
	id    options.IdentityOptions
	vo    options.VerifyOptions
	pol   options.PolicyOptions

	// decider decides under --policy, its trust loaded once for the
	// command (policyDecider).
	decider *policy.Decider
	// served are the addresses the bundle URL the server advertises may be
	// fetched from (source.ServedAddresses of the server, set by serveFrom);
	// the zero value allows public ones only.
	served source.AddressScope
}

// serveFrom sets the addresses the bundle URL the server of spec
// advertises may be fetched from (source.ServedAddresses,
// --allow-private-bundles).
func (f *verifyFlags) serveFrom(spec source.Spec) {
	f.served = source.ServedAddresses(spec, f.vo.AllowPrivateBundles)
}

// serveFromArgs is serveFrom for the SOURCE of args; a SOURCE that does
// not parse is reported when it is read, and leaves public addresses only.
func (f *verifyFlags) serveFromArgs(cmd *cobra.Command, args []string) {
	if spec, err := f.src.Spec(cmd, args); err == nil {
		f.serveFrom(spec)
	}
}

const verifyLongCommon = `
The checks, in order (docs/VERIFY.md); the first that fails is named and the
command exits 1:

  bundle     the Sigstore bundle parses (at most 16 MiB) and is v0.1 to v0.3
  signature  the signature over the DSSE envelope
  chain      the certificate chains to the trusted CAs at the verified
             signing time, allows code signing (digitalSignature; no EKU or
             codeSigning) and, for Fulcio, carries verified SCTs
  tlog       a transparency log entry for this signature, with an inclusion
             proof or a signed entry timestamp, from a trusted log
  time       a verified signing time: log integrated time or RFC 3161
             timestamp
  identity   the signer is the one the policy names (regular expressions
             match the whole value)
  statement  an in-toto Statement v1 with the mcpsign definitions predicate,
             one well-formed subject per definition, and predicate claims
             that agree with the certificate
  match      every definition the server serves now is signed with the same
             digest, none is missing, the instructions are the same

The per-definition table shows OK, CHANGED (with a diff against the signed
definition when the statement embeds it), EXTRA (served but not signed),
MISSING (signed but not served) and INVALID (cannot be digested). A partial
match never passes.

With --write-lock FILE a successful verification writes the lock (docs/LOCK.md)
with the approved definitions and the evidence: method, identity, issuer,
bundle digest and log entry. Nothing is written on failure.

SOURCE is what 'mcpsign digest' accepts: a snapshot file, a command line that
starts a stdio server, a Streamable HTTP URL, or the words after --.

Exit codes: 0 verified; 1 a check failed; 2 bad usage, an unreadable or
malformed bundle, a missing trusted root, or a server that could not be read.`

func newVerifyCmd(a *app) *cobra.Command {
	cmd := newVerifyMethodCmdFor(a, verify.MethodSigstore, "verify [sigstore|key|certificate|bundle] SOURCE --bundle FILE [flags]", true)
	cmd.Short = "Verify a server's definitions against a signed statement before approving it"
	cmd.Long = `Verify that what an MCP server serves now is exactly what a trusted publisher
signed, before a host first approves the server.

'mcpsign verify SOURCE' picks the method from the flags, as 'pin' and 'proxy'
do: --key selects 'verify key' (a signature by a plain key), --ca-roots
'verify certificate' (an enterprise x509 certificate), anything else 'verify
sigstore' (a keyless signature whose Fulcio certificate names the signer's
OIDC identity). 'verify bundle' verifies any Sigstore bundle over any
artifact.
` + verifyLongCommon
	cmd.AddCommand(
		newVerifyMethodCmd(a, verify.MethodSigstore, "sigstore SOURCE --bundle FILE [flags]"),
		newVerifyMethodCmd(a, verify.MethodKey, "key SOURCE --bundle FILE --key PUB.pem [flags]"),
		newVerifyMethodCmd(a, verify.MethodCertificate, "certificate SOURCE --bundle FILE --ca-roots FILE (--certificate-subject DN | SAN flags) [flags]"),
		newVerifyBundleCmd(a),
	)
	refuseMethodTypo(cmd, "verify", "verify a server command of that name")
	return cmd
}

func verifyExamples(m verify.Method) string {
	return map[verify.Method]string{
		verify.MethodSigstore: `  # A release signed in GitHub Actions, verified against a live stdio server
  mcpsign verify sigstore --bundle mcp-definitions.sigstore.json \
    --certificate-identity https://github.com/acme/notes-mcp/.github/workflows/release.yml@refs/tags/v1.2.0 \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com \
    --trusted-root trusted_root.json -- npx -y @acme/notes-mcp@1.2.0

  # Any tag of the repository's release workflow (anchored: the whole SAN must match)
  mcpsign verify server.snapshot.json --bundle mcp-definitions.sigstore.json \
    --certificate-identity-regexp 'https://github\.com/acme/notes-mcp/\.github/workflows/release\.yml@refs/tags/v.*' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com --trusted-root trusted_root.json

  # Approve and pin in one step, machine-readable report
  mcpsign verify https://mcp.example.com/mcp --bundle b.sigstore.json --certificate-identity alice@example.com \
    --certificate-oidc-issuer https://accounts.google.com --trusted-root trusted_root.json \
    --write-lock notes.mcpsign.lock --format json`,
		verify.MethodKey: `  # A bundle signed with 'mcpsign sign key', offline
  mcpsign verify key server.snapshot.json --bundle mcp-definitions.sigstore.json --key publisher.pub.pem

  # The same, also requiring its Rekor entry and a timestamp
  mcpsign verify key --bundle b.sigstore.json --key publisher.pub.pem \
    --require-tlog --require-timestamp --trusted-root trusted_root.json -- ./notes-server --stdio`,
		verify.MethodCertificate: `  # An enterprise certificate, checked at the time of its RFC 3161 timestamp
  mcpsign verify certificate server.snapshot.json --bundle b.sigstore.json \
    --ca-roots corp-root.pem --ca-intermediates corp-intermediates.pem \
    --certificate-subject 'CN=MCP Release Signing,O=Example Corp' --trusted-root trusted_root.json

  # No timestamp in the bundle: check the chain now (fails once the certificate expires)
  mcpsign verify certificate server.snapshot.json --bundle b.sigstore.json --ca-roots corp-root.pem \
    --certificate-email release@example.com --allow-current-time`,
	}[m]
}

func newVerifyMethodCmd(a *app, m verify.Method, use string) *cobra.Command {
	return newVerifyMethodCmdFor(a, m, use, false)
}

// newVerifyMethodCmdFor is newVerifyMethodCmd; with byFlags (bare 'mcpsign
// verify') the method is the one the flags select (methodOf), m the one its
// help describes.
func newVerifyMethodCmdFor(a *app, m verify.Method, use string, byFlags bool) *cobra.Command {
	f := &verifyFlags{}
	cmd := &cobra.Command{
		Use:     use,
		Example: verifyExamples(m),
		RunE: func(cmd *cobra.Command, args []string) error {
			if byFlags {
				return runVerify(cmd, a, f, methodOf(f), args)
			}
			return runVerify(cmd, a, f, m, args)
		},
	}
	switch m {
	case verify.MethodSigstore:
		cmd.Short = "Verify a keyless (Fulcio/Rekor) signature of a server's definitions"
		cmd.Long = `Verify a keyless Sigstore signature of a server's definitions: a Fulcio
certificate for the signer's OIDC identity, with SCTs, a transparency log entry
and a verified signing time, all required.

The signer must be named: --certificate-identity (or -regexp) and
--certificate-oidc-issuer (or -regexp); GitHub workflow claims may narrow it.
` + verifyLongCommon
	case verify.MethodKey:
		cmd.Short = "Verify a signature of a server's definitions by a public key"
		cmd.Long = `Verify a signature of a server's definitions by the publisher's key (--key, a
PEM public key). A transparency log entry and an RFC 3161 timestamp are checked
when required (--require-tlog, --require-timestamp, with --trusted-root).
` + verifyLongCommon
	case verify.MethodCertificate:
		cmd.Short = "Verify a signature of a server's definitions by an enterprise x509 certificate"
		cmd.Long = `Verify a signature of a server's definitions by an enterprise x509
certificate chaining to --ca-roots (through --ca-intermediates or the chain in
the bundle). The chain is checked at the verified signing time: an RFC 3161
timestamp (from a TSA of --trusted-root) or, with --require-tlog, the log's
signed entry timestamp; at the current time only with --allow-current-time.
The leaf must allow code signing (digitalSignature; no EKU or codeSigning) and
must not be a CA.

The signer is named by --certificate-subject (the subject DN exactly as
'openssl x509 -noout -subject -nameopt RFC2253' prints it) and/or the SAN flags
--certificate-email (e-mail SANs), --certificate-uri (URI SANs),
--certificate-dns (DNS SANs), --certificate-identity(-regexp) (e-mail or URI
SANs; never an otherName, which an enterprise CA's name constraints do not
cover).
` + verifyLongCommon
	}
	fs := cmd.Flags()
	f.src.AddFlags(fs)
	f.out.AddFlags(fs)
	f.trust.AddFlags(fs)
	f.id.AddFlags(fs)
	f.vo.AddFlags(fs, m, false)
	f.pol.AddFlags(fs)
	hide := func(names ...string) {
		for _, n := range names {
			_ = fs.MarkHidden(n)
		}
	}
	pki := []string{"certificate-subject", "certificate-email", "certificate-uri", "certificate-dns", "ca-roots", "ca-intermediates"}
	switch m {
	case verify.MethodSigstore:
		hide(append(pki, "key")...)
	case verify.MethodKey:
		hide(append(pki, "certificate-identity", "certificate-identity-regexp", "certificate-oidc-issuer",
			"certificate-oidc-issuer-regexp", "certificate-github-workflow-repository", "certificate-github-workflow-ref",
			"certificate-github-workflow-sha", "certificate-github-workflow-trigger", "certificate-github-workflow-name")...)
	case verify.MethodCertificate:
		hide("key")
	}
	return cmd
}

// verifyPolicy turns the flags into a policy and the trust it needs, and
// returns the verifier; generic is the 'verify bundle' command.
func verifyPolicy(cmd *cobra.Command, f *verifyFlags, m verify.Method, generic bool) (*verify.Verifier, error) {
	if len(f.vo.Bundles) > 1 {
		return nil, fmt.Errorf("--bundle given %d times: more than one bundle is for a --policy threshold", len(f.vo.Bundles))
	}
	if f.vo.Bundle == "" && !f.vo.BundleFromServer {
		if generic {
			return nil, errors.New("--bundle FILE is required: the Sigstore bundle to check")
		}
		return nil, errors.New("--bundle FILE is required: the Sigstore bundle of the signed statement (or --bundle-from-server: the one the server advertises)")
	}
	id, err := f.id.VerifyIdentity(cmd.Flags())
	if err != nil {
		return nil, err
	}
	key, err := f.id.PublicKey()
	if err != nil {
		return nil, err
	}
	if key != nil && m != verify.MethodKey {
		return nil, fmt.Errorf("--key selects the key method, not %s: run 'mcpsign verify key' (or 'mcpsign verify' with no method, which follows the flags as pin and proxy do)", m)
	}
	p := f.vo.Policy(m, id, key)
	if p.Packages, err = f.vo.PackageRequirements(); err != nil {
		return nil, err
	}
	if m == verify.MethodSigstore && !f.vo.RequireTlog {
		if fl := cmd.Flags().Lookup("require-tlog"); fl != nil && fl.Changed {
			return nil, errors.New("--require-tlog=false: a keyless certificate always needs its transparency log entry")
		}
	}
	// The identity first: a missing flag is named before a trusted root is
	// looked for (which may go to the network).
	if err := p.CheckIdentity(); err != nil {
		return nil, keySignedHint(f.vo.Bundle, m, identityFlagHint(m, err))
	}
	trust, err := verify.LoadTrust(cmd.Context(), f.trust.TrustSources, p)
	if err != nil {
		return nil, trustFlagHint(err, p.Method)
	}
	return verify.New(trust, p)
}

// identityFlagHint names the flags that give what the policy lacks, as
// cosign does.
func identityFlagHint(m verify.Method, err error) error {
	flags := ""
	sentinel := verify.ErrNoIdentity
	switch {
	case errors.Is(err, verify.ErrNoIssuer):
		flags, sentinel = "--certificate-oidc-issuer (or --certificate-oidc-issuer-regexp)", verify.ErrNoIssuer
	case errors.Is(err, verify.ErrNoIdentity) && m == verify.MethodCertificate:
		flags = "--certificate-subject, --certificate-email, --certificate-uri, --certificate-dns or --certificate-identity (or --certificate-identity-regexp)"
	case errors.Is(err, verify.ErrNoIdentity):
		flags = "--certificate-identity (or --certificate-identity-regexp)"
	default:
		return err
	}
	// Said with the flags, not the library's "in the policy": no policy
	// file may have been given.
	detail := strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
	return &flagError{msg: "missing " + flags + ": " + detail, err: err}
}

// flagError is an error said with the flags that fix it in place of the
// library's words; it still wraps the library's error.
type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// verifyGCPercent is the garbage collector's GOGC while a verify command
// runs: it verifies one bundle, bounded in size, and exits. At the default
// (100) the start-up allocations of the whole CLI plus one verification
// just cross the runtime's first 4 MB heap goal, and that one collection
// costs more CPU than the verification itself; at 400 the first goal is
// 16 MB. Memory stays proportional to the live heap (at most 5x).
const verifyGCPercent = 400

// onlyLocalFiles reports whether a verification with f reads nothing but
// local files before its source (which loadSpec watches for when it is a
// server) and writes nothing: a trusted root file, bundle files, no policy
// and no lock. Only then does it leave SIGINT and SIGTERM their default
// effect (interrupts, in main.go): a TUF update writes its cache, a bundle
// URL or a policy's bundles go to the network, a lock and its audit record
// are written, and each of those is stopped or finished on an interrupt.
func onlyLocalFiles(f *verifyFlags) bool {
	if f.trust.Root.TrustedRootPath == "" || f.pol.File != "" || f.vo.WriteLock != "" || f.vo.BundleFromServer {
		return false
	}
	for _, b := range f.vo.Bundles {
		if pinbundle.LocationOf(b, source.BundleOptions{}).URL != "" {
			return false
		}
	}
	return pinbundle.LocationOf(f.vo.Bundle, source.BundleOptions{}).URL == ""
}

// methodOf is the verification method the flags select: --key selects
// key, --ca-roots certificate, anything else sigstore (keyless).
func methodOf(f *verifyFlags) verify.Method {
	switch {
	case f.id.Key != "":
		return verify.MethodKey
	case f.trust.CARoots != "":
		return verify.MethodCertificate
	}
	return verify.MethodSigstore
}

// verifyInputs builds the verifier of the flags for method m and reads
// --bundle. With --format json an input error is a report too (exit 2):
// the returned inputErr writes it, for the caller's later input errors as
// well.
func verifyInputs(cmd *cobra.Command, a *app, f *verifyFlags, m verify.Method, generic, asJSON bool) (v *verify.Verifier, bundle *bundleInput, bundleJSON []byte, inputErr func(error) error, err error) {
	inputErr = reportInputError(a, asJSON)
	if v, err = verifyPolicy(cmd, f, m, generic); err != nil {
		return nil, nil, nil, inputErr, inputErr(err)
	}
	if bundle, err = newBundleInput(a, f); err != nil {
		return nil, nil, nil, inputErr, inputErr(err)
	}
	if bundleJSON, err = bundle.early(cmd.Context()); err != nil {
		return nil, nil, nil, inputErr, inputErr(err)
	}
	return v, bundle, bundleJSON, inputErr, nil
}

// reportInputError returns a function that reports an input error (exit
// 2) as a JSON report too under --format json.
func reportInputError(a *app, asJSON bool) func(error) error {
	return func(err error) error {
		if asJSON {
			_ = writeJSON(a.stdout, verify.NewReport(nil, err))
		}
		return err
	}
}

func runVerify(cmd *cobra.Command, a *app, f *verifyFlags, m verify.Method, args []string) error {
	f.serveFromArgs(cmd, args)
	debug.SetGCPercent(verifyGCPercent) // not restored: lowering it again would collect at once
	if !onlyLocalFiles(f) {
		a.interruptible()
	}
	if f.vo.WriteLock != "" {
		if err := auditevent.CheckLockOutputs(f.vo.WriteLock, f.vo.Force, f.vo.Audit.Log); err != nil {
			return fmt.Errorf("--write-lock: %w", err)
		}
	}
	if f.pol.File != "" {
		return runVerifyWithPolicy(cmd, a, f, args)
	}
	if err := checkNames(&f.pol); err != nil {
		return err
	}
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	v, bundle, bundleJSON, inputErr, err := verifyInputs(cmd, a, f, m, false, asJSON)
	if err != nil {
		return err
	}
	snap, err := loadSource(cmd, a, &f.src, args)
	if err != nil {
		return inputErr(err)
	}
	if bundle.FromServer {
		if bundleJSON, err = bundle.Read(cmd.Context(), snap); err != nil {
			return reportVerify(a, asJSON, nil, err)
		}
	}
	res, verr := v.Verify(cmd.Context(), bundleJSON, snap)
	verr = explainFailure(verr, bundleJSON, v)
	if err := reportVerified(cmd, a, f, asJSON, snap, res, [][]byte{bundleJSON}, verr, nil); err != nil {
		return err
	}
	missingHint(a.stderr, res, snap)
	return verifyExit(verr, !asJSON)
}

// reportVerified writes the lock of a verification that holds
// (--write-lock), carrying the bundles that proved it (proof, docs/LOCK.md),
// and the report, with more, when not nil, in the text report, and says
// where the lock was written.
func reportVerified(cmd *cobra.Command, a *app, f *verifyFlags, asJSON bool, snap *digest.Snapshot, res *verify.Result, proof [][]byte, verr error, more func(io.Writer)) error {
	if verr == nil && f.vo.WriteLock != "" {
		if err := writeVerifiedLock(cmd, f, snap, res, proof); err != nil {
			return err
		}
	}
	if err := writeVerifyReport(a, asJSON, res, verr); err != nil {
		return err
	}
	if !asJSON && more != nil {
		more(a.stdout)
	}
	if verr == nil && f.vo.WriteLock != "" && !asJSON {
		fmt.Fprintf(a.stdout, "\nlock written to %s\n", f.vo.WriteLock)
	}
	return nil
}

// missingHint says, when signed definitions are missing from a live
// listing, under which client capabilities it was read: a server may offer
// fewer definitions to a client that announces other capabilities than the
// signer's (docs/VERIFY.md).
func missingHint(w io.Writer, res *verify.Result, snap *digest.Snapshot) {
	if res == nil || snap.ClientCapabilities == nil {
		return
	}
	n := 0
	for _, r := range res.Definitions {
		if r.Status == verify.StatusMissing {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "mcpsign: hint: %d signed definition(s) missing; the server was read announcing client capabilities %s, and servers may offer fewer definitions to other capabilities: verify under the signer's (--client-capabilities)\n",
			n, textsafe.Escape(string(snap.ClientCapabilities)))
	}
}

// bundleHint follows a bundle that cannot be read.
const bundleHint = "pass --bundle with a Sigstore bundle v0.1-v0.3 JSON file, e.g. from 'mcpsign sign'"

// verifyExit maps a verification error to the exit code: 1 for a failed
// check, 2 for a bundle that is malformed, unsupported or too large (bad
// input), or any other error. reported says the text report, which names
// the failed step, is already on stdout: the exit is then silent.
func verifyExit(err error, reported bool) error {
	if err == nil {
		return nil
	}
	step, ok := verify.FailedStep(err)
	switch {
	case !ok:
		return err
	case step == verify.StepBundle && reported:
		return silentExit(exitError) // the report said it, with bundleHint
	case step == verify.StepBundle && errors.Is(err, pinbundle.ErrAdvertised):
		return withCode(exitError, err) // the server's bundle: no file to fix
	case step == verify.StepBundle:
		return withCode(exitError, fmt.Errorf("%w (%s)", err, bundleHint))
	case reported:
		return silentExit(exitFailed)
	}
	return failed(err)
}

// writeVerifiedLock hands the verified definitions, the evidence and the
// bundles that proved them (the lock's proof) to pin.
func writeVerifiedLock(cmd *cobra.Command, f *verifyFlags, snap *digest.Snapshot, res *verify.Result, proof [][]byte) error {
	ap := pinbundle.ApprovalOf(res)
	lock, err := pin.NewLock(snap, ap)
	if err != nil {
		return fmt.Errorf("--write-lock: %w", err)
	}
	if err := lock.SetProof(proof); err != nil {
		return fmt.Errorf("--write-lock: the lock's proof: %w", err)
	}
	rec := &auditevent.Recorder{Log: f.vo.Audit.Log, Before: auditevent.LockBefore(f.vo.Audit.Log, f.vo.WriteLock)}
	err = lock.WriteWith(cmd.Context(), f.vo.WriteLock, pin.WriteOptions{Overwrite: f.vo.Force, Before: rec.Record(cmd.Context())})
	if err != nil {
		return rec.Result(fmt.Errorf("--write-lock: %w", err))
	}
	return nil
}

func newVerifyBundleCmd(a *app) *cobra.Command {
	f := &verifyFlags{}
	cmd := &cobra.Command{
		Use:   "bundle --bundle FILE (--certificate-identity ID --certificate-oidc-issuer ISS | --key PUB.pem) [--trusted-root FILE] ARTIFACT|sha256:HEX",
		Short: "Verify any Sigstore bundle over an artifact or digest",
		Long: `Verify a Sigstore bundle (a message signature or a DSSE envelope) over an
artifact, given as a file or as ALG:HEX (sha256, sha384 or sha512): for a DSSE
envelope the artifact must be one of the statement's subjects, for a message
signature the signed message. This is a generic Sigstore check, the one the
sigstore-conformance suite drives; it binds no mcpsign subject names (use
'mcpsign verify' for definitions).

The argument is read as a digest only when it is ALG: and the right number of
hex digits and no file of that name exists.

With --certificate-identity (or -regexp) and --certificate-oidc-issuer (or
-regexp): a keyless certificate, SCTs, a log entry and a verified time are
required. With --key: a signature by that key, with a log entry unless
--require-tlog=false. With --ca-roots: an enterprise certificate.

Exit codes: 0 verified; 1 a check failed; 2 bad usage, an unreadable or
malformed bundle, or a missing trusted root.`,
		Example: `  # A keyless bundle over a file, offline
  mcpsign verify bundle --bundle a.txt.sigstore.json \
    --certificate-identity alice@example.com --certificate-oidc-issuer https://accounts.google.com \
    --trusted-root trusted_root.json a.txt

  # A DSSE bundle by one of its subject digests
  mcpsign verify bundle --bundle model.sig --certificate-identity stefanb@us.ibm.com \
    --certificate-oidc-issuer https://sigstore.verify.ibm.com/oauth2 --trusted-root trusted_root.json \
    sha256:61d4849d9d90076d6215f4d525f13d6574af8e3f67aef3e6f36fc40a14fdd226

  # A key-signed bundle
  mcpsign verify bundle --bundle b.sigstore.json --key publisher.pub.pem --trusted-root trusted_root.json artifact.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerifyBundle(cmd, a, f, args[0])
		},
	}
	fs := cmd.Flags()
	f.out.AddFlags(fs)
	f.trust.AddFlags(fs)
	f.id.AddFlags(fs)
	f.vo.AddFlags(fs, verify.MethodSigstore, true)
	return cmd
}

func runVerifyBundle(cmd *cobra.Command, a *app, f *verifyFlags, arg string) error {
	debug.SetGCPercent(verifyGCPercent) // not restored: lowering it again would collect at once
	if !onlyLocalFiles(f) {
		a.interruptible()
	}
	asJSON, err := f.out.JSON()
	if err != nil {
		return err
	}
	v, _, bundleJSON, inputErr, err := verifyInputs(cmd, a, f, methodOf(f), true, asJSON)
	if err != nil {
		return err
	}
	art, closeArt, err := verify.OpenArtifact(arg)
	if err != nil {
		return inputErr(err)
	}
	defer closeArt()
	res, verr := v.VerifyBundle(cmd.Context(), bundleJSON, art)
	return reportVerify(a, asJSON, res, explainFailure(verr, bundleJSON, v))
}
