package registry_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/registry"
)

// A registry operator's job: verify a dump of the registry under a policy
// that trusts each io.github.acme server's own release workflow, and keep
// what passes. Here neither entry passes: one names no bundle, the other
// is in a namespace the policy does not name.
func ExampleVerifier_Run() {
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,
	  "servers":{"io.github.acme/*":{"repositorySigner":{"workflow":"release.yml"}}}}`), "/etc/mcpsign/registry-policy.json")
	if err != nil {
		panic(err)
	}
	v, err := registry.New(registry.Options{Policy: pf, DeciderOptions: policy.DeciderOptions{Offline: true}})
	if err != nil {
		panic(err)
	}
	dump := `{"name":"io.github.acme/notes","version":"1.2.0","repository":{"url":"https://github.com/acme/notes","source":"github"}}
{"name":"io.github.other/tool","version":"0.1.0"}`
	list := registry.ListAt(context.Background(), "-", registry.Client{}, strings.NewReader(dump))
	sum, err := v.RunAt(context.Background(), list, registry.RunOptions{Emit: func(r *registry.Result) error {
		fmt.Println(r.Text())
		return nil
	}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d verified of %d\n", sum.Verified, sum.Entries)
	// Output:
	// FAILED   "io.github.acme/notes" "1.2.0" (line 1, entry 0) at step attestation: the entry lists no attestation (no dev.mcpsign/attestation in _meta.io.modelcontextprotocol.registry/publisher-provided)
	// FAILED   "io.github.other/tool" "0.1.0" (line 2, entry 0) at step policy: no such server in the policy: no policy server is "io.github.other/tool" or "io.github.other/*": not verified
	// 0 verified of 2
}

// A sub-registry's ingest: every entry of the upstream dump verified, one
// JSON line each on standard output, and what passes kept as a dump the
// sub-registry serves (written whole, or not at all).
func ExampleVerifier_RunSource() {
	pf, err := policy.Read("/etc/mcpsign/registry-policy.json")
	if err != nil {
		log.Fatal(err)
	}
	v, err := registry.New(registry.Options{Policy: pf})
	if err != nil {
		log.Fatal(err)
	}
	sum, err := v.RunSource(context.Background(), "upstream-dump.json", registry.SourceOptions{
		VerifiedOut: "verified.json",
		RunOptions:  registry.RunOptions{Emit: registry.WriteResults(os.Stdout, true)},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprint(os.Stderr, sum.Table())
}
