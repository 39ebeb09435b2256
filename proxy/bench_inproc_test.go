package proxy

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
)

// BenchmarkRelayInProcess runs the proxy in the benchmark's process (so
// that -cpuprofile sees it) between pipes and the example server: one
// tools/call round trip per iteration.
func BenchmarkRelayInProcess(b *testing.B) {
	server := fixtures.BuildExampleServerBinary(b)
	lock := writeTOFULockTB(b, []string{server})
	policy, err := NewLockPolicy(lock, LockOptions{})
	if err != nil {
		b.Fatal(err)
	}
	call, notify, stop := inProcess(b, Options{Command: []string{server}, Policy: policy, ShutdownGrace: time.Second})
	call(perfInitialize)
	notify(perfInitialized)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"welcome"}}}`)
	}
	b.StopTimer()
	stop()
}

// inProcess runs Run under o between pipes, for a benchmark: call writes
// one line and returns the line that comes back, notify writes one, stop
// ends the session.
func inProcess(b *testing.B, o Options) (call func(line string) string, notify func(line string), stop func()) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, o)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	call = func(line string) string {
		io.WriteString(inW, line+"\n")
		resp, err := br.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	notify = func(line string) { io.WriteString(inW, line+"\n") }
	return call, notify, func() { inW.Close(); <-done }
}
