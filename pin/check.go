package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/capability"
	"github.com/mcpsign/mcpsign/pin/diff"
)

// Severity of a finding: an error is drift; an info is reported only.
type Severity string

// Severities.
const (
	SeverityError Severity = "error"
	SeverityInfo  Severity = "info"
)

// Drift rule ids (docs/DRIFT.md). The added, removed and changed rules of
// each kind are named by RuleAdded, RuleRemoved and RuleChanged.
const (
	RuleToolAdded               = "pin-tool-added"
	RuleToolRemoved             = "pin-tool-removed"
	RuleToolChanged             = "pin-tool-changed"
	RulePromptAdded             = "pin-prompt-added"
	RulePromptRemoved           = "pin-prompt-removed"
	RulePromptChanged           = "pin-prompt-changed"
	RuleResourceTemplateAdded   = "pin-resource-template-added"
	RuleResourceTemplateRemoved = "pin-resource-template-removed"
	RuleResourceTemplateChanged = "pin-resource-template-changed"
	// RuleResourceAdded, RuleResourceRemoved and RuleResourceChanged are
	// the static resources' (resources/list, keyed by uri), checked when
	// a policy pins them (docs/DRIFT.md).
	RuleResourceAdded   = "pin-resource-added"
	RuleResourceRemoved = "pin-resource-removed"
	RuleResourceChanged = "pin-resource-changed"
	RuleCapabilityAdded = "pin-capability-added"
	// RuleHiddenCharacters (an mcpsign extension of the drift rules): a
	// text of a definition gained invisible, bidirectional-control or tag
	// characters (diff.BreakingHiddenCharacters).
	RuleHiddenCharacters    = "pin-hidden-characters"
	RuleInstructionsChanged = "pin-instructions-changed"
	RuleLockModified        = "pin-lock-modified"
	RuleServerChanged       = "pin-server-changed"
	RuleProtocolChanged     = "pin-protocol-changed"
	// RuleLockUnreadable (an mcpsign extension of DESIGN's list) is a lock
	// that could not be read at all: missing, an I/O error, or a lockVersion
	// this mcpsign does not read. A lock that reads but is malformed or
	// does not match its lockDigest is RuleLockModified.
	RuleLockUnreadable = "pin-lock-unreadable"
	// RuleClientCapabilitiesDiffer (info): the live definitions were read
	// under other client capabilities than the locked ones. It comes first
	// in a report; while it holds and the client announces fewer
	// capabilities than the lock's (every top-level capability it announces
	// is one the lock has, and it lacks one the lock has), a locked
	// definition the server does not offer this client is
	// RuleAbsentForClient (info), not removed.
	RuleClientCapabilitiesDiffer = "pin-client-capabilities-differ"
	// RuleToolAbsentForClient and the same for prompts and resource
	// templates (info): a locked definition the server does not offer a
	// client with other capabilities than the locked ones (see
	// RuleAbsentForClient).
	RuleToolAbsentForClient             = "pin-tool-absent-for-client"
	RulePromptAbsentForClient           = "pin-prompt-absent-for-client"
	RuleResourceTemplateAbsentForClient = "pin-resource-template-absent-for-client"
)

const ruleKindResourceTemplateName = "resource-template"

func ruleKind(k digest.Kind) string {
	if k == digest.KindResourceTemplate {
		return ruleKindResourceTemplateName
	}
	return string(k)
}

// RuleAdded, RuleRemoved and RuleChanged return the rule id for a definition
// of kind k that was added, removed or changed: pin-tool-added,
// pin-resource-template-changed…
func RuleAdded(k digest.Kind) string   { return "pin-" + ruleKind(k) + "-added" }
func RuleRemoved(k digest.Kind) string { return "pin-" + ruleKind(k) + "-removed" }
func RuleChanged(k digest.Kind) string { return "pin-" + ruleKind(k) + "-changed" }

// RuleAbsentForClient returns the rule id of a locked definition of kind k
// that the server does not offer a client announcing other capabilities
// than the locked ones: pin-tool-absent-for-client…
func RuleAbsentForClient(k digest.Kind) string { return "pin-" + ruleKind(k) + "-absent-for-client" }

// Finding is one result of a drift check.
type Finding struct {
	Rule     string      `json:"rule"`
	Severity Severity    `json:"severity"`
	Kind     digest.Kind `json:"kind,omitempty"`
	Key      string      `json:"key,omitempty"`
	// Message is for people; server text in it (a key, a member name, an
	// error) is raw, quoted with textsafe.RawQuote: escape the whole
	// message where it is printed (WriteReportText and
	// WriteReportMarkdown do), and only there (docs/JSON.md: JSON carries
	// raw strings).
	Message string `json:"message"`
	// LockedDigest and ObservedDigest of a definition or the instructions.
	LockedDigest   string `json:"lockedDigest,omitempty"`
	ObservedDigest string `json:"observedDigest,omitempty"`
	// Changes are the members that changed (pin-*-changed), with diffs.
	Changes []diff.FieldChange `json:"changes,omitempty"`
	// Diff is the text diff of changed instructions.
	Diff string `json:"diff,omitempty"`
	// Capabilities: a new tool's capabilities (pin-tool-added), or those a
	// tool gained (pin-capability-added); Sources say why.
	Capabilities []capability.Capability                       `json:"capabilities,omitempty"`
	Sources      map[capability.Capability][]capability.Source `json:"sources,omitempty"`
	// LockedClientCapabilities and ObservedClientCapabilities are the
	// client capabilities of the lock and of the live listing
	// (pin-client-capabilities-differ), RFC 8785 form.
	LockedClientCapabilities   json.RawMessage `json:"lockedClientCapabilities,omitempty"`
	ObservedClientCapabilities json.RawMessage `json:"observedClientCapabilities,omitempty"`
}

// Report is the result of checking a live server against a lock.
type Report struct {
	// Lock is the lock file's path, when the caller set it.
	Lock string `json:"lock,omitempty"`
	// Locked and Observed name the server in the lock and as it is now.
	Locked   digest.ServerInfo `json:"lockedServer,omitzero"`
	Observed digest.ServerInfo `json:"observedServer,omitzero"`
	// Approval is the lock's approval; nil when the lock was refused.
	Approval *Approval `json:"approval,omitempty"`
	// Counts are the definitions the server offers now, by list member
	// (tools, prompts, resourceTemplates).
	Counts   map[string]int `json:"counts"`
	Findings []Finding      `json:"findings"`
	// Diff is the comparison the findings were drawn from; nil when the
	// lock was refused.
	Diff *diff.Result `json:"-"`
}

// FindingIDs returns the error findings as short identifiers: the rule,
// and the definition's subject name when it is about one, e.g.
// "pin-tool-added tool/run_command" (raw server text: escape it to print).
// When there is an error finding and the client capabilities differ, the
// info pin-client-capabilities-differ comes first: it explains the rest.
func (r *Report) FindingIDs() []string {
	var ids []string
	errs := r.Errors()
	for _, f := range r.Findings {
		if f.Severity != SeverityError && (errs == 0 || f.Rule != RuleClientCapabilitiesDiffer) {
			continue
		}
		id := f.Rule
		if f.Kind != "" {
			id += " " + attest.SubjectName(f.Kind, f.Key)
		}
		ids = append(ids, id)
	}
	return ids
}

// Errors returns the number of error findings.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Has reports whether a finding of the rule is in the report.
func (r *Report) Has(rule string) bool {
	for _, f := range r.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// FailOn is when verify-pin and the proxy treat a report as a failure.
type FailOn string

// --fail-on values of verify-pin.
const (
	// FailOnDrift fails on any error finding (the default).
	FailOnDrift FailOn = "drift"
	// FailOnCapability fails only when a tool gained delete or exec, a
	// text gained hidden characters, or the lock was modified.
	FailOnCapability FailOn = "capability"
	// FailOnNever only reports.
	FailOnNever FailOn = "never"
)

// ErrFailOn is the error of ParseFailOn and diff.ParseFailOn for a word
// they do not know.
var ErrFailOn = diff.ErrFailOn

// ParseFailOn reads a --fail-on value of verify-pin: drift, capability or
// never; any and none (diff's words) are aliases of drift and never.
func ParseFailOn(s string) (FailOn, error) {
	switch f := FailOn(s); f {
	case FailOnDrift, FailOnCapability, FailOnNever:
		return f, nil
	case "any":
		return FailOnDrift, nil
	case "none":
		return FailOnNever, nil
	}
	return "", fmt.Errorf("%w %s: want drift (or any), capability or never (or none)", ErrFailOn, textsafe.RawQuote(s))
}

// Failed reports whether the report fails under f.
func (r *Report) Failed(f FailOn) bool {
	switch f {
	case FailOnNever:
		return false
	case FailOnCapability:
		return r.Has(RuleCapabilityAdded) || r.Has(RuleHiddenCharacters) || r.Has(RuleLockModified) || r.Has(RuleLockUnreadable)
	}
	return r.Errors() > 0
}

// Check compares a live snapshot with the lock under the drift rules of
// docs/DRIFT.md. Every definition is compared by kind, key and Definition
// Digest; one the snapshot has that cannot be digested never matches. A
// changed tool's new capabilities are computed without the lock's override
// for it: an override approves the pinned definition only.
//
// When both the lock and the snapshot record client capabilities and they
// differ (compared in their RFC 8785 form), the first finding is the info
// pin-client-capabilities-differ. When the client announces fewer
// capabilities than the lock's (what it announces is contained in the
// lock's, at every depth), a locked definition the snapshot lacks is the
// info pin-*-absent-for-client rather than the error pin-*-removed: a
// server may offer fewer definitions to a client that announces less, and
// absence gives a model nothing unapproved. Otherwise (the client announces
// a capability, or a member of one, the lock lacks, or a value otherwise)
// nothing explains a missing definition and it stays pin-*-removed. An added or
// changed definition is drift whatever the capabilities. Unknown
// capabilities (nil on either side) compare as equal: removal stays drift.
func (l *Lock) Check(s *digest.Snapshot) *Report {
	ls := LockSide("lock", l)
	// A snapshot that listed the resources is checked against the lock's:
	// a lock that records none approves none (docs/LOCK.md, "resources").
	ls.Resources = s.Resources != nil
	d := diff.Compare(ls, diff.SnapshotSide("server", diff.OriginLive, s), diff.Options{})
	approval := l.Approval
	r := &Report{
		Locked:   l.Server,
		Observed: s.Server,
		Approval: &approval,
		Counts:   map[string]int{},
		Findings: []Finding{},
		Diff:     d,
	}
	for _, k := range digest.Kinds {
		r.Counts[k.ListMember()] = len(s.Definitions(k))
	}
	if s.Resources != nil {
		r.Counts[digest.KindResource.ListMember()] = len(s.Resources)
	}
	// Unknown on either side compares as equal; one that does not read
	// differs (as digest.EqualClientCapabilities has it), and observed is
	// then nil.
	capsDiffer := false
	var observed json.RawMessage
	if l.ClientCapabilities != nil && s.ClientCapabilities != nil {
		locked, lerr := digest.CanonicalClientCapabilities(l.ClientCapabilities)
		var oerr error
		observed, oerr = digest.CanonicalClientCapabilities(s.ClientCapabilities)
		capsDiffer = lerr != nil || oerr != nil || !bytes.Equal(locked, observed)
	}
	var capsWhy string
	fewer := false
	if capsDiffer {
		capsWhy, fewer = compareClientCapabilities(l.ClientCapabilities, observed)
		rule := "a locked definition not offered to this client is reported, not failed; an added or changed one is drift"
		if !fewer {
			rule = "this client does not announce fewer capabilities than the lock's, so a missing definition is drift, as are an added or changed one"
		}
		r.Findings = append(r.Findings, Finding{
			Rule: RuleClientCapabilitiesDiffer, Severity: SeverityInfo,
			LockedClientCapabilities: l.ClientCapabilities, ObservedClientCapabilities: observed,
			Message: fmt.Sprintf("the definitions were locked under client capabilities %s and are now read under %s (%s): %s",
				shortJSON(l.ClientCapabilities), shortJSON(observed), capsWhy, rule),
		})
	}
	for _, dc := range d.Definitions {
		if fewer && dc.Change == diff.Removed {
			r.Findings = append(r.Findings, Finding{
				Rule: RuleAbsentForClient(dc.Kind), Severity: SeverityInfo, Kind: dc.Kind, Key: dc.Key, LockedDigest: dc.OldDigest,
				Message: fmt.Sprintf("%s %s is in the lock but not offered to this client (%s)", dc.Kind, textsafe.RawQuote(dc.Key), capsWhy),
			})
			continue
		}
		r.Findings = append(r.Findings, definitionFinding(dc))
		if gained := dangerous(dc.GainedCapabilities); len(gained) > 0 {
			f := Finding{
				Rule: RuleCapabilityAdded, Severity: SeverityError, Kind: dc.Kind, Key: dc.Key,
				Capabilities: gained, Sources: map[capability.Capability][]capability.Source{},
			}
			var why []string
			for _, c := range gained {
				f.Sources[c] = dc.NewCapabilities.Sources[c]
				why = append(why, fmt.Sprintf("%s (%s)", c, capability.SourcesText(dc.NewCapabilities.Sources[c])))
			}
			if dc.Change == diff.Added {
				f.Message = fmt.Sprintf("new tool %s has %s", textsafe.RawQuote(dc.Key), strings.Join(why, ", "))
			} else {
				f.Message = fmt.Sprintf("tool %s gained %s", textsafe.RawQuote(dc.Key), strings.Join(why, ", "))
			}
			r.Findings = append(r.Findings, f)
		}
		for _, b := range dc.Breaking {
			if b.Rule == diff.BreakingHiddenCharacters {
				r.Findings = append(r.Findings, Finding{
					Rule: RuleHiddenCharacters, Severity: SeverityError, Kind: dc.Kind, Key: dc.Key,
					LockedDigest: dc.OldDigest, ObservedDigest: dc.NewDigest, Message: b.Message,
				})
			}
		}
	}
	if ic := d.Instructions; ic != nil {
		f := Finding{Rule: RuleInstructionsChanged, Severity: SeverityError, LockedDigest: ic.OldDigest, ObservedDigest: ic.NewDigest, Diff: ic.Diff}
		switch ic.Change {
		case diff.Added:
			f.Message = "the server now sends instructions; the lock has none"
		case diff.Removed:
			f.Message = "the server no longer sends the locked instructions"
		default:
			f.Message = "the instructions changed"
		}
		r.Findings = append(r.Findings, f)
	}
	if d.Server != nil {
		r.Findings = append(r.Findings, Finding{Rule: RuleServerChanged, Severity: SeverityInfo,
			Message: fmt.Sprintf("the server was %s %s and is now %s %s",
				textsafe.RawQuote(d.Server.Old.Name), textsafe.RawQuote(d.Server.Old.Version),
				textsafe.RawQuote(d.Server.New.Name), textsafe.RawQuote(d.Server.New.Version))})
	}
	if d.Protocol != nil {
		r.Findings = append(r.Findings, Finding{Rule: RuleProtocolChanged, Severity: SeverityInfo,
			Message: fmt.Sprintf("the protocol version was %s and is now %s", textsafe.RawQuote(d.Protocol.Old), textsafe.RawQuote(d.Protocol.New))})
	}
	return r
}

// compareClientCapabilities reads the locked and observed client
// capabilities (canonical objects) once and returns why they differ and
// whether the observed ones announce fewer.
//
// why names the top-level client capabilities that one side has and the
// other lacks or has otherwise, e.g. "\"roots\": locked, not announced now",
// raw (textsafe.RawQuote); "they differ" when nothing names it or a side
// does not read.
//
// fewer reports whether the observed ones announce fewer capabilities than
// the locked ones: they are contained in them (contained), so a client
// announcing a part of the default profile, at the top level or below
// (`{"sampling":{}}` of `{"sampling":{"context":{},"tools":{}}}`), announces
// fewer. They differ when this is called, so contained means fewer. One
// that does not read is never fewer.
func compareClientCapabilities(locked, observed []byte) (why string, fewer bool) {
	_, lm, err1 := digest.Members(locked)
	_, om, err2 := digest.Members(observed)
	if err1 != nil || err2 != nil {
		return "they differ", false
	}
	var gone, added, changed []string
	for name, v := range lm {
		switch ov, ok := om[name]; {
		case !ok:
			gone = append(gone, textsafe.RawQuote(name))
		case string(ov) != string(v):
			changed = append(changed, textsafe.RawQuote(name))
		}
	}
	for name := range om {
		if _, ok := lm[name]; !ok {
			added = append(added, textsafe.RawQuote(name))
		}
	}
	// What the client announces is contained in what the lock records,
	// at every depth, and is not all of it (they differ).
	fewer = contained(observed, locked)
	var parts []string
	for _, p := range []struct {
		names []string
		what  string
	}{{gone, "locked, not announced now"}, {added, "announced now, not locked"}, {changed, "announced otherwise"}} {
		if len(p.names) > 0 {
			slices.Sort(p.names)
			parts = append(parts, strings.Join(p.names, ", ")+": "+p.what)
		}
	}
	if len(parts) == 0 {
		return "they differ", fewer
	}
	return strings.Join(parts, "; "), fewer
}

// contained reports whether the JSON object a is contained in the JSON
// object b: each member of a is a member of b whose value, when both are
// objects, contains a's, and is otherwise the same value (both are in their
// RFC 8785 form, so the same value is the same bytes). Anything that does
// not read is not contained.
func contained(a, b []byte) bool {
	_, am, err1 := digest.Members(a)
	_, bm, err2 := digest.Members(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for name, av := range am {
		bv, ok := bm[name]
		if !ok {
			return false
		}
		if len(av) > 0 && av[0] == '{' && len(bv) > 0 && bv[0] == '{' {
			if !contained(av, bv) {
				return false
			}
			continue
		}
		if string(av) != string(bv) {
			return false
		}
	}
	return true
}

// shortJSON is a JSON text for a message, raw, cut to about 200 bytes.
func shortJSON(b []byte) string { return textsafe.Cut(string(b), 200) }

func dangerous(cs []capability.Capability) []capability.Capability {
	var out []capability.Capability
	for _, c := range cs {
		if c.Dangerous() {
			out = append(out, c)
		}
	}
	return out
}

func definitionFinding(dc diff.DefinitionChange) Finding {
	f := Finding{Severity: SeverityError, Kind: dc.Kind, Key: dc.Key, LockedDigest: dc.OldDigest, ObservedDigest: dc.NewDigest}
	name := string(dc.Kind) + " " + textsafe.RawQuote(dc.Key)
	switch dc.Change {
	case diff.Added:
		f.Rule = RuleAdded(dc.Kind)
		f.Message = name + " is not in the lock"
		if dc.NewCapabilities != nil {
			f.Capabilities = dc.NewCapabilities.Capabilities
			f.Sources = dc.NewCapabilities.Sources
			f.Message += fmt.Sprintf(" (capabilities: %s)", capability.Names(dc.NewCapabilities.Capabilities))
		}
	case diff.Removed:
		f.Rule = RuleRemoved(dc.Kind)
		f.Message = name + " is in the lock but the server no longer offers it"
	default:
		f.Rule = RuleChanged(dc.Kind)
		f.Changes = dc.Fields
		switch {
		case len(dc.Fields) > 0:
			fields := make([]string, len(dc.Fields))
			for i, fc := range dc.Fields {
				fields[i] = fc.Field
			}
			f.Message = name + " changed: " + strings.Join(fields, ", ")
		default:
			f.Message = name + " changed"
		}
	}
	if dc.Invalid != "" {
		f.Message += " — " + dc.Invalid
	}
	return f
}

// LockErrorReport returns the report of a lock that was refused: one
// pin-lock-modified finding (for a lock changed after it was written) or the
// reason it could not be read. Callers still exit 2: a bad lock is an input
// error, never a pass.
func LockErrorReport(path string, err error) *Report {
	r := &Report{Lock: path, Counts: map[string]int{}, Findings: []Finding{}}
	f := Finding{Rule: RuleLockModified, Severity: SeverityError, Message: err.Error()}
	if !errors.Is(err, ErrModified) && !errors.Is(err, ErrMalformed) {
		f.Rule = RuleLockUnreadable
	}
	r.Findings = append(r.Findings, f)
	return r
}
