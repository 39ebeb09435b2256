package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
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
// snapshot file (docs/SNAPSHOT.md). It approves by exiting 0 with what the
// verification established as the only JSON value on its stdout, a
// pin.Verified:
//
//	{"approval":{…as in a lock's "approval" member…},
//	 "server":{"name":"…","version":"…"},"signedAt":"2026-05-01T12:00:00Z"}
//
// where server is the signed statement's server and signedAt, omitted when
// there is none, the verified signing time (RFC 3339). Members are exactly
// these, spelled exactly and none repeated (read strictly, digest.Members;
// anything else refuses), approval and server are required, the method
// is a signed one and the server name is not empty. Any other exit refuses,
// and its stderr says why. The command is killed when ctx ends.
//
// 'mcpsign proxy' runs as the small mcpsign-proxy executable, which does not
// link the verifier, and verifies with 'mcpsign proxy-verify' and the same
// flags: the verification code runs only when a definition needs approving,
// in a process that exits when it is done. Both are of one release (the
// hand-over refuses another version), so the answer's form changes with it.
//
// When the server advertised capabilities that may carry its own
// attestation (digest.Snapshot.Advertised, docs/DISCOVERY.md), which a
// snapshot file does not hold, they are written to a private temporary
// file named by an extra last argument advertisedArg+"=FILE" (the caller
// knows the verifier's command line: 'mcpsign proxy-verify' takes
// "--server-advertised"), removed when the command is done. With
// advertisedArg "" they are not handed over: a verifier that needs the
// server's own bundle then finds none, and refuses.
func CommandVerifier(argv []string, advertisedArg string) VerifyFunc {
	argv = append([]string(nil), argv...)
	return func(ctx context.Context, snap *digest.Snapshot) (pin.Verified, error) {
		if len(argv) == 0 {
			return pin.Verified{}, errors.New("no verifier command")
		}
		in, err := snap.MarshalFile()
		if err != nil {
			return pin.Verified{}, fmt.Errorf("the definitions to verify: %w", err)
		}
		args := argv[1:]
		if snap.Advertised != nil && advertisedArg != "" {
			path, remove, err := writeAdvertised(snap.Advertised)
			if err != nil {
				return pin.Verified{}, err
			}
			defer remove()
			args = append(append([]string(nil), args...), advertisedArg+"="+path)
		}
		cmd := exec.CommandContext(ctx, argv[0], args...)
		cmd.Stdin = bytes.NewReader(in)
		stdout := &cappedBuffer{max: maxVerifierStdout}
		stderr := &cappedBuffer{max: maxVerifierStderr}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// Once the command is killed, a process it left behind holding its
		// output must not keep us waiting.
		cmd.WaitDelay = verifierWaitDelay
		runErr := cmd.Run()
		if ctx.Err() != nil {
			return pin.Verified{}, fmt.Errorf("verifying: %w", context.Cause(ctx))
		}
		if runErr != nil {
			var exit *exec.ExitError
			if !errors.As(runErr, &exit) {
				return pin.Verified{}, fmt.Errorf("starting the verifier %s: %w", argv[0], runErr)
			}
			if why := verifierReason(stderr.String()); why != "" {
				return pin.Verified{}, errors.New(why)
			}
			return pin.Verified{}, fmt.Errorf("the verifier %s failed (%v) and said nothing", argv[0], runErr)
		}
		if stdout.over {
			return pin.Verified{}, fmt.Errorf("the verifier's answer is larger than %d bytes", maxVerifierStdout)
		}
		return parseVerified(stdout.Bytes())
	}
}

// writeAdvertised writes the advertised capabilities to a temporary file
// only the user can read.
func writeAdvertised(data []byte) (path string, remove func(), err error) {
	f, err := os.CreateTemp("", "mcpsign-advertised-*.json")
	if err != nil {
		return "", nil, fmt.Errorf("handing over the advertised attestation: %w", err)
	}
	remove = func() { os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		f.Close()
		remove()
		return "", nil, fmt.Errorf("handing over the advertised attestation: %w", err)
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, fmt.Errorf("handing over the advertised attestation: %w", err)
	}
	return f.Name(), remove, nil
}

// parseVerified reads a verifier's answer (see CommandVerifier).
func parseVerified(data []byte) (pin.Verified, error) {
	var a struct {
		Approval *pin.Approval      `json:"approval"`
		Server   *digest.ServerInfo `json:"server"`
		SignedAt *time.Time         `json:"signedAt"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return pin.Verified{}, fmt.Errorf("the verifier's answer is not an approval: %w", err)
	}
	if dec.More() {
		return pin.Verified{}, errors.New("the verifier's answer is not an approval: more than one JSON value")
	}
	// encoding/json takes a repeated member (the last) and any case of a
	// name: the strict reader refuses both.
	if err := exactMembers(bytes.TrimSpace(data), verifiedMembers.Get()); err != nil {
		return pin.Verified{}, fmt.Errorf("the verifier's answer is not an approval: %w", err)
	}
	switch {
	case a.Approval == nil:
		return pin.Verified{}, errors.New("the verifier's answer is not an approval: no approval")
	case a.Server == nil || a.Server.Name == "":
		return pin.Verified{}, errors.New("the verifier's answer is not an approval: no signed server name")
	case !a.Approval.Method.Valid():
		return pin.Verified{}, fmt.Errorf("the verifier's answer is not a signed approval: method %s", textsafe.RawQuote(string(a.Approval.Method)))
	}
	v := pin.Verified{Approval: *a.Approval, Server: *a.Server}
	if a.SignedAt != nil {
		if a.SignedAt.IsZero() {
			return pin.Verified{}, errors.New("the verifier's answer is not an approval: a zero signedAt")
		}
		v.SignedAt = a.SignedAt.UTC()
	}
	return v, nil
}

// verifiedMembers are the members of a verifier's answer, and of the
// objects in it (nil: not an object read further).
var verifiedMembers = lazy.New(verifiedMemberTable)

func verifiedMemberTable() map[string]map[string]any {
	return map[string]map[string]any{
		"":         {"approval": nil, "server": nil, "signedAt": nil},
		"approval": {"method": nil, "identity": nil, "issuer": nil, "bundleDigest": nil, "tlog": nil, "approvedAt": nil},
		"server":   {"name": nil, "version": nil},
		"tlog":     {"logIndex": nil, "logId": nil, "integratedTime": nil},
	}
}

// exactMembers checks with digest.Members (no repeated name, however
// spelled) that the object data, and the approval, server and tlog objects
// in it, have only the members of want, spelled exactly.
func exactMembers(data []byte, want map[string]map[string]any) error {
	var walk func(obj string, data []byte) error
	walk = func(obj string, data []byte) error {
		names, values, err := digest.Members(data)
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, ok := want[obj][n]; !ok {
				return fmt.Errorf("unknown member %s", textsafe.RawQuote(n))
			}
			if _, sub := want[n]; sub && n != "" && !bytes.Equal(bytes.TrimSpace(values[n]), []byte("null")) {
				if err := walk(n, bytes.TrimSpace(values[n])); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("", data)
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
