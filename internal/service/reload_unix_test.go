//go:build unix

package service

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hup sends this process SIGHUP, which Run (started) handles.
func hup(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// TestReloadKeepsConfigOnBrokenFile: SIGHUP calls Reload; a broken file is
// said in the log and counted, and the configuration in force stays until
// a good file comes.
func TestReloadKeepsConfigOnBrokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type config struct{ Name string }
	var inForce atomic.Pointer[config]
	load := func(context.Context) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var c config
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		inForce.Store(&c)
		return nil
	}
	write(`{"Name":"first"}`)
	if err := load(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{Handler: hello(), Reload: load})

	write(`{"Name": "broken\u202e` + "\x1b" + `` + "\n")
	hup(t)
	failed := s.log.waitFor(t, "reload failed; what failed to load is kept as it was")
	if got := inForce.Load().Name; got != "first" {
		t.Errorf("after a broken file, %q in force, want first", got)
	}
	if e, _ := failed["error"].(string); !strings.Contains(e, "invalid character") {
		t.Errorf("the failed reload's line %v does not say why", failed)
	}
	_, body := get(t, nil, s.url+MetricsPath)
	if !strings.Contains(body, `mcpsign_reloads_total{result="failed"} 1`) {
		t.Errorf("metrics after a failed reload:\n%s", grepLines(body, "reloads"))
	}

	write(`{"Name":"second"}`)
	hup(t)
	s.log.waitFor(t, "reloaded")
	if got := inForce.Load().Name; got != "second" {
		t.Errorf("after a good file, %q in force, want second", got)
	}
	_, body = get(t, nil, s.url+MetricsPath)
	if !strings.Contains(body, `mcpsign_reloads_total{result="ok"} 1`) {
		t.Errorf("metrics after a good reload:\n%s", grepLines(body, "reloads"))
	}
}

// TestReloadTLS: SIGHUP re-reads the certificate and key; a broken pair
// keeps the one served.
func TestReloadTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "first")
	s := start(t, Options{Handler: hello(), TLSCert: cert, TLSKey: key})
	addr := strings.TrimPrefix(s.url, "https://")
	if cn := servedCN(t, addr); cn != "first" {
		t.Fatalf("serves %q, want first", cn)
	}
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup(t)
	s.log.waitFor(t, "reload failed; what failed to load is kept as it was")
	if cn := servedCN(t, addr); cn != "first" {
		t.Errorf("after a broken certificate, serves %q, want first", cn)
	}
	c2, k2 := writeCert(t, dir, "second")
	for _, p := range [][2]string{{c2, cert}, {k2, key}} {
		if err := os.Rename(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	hup(t)
	s.log.waitFor(t, "reloaded")
	deadline := time.Now().Add(30 * time.Second) // a hang bound: at once when the reload works
	for servedCN(t, addr) != "second" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if cn := servedCN(t, addr); cn != "second" {
		t.Errorf("after a good pair, serves %q, want second", cn)
	}
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
