package options

import (
	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
	"github.com/mcpsign/mcpsign/proxy"
	"github.com/mcpsign/mcpsign/source"
)

// ProxyOptions are the flags of 'mcpsign proxy' besides the trust, identity
// and verification groups.
type ProxyOptions struct {
	// Config holds the flags that the proxy's configuration takes as they
	// are: --lock, --tofu, --quiet, the limits, --resources and --header
	// (sent to a remote server, a URL after --).
	Config      proxycmd.Config
	Audit       AuditOptions
	RollForward string
	// OAuth signs in to a remote server (--oauth).
	OAuth OAuthOptions
}

// AddFlags adds the proxy flags to fs.
func (o *ProxyOptions) AddFlags(fs *pflag.FlagSet) {
	c := &o.Config
	fs.StringVar(&c.Lock, "lock", "", "lock file to enforce (docs/LOCK.md); written on first use with --bundle or --tofu (required)")
	fs.BoolVar(&c.TOFU, "tofu", false, "with no lock file, trust the first definitions seen and write them to the lock (method tofu: no signature vouches for them)")
	PositiveDurationVar(fs, &c.CheckTimeout, "check-timeout", proxy.DefaultCheckTimeout, "time limit for the server's answer to initialize (or server/discover) and for each listing the proxy takes itself (start-up, after list_changed)")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", source.DefaultMaxMessageBytes, "largest message relayed either way")
	PositiveDurationVar(fs, &c.ShutdownGrace, "shutdown-grace", proxy.DefaultShutdownGrace, "how long the server gets to exit after its stdin closes, and again after SIGTERM")
	fs.BoolVarP(&c.Quiet, "quiet", "q", false, "print nothing on stderr but the server's stderr and the report of a block")
	AddInsecureHTTPFlag(fs, &c.AllowInsecureHTTP)
	o.Audit.AddFlags(fs)
	fs.StringVar(&o.RollForward, "roll-forward", "signed", "signed: a change signed by the lock's signer rolls the lock forward; manual: every change waits for 'mcpsign approve'")
	AddResourcesFlag(fs, &c.Resources, true)
	AddHeaderFlag(fs, &c.Headers)
	o.OAuth.AddFlags(fs)
}

// ProxyConfig returns the proxy's configuration of the flags (the server
// still to be set).
func (o *ProxyOptions) ProxyConfig() *proxycmd.Config {
	c := o.Config
	c.Version = proxycmd.BuildVersion()
	c.AuditLog = o.Audit.Log
	c.ManualRollForward = o.RollForward == "manual"
	c.OAuth = o.OAuth.Config()
	return &c
}

// AddResourcesFlag adds --resources, the resources mode of a command
// without --policy (docs/POLICY.md, "resources"); hide only where the
// proxy answers the client (withHide).
func AddResourcesFlag(fs *pflag.FlagSet, dst *string, withHide bool) {
	usage := "static resources (resources/list): pass (unchecked), pin (checked against the lock's) or hide (answered as an empty list, reads refused but through a pinned resource template); default: pin when the lock records resources, else pass"
	if !withHide {
		usage = "static resources (resources/list): pin (listed, checked against the lock's or recorded in it) or pass (not listed); default: pin when the lock records resources, else pass"
	}
	fs.StringVar(dst, "resources", "", usage)
}

// AddBundleFlags adds the flags of VerifyOptions that verifying a bundle in
// the proxy uses: --bundle and the log and time policy (no --write-lock:
// the proxy writes the lock itself).
func (o *VerifyOptions) AddBundleFlags(fs *pflag.FlagSet) {
	fs.Var(bundleList{&o.Bundle, &o.Bundles}, "bundle", "Sigstore bundle of the signed definitions (a file, or an https:// URL): verified on first use (then the lock is written) and when the server changes (a signed update rolls the lock forward); repeat it with --policy for a threshold")
	o.addFromServerFlag(fs)
	fs.BoolVar(&o.RequireTlog, "require-tlog", false, "key and certificate methods: require a transparency log entry from a log of the trusted root")
	fs.BoolVar(&o.RequireTimestamp, "require-timestamp", false, "require an RFC 3161 timestamp from a timestamp authority of the trusted root")
	fs.BoolVar(&o.AllowCurrentTime, "allow-current-time", false, "certificate method: check the chain at the current time when the bundle has no timestamp")
}
