package options

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/digest"
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
	Audit          AuditOptions
}

// AddFlags adds the approve flags to fs.
func (o *ApproveOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Lock, "lock", "", "lock file to approve the change into (required; docs/LOCK.md)")
	fs.StringVar(&o.Reason, "reason", "", "why the change is approved, recorded in the lock (required)")
	fs.StringArrayVar(&o.Expect, "expect", nil, "SET=DIGEST the reviewer saw, SET one of tools, prompts, resourceTemplates, instructions (DIGEST sha256:<hex>, or none for no instructions); repeatable")
	fs.StringVar(&o.Approver, "approver", "", "who approves, recorded in the lock (default: the OS user)")
	fs.StringVar(&o.SourceRevision, "source-revision", "", "the source revision reviewed (a commit, a tag), recorded in the lock")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "approve without asking (required without a terminal)")
	o.Audit.AddFlags(fs)
}

// Expected is what the reviewer saw: the Set Digest of each kind named and
// the Instructions Digest ("" for none), when named.
type Expected struct {
	Sets         map[digest.Kind]string
	Instructions *string
}

// ParseExpect reads the --expect values; a repeated or unknown SET, or a
// malformed digest, is an error.
func ParseExpect(values []string) (*Expected, error) {
	e := &Expected{Sets: map[digest.Kind]string{}}
	for _, v := range values {
		set, d, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--expect %q: want SET=DIGEST", v)
		}
		if set == "instructions" {
			if e.Instructions != nil {
				return nil, fmt.Errorf("--expect instructions given twice")
			}
			if d == "none" {
				d = ""
			} else if !digest.ValidDigest(d) {
				return nil, fmt.Errorf("--expect %q: the digest is not sha256: and 64 lowercase hex digits (or none)", v)
			}
			e.Instructions = &d
			continue
		}
		var kind digest.Kind
		for _, k := range digest.Kinds {
			if k.ListMember() == set {
				kind = k
			}
		}
		switch {
		case kind == "":
			return nil, fmt.Errorf("--expect %q: SET is one of tools, prompts, resourceTemplates, instructions", v)
		case e.Sets[kind] != "":
			return nil, fmt.Errorf("--expect %s given twice", set)
		case !digest.ValidDigest(d):
			return nil, fmt.Errorf("--expect %q: the digest is not sha256: and 64 lowercase hex digits", v)
		}
		e.Sets[kind] = d
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
	fs.StringArrayVar(&o.Locks, "lock", nil, "a lock written with this log: the log must reach the head it recorded (auditHead), followed by its approval, and not replace it (repeatable)")
	fs.StringArrayVar(&o.ExpectHeads, "expect-head", nil, "a head kept elsewhere (sha256:HEX, as audit verify prints it): the log must hold it as a line (repeatable)")
}
