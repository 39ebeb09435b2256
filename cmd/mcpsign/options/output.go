package options

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/textsafe"
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
	return false, fmt.Errorf("--format %s: want text or json", textsafe.RawQuote(o.Format))
}
