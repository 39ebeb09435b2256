package options

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestStringArrayVar: the flag parses, reads back and prints in the help
// exactly as pflag's StringArrayVar.
func TestStringArrayVar(t *testing.T) {
	t.Parallel()
	const usage = "a file (repeatable)"
	for _, args := range [][]string{
		nil,
		{"--file", "a"},
		{"--file", "a,b", "--file=c d", "--file", `"q"`, "--file", ""},
		{"--file", "x", "rest", "--file", "y"},
	} {
		var got, want []string
		ours := pflag.NewFlagSet("t", pflag.ContinueOnError)
		StringArrayVar(ours, &got, "file", usage)
		theirs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		theirs.StringArrayVar(&want, "file", nil, usage)
		if g, w := ours.FlagUsages(), theirs.FlagUsages(); g != w {
			t.Errorf("help %q, pflag's %q", g, w)
		}
		if err := ours.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := theirs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ours.Args(), theirs.Args()) {
			t.Errorf("%q: values %q args %q, pflag's %q %q", args, got, ours.Args(), want, theirs.Args())
		}
		g, err := ours.GetStringArray("file")
		if err != nil {
			t.Fatal(err)
		}
		w, _ := theirs.GetStringArray("file")
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%q: GetStringArray %q, pflag's %q", args, g, w)
		}
		o, th := ours.Lookup("file").Value, theirs.Lookup("file").Value
		if o.Type() != th.Type() || o.String() != th.String() {
			t.Errorf("%q: %s %s, pflag's %s %s", args, o.Type(), o.String(), th.Type(), th.String())
		}
		if !reflect.DeepEqual(o.(pflag.SliceValue).GetSlice(), th.(pflag.SliceValue).GetSlice()) {
			t.Errorf("%q: GetSlice differs", args)
		}
	}
}
