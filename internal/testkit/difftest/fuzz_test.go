package difftest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/proxy"
)

// fuzzTiming keeps each fuzz iteration short: the check timeout is below
// the client's request timeout, so that a block answers before the client
// gives up.
// Under the race detector beside the package's other tables (many sessions
// on a shared machine) a block took more than 2 s to reach the client: the
// request timeout scales with raceSlowdown, as the table's do.
var fuzzTiming = timing{request: 2 * time.Second * raceSlowdown, settle: 50 * time.Millisecond}

const fuzzCheckTimeout = time.Second

// Scenario flags of a fuzz input.
const (
	fuzzCall = 1 << iota
	fuzzPipeline
	fuzzAfterCall
)

// FuzzProxyTranscript runs a server transcript (the scripted server's
// rules, see scriptserver) through proxy.Run in process with the go-sdk
// client, and checks the oracle (not strict: a fuzzed server may refuse requests).
func FuzzProxyTranscript(f *testing.F) {
	for _, r := range rows() {
		f.Add(r.transcript, seedFlags(r))
	}
	l, lockData := honestLock(f)
	f.Fuzz(func(t *testing.T, transcript string, flags uint8) {
		// The seed inputs of a plain go test run at once, as the table's
		// rows do (each mostly waits on its server); while fuzzing,
		// Parallel has no effect.
		t.Parallel()
		if len(transcript) > 4096 || strings.Count(transcript, "\n") > 64 {
			t.Skip("transcript too long")
		}
		runTranscript(t, l, lockData, transcript, flags, fuzzTiming)
	})
}

// seedFlags are the scenario flags of a row, as a fuzz input.
func seedFlags(r row) uint8 {
	flags := uint8(0)
	if r.sc.Call != nil {
		flags |= fuzzCall
	}
	if r.sc.Pipeline {
		flags |= fuzzPipeline
	}
	if r.sc.AfterCall != nil {
		flags |= fuzzAfterCall
	}
	return flags
}

// runTranscript runs one fuzz input through proxy.Run with the go-sdk
// client and reports every way the outcome breaks the oracle.
func runTranscript(t *testing.T, l *pin.Lock, lockData []byte, transcript string, flags uint8, tm timing) {
	t.Helper()
	sc := scenario{}
	if flags&fuzzCall != 0 {
		sc.Call = greet
		sc.Pipeline = flags&fuzzPipeline != 0
	}
	if flags&fuzzAfterCall != 0 {
		sc.AfterCall = &toolCall{Name: "run_command", Arguments: map[string]any{"cmd": "id"}}
	}
	w := newWorld(t, transcript, lockData)
	o := runInProcess(t, w, sc, tm)
	for _, v := range oracle(l, w, o, strings.Contains(transcript, "!rewrite-lock"), false) {
		t.Errorf("transcript %q: %s", transcript, v)
	}
}

// runInProcess runs proxy.Run with the lock's policy in front of the
// scripted server, and the go-sdk client on its stdio.
func runInProcess(t *testing.T, w *world, sc scenario, tm timing) outcome {
	t.Helper()
	policy, err := proxy.NewLockPolicy(w.lock, proxy.LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exe := serverExe(t)
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		err := proxy.Run(ctx, inR, outW, proxy.Options{
			// The environment through Options.Env, not /usr/bin/env: one
			// exec less in each of the stress test's 1,480 sessions.
			Command:       []string{exe},
			Env:           w.serverEnv(),
			Policy:        policy,
			CheckTimeout:  fuzzCheckTimeout,
			ShutdownGrace: shutdownGrace,
		})
		outW.CloseWithError(io.EOF)
		done <- err
	}()
	h := goClient(&mcp.IOTransport{Reader: outR, Writer: inW}, sc, tm)
	inW.Close()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(max(15*time.Second, 2*tm.request)):
		t.Fatalf("proxy.Run did not end after the client left")
	}
	outR.Close()
	var b *proxy.BlockedError
	blocked := errors.As(runErr, &b)
	if runErr != nil && !blocked {
		var se *proxy.ServerExitError
		if !errors.As(runErr, &se) {
			t.Logf("proxy.Run: %v", runErr)
		}
	}
	return outcome{h: h, blocked: blocked}
}
