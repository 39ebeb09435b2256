package options

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
)

// OutputOptions choose between human and machine output.
type OutputOptions struct {
	Format string
}

// AddFlags adds --format to fs.
func (o *OutputOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Format, "format", "text", "output format: text (for people) or json (stable, see docs/JSON.md)")
}

// JSON reports whether JSON output was asked for; an unknown format is an
// error.
func (o *OutputOptions) JSON() (bool, error) {
	switch o.Format {
	case "text", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("--format %q: want text or json", o.Format)
}

// FileOutputOptions are -o/--output and --force of a command that writes a
// file: snapshot, attest, trustroot fetch and create.
type FileOutputOptions struct {
	Path  string
	Force bool
}

// AddFlags adds -o/--output and --force to fs, with their usage texts.
func (o *FileOutputOptions) AddFlags(fs *pflag.FlagSet, usage, forceUsage string) {
	fs.StringVarP(&o.Path, "output", "o", "", usage)
	fs.BoolVar(&o.Force, "force", false, forceUsage)
}

// Required refuses a missing -o; what says what is written, and where.
func (o *FileOutputOptions) Required(what string) error {
	if o.Path == "" {
		return fmt.Errorf("missing -o FILE: where to write %s", what)
	}
	return nil
}

// Write writes data to -o atomically, replacing a file only with --force.
func (o *FileOutputOptions) Write(data []byte) error {
	return atomicfile.Write(o.Path, data, atomicfile.Options{Overwrite: o.Force})
}
