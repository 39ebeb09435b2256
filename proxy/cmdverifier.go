package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// Bounds on what a verifier command may write: an approval is a few hundred
// bytes, a reason a few lines.
const (
	maxVerifierStdout = 64 << 10
	maxVerifierStderr = 64 << 10
	verifierWaitDelay = time.Second
)

// CommandVerifier returns a VerifyFunc that hands verification to another
// process: argv is started with the observed definitions on its stdin, as a
// snapshot file (docs/SNAPSHOT.md). It approves by exiting 0 with the
// approval to record (a pin.Approval, as in a lock's "approval" member) as
// the only JSON value on its stdout; any other exit refuses, and its stderr
// says why. The command is killed when ctx ends.
//
// 'mcpsign proxy' runs as the small mcpsign-proxy executable, which does not
// link the verifier, and verifies with 'mcpsign proxy-verify' and the same
// flags: the verification code runs only when a definition needs approving,
// in a process that exits when it is done.
func CommandVerifier(argv []string) VerifyFunc {
	argv = append([]string(nil), argv...)
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Approval, error) {
		if len(argv) == 0 {
			return pin.Approval{}, errors.New("no verifier command")
		}
		in, err := snap.MarshalFile()
		if err != nil {
			return pin.Approval{}, fmt.Errorf("the definitions to verify: %w", err)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin = bytes.NewReader(in)
		stdout := &cappedBuffer{max: maxVerifierStdout}
		stderr := &cappedBuffer{max: maxVerifierStderr}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// Once the command is killed, a process it left behind holding its
		// output must not keep us waiting.
		cmd.WaitDelay = verifierWaitDelay
		runErr := cmd.Run()
		if ctx.Err() != nil {
			return pin.Approval{}, fmt.Errorf("verifying: %w", context.Cause(ctx))
		}
		if runErr != nil {
			var exit *exec.ExitError
			if !errors.As(runErr, &exit) {
				return pin.Approval{}, fmt.Errorf("starting the verifier %s: %w", argv[0], runErr)
			}
			if why := verifierReason(stderr.String()); why != "" {
				return pin.Approval{}, errors.New(why)
			}
			return pin.Approval{}, fmt.Errorf("the verifier %s failed (%v) and said nothing", argv[0], runErr)
		}
		if stdout.over {
			return pin.Approval{}, fmt.Errorf("the verifier's answer is larger than %d bytes", maxVerifierStdout)
		}
		var a pin.Approval
		dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return pin.Approval{}, fmt.Errorf("the verifier's answer is not an approval: %w", err)
		}
		if dec.More() {
			return pin.Approval{}, errors.New("the verifier's answer is not an approval: more than one JSON value")
		}
		if a.Method == "" || a.Method == pin.MethodTOFU {
			return pin.Approval{}, fmt.Errorf("the verifier's answer is not a signed approval: method %q", a.Method)
		}
		return a, nil
	}
}

// verifierReason is what a failed verifier printed, without mcpsign's own
// "mcpsign: " prefix.
func verifierReason(stderr string) string {
	s := strings.TrimSpace(stderr)
	s = strings.TrimPrefix(s, "mcpsign: ")
	return s
}

// cappedBuffer keeps the first max bytes written to it and notes the rest.
// It has no ReadFrom (the buffer is not embedded), so that os/exec copies
// through Write and the cap holds.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }
