package proxy

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/fixtures"
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
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{Command: []string{server}, Policy: policy, ShutdownGrace: time.Second})
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	call := func(line string) string {
		io.WriteString(inW, line+"\n")
		resp, err := br.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	call(perfInitialize)
	io.WriteString(inW, perfInitialized+"\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"welcome"}}}`)
	}
	b.StopTimer()
	inW.Close()
	<-done
}
