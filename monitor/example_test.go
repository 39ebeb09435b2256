package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"

	"github.com/mcpsign/mcpsign/monitor"
	"github.com/mcpsign/mcpsign/trustroot"
	"github.com/mcpsign/mcpsign/verify"
)

// A publisher's scheduled check: watch the release identity, skip what was
// released, and keep the state only once the whole range was checked.
func ExampleRun() {
	ctx := context.Background()
	tm, err := trustroot.Load(ctx, trustroot.Options{}) // the public-good root through TUF
	if err != nil {
		log.Fatal(err)
	}
	ids, err := verify.NewCertificateMatcher(verify.MethodSigstore, []verify.Identity{{
		SANRegexp: `https://github\.com/acme/notes-mcp/.*`,
		Issuer:    "https://token.actions.githubusercontent.com",
	}})
	if err != nil {
		log.Fatal(err)
	}
	released := monitor.NewReleased()
	if _, err := released.AddDir("dist"); err != nil {
		log.Fatal(err)
	}
	prev, err := monitor.ReadState("rekor.state.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Fatal(err)
	}
	res, err := monitor.Run(ctx, monitor.Options{
		LogURL:          "https://log2025-1.rekor.sigstore.dev",
		TrustedMaterial: tm,
		Identities:      ids,
		Released:        released,
		OnFinding: func(f monitor.Finding) {
			fmt.Printf("%s at %d: %s %s\n", f.Kind, f.LogIndex, f.Identity, f.Digest)
		},
	}, prev)
	if err != nil {
		log.Fatal(err) // the state stays as it was: the next run checks the same range
	}
	if err := monitor.WriteState("rekor.state.json", res.State); err != nil {
		log.Fatal(err)
	}
}
