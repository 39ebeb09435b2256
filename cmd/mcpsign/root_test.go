package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUsageOneCommandTree: a command line that names a command builds only
// that command's subtree (root.go), and prints exactly what the whole tree
// prints: each command's help, a flag error, an unknown subcommand.
func TestUsageOneCommandTree(t *testing.T) {
	t.Parallel()
	full := newRootCmd(&app{})
	var names []string
	for _, c := range full.Commands() {
		names = append(names, c.Name())
	}
	var table []string
	for _, c := range commands {
		table = append(table, c.name)
	}
	// The root lists its commands sorted; the table is in AddCommand order.
	if len(names) != len(table) {
		t.Fatalf("tree has commands %v, table %v", names, table)
	}
	for _, c := range commands {
		if got := c.new(&app{}).Name(); got != c.name {
			t.Errorf("table entry %q builds command %q", c.name, got)
		}
	}
	if lazy := newRootCmd(&app{}, "verify", "bundle"); len(lazy.Commands()) != 1 || lazy.Commands()[0].Name() != "verify" {
		t.Errorf("verify bundle built %d commands", len(lazy.Commands()))
	}

	var lines [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string(nil), path...), sub.Name())
			if sub.DisableFlagParsing {
				continue // its body reads its flags (example-server)
			}
			lines = append(lines, append(p, "--help"), append(p, "--no-such-flag"), append(p, "--version"))
			if sub.HasSubCommands() && !sub.Runnable() {
				lines = append(lines, append(p, "no-such-command"))
			}
			walk(sub, p)
		}
	}
	walk(full, nil)
	for _, args := range lines {
		wantOut, wantErr, wantPath := execTree(newRootCmd(&app{}), args)
		gotOut, gotErr, gotPath := execTree(newRootCmd(&app{}, args...), args)
		if gotOut != wantOut || gotErr != wantErr || gotPath != wantPath {
			t.Errorf("%q: one-command tree printed\n%s\n%s (%s)\nthe whole tree\n%s\n%s (%s)", strings.Join(args, " "), gotOut, gotErr, gotPath, wantOut, wantErr, wantPath)
		}
	}
}

// execTree runs args through root (command lines that are refused or ask
// for help: no command body runs) and returns what cobra
// printed, its error and the command it found.
func execTree(root *cobra.Command, args []string) (out, errText, path string) {
	var b bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(""))
	root.SetOut(&b)
	root.SetErr(&b)
	c, err := root.ExecuteContextC(context.Background())
	if err != nil {
		errText = err.Error()
	}
	if c != nil {
		path = c.CommandPath()
	}
	return b.String(), errText, path
}

// BenchmarkRootTree: building the tree for one verification against the
// whole tree (docs/PERFORMANCE.md, "One offline verification, whole
// process").
func BenchmarkRootTree(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{{"verify", []string{"verify", "bundle"}}, {"whole", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newRootCmd(&app{}, bc.args...)
			}
		})
	}
}
