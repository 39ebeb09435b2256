package hosts_test

import (
	"fmt"

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
