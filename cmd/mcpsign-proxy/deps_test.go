package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLean keeps mcpsign-proxy small: it must not link the signing,
// verification and TUF code, which is what it exists to leave out (their
// package initializers alone make mcpsign 22 MiB resident). Verification
// runs in 'mcpsign proxy-verify'.
func TestLean(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{
		"github.com/sigstore/",
		"github.com/theupdateframework/",
		"github.com/go-openapi/",
		"google.golang.org/grpc",
		"github.com/mcpsign/mcpsign/verify",
		"github.com/mcpsign/mcpsign/sign",
		"github.com/mcpsign/mcpsign/trustroot",
		"github.com/mcpsign/mcpsign/source", // the listing client (go-sdk's): the proxy relays, it does not list
		"github.com/spf13/cobra",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("mcpsign-proxy links %s", dep)
			}
		}
	}
}
