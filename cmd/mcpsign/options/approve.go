package options

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/pin"
)

// ApproveOptions are the flags of 'mcpsign approve' besides the source
// group.
type ApproveOptions struct {
	Lock           string
	Reason         string
	Expect         []string
	Approver       string
	SourceRevision string
	Yes            bool
	Resources      string
	Audit          AuditOptions
}

// AddFlags adds the approve flags to fs.
func (o *ApproveOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Lock, "lock", "", "lock file to approve the change into (required; docs/LOCK.md)")
	fs.StringVar(&o.Reason, "reason", "", "why the change is approved, recorded in the lock (required)")
	StringArrayVar(fs, &o.Expect, "expect", "SET=DIGEST the reviewer saw, SET one of tools, prompts, resourceTemplates, resources, instructions (DIGEST sha256:<hex>, or none for no instructions); repeatable")
	fs.StringVar(&o.Approver, "approver", "", "who approves, recorded in the lock (default: the OS user)")
	fs.StringVar(&o.SourceRevision, "source-revision", "", "the source revision reviewed (a commit, a tag), recorded in the lock")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "approve without asking (required without a terminal)")
	AddResourcesFlag(fs, &o.Resources, false)
	o.Audit.AddFlags(fs)
}

// ParseExpect reads the --expect values (pin.ParseExpect): what the
// reviewer saw.
func ParseExpect(values []string) (*pin.Expected, error) {
	e, err := pin.ParseExpect(values)
	if err != nil {
		return nil, fmt.Errorf("--expect %w", err)
	}
	return e, nil
}

// AuditOptions is the --audit-log flag.
type AuditOptions struct {
	Log string
}

// AddFlags adds --audit-log to fs.
func (o *AuditOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Log, "audit-log", "", "append what was approved or refused to this hash-chained audit log (docs/AUDIT.md): an approval is recorded before its lock is written, and the lock records the log's head (auditHead, for 'audit verify --lock')")
}

// AuditShowOptions are the flags of 'mcpsign audit show'.
type AuditShowOptions struct {
	Server string
	Since  string
	Out    OutputOptions
}

// AddFlags adds the audit show flags to fs.
func (o *AuditShowOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Server, "server", "", "only the events of the server of this name")
	fs.StringVar(&o.Since, "since", "", "only the events at or after this time (RFC 3339, or a duration ago such as 24h)")
	fs.StringVar(&o.Out.Format, "format", "text", "output format: text (for people) or json (the log's lines, as written)")
}

// AuditVerifyOptions are the flags of 'mcpsign audit verify'.
type AuditVerifyOptions struct {
	// Locks are --lock: locks whose auditHead the log must reach.
	Locks []string
	// ExpectHeads are --expect-head: heads kept elsewhere the log must
	// reach.
	ExpectHeads []string
}

// AddFlags adds the audit verify flags to fs.
func (o *AuditVerifyOptions) AddFlags(fs *pflag.FlagSet) {
	StringArrayVar(fs, &o.Locks, "lock", "a lock written with this log: the log must reach the head it recorded (auditHead), followed by its approval, and not replace it (repeatable)")
	StringArrayVar(fs, &o.ExpectHeads, "expect-head", "a head kept elsewhere (sha256:HEX, as audit verify prints it): the log must hold it as a line (repeatable)")
}
