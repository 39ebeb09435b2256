package options

import (
	"bytes"
	"encoding/csv"
	"strings"

	"github.com/spf13/pflag"
)

// StringArrayVar defines a repeatable string flag with no default, as
// pflag's FlagSet.StringArrayVar does (each occurrence one value, commas
// kept; the same type name, help line and GetStringArray), without the
// work pflag does to format its default: a CSV writer with a 4 KB buffer
// for each such flag on every start (docs/PERFORMANCE.md, "One offline
// verification, whole process").
func StringArrayVar(fs *pflag.FlagSet, p *[]string, name, usage string) {
	*p = nil
	// An empty default, as pflag's "[]" for its own type: no "(default …)"
	// in the help.
	fs.VarPF(&stringArray{value: p}, name, "", usage).DefValue = ""
}

// stringArray is pflag's stringArrayValue (pflag.SliceValue too).
type stringArray struct {
	value   *[]string
	changed bool
}

// Set replaces the default by the first value, then appends.
func (s *stringArray) Set(val string) error {
	if !s.changed {
		*s.value = []string{val}
		s.changed = true
	} else {
		*s.value = append(*s.value, val)
	}
	return nil
}

func (s *stringArray) Append(val string) error {
	*s.value = append(*s.value, val)
	return nil
}

func (s *stringArray) Replace(val []string) error {
	*s.value = append([]string(nil), val...)
	return nil
}

func (s *stringArray) GetSlice() []string { return append([]string{}, *s.value...) }

func (*stringArray) Type() string { return "stringArray" }

// String is pflag's: the values as one CSV record in brackets.
func (s *stringArray) String() string {
	if len(*s.value) == 0 {
		return "[]"
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(*s.value) // a bytes.Buffer does not fail
	w.Flush()
	return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
}
