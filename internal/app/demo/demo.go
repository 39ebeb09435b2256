// Package demo is 'mcpsign demo': the whole story of mcpsign in a few
// seconds, offline, with no account. In a temporary directory, with a fresh
// key, it snapshots the example server, signs its definitions, verifies the
// live server against the signature, pins what was approved in a lock, runs
// an honest session through the enforcing proxy, then switches the server to
// its rug-pull mode and shows the proxy blocking it, the diff on screen.
//
// It drives the library packages the commands wire (source, attest, sign,
// verify, pin, proxy) and prints, for each step, the command a person would
// run to do the same.
package demo

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/pinbundle"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/sign"
	"github.com/mcpsign/mcpsign/source"
	"github.com/mcpsign/mcpsign/verify"
)

// Options configure Run.
type Options struct {
	// Out receives the narration.
	Out io.Writer
	// Server is the argv of the example server, without --mode (which Run
	// adds). Required: the CLI passes its own hidden "example-server"
	// command.
	Server []string
	// Dir, when set, is where the files go, and they are kept; otherwise a
	// temporary directory is made and removed at the end.
	Dir string
	// Force replaces the files of an earlier demo in Dir (demoFiles);
	// without it an existing one is an error. Other files are left alone.
	Force bool
	// Timeout bounds the whole demo. Zero means a minute.
	Timeout time.Duration
}

// demoFiles are the files a demo writes in its directory.
var demoFiles = []string{
	"publisher.key", "publisher.pub", "server.snapshot.json", "server.sigstore.json", "mcp.lock", "first-use.lock",
	"calls-honest.log", "calls-rugpull.log", "calls-list-changed.log",
}

// ErrUnexpected is wrapped by the error of a demo in which something did
// not behave as it should (a session was blocked that should not be, or a
// rug pull got through).
var ErrUnexpected = errors.New("the demo did not go as expected")

// demo is one run.
type demo struct {
	o       Options
	out     io.Writer
	dir     string
	ctx     context.Context
	step    int
	display string // how the narration names the server command
}

// Run runs the demo. It returns nil when everything behaved as expected.
func Run(ctx context.Context, o Options) (err error) {
	if len(o.Server) == 0 {
		return errors.New("demo: no example server command")
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	d := &demo{o: o, out: o.Out, ctx: ctx, display: "mcpsign example-server"}
	if d.out == nil {
		d.out = io.Discard
	}
	d.dir = o.Dir
	if d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "mcpsign-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(d.dir)
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	} else if o.Force {
		for _, name := range demoFiles {
			if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	start := time.Now()
	d.printf("mcpsign demo: sign what an MCP server tells models, pin it, and watch the proxy\n")
	d.printf("block a rug pull. Offline, no account; files in %s", d.dir)
	if o.Dir == "" {
		d.printf(" (removed at the end)")
	}
	d.printf(".\n")
	if err := d.run(); err != nil {
		d.printf("\n✗ %v\n", err)
		return err
	}
	d.printf("\nEverything behaved as expected (%.1f s). Next: docs/HOSTS.md shows how a host\n", time.Since(start).Seconds())
	d.printf("(Claude Desktop, VS Code) runs a server through 'mcpsign proxy'.\n")
	return nil
}

// Steps says what each numbered step of Run does, in order, for the help
// of 'mcpsign demo' (lines after the first continue the step). Run prints
// one heading for each.
var Steps = []string{
	"snapshot the server's definitions (tools, prompts, resource templates,\ninstructions) and digest each one;",
	"sign them as a publisher would, with a fresh key;",
	"verify the live server against the signature, as a host does before it\nfirst approves a server;",
	"pin what was approved in a lock file;",
	"start a server that carries its own bundle: a signed first use with only\nthe policy given;",
	"run an honest client session through 'mcpsign proxy';",
	"switch the server to its rug-pull release (a hidden instruction in a tool\ndescription, a new tool) and watch the proxy block it before any tool\ncall reaches it, with the diff, hidden characters shown;",
	"run a server that changes in the middle of a session (after its first\ntool call) and watch the proxy block the next call.",
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

func (d *demo) heading(title string) {
	d.step++
	d.printf("\n%d. %s\n", d.step, title)
}

// cmd shows the command a person would run.
func (d *demo) cmd(format string, args ...any) {
	d.printf("   $ "+format+"\n", args...)
}

func (d *demo) path(name string) string { return filepath.Join(d.dir, name) }

// server returns the example server's argv in mode.
func (d *demo) server(mode string, extra ...string) []string {
	argv := append([]string{}, d.o.Server...)
	return append(append(argv, "--mode", mode), extra...)
}

func (d *demo) run() error {
	// 1. The server and its definitions.
	d.heading("The server")
	snap, err := source.Load(d.ctx, source.Spec{Command: d.server("honest")}, source.Options{})
	if err != nil {
		return fmt.Errorf("listing the example server: %w", err)
	}
	res := digest.Compute(snap)
	if err := res.Err(); err != nil {
		return err
	}
	data, err := snap.MarshalFile()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(d.path("server.snapshot.json"), data, atomicfile.Options{}); err != nil {
		return err
	}
	d.cmd("mcpsign snapshot -o server.snapshot.json -- %s", d.display)
	d.printf("   %s %s serves %s and instructions:\n",
		textsafe.Escape(snap.Server.Name), textsafe.Escape(snap.Server.Version), res.CountText())
	d.printf("     tools: %s\n", strings.Join(keys(res, digest.KindTool), ", "))
	d.printf("   Each definition gets a digest (SHA-256 of its RFC 8785 form), e.g.\n")
	if def, ok := res.Lookup(digest.KindTool, "search_notes"); ok {
		d.printf("     tool/search_notes  %s\n", def.Digest)
	}

	// 2. The publisher signs.
	d.heading("The publisher signs the definitions")
	key, err := sign.GenerateKey(sign.ECDSAP256)
	if err != nil {
		return err
	}
	if err := d.writeKeys(key); err != nil {
		return err
	}
	st, err := attest.Build(snap, attest.Options{})
	if err != nil {
		return err
	}
	payload, err := st.Marshal()
	if err != nil {
		return err
	}
	signer, err := sign.NewKeySigner(key)
	if err != nil {
		return err
	}
	signed, err := sign.Sign(d.ctx, payload, sign.Options{Signer: signer})
	if err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	bundlePath := d.path("server.sigstore.json")
	if err := atomicfile.Write(bundlePath, signed.Bundle, atomicfile.Options{}); err != nil {
		return err
	}
	d.cmd("mcpsign sign key --key publisher.key server.snapshot.json -o server.sigstore.json")
	d.printf("   A fresh ECDSA P-256 key (publisher.key; its public key publisher.pub) signs an\n")
	d.printf("   in-toto statement with one subject per definition and the instructions (%d in\n", len(st.Subject))
	d.printf("   all), into a Sigstore bundle of %d bytes. (In CI, 'mcpsign sign' signs keyless\n", len(signed.Bundle))
	d.printf("   through Fulcio and Rekor instead: no key to keep.)\n")

	// 3. A host verifies the live server.
	d.heading("A host verifies the live server against the bundle before approving it")
	v, err := verify.New(verify.Trust{}, verify.Policy{Method: verify.MethodKey, PublicKey: key.Public()})
	if err != nil {
		return err
	}
	live, err := source.Load(d.ctx, source.Spec{Command: d.server("honest")}, source.Options{})
	if err != nil {
		return fmt.Errorf("listing the example server: %w", err)
	}
	vres, err := v.Verify(d.ctx, signed.Bundle, live)
	if err != nil {
		return fmt.Errorf("%w: the honest server does not verify: %w", ErrUnexpected, err)
	}
	d.cmd("mcpsign verify key --bundle server.sigstore.json --key publisher.pub \\\n       --write-lock mcp.lock -- %s", d.display)
	c := vres.Counts()
	d.printf("   ✓ verified: signed by key %s;\n", textsafe.Escape(vres.Identity))
	d.printf("     %d of %d definitions and the instructions match, none extra, none missing.\n",
		c[verify.StatusOK]-boolInt(vres.Instructions != nil), len(vres.Definitions))

	// 4. ... and pins them.
	d.heading("The host pins what it approved")
	lockPath := d.path("mcp.lock")
	lock, err := pin.NewLock(live, pinbundle.ApprovalOf(vres))
	if err != nil {
		return err
	}
	if err := lock.Create(d.ctx, lockPath); err != nil {
		return err
	}
	d.printf("   mcp.lock records every approved definition with its digest, the instructions,\n")
	d.printf("   and the evidence (method %s, signer, bundle digest); its own lockDigest seals it\n", lock.Approval.Method)
	d.printf("   against editing.\n")

	// 5. A server that carries its own bundle.
	d.heading("A server that carries its own bundle: signed first use, only the policy given")
	if err := d.fromServer(v, bundlePath); err != nil {
		return err
	}

	// 6. An honest session.
	d.heading("An honest session through the enforcing proxy")
	d.cmd("mcpsign proxy --lock mcp.lock --bundle server.sigstore.json --key publisher.pub \\\n       -- %s", d.display)
	if err := d.honestSession(lockPath, v, bundlePath); err != nil {
		return err
	}

	// 7. The rug pull.
	d.heading("The rug pull: the same server, updated, now says something else")
	d.printf("   The next release (here: --mode rugpull) hides an instruction in search_notes'\n")
	d.printf("   description, behind a zero-width space and a right-to-left override, and adds a\n")
	d.printf("   tool, run_command. Nobody signed that. The host starts it exactly as before:\n")
	d.cmd("mcpsign proxy --lock mcp.lock --bundle server.sigstore.json --key publisher.pub \\\n       -- %s", d.display)
	if err := d.rugPull(lockPath, v, bundlePath); err != nil {
		return err
	}

	// 8. A change in the middle of a session.
	d.heading("A server that changes in the middle of a session")
	d.printf("   This one (--mode list-changed) is honest until its first tool call, then\n")
	d.printf("   switches to the rug-pull definitions and sends notifications/tools/list_changed.\n")
	return d.midSession(lockPath, v, bundlePath)
}

// writeKeys writes the demo key pair (the private key unencrypted, as the
// demo's temporary directory is private to it, mode 0600, never printed) so
// that with --keep the commands shown can be run again.
func (d *demo) writeKeys(key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := atomicfile.Write(d.path("publisher.key"), priv, atomicfile.Options{Perm: 0o600}); err != nil {
		return err
	}
	pub, err := sign.MarshalPublicKey(key)
	if err != nil {
		return err
	}
	return atomicfile.Write(d.path("publisher.pub"), pub, atomicfile.Options{})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func keys(r *digest.Result, k digest.Kind) []string {
	var out []string
	for _, def := range r.Definitions {
		if def.Kind == k {
			out = append(out, textsafe.Escape(def.Key))
		}
	}
	return out
}

// session runs the proxy in-process on pipes and connects a go-sdk client.
type session struct {
	cs      *mcp.ClientSession
	in      *io.PipeWriter
	stderr  *bytes.Buffer
	done    chan error
	blocked chan string // what the proxy blocked, when it did
}

func (d *demo) startSession(lockPath string, v *verify.Verifier, bundlePath string, argv []string) (*session, error) {
	return d.startSessionWith(lockPath, pinbundle.Verifier(v, bundlePath), argv)
}

// startSessionWith is startSession with the proxy's verifier.
func (d *demo) startSessionWith(lockPath string, vf proxy.VerifyFunc, argv []string) (*session, error) {
	policy, err := proxy.NewLockPolicy(lockPath, proxy.LockOptions{Verify: vf})
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{in: inW, stderr: &bytes.Buffer{}, done: make(chan error, 1), blocked: make(chan string, 1)}
	stderr := &lockedWriter{w: s.stderr}
	onEvent := func(e proxy.Event) {
		if e.Kind == proxy.EventBlocked {
			select {
			case s.blocked <- e.What:
			default:
			}
		}
	}
	go func() {
		err := proxy.Run(d.ctx, inR, outW, proxy.Options{Command: argv, Policy: policy, Stderr: stderr, ShutdownGrace: time.Second, OnEvent: onEvent})
		outW.Close()
		s.done <- err
	}()
	// A host re-lists on notifications/tools/list_changed; under protocol
	// 2026-07-28 it must ask for them (subscriptions/listen) by having a
	// handler.
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsign-demo-client", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	s.cs, err = client.Connect(d.ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	return s, err
}

// end closes the client's side and waits for the proxy.
func (s *session) end() error {
	if s.cs != nil {
		s.cs.Close()
	}
	s.in.Close()
	return <-s.done
}

// fromServer starts the example server advertising its bundle in its hello
// (docs/DISCOVERY.md) through a proxy with no lock and no bundle, only the
// publisher's key: the proxy verifies what the server carries and writes
// the lock.
func (d *demo) fromServer(v *verify.Verifier, bundlePath string) error {
	d.printf("   A publisher can ship the bundle inside the server: it advertises it in its\n")
	d.printf("   hello (capabilities \"dev.mcpsign/attestation\"). The host hands over nothing\n")
	d.printf("   but who must have signed; the server is not trusted, the signature decides:\n")
	d.cmd("mcpsign proxy --lock first-use.lock --bundle-from-server --key publisher.pub \\\n       -- %s --bundle server.sigstore.json", d.display)
	lockPath := d.path("first-use.lock")
	advertised := pinbundle.VerifierOf(v, func(ctx context.Context, snap *digest.Snapshot) ([]byte, error) {
		return source.AdvertisedBundle(ctx, snap, source.BundleOptions{})
	})
	s, err := d.startSessionWith(lockPath, advertised, d.server("honest", "--bundle", bundlePath))
	if err != nil {
		if s != nil {
			s.end()
			d.printf("%s", indent(s.stderr.String(), "   "))
		}
		return fmt.Errorf("%w: the server's own bundle did not verify: %w", ErrUnexpected, err)
	}
	if err := s.end(); err != nil {
		return fmt.Errorf("%w: the session ended with %w", ErrUnexpected, err)
	}
	lock, err := pin.Read(lockPath)
	if err != nil {
		return fmt.Errorf("%w: no lock after signed first use: %w", ErrUnexpected, err)
	}
	d.printf("   ✓ signed first use: the advertised bundle verified under the key; first-use.lock\n")
	d.printf("     written (method %s). A bundle by anyone else, or for other definitions, blocks.\n", lock.Approval.Method)
	return nil
}

func (d *demo) honestSession(lockPath string, v *verify.Verifier, bundlePath string) error {
	calls := d.path("calls-honest.log")
	s, err := d.startSession(lockPath, v, bundlePath, d.server("honest", "--calls-log", calls))
	if err != nil {
		if s != nil {
			s.end()
			d.printf("%s", indent(s.stderr.String(), "   "))
		}
		return fmt.Errorf("%w: the honest session did not start: %w", ErrUnexpected, err)
	}
	d.printf("   client  initialize        → ok: %s %s, protocol %s\n",
		textsafe.Escape(s.cs.InitializeResult().ServerInfo.Name), textsafe.Escape(s.cs.InitializeResult().ServerInfo.Version),
		textsafe.Escape(s.cs.InitializeResult().ProtocolVersion))
	tools, err := s.cs.ListTools(d.ctx, nil)
	if err != nil {
		s.end()
		return fmt.Errorf("%w: tools/list: %w", ErrUnexpected, err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, textsafe.Escape(t.Name))
	}
	d.printf("   client  tools/list        → %s\n", strings.Join(names, ", "))
	res, err := s.cs.CallTool(d.ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "welcome"}})
	if err != nil {
		s.end()
		return fmt.Errorf("%w: tools/call: %w", ErrUnexpected, err)
	}
	d.printf("   client  tools/call search_notes {\"query\":\"welcome\"} → %s\n", textsafe.Escape(resultText(res)))
	if err := s.end(); err != nil {
		return fmt.Errorf("%w: the honest session ended with %w", ErrUnexpected, err)
	}
	n, err := countCalls(calls)
	if err != nil {
		return err
	}
	d.printf("   ✓ allowed: the definitions match the lock; the server received %d tool call.\n", n)
	return nil
}

func (d *demo) rugPull(lockPath string, v *verify.Verifier, bundlePath string) error {
	calls := d.path("calls-rugpull.log")
	s, err := d.startSession(lockPath, v, bundlePath, d.server("rugpull", "--calls-log", calls))
	if err == nil {
		// Connected: the rug pull got through. Try the hidden tool to show it.
		s.end()
		return fmt.Errorf("%w: the rug pull was not blocked", ErrUnexpected)
	}
	d.printf("   client  initialize        → %s\n", textsafe.Escape(err.Error()))
	perr := s.end()
	var b *proxy.BlockedError
	if !errors.As(perr, &b) || !b.Drift() {
		return fmt.Errorf("%w: the proxy ended with %v, not a block of changed definitions", ErrUnexpected, perr)
	}
	d.printf("   proxy (its stderr; what a host logs):\n")
	d.printf("%s", indent(s.stderr.String(), "   │ "))
	n, err := countCalls(calls)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("%w: %d tool call(s) reached the changed server", ErrUnexpected, n)
	}
	d.printf("   ✓ blocked before any call reached the server (it received %d tool calls);\n", n)
	d.printf("     'mcpsign proxy' exits 42 when the client disconnects. Had the publisher signed\n")
	d.printf("     the new definitions, the proxy would have rolled the lock forward instead.\n")
	return nil
}

func (d *demo) midSession(lockPath string, v *verify.Verifier, bundlePath string) error {
	calls := d.path("calls-list-changed.log")
	s, err := d.startSession(lockPath, v, bundlePath, d.server("list-changed", "--calls-log", calls))
	if err != nil {
		if s != nil {
			s.end()
		}
		return fmt.Errorf("%w: the session did not start: %w", ErrUnexpected, err)
	}
	tools, err := s.cs.ListTools(d.ctx, nil)
	if err != nil {
		s.end()
		return fmt.Errorf("%w: tools/list: %w", ErrUnexpected, err)
	}
	d.printf("   client  tools/list        → %d tools, as pinned\n", len(tools.Tools))
	args := map[string]any{"query": "welcome"}
	if res, err := s.cs.CallTool(d.ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: args}); err == nil {
		d.printf("   client  tools/call search_notes → %s\n", textsafe.Escape(resultText(res)))
	} else {
		// The announcement can overtake the answer on a busy machine.
		d.printf("   client  tools/call search_notes → %s\n", textsafe.Escape(err.Error()))
	}
	// The server announces its change 10 ms after the answer; the proxy
	// holds the announcement, lists the server again, and blocks.
	var what string
	select {
	case what = <-s.blocked:
	case <-time.After(2 * time.Second):
		s.end()
		return fmt.Errorf("%w: the change in the middle of the session was not blocked", ErrUnexpected)
	}
	if strings.Contains(what, "list_changed") {
		d.printf("   server  notifications/tools/list_changed → held; the proxy lists again: changed\n")
	} else {
		d.printf("   proxy   %s → changed\n", textsafe.Escape(what))
	}
	_, err = s.cs.CallTool(d.ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: args})
	d.printf("   client  tools/call search_notes → %s\n", textsafe.Escape(errText(err)))
	perr := s.end()
	var b *proxy.BlockedError
	if !errors.As(perr, &b) || !b.Drift() || err == nil {
		return fmt.Errorf("%w: the proxy ended with %v, not a block of changed definitions", ErrUnexpected, perr)
	}
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.HasPrefix(line, "mcpsign proxy: BLOCKED") || strings.HasPrefix(strings.TrimSpace(line), "error ") {
			d.printf("   │ %s\n", strings.TrimSpace(line))
		}
	}
	n, err := countCalls(calls)
	if err != nil {
		return err
	}
	if n > 1 {
		return fmt.Errorf("%w: %d tool calls reached the server, want at most the one before the change", ErrUnexpected, n)
	}
	d.printf("   ✓ blocked: no call after the change reached the server (it received %d in all).\n", n)
	return nil
}

func errText(err error) string {
	if err == nil {
		return "ok (not blocked!)"
	}
	return err.Error()
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, " ")
}

func countCalls(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the calls log: %w", err)
	}
	return bytes.Count(data, []byte("\n")), nil
}

func indent(text, prefix string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix) + "\n"
}

// lockedWriter serializes writes to a buffer that is read after the proxy
// ended.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
