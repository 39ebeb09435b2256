package options

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/pin/diff"
)

// PinOptions are the flags of 'mcpsign pin' besides the source, trust,
// identity and bundle groups.
type PinOptions struct {
	Lock         string
	TOFU         bool
	Force        bool
	Capabilities string
	Resources    string
	Audit        AuditOptions
}

// AddFlags adds the pin flags to fs.
func (o *PinOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Lock, "lock", "", "lock file to write (docs/LOCK.md) (required)")
	fs.BoolVar(&o.TOFU, "tofu", false, "trust on first use: pin what the server serves now without any signature (recorded as method tofu)")
	fs.BoolVar(&o.Force, "force", false, "replace an existing lock file")
	fs.StringVar(&o.Capabilities, "capabilities", "", `capabilities overrides, JSON {"tools": {"NAME": ["read", ...]}}, stored in the lock`)
	fs.StringVar(&o.Resources, "resources", "", "static resources (resources/list): pin (listed and recorded in the lock, approved by its approval: no signature covers them) or pass (not recorded; the default)")
	o.Audit.AddFlags(fs)
}

// VerifyPinOptions are the flags of 'mcpsign verify-pin'.
type VerifyPinOptions struct {
	Lock      string
	FailOn    string
	Resources string
}

// AddFlags adds the verify-pin flags to fs.
func (o *VerifyPinOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Lock, "lock", "", "lock file to check against (required)")
	AddResourcesFlag(fs, &o.Resources, false)
	fs.StringVar(&o.FailOn, "fail-on", string(pin.FailOnDrift), "exit 1 on: drift (any error finding; alias any), capability (a tool gained delete or exec, or a text hidden characters), never (alias none)")
}

// DiffOptions are the flags of 'mcpsign diff' besides the source group.
type DiffOptions struct {
	FailOn       string
	Capabilities string
}

// AddFlags adds the diff flags to fs.
func (o *DiffOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.FailOn, "fail-on", string(diff.FailOnNone), "exit 1 on: drift (any difference; alias any), breaking (a breaking change), capability (a tool gained delete or exec, or a text hidden characters), never (alias none)")
	fs.StringVar(&o.Capabilities, "capabilities", "", "capabilities overrides (caps.json) applied to the tools of both sides, replacing a lock's own")
}

// ReadOverrides reads a caps.json file; an empty path means none.
func ReadOverrides(path string) (capability.Overrides, error) {
	if path == "" {
		return nil, nil
	}
	data, err := boundedfile.Read(path, capability.MaxOverridesBytes, capability.ErrOverrides)
	if err != nil {
		return nil, fmt.Errorf("--capabilities: %w", err)
	}
	o, err := capability.ParseOverrides(data)
	if err != nil {
		return nil, fmt.Errorf("--capabilities %s: %w", path, err)
	}
	return o, nil
}
