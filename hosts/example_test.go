package hosts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsign/mcpsign/hosts"
)

// A device-management agent checks that every server of a project's VS Code
// configuration runs this mcpsign under the company policy.
func ExampleWant_Check() {
	h, _ := hosts.Lookup("vscode")
	c, err := hosts.Parse(h, "/src/app/.vscode/mcp.json", []byte(`{
	"servers": {
		"notes": {"command": "/usr/local/bin/mcpsign", "args": ["proxy", "--policy", "/etc/mcpsign/policy.json", "--name", "notes", "--", "npx", "-y", "@acme/notes@1.2.0"]},
		"evil": {"command": "./evil/mcpsign", "args": ["proxy", "--", "node", "s.js"]},
	},
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	want := hosts.Want{
		Self:   "/usr/local/bin/mcpsign",
		Policy: "/etc/mcpsign/policy.json",
		// Compare the program as written here; the default,
		// SameExecutable, resolves it and compares files.
		IsSelf: func(program string) error {
			if program != "/usr/local/bin/mcpsign" {
				return hosts.ErrNotSelf
			}
			return nil
		},
	}
	for _, s := range c.Servers() {
		if why := want.Check(s); why != "" {
			fmt.Printf("%s: NOT ENFORCED: %s\n", s.Name, why)
		} else {
			fmt.Printf("%s: enforced\n", s.Name)
		}
	}
	// Output:
	// notes: enforced
	// evil: NOT ENFORCED: its command is not this mcpsign (/usr/local/bin/mcpsign): another program
}

// A host's setup tool wraps every server of a Claude Desktop configuration
// under a policy, then lists the file to show what is enforced.
func ExampleEdit() {
	dir, _ := os.MkdirTemp("", "hosts-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "claude_desktop_config.json")
	policy := filepath.Join(dir, "policy.json")
	_ = os.WriteFile(path, []byte(`{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "@acme/notes@1.2.0"]}}}`), 0o600)
	_ = os.WriteFile(policy, []byte(`{}`), 0o600)
	h, _ := hosts.Lookup("claude-desktop")
	f := hosts.File{Host: h, Path: path}
	want := hosts.Want{Self: "/usr/local/bin/mcpsign", Policy: policy,
		IsSelf: func(program string) error {
			if program != "/usr/local/bin/mcpsign" {
				return hosts.ErrNotSelf
			}
			return nil
		}}
	ctx := context.Background()
	r, err := hosts.Edit(ctx, f, hosts.EditOptions{Wrap: hosts.WrapOptions{Self: want.Self, Policy: want.Policy}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ch := range r.Changes {
		fmt.Printf("%s: %s\n", ch.Server.Name, ch.Action)
	}
	report := hosts.List(ctx, []hosts.File{f}, nil, want)
	fmt.Println("every server enforced:", report.Enforced)
	// Output:
	// notes: wrapped
	// every server enforced: true
}
