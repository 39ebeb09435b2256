package options

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
)

// PositiveDurationVar defines a duration flag that refuses zero and negative
// values when parsed: a time limit or grace of 0 would otherwise silently
// mean the default, or no limit at all.
func PositiveDurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(positiveDuration{p}, name, usage)
}

type positiveDuration struct{ d *time.Duration }

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (e.g. 30s, 2m)")
	}
	if d <= 0 {
		return errors.New("want a positive duration (e.g. 30s, 2m)")
	}
	*v.d = d
	return nil
}

func (v positiveDuration) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (positiveDuration) Type() string { return "duration" }
