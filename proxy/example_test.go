package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mcpsign/mcpsign/proxy"
)

// A host that embeds the proxy enforces a lock on a server it starts,
// speaking to it over its own stdio.
func ExampleRun() {
	policy, err := proxy.NewLockPolicy("notes.mcpsign.lock", proxy.LockOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // a missing, unreadable or edited lock
		os.Exit(2)
	}
	// The static resources as the lock has them: checked when it pins them
	// (docs/PROXY.md, "Static resources"); "pin" or "hide" say otherwise.
	resources, err := proxy.ResourceModeFor("", policy.Lock())
	if err != nil {
		os.Exit(2)
	}
	err = proxy.Run(context.Background(), os.Stdin, os.Stdout, proxy.Options{
		Command:   []string{"npx", "-y", "@acme/notes-mcp@1.2.0"},
		Policy:    policy,
		Resources: resources,
		Stderr:    os.Stderr,
		OnEvent: func(e proxy.Event) {
			if e.Kind == proxy.EventUpdated {
				fmt.Fprintln(os.Stderr, "approved:", e.Decision.Summary)
			}
		},
	})
	var blocked *proxy.BlockedError
	if errors.As(err, &blocked) && blocked.Drift() {
		os.Exit(42) // the report is on stderr already
	}
}
