package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"

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
	watched := []verify.Identity{{
		SANRegexp: `https://github\.com/acme/notes-mcp/.*`,
		Issuer:    "https://token.actions.githubusercontent.com",
	}}
	ids, err := verify.NewCertificateMatcher(verify.MethodSigstore, watched)
	if err != nil {
		log.Fatal(err)
	}
	// A released bundle counts once it verifies under the watched
	// identities, its log entry proven.
	released, err := monitor.NewReleased(monitor.ReleaseCheck{TrustedMaterial: tm, Identities: watched})
	if err != nil {
		log.Fatal(err)
	}
	_, skipped, err := released.AddDir(ctx, "dist")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range skipped {
		log.Printf("skipped %s", s)
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

// The same check as a command runs it: the publisher's choices in a Setup,
// then Watch with a Reporter printing JSON lines (docs/JSON.md), on the
// public-good Rekor v1 log.
func ExampleWatch() {
	ctx := context.Background()
	tm, err := trustroot.Load(ctx, trustroot.Options{})
	if err != nil {
		log.Fatal(err)
	}
	opts, prev, err := monitor.Setup{
		Identity: verify.Identity{
			SANRegexp: `https://github\.com/acme/notes-mcp/.*`,
			Issuer:    "https://token.actions.githubusercontent.com",
		},
		ReleasedDirs:    []string{"dist"},
		StatePath:       "rekor-v1.state.json",
		Init:            true, // the first run; later runs go on from the state
		FromIndex:       -1,
		LogURL:          "https://rekor.sigstore.dev",
		TrustedMaterial: tm,
	}.Prepare(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	rep := &monitor.Reporter{W: os.Stdout, JSON: true, ReportVersion: 1, StatePath: "rekor-v1.state.json"}
	opts.OnFinding = rep.Finding
	alerts, err := monitor.Watch(ctx, opts, prev, monitor.WatchOptions{StatePath: "rekor-v1.state.json", Reported: rep.Err, OnRun: rep.Summary})
	if err != nil {
		log.Fatal(err)
	}
	if alerts > 0 {
		os.Exit(1)
	}
}

// What a registry lists for the publisher's namespace is released too:
// each bundle fetched (https, digest first), verified under the watched
// key and added to the set Run skips.
func ExampleReleasedFromRegistry() {
	tm, err := trustroot.Load(context.Background(), trustroot.Options{})
	if err != nil {
		log.Fatal(err)
	}
	released, err := monitor.NewReleased(monitor.ReleaseCheck{TrustedMaterial: tm, KeyIDs: []string{"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}})
	if err != nil {
		log.Fatal(err)
	}
	n, err := monitor.ReleasedFromRegistry(context.Background(), released,
		"https://registry.modelcontextprotocol.io", []string{"io.github.acme/*"}, monitor.RegistryOptions{})
	if err != nil {
		log.Fatal(err) // a bundle that cannot be had is never skipped
	}
	fmt.Printf("%d bundles released, %d digests\n", n, released.Len())
}
