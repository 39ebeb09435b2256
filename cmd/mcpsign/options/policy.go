package options

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

// PolicyOptions are --policy FILE --name NAME (docs/POLICY.md): the policy
// file gives the trust and identity for the server NAME in place of their
// flags.
type PolicyOptions struct {
	File string
	Name string
}

// AddFlags adds --policy and --name to fs.
func (o *PolicyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.File, "policy", "", "policy file (docs/POLICY.md) that gives the trust, identities and rules for the server --name, in place of their flags")
	fs.StringVar(&o.Name, "name", "", "the server's name in the --policy file")
}

// policyReplaced are the flags a policy file replaces: giving one with
// --policy is a usage error.
var policyReplaced = lazy.New(policyReplacedFlags)

func policyReplacedFlags() []string {
	return append(append([]string{}, identityFlags...),
		"trusted-root", "tuf-cache", "tuf-mirror", "ca-roots", "ca-intermediates",
		"require-tlog", "require-timestamp", "bundle-from-server", "tofu", "roll-forward", "audit-log", "lock", "client-capabilities")
}

// Conflict returns the first flag given in fs that the policy replaces,
// "" when none; except are flags the command keeps under a policy.
func (o *PolicyOptions) Conflict(fs *pflag.FlagSet, except ...string) string {
	for _, name := range policyReplaced.Get() {
		if f := fs.Lookup(name); f != nil && f.Changed && !slices.Contains(except, name) {
			return name
		}
	}
	return ""
}

// bundleList is a repeatable --bundle: every value is kept in list (for a
// policy threshold), and the last is *last, as a single --bundle was.
type bundleList struct {
	last *string
	list *[]string
}

func (b bundleList) String() string { return strings.Join(*b.list, ",") }
func (b bundleList) Type() string   { return "string" }
func (b bundleList) Set(s string) error {
	*b.list = append(*b.list, s)
	*b.last = s
	return nil
}

// WatchPolicyOptions are monitor's --policy FILE and repeatable --name
// NAME (docs/MONITOR.md): the identities of those servers of the policy
// (every server without --name) are watched, with the identity flags'.
type WatchPolicyOptions struct {
	File  string
	Names []string
}

// AddFlags adds --policy and --name to fs.
func (o *WatchPolicyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.File, "policy", "", "policy file (docs/POLICY.md) whose servers' identities are watched, as if given by the identity flags")
	StringArrayVar(fs, &o.Names, "name", "with --policy: watch only this server of the policy (repeatable; default: every server)")
}
