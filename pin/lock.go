package pin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// LockKind and LockVersion identify a lock file (docs/LOCK.md).
const (
	LockKind    = "mcpsign.lock"
	LockVersion = 1
)

// MaxLockBytes bounds the lock file Read and Parse accept: the size of the
// largest snapshot file a source reads.
const MaxLockBytes = 64 << 20

// The approval methods of a lock that are no signature, beside the signing
// methods (evidence.MethodSigstore, MethodKey, MethodCertificate: verify's;
// evidence.Method.Valid reports them, the only methods a signer can roll
// forward and a proxy re-verify). MethodTOFU means nobody vouched for the
// definitions: they were trusted on first use. MethodManual means a person
// approved them after a review ('mcpsign approve'): the approval names them
// and their reason, but no signature vouches for it.
const (
	MethodTOFU   evidence.Method = "tofu"
	MethodManual evidence.Method = "manual"
)

// validApprovalMethod reports whether m may approve a lock: a signing
// method, tofu or manual.
func validApprovalMethod(m evidence.Method) bool {
	return m.Valid() || m == MethodTOFU || m == MethodManual
}

// maxSafeInt is 2^53: integers of the lock must stay below it, as every
// number of a Definition Digest input must.
const maxSafeInt = 1 << 53

// Approval is the evidence that the pinned definitions were approved. It
// is written and read as JSON in a lock's form (MarshalJSON, UnmarshalJSON).
type Approval struct {
	Method evidence.Method `json:"method"`
	// Identity is the verified signer: the certificate SAN for sigstore, the
	// subject or SAN for certificate, the key's ID for key (sha256:HEX,
	// evidence.KeyID); "" for tofu.
	Identity string `json:"identity"`
	// Issuer is the OIDC issuer of a sigstore certificate; "" otherwise.
	Issuer string `json:"issuer"`
	// BundleDigest is "sha256:…" of the bundle file's bytes; "" for tofu.
	BundleDigest string `json:"bundleDigest"`
	// Tlog is the transparency log entry, when the bundle has one. The
	// lock writes its integrated time in Unix seconds, 0 when there is none
	// (Rekor v2), and reads 0 as none.
	Tlog *evidence.Tlog `json:"tlog,omitempty"`
	// ApprovedAt is when the lock was written, in UTC.
	ApprovedAt time.Time `json:"approvedAt"`

	// Reason, Approver and PreviousLockDigest are those of a manual
	// approval (required for it, empty otherwise): why the change was
	// approved, who approved it, and the lockDigest of the lock it replaced.
	Reason             string `json:"reason,omitempty"`
	Approver           string `json:"approver,omitempty"`
	PreviousLockDigest string `json:"previousLockDigest,omitempty"`
	// SourceRevision is the source revision the approver reviewed (a
	// commit, a tag), optional, manual approvals only.
	SourceRevision string `json:"sourceRevision,omitempty"`
}

func (a *Approval) validate() error {
	if !validApprovalMethod(a.Method) {
		return fmt.Errorf("approval method %s is not sigstore, key, certificate, tofu or manual", textsafe.RawQuote(string(a.Method)))
	}
	for _, s := range []string{a.Identity, a.Issuer, a.Reason, a.Approver, a.SourceRevision} {
		if !utf8.ValidString(s) {
			return errors.New("approval identity, issuer, reason, approver or sourceRevision is not valid UTF-8")
		}
	}
	if a.Method == MethodManual {
		switch {
		case a.Reason == "" || a.Approver == "":
			return errors.New("a manual approval needs its reason and approver")
		case !digest.ValidDigest(a.PreviousLockDigest):
			return fmt.Errorf("approval previousLockDigest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(a.PreviousLockDigest))
		}
	} else if a.Reason != "" || a.Approver != "" || a.PreviousLockDigest != "" || a.SourceRevision != "" {
		return fmt.Errorf("a %s approval has no reason, approver, previousLockDigest or sourceRevision (manual approvals only)", a.Method)
	}
	if a.Method == MethodTOFU || a.Method == MethodManual {
		if a.Identity != "" || a.Issuer != "" || a.BundleDigest != "" || a.Tlog != nil {
			return fmt.Errorf("a %s approval has no identity, issuer, bundleDigest or tlog", a.Method)
		}
	} else {
		if a.Identity == "" {
			return fmt.Errorf("a %s approval needs the verified identity", a.Method)
		}
		if !digest.ValidDigest(a.BundleDigest) {
			return fmt.Errorf("approval bundleDigest %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(a.BundleDigest))
		}
	}
	if t := a.Tlog; t != nil {
		if it := unixOrZero(t.IntegratedTime); t.LogIndex < 0 || t.LogIndex >= maxSafeInt || it < 0 || it >= maxSafeInt {
			return errors.New("approval tlog logIndex and integratedTime must be integers from 0 to 2^53-1")
		}
		if t.LogID == "" || !isLowerHex(t.LogID) {
			return fmt.Errorf("approval tlog logId %s is not lowercase hex", textsafe.RawQuote(t.LogID))
		}
	}
	if a.ApprovedAt.IsZero() {
		return errors.New("approval approvedAt is missing")
	}
	return nil
}

func isLowerHex(s string) bool {
	for _, b := range []byte(s) {
		if (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	return true
}

// Sets holds the Set Digest of each kind, as in a statement's predicate.
type Sets = attest.Sets

// Definition is one pinned definition: its kind, key, Definition Digest and
// the definition itself, as the server sent it.
type Definition struct {
	Kind       digest.Kind     `json:"kind"`
	Key        string          `json:"key"`
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition"`
}

// Lock is an approved set of definitions (docs/LOCK.md). Build one with
// NewLock, read one with Read or Parse; the zero value is not a lock.
type Lock struct {
	Server          digest.ServerInfo
	ProtocolVersion string
	// Instructions are the approved instructions; nil when the server sent
	// none.
	Instructions *string
	// ClientCapabilities are the client capabilities the definitions were
	// read under (the snapshot's), in their RFC 8785 form; nil when unknown
	// (a lock written before mcpsign recorded them, or from a snapshot file
	// without them). Check compares them with the live snapshot's
	// (docs/LOCK.md).
	ClientCapabilities json.RawMessage
	Sets               Sets
	// Definitions sorted by kind (tool, prompt, resourceTemplate) then key
	// in UTF-8 byte order.
	Definitions []Definition
	// Resources are the pinned static resources (kind digest.KindResource,
	// keyed by uri), sorted by key; nil when the lock records none (it was
	// written without listing them: resources not pinned). They are
	// approved by Approval, but no signature covers them (docs/LOCK.md,
	// "resources").
	Resources []Definition
	// ResourceSet is the Set Digest of Resources; "" when Resources is nil.
	ResourceSet string
	// Capabilities are the capability overrides the approver gave, by tool
	// name; nil when none.
	Capabilities capability.Overrides
	Approval     Approval
	// Proof holds the bundles that proved a signed approval, each the bytes
	// of its file, in the order they were verified, the first the one
	// Approval.BundleDigest records (docs/LOCK.md "proof"); nil when the
	// lock carries none. It is evidence to verify again, never trusted:
	// whoever can write the lock can write it (policy.Decider.CheckLock).
	Proof [][]byte
	// AuditHead is the head of the audit log that recorded this lock's
	// approval when it was written: the LineDigest of the log's last line
	// before the approval event (audit.EmptyHead for an empty log), so
	// that the log can be checked to reach it (docs/LOCK.md "auditHead",
	// docs/AUDIT.md "Anchors"); "" when the lock was written without an
	// audit log.
	AuditHead string
	// LockDigest is set by Marshal and checked by Parse.
	LockDigest string
}

// NewLock returns the lock of a snapshot approved as a says, recording the
// client capabilities the snapshot was read under, and its static resources
// when it listed them (s.Resources not nil). It fails when any definition
// or resource has no digest (a partial set is never pinned), when a string is
// not valid UTF-8, when the client capabilities are not a JSON object, or
// when the approval is incomplete. A zero ApprovedAt is set to now.
func NewLock(s *digest.Snapshot, a Approval) (*Lock, error) {
	r := digest.Compute(s)
	err := r.Err()
	if err != nil {
		return nil, err
	}
	if a.ApprovedAt.IsZero() {
		a.ApprovedAt = time.Now()
	}
	a.ApprovedAt = a.ApprovedAt.UTC().Truncate(time.Second)
	if err = a.validate(); err != nil {
		return nil, err
	}
	l := &Lock{
		Server:          s.Server,
		ProtocolVersion: s.ProtocolVersion,
		Sets: Sets{
			Tools:             r.Sets[digest.KindTool],
			Prompts:           r.Sets[digest.KindPrompt],
			ResourceTemplates: r.Sets[digest.KindResourceTemplate],
		},
		Approval:    a,
		Definitions: make([]Definition, 0, len(r.Definitions)),
	}
	if s.Instructions != nil {
		ins := *s.Instructions
		l.Instructions = &ins
	}
	if s.ClientCapabilities != nil {
		caps, err := digest.CanonicalClientCapabilities(s.ClientCapabilities)
		if err != nil {
			return nil, err
		}
		l.ClientCapabilities = caps
	}
	// Compute orders by kind (digest.Kinds), then key, then index.
	if l.Definitions, err = lockDefinitions(r.Definitions); err != nil {
		return nil, err
	}
	if rr := digest.ComputeResources(s); rr != nil {
		if err := rr.Err(); err != nil {
			return nil, err
		}
		if l.Resources, err = lockDefinitions(rr.Definitions); err != nil {
			return nil, err
		}
		l.ResourceSet = rr.Sets[digest.KindResource]
	}
	if err := l.checkStrings(); err != nil {
		return nil, err
	}
	return l, nil
}

// lockDefinitions returns the digested definitions as a lock holds them:
// without their top-level "_meta", in the order given.
func lockDefinitions(defs []digest.Definition) ([]Definition, error) {
	out := make([]Definition, 0, len(defs))
	for _, d := range defs {
		def, err := withoutMeta(d.Raw)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", d.Kind, textsafe.RawQuote(d.Key), err)
		}
		out = append(out, Definition{Kind: d.Kind, Key: d.Key, Digest: d.Digest, Definition: def})
	}
	return out, nil
}

// withoutMeta returns a copy of a definition without its top-level "_meta"
// member, the other members' bytes as they were. The Definition Digest
// leaves "_meta" out, so the digest is the same; a lock stores no "_meta"
// so that nothing undigested is in it.
func withoutMeta(raw json.RawMessage) (json.RawMessage, error) {
	members, err := splitObject(raw)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(members, func(m member) bool { return m.name == "_meta" })
	if i < 0 {
		return slices.Clone(bytes.TrimSpace(raw)), nil
	}
	members = slices.Delete(members, i, i+1)
	var b bytes.Buffer
	b.WriteByte('{')
	for j, m := range members {
		if j > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, m.name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (l *Lock) checkStrings() error {
	for _, s := range []string{l.Server.Name, l.Server.Version, l.ProtocolVersion} {
		if !utf8.ValidString(s) {
			return errors.New("server name, version or protocol version is not valid UTF-8")
		}
	}
	if l.Instructions != nil && !utf8.ValidString(*l.Instructions) {
		return errors.New("instructions are not valid UTF-8")
	}
	return nil
}

// SetCapabilities stores capability overrides in the lock. Every name must be
// a pinned tool; nil or empty removes the overrides.
func (l *Lock) SetCapabilities(o capability.Overrides) error {
	if err := l.checkOverrides(o); err != nil {
		return err
	}
	if len(o) == 0 {
		l.Capabilities = nil
		return nil
	}
	norm := make(capability.Overrides, len(o))
	for name, caps := range o {
		sorted := capability.Sort(slices.Clone(caps))
		if len(sorted) != len(caps) {
			return fmt.Errorf("capabilities override for tool %s lists a capability twice", textsafe.RawQuote(name))
		}
		norm[name] = sorted
	}
	l.Capabilities = norm
	return nil
}

func (l *Lock) checkOverrides(o capability.Overrides) error {
	var missing []string
	for name, caps := range o {
		if _, ok := l.Lookup(digest.KindTool, name); !ok {
			missing = append(missing, textsafe.RawQuote(name))
		}
		if len(caps) == 0 {
			return fmt.Errorf("capabilities override for tool %s is empty", textsafe.RawQuote(name))
		}
		for _, c := range caps {
			if !c.Valid() {
				return fmt.Errorf("capabilities override for tool %s: %s is not a capability", textsafe.RawQuote(name), textsafe.RawQuote(string(c)))
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("capabilities overrides name tools the server does not have: %s", strings.Join(missing, ", "))
	}
	return nil
}

// Lookup returns the pinned definition of kind k with key.
func (l *Lock) Lookup(k digest.Kind, key string) (Definition, bool) {
	i, ok := slices.BinarySearchFunc(l.Definitions, Definition{Kind: k, Key: key}, compareDefinitions)
	if !ok {
		return Definition{}, false
	}
	return l.Definitions[i], true
}

// compareDefinitions orders definitions as a lock does: by kind in the
// order of digest.Kinds, then by key in UTF-8 byte order.
func compareDefinitions(a, b Definition) int {
	return digest.CompareKeys(a.Kind, a.Key, b.Kind, b.Key)
}

// Snapshot returns the pinned definitions as a snapshot (captured at the
// approval time), for diffs and for re-digesting.
func (l *Lock) Snapshot() *digest.Snapshot {
	s := &digest.Snapshot{
		Kind:              digest.SnapshotKind,
		SnapshotVersion:   digest.SnapshotVersion,
		Server:            l.Server,
		ProtocolVersion:   l.ProtocolVersion,
		Tools:             []json.RawMessage{},
		Prompts:           []json.RawMessage{},
		ResourceTemplates: []json.RawMessage{},
		CapturedAt:        l.Approval.ApprovedAt,
	}
	if l.ClientCapabilities != nil {
		s.ClientCapabilities = slices.Clone(l.ClientCapabilities)
	}
	if l.Instructions != nil {
		ins := *l.Instructions
		s.Instructions = &ins
	}
	for _, d := range l.Definitions {
		s.SetDefinitions(d.Kind, append(s.Definitions(d.Kind), d.Definition))
	}
	if l.Resources != nil {
		s.Resources = make([]json.RawMessage, 0, len(l.Resources))
		for _, d := range l.Resources {
			s.Resources = append(s.Resources, d.Definition)
		}
	}
	return s
}

// Marshal returns the lock file and sets LockDigest: the Definition Digest
// (strict read, RFC 8785, SHA-256) of the lock object without its
// lockDigest member. The lock is checked first as Parse would check it.
func (l *Lock) Marshal() ([]byte, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	body, err := l.marshalBody()
	if err != nil {
		return nil, err
	}
	dg, err := digest.DefinitionDigest(append(slices.Clone(body), "\n}"...))
	if err != nil {
		return nil, fmt.Errorf("digesting the lock: %w", err)
	}
	l.LockDigest = dg
	body = append(body, ",\n  \"lockDigest\": \""...)
	body = append(body, dg...)
	body = append(body, "\"\n}\n"...)
	return body, nil
}

// marshalBody writes every member but lockDigest, without the closing
// brace.
func (l *Lock) marshalBody() ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) { writeJSONString(&b, s) }
	b.WriteString("{\n  \"kind\": \"" + LockKind + "\",\n  \"lockVersion\": 1,\n  \"server\": {\"name\": ")
	str(l.Server.Name)
	b.WriteString(", \"version\": ")
	str(l.Server.Version)
	b.WriteString("},\n  \"protocolVersion\": ")
	str(l.ProtocolVersion)
	if l.Instructions != nil {
		b.WriteString(",\n  \"instructions\": ")
		str(*l.Instructions)
	}
	if l.ClientCapabilities != nil {
		b.WriteString(",\n  \"clientCapabilities\": ")
		b.Write(l.ClientCapabilities) // canonical: validate checked it
	}
	b.WriteString(",\n  \"sets\": {\"tools\": ")
	str(l.Sets.Tools)
	b.WriteString(", \"prompts\": ")
	str(l.Sets.Prompts)
	b.WriteString(", \"resourceTemplates\": ")
	str(l.Sets.ResourceTemplates)
	b.WriteString("},\n  \"definitions\": ")
	writeEntries(&b, l.Definitions, "  ")
	if l.Resources != nil {
		b.WriteString(",\n  \"resources\": {\"set\": ")
		str(l.ResourceSet)
		b.WriteString(",\n    \"definitions\": ")
		writeEntries(&b, l.Resources, "    ")
		b.WriteByte('}')
	}
	if len(l.Capabilities) > 0 {
		caps, err := l.Capabilities.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.WriteString(",\n  \"capabilities\": ")
		b.Write(caps)
	}
	b.WriteString(",\n  \"approval\": ")
	a := l.Approval
	a.ApprovedAt = a.ApprovedAt.UTC()
	ab, err := a.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b.Write(ab)
	if l.Proof != nil {
		b.WriteString(",\n  \"proof\": [")
		for i, p := range l.Proof {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    \"")
			b.WriteString(base64.StdEncoding.EncodeToString(p))
			b.WriteByte('"')
		}
		b.WriteString("\n  ]")
	}
	if l.AuditHead != "" {
		b.WriteString(",\n  \"auditHead\": ")
		str(l.AuditHead)
	}
	return b.Bytes(), nil
}

// writeEntries writes pinned definitions as the array of a lock, each
// entry on its own lines, the closing bracket after ind.
func writeEntries(b *bytes.Buffer, defs []Definition, ind string) {
	b.WriteByte('[')
	for i, d := range defs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n" + ind + "  {\"kind\": ")
		writeJSONString(b, string(d.Kind))
		b.WriteString(", \"key\": ")
		writeJSONString(b, d.Key)
		b.WriteString(", \"digest\": ")
		writeJSONString(b, d.Digest)
		b.WriteString(",\n" + ind + "   \"definition\": ")
		b.Write(bytes.TrimSpace(d.Definition))
		b.WriteByte('}')
	}
	if len(defs) > 0 {
		b.WriteString("\n" + ind)
	}
	b.WriteByte(']')
}

// MarshalJSON writes the approval as a lock holds it (docs/LOCK.md): its
// members in order, approvedAt in UTC, the tlog's integratedTime in Unix
// seconds (0 for none).
func (a Approval) MarshalJSON() ([]byte, error) {
	w := approvalJSON{Method: a.Method, Identity: a.Identity, Issuer: a.Issuer, BundleDigest: a.BundleDigest,
		ApprovedAt: a.ApprovedAt.UTC().Format(time.RFC3339Nano),
		Reason:     a.Reason, Approver: a.Approver, PreviousLockDigest: a.PreviousLockDigest, SourceRevision: a.SourceRevision}
	if t := a.Tlog; t != nil {
		w.Tlog = &tlogJSON{LogIndex: t.LogIndex, LogID: t.LogID, IntegratedTime: unixOrZero(t.IntegratedTime)}
	}
	return marshalJSON(w)
}

// UnmarshalJSON reads an approval as a lock holds it, as strictly as Parse
// does (members, types, spellings); it does not check that the approval
// is one a lock may hold (NewLock and Parse do).
func (a *Approval) UnmarshalJSON(data []byte) error {
	var next Approval
	if err := decodeApprovalMembers(data, &next); err != nil {
		return err
	}
	*a = next
	return nil
}

// unixOrZero is t in Unix seconds, 0 for none.
func unixOrZero(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// approvalJSON fixes the member order of the approval object.
type approvalJSON struct {
	Method       evidence.Method `json:"method"`
	Identity     string          `json:"identity"`
	Issuer       string          `json:"issuer"`
	BundleDigest string          `json:"bundleDigest"`
	Tlog         *tlogJSON       `json:"tlog,omitempty"`
	ApprovedAt   string          `json:"approvedAt"`

	Reason             string `json:"reason,omitempty"`
	Approver           string `json:"approver,omitempty"`
	PreviousLockDigest string `json:"previousLockDigest,omitempty"`
	SourceRevision     string `json:"sourceRevision,omitempty"`
}

// tlogJSON is the approval's tlog as a lock holds it.
type tlogJSON struct {
	LogIndex       int64  `json:"logIndex"`
	LogID          string `json:"logId"`
	IntegratedTime int64  `json:"integratedTime"`
}

// validate checks what Parse checks, but for the lockDigest: approval,
// strings, definitions (each digests to its digest under its key, sorted,
// unique), Set Digests, overrides.
func (l *Lock) validate() error {
	if err := l.Approval.validate(); err != nil {
		return err
	}
	if err := l.validateProof(); err != nil {
		return err
	}
	if l.AuditHead != "" && !digest.ValidDigest(l.AuditHead) {
		return fmt.Errorf("auditHead %s is not sha256: and 64 lowercase hex digits", textsafe.RawQuote(l.AuditHead))
	}
	if err := l.checkStrings(); err != nil {
		return err
	}
	if l.ClientCapabilities != nil {
		caps, err := digest.CanonicalClientCapabilities(l.ClientCapabilities)
		if err != nil {
			return err
		}
		if !bytes.Equal(caps, l.ClientCapabilities) {
			return fmt.Errorf("clientCapabilities are not written in their RFC 8785 form (%s)", caps)
		}
	}
	snap := &digest.Snapshot{}
	for i, d := range l.Definitions {
		if !d.Kind.Valid() {
			return fmt.Errorf("definition #%d: kind %s is not tool, prompt or resourceTemplate (resources are in the member \"resources\")", i, textsafe.RawQuote(string(d.Kind)))
		}
		if i > 0 && compareDefinitions(l.Definitions[i-1], d) >= 0 {
			return fmt.Errorf("definition #%d (%s %s) is out of order or repeated: definitions are sorted by kind, then key", i, d.Kind, textsafe.RawQuote(d.Key))
		}
		snap.SetDefinitions(d.Kind, append(snap.Definitions(d.Kind), d.Definition))
	}
	r := digest.Compute(snap)
	if err := r.Err(); err != nil {
		return err
	}
	// Both are sorted the same way: kind, then key.
	for i, got := range r.Definitions {
		want := l.Definitions[i]
		if got.Kind != want.Kind || got.Key != want.Key {
			return fmt.Errorf("definition #%d is keyed %s %s but its %s member says %s", i, want.Kind, textsafe.RawQuote(want.Key), want.Kind.KeyMember(), textsafe.RawQuote(got.Key))
		}
		if got.Digest != want.Digest {
			return fmt.Errorf("%s %s: the recorded digest %s is not the digest of the recorded definition (%s)", want.Kind, textsafe.RawQuote(want.Key), want.Digest, got.Digest)
		}
	}
	for _, k := range digest.Kinds {
		if got, want := l.Sets.Get(k), r.Sets[k]; got != want {
			return fmt.Errorf("sets.%s is %s, but the definitions give %s", k.ListMember(), got, want)
		}
	}
	if err := l.validateResources(); err != nil {
		return err
	}
	return l.checkOverrides(l.Capabilities)
}

// MaxProofBundles bounds how many bundles a lock's proof holds.
const MaxProofBundles = 16

// SetProof records bundles as the proof of l's approval (docs/LOCK.md
// "proof"): the bundle files' bytes, the first the one the approval
// records; nil removes the proof. It fails, leaving l as it was, for an
// approval that is no signature, no bundle, or a first bundle whose digest
// is not the approval's bundleDigest.
func (l *Lock) SetProof(bundles [][]byte) error {
	if bundles == nil {
		l.Proof = nil
		return nil
	}
	old := l.Proof
	l.Proof = make([][]byte, len(bundles))
	for i, b := range bundles {
		l.Proof[i] = slices.Clone(b)
	}
	if err := l.validateProof(); err != nil {
		l.Proof = old
		return err
	}
	return nil
}

// validateProof checks the proof against the approval: only a signed
// approval carries one, of 1 to MaxProofBundles non-empty bundles of at
// most boundedfile.MaxBundleBytes each, the first's digest the approval's
// bundleDigest.
func (l *Lock) validateProof() error {
	switch {
	case l.Proof == nil:
		return nil
	case l.Approval.Method == MethodTOFU || l.Approval.Method == MethodManual:
		return fmt.Errorf("a %s approval carries no proof (no bundle approved it)", l.Approval.Method)
	case len(l.Proof) == 0 || len(l.Proof) > MaxProofBundles:
		return fmt.Errorf("proof holds %d bundles: from 1 to %d", len(l.Proof), MaxProofBundles)
	}
	for i, b := range l.Proof {
		if len(b) == 0 || len(b) > boundedfile.MaxBundleBytes {
			return fmt.Errorf("proof bundle #%d is %d bytes: from 1 to %d", i, len(b), boundedfile.MaxBundleBytes)
		}
	}
	if got := evidence.BundleDigest(l.Proof[0]); got != l.Approval.BundleDigest {
		return fmt.Errorf("the first bundle of the proof digests to %s, not to the approval's bundleDigest %s", got, l.Approval.BundleDigest)
	}
	return nil
}

// validateResources checks the pinned resources as validate checks the
// definitions: each of kind resource, sorted and unique by key, digesting
// to its digest under its uri, and their Set Digest.
func (l *Lock) validateResources() error {
	if l.Resources == nil {
		if l.ResourceSet != "" {
			return errors.New("a resource Set Digest without resources")
		}
		return nil
	}
	snap := &digest.Snapshot{Resources: make([]json.RawMessage, 0, len(l.Resources))}
	for i, d := range l.Resources {
		if d.Kind != digest.KindResource {
			return fmt.Errorf("resources.definitions #%d: kind %s is not %s", i, textsafe.RawQuote(string(d.Kind)), textsafe.RawQuote(string(digest.KindResource)))
		}
		if i > 0 && compareDefinitions(l.Resources[i-1], d) >= 0 {
			return fmt.Errorf("resources.definitions #%d (%s) is out of order or repeated: resources are sorted by key", i, textsafe.RawQuote(d.Key))
		}
		snap.Resources = append(snap.Resources, d.Definition)
	}
	r := digest.ComputeResources(snap)
	if err := r.Err(); err != nil {
		return err
	}
	for i, got := range r.Definitions {
		want := l.Resources[i]
		if got.Key != want.Key {
			return fmt.Errorf("resources.definitions #%d is keyed %s but its uri member says %s", i, textsafe.RawQuote(want.Key), textsafe.RawQuote(got.Key))
		}
		if got.Digest != want.Digest {
			return fmt.Errorf("resource %s: the recorded digest %s is not the digest of the recorded resource (%s)", textsafe.RawQuote(want.Key), want.Digest, got.Digest)
		}
	}
	if want := r.Sets[digest.KindResource]; l.ResourceSet != want {
		return fmt.Errorf("resources.set is %s, but the resources give %s", l.ResourceSet, want)
	}
	return nil
}

// Errors a lock is refused with; a *LockError from Read wraps one of them
// (or the I/O error, e.g. fs.ErrNotExist).
var (
	// ErrMalformed: not an mcpsign lock: not strict JSON, too large, a
	// wrong kind, an unknown or missing member, a value of the wrong type.
	ErrMalformed = errors.New("not a valid mcpsign lock")
	// ErrUnsupportedVersion: a lockVersion this mcpsign does not read.
	ErrUnsupportedVersion = errors.New("unsupported lock version")
	// ErrModified: the lock was changed after it was written: its
	// lockDigest does not match its content, or its content does not
	// agree with itself (a definition does not hash to its digest…).
	ErrModified = errors.New("the lock was modified after it was written")
)

// LockError is why a lock file was refused: the file and the reason.
type LockError struct {
	Path string
	Err  error
}

func (e *LockError) Error() string {
	return "lock file " + textsafe.RawQuote(e.Path) + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *LockError) Unwrap() error { return e.Err }

// Read reads and checks the lock file at path (see Parse). Every refusal is
// a *LockError naming the file; a missing file wraps fs.ErrNotExist. The file
// is never changed.
func Read(path string) (*Lock, error) {
	data, err := readCapped(path, MaxLockBytes)
	if err != nil {
		return nil, &LockError{Path: path, Err: err}
	}
	l, err := Parse(data)
	if err != nil {
		return nil, &LockError{Path: path, Err: err}
	}
	return l, nil
}

// readCapped reads a regular file of at most max bytes (a FIFO or device
// is refused before it is opened: opening one could block).
func readCapped(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrMalformed)
	}
	return boundedfile.Read(path, max, ErrMalformed)
}

// Lock members, in file order.
var (
	lockMembers         = []string{"kind", "lockVersion", "server", "protocolVersion", "instructions", "clientCapabilities", "sets", "definitions", "resources", "capabilities", "approval", "proof", "auditHead", "lockDigest"}
	resourcesMembers    = []string{"set", "definitions"}
	lockRequired        = []string{"kind", "lockVersion", "server", "protocolVersion", "sets", "definitions", "approval", "lockDigest"}
	serverMembers       = []string{"name", "version"}
	setsMembers         = []string{"tools", "prompts", "resourceTemplates"}
	definitionMembers   = []string{"kind", "key", "digest", "definition"}
	approvalMembers     = []string{"method", "identity", "issuer", "bundleDigest", "tlog", "approvedAt", "reason", "approver", "previousLockDigest", "sourceRevision"}
	approvalRequired    = []string{"method", "identity", "issuer", "bundleDigest", "approvedAt"}
	tlogMembers         = []string{"logIndex", "logId", "integratedTime"}
	capabilitiesMembers = []string{"tools"}
)

// Parse reads a lock strictly and checks it completely:
//
//   - strict JSON (no repeated member names, valid UTF-8, RFC 8259
//     numbers), at most MaxLockBytes;
//   - kind "mcpsign.lock" and lockVersion 1 (ErrMalformed,
//     ErrUnsupportedVersion);
//   - only the members of docs/LOCK.md, each present when required and of
//     its type (ErrMalformed);
//   - lockDigest equal to the Definition Digest of the lock without its
//     lockDigest member (ErrModified);
//   - every definition digests to its digest under its kind and key, the
//     definitions are sorted and unique, the Set Digests agree, the
//     approval is complete, the overrides name pinned tools (ErrModified).
func Parse(data []byte) (*Lock, error) {
	if len(data) > MaxLockBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxLockBytes)
	}
	// One pass to find the members; the strict read of every value is the
	// digest below.
	m, err := objectMembers(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := checkKind(m); err != nil {
		return nil, err
	}
	if err := checkMembers(m, lockMembers, lockRequired); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	recorded, err := decodeString(m["lockDigest"])
	if err != nil || !digest.ValidDigest(recorded) {
		return nil, fmt.Errorf("%w: lockDigest is not sha256: and 64 lowercase hex digits", ErrMalformed)
	}
	// The Definition Digest reads every other member strictly: invalid
	// UTF-8, repeated names at any depth, bad numbers are refused here.
	computed, err := digestWithout(m, "lockDigest")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if computed != recorded {
		return nil, fmt.Errorf("%w: its lockDigest is %s but its content digests to %s; a lock is never edited by hand (run mcpsign pin again to approve a new state)", ErrModified, recorded, computed)
	}
	l, err := decodeLock(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	l.LockDigest = recorded
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("%w: its content does not agree with itself: %w", ErrModified, err)
	}
	return l, nil
}

func checkKind(m map[string]json.RawMessage) error {
	kind, err := decodeString(m["kind"])
	if err != nil {
		return fmt.Errorf("%w: member \"kind\" is missing or not a string", ErrMalformed)
	}
	if kind != LockKind {
		return fmt.Errorf("%w: kind is %s, not %s", ErrMalformed, textsafe.RawQuote(kind), textsafe.RawQuote(LockKind))
	}
	var ver int64
	if err := decodeInt(m["lockVersion"], &ver); err != nil {
		return fmt.Errorf("%w: member \"lockVersion\" is missing or not an integer", ErrMalformed)
	}
	if ver != LockVersion {
		return fmt.Errorf("%w: lockVersion %d (this mcpsign reads version %d)", ErrUnsupportedVersion, ver, LockVersion)
	}
	return nil
}

// digestWithout returns the Definition Digest of the object made of the
// members of m but one.
func digestWithout(m map[string]json.RawMessage, drop string) (string, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if name == drop {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeJSONString(&b, name)
		b.WriteByte(':')
		b.Write(m[name])
	}
	b.WriteByte('}')
	return digest.DefinitionDigest(b.Bytes())
}

func decodeLock(m map[string]json.RawMessage) (*Lock, error) {
	l := &Lock{}
	member := func(name string, err error) error {
		if err != nil {
			return fmt.Errorf("member %s: %w", textsafe.RawQuote(name), err)
		}
		return nil
	}
	srv, err := objectMembers(m["server"], serverMembers, serverMembers)
	if err == nil {
		if l.Server.Name, err = decodeString(srv["name"]); err == nil {
			l.Server.Version, err = decodeString(srv["version"])
		}
	}
	if err := member("server", err); err != nil {
		return nil, err
	}
	l.ProtocolVersion, err = decodeString(m["protocolVersion"])
	if err := member("protocolVersion", err); err != nil {
		return nil, err
	}
	if raw, ok := m["instructions"]; ok {
		ins, err := decodeString(raw)
		if err := member("instructions", err); err != nil {
			return nil, err
		}
		l.Instructions = &ins
	}
	if raw, ok := m["clientCapabilities"]; ok {
		// One form per lock: the RFC 8785 form, as Marshal writes it.
		raw = bytes.TrimSpace(raw)
		caps, err := digest.CanonicalClientCapabilities(raw)
		if err == nil && !bytes.Equal(caps, raw) {
			err = errors.New("not written in its RFC 8785 form")
		}
		if err := member("clientCapabilities", err); err != nil {
			return nil, err
		}
		l.ClientCapabilities = caps
	}
	if err := member("sets", decodeSets(m["sets"], &l.Sets)); err != nil {
		return nil, err
	}
	if l.Definitions, err = decodeDefinitions(m["definitions"]); err != nil {
		return nil, member("definitions", err)
	}
	if raw, ok := m["resources"]; ok {
		if err := member("resources", decodeResources(raw, l)); err != nil {
			return nil, err
		}
	}
	if raw, ok := m["capabilities"]; ok {
		c, err := objectMembers(raw, capabilitiesMembers, capabilitiesMembers)
		if err == nil {
			l.Capabilities, err = capability.ParseOverrideTools(c["tools"], true)
		}
		if err := member("capabilities", err); err != nil {
			return nil, err
		}
		if len(l.Capabilities) == 0 {
			return nil, errors.New(`member "capabilities": an empty override list is written as no member`)
		}
	}
	if raw, ok := m["proof"]; ok {
		p, err := decodeProof(raw)
		if err := member("proof", err); err != nil {
			return nil, err
		}
		l.Proof = p
	}
	if raw, ok := m["auditHead"]; ok {
		h, err := decodeString(raw)
		if err == nil && !digest.ValidDigest(h) {
			err = errors.New("not sha256: and 64 lowercase hex digits")
		}
		if err := member("auditHead", err); err != nil {
			return nil, err
		}
		l.AuditHead = h
	}
	return l, member("approval", decodeApproval(m["approval"], &l.Approval))
}

// decodeProof reads the member "proof": an array of 1 to MaxProofBundles
// strings, each a bundle in standard base64 with padding, written in its
// one form (what Marshal writes: re-encoding gives the same string, and the
// JSON string has no escape). The array is split by the strict reader
// (digest.Elements), the one that reads every other wire value.
func decodeProof(raw json.RawMessage) ([][]byte, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("not an array")
	}
	elems, err := digest.Elements(raw)
	if err != nil {
		return nil, err
	}
	if len(elems) == 0 || len(elems) > MaxProofBundles {
		return nil, fmt.Errorf("%d bundles: from 1 to %d", len(elems), MaxProofBundles)
	}
	out := make([][]byte, 0, len(elems))
	for i, e := range elems {
		str, err := decodeString(e)
		if err != nil {
			return nil, fmt.Errorf("#%d: %w", i, err)
		}
		b, err := base64.StdEncoding.Strict().DecodeString(str)
		if err != nil || base64.StdEncoding.EncodeToString(b) != str || len(e) != len(str)+2 {
			return nil, fmt.Errorf("#%d is not a bundle in standard base64", i)
		}
		out = append(out, b)
	}
	return out, nil
}

func decodeSets(raw json.RawMessage, s *Sets) error {
	m, err := objectMembers(raw, setsMembers, setsMembers)
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"tools", &s.Tools}, {"prompts", &s.Prompts}, {"resourceTemplates", &s.ResourceTemplates}} {
		if *p.dst, err = decodeString(m[p.name]); err != nil || !digest.ValidDigest(*p.dst) {
			return fmt.Errorf("%s is not a sha256 digest", p.name)
		}
	}
	return nil
}

// decodeResources reads the member "resources": {"set", "definitions"},
// the definitions entries as those of "definitions" (validate checks their
// kind).
func decodeResources(raw json.RawMessage, l *Lock) error {
	m, err := objectMembers(raw, resourcesMembers, resourcesMembers)
	if err != nil {
		return err
	}
	if l.ResourceSet, err = decodeString(m["set"]); err != nil || !digest.ValidDigest(l.ResourceSet) {
		return errors.New("set is not a sha256 digest")
	}
	if l.Resources, err = decodeDefinitions(m["definitions"]); err != nil {
		return fmt.Errorf("definitions: %w", err)
	}
	return nil
}

func decodeDefinitions(raw json.RawMessage) ([]Definition, error) {
	items, err := splitArray(raw)
	if err != nil {
		return nil, err
	}
	defs := make([]Definition, 0, len(items))
	for i, item := range items {
		dm, err := objectMembers(item, definitionMembers, definitionMembers)
		if err != nil {
			return nil, fmt.Errorf("#%d: %w", i, err)
		}
		var d Definition
		var kind string
		if kind, err = decodeString(dm["kind"]); err != nil {
			return nil, fmt.Errorf("#%d: kind: %w", i, err)
		}
		d.Kind = digest.Kind(kind)
		if d.Key, err = decodeString(dm["key"]); err != nil {
			return nil, fmt.Errorf("#%d: key: %w", i, err)
		}
		if d.Digest, err = decodeString(dm["digest"]); err != nil || !digest.ValidDigest(d.Digest) {
			return nil, fmt.Errorf("#%d: digest is not a sha256 digest", i)
		}
		def := bytes.TrimSpace(dm["definition"])
		if len(def) == 0 || def[0] != '{' {
			return nil, fmt.Errorf("#%d: definition is not an object", i)
		}
		members, err := splitObject(def)
		if err != nil {
			return nil, fmt.Errorf("#%d: definition: %w", i, err)
		}
		if slices.ContainsFunc(members, func(m member) bool { return m.name == "_meta" }) {
			return nil, fmt.Errorf("#%d: definition has a top-level \"_meta\" member (a lock stores definitions without it)", i)
		}
		d.Definition = def
		defs = append(defs, d)
	}
	return defs, nil
}

func decodeApproval(raw json.RawMessage, a *Approval) error {
	if err := decodeApprovalMembers(raw, a); err != nil {
		return err
	}
	return a.validate()
}

// decodeApprovalMembers reads the members of an approval, strictly, without
// validating what they say together.
func decodeApprovalMembers(raw json.RawMessage, a *Approval) error {
	m, err := objectMembers(raw, approvalMembers, approvalRequired)
	if err != nil {
		return err
	}
	var method string
	if method, err = decodeString(m["method"]); err != nil {
		return fmt.Errorf("method: %w", err)
	}
	a.Method = evidence.Method(method)
	if a.Identity, err = decodeString(m["identity"]); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	if a.Issuer, err = decodeString(m["issuer"]); err != nil {
		return fmt.Errorf("issuer: %w", err)
	}
	if a.BundleDigest, err = decodeString(m["bundleDigest"]); err != nil {
		return fmt.Errorf("bundleDigest: %w", err)
	}
	at, err := decodeString(m["approvedAt"])
	if err == nil {
		a.ApprovedAt, err = time.Parse(time.RFC3339Nano, at)
	}
	if err != nil {
		return fmt.Errorf("approvedAt is not an RFC 3339 time: %w", err)
	}
	// One spelling per instant, so that a lock has one form: UTC, "Z".
	if a.ApprovedAt.UTC().Format(time.RFC3339Nano) != at {
		return fmt.Errorf("approvedAt %s is not written as RFC 3339 in UTC (%s)", textsafe.RawQuote(at), a.ApprovedAt.UTC().Format(time.RFC3339Nano))
	}
	for name, dst := range map[string]*string{"reason": &a.Reason, "approver": &a.Approver, "previousLockDigest": &a.PreviousLockDigest, "sourceRevision": &a.SourceRevision} {
		raw, ok := m[name]
		if !ok {
			continue
		}
		if *dst, err = decodeString(raw); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if *dst == "" {
			// Absent, never empty: one form per lock.
			return fmt.Errorf("%s is empty (it is left out when there is none)", name)
		}
	}
	if raw, ok := m["tlog"]; ok {
		tm, err := objectMembers(raw, tlogMembers, tlogMembers)
		if err != nil {
			return fmt.Errorf("tlog: %w", err)
		}
		t := &evidence.Tlog{}
		if err := decodeInt(tm["logIndex"], &t.LogIndex); err != nil {
			return fmt.Errorf("tlog.logIndex: %w", err)
		}
		var it int64
		if err := decodeInt(tm["integratedTime"], &it); err != nil {
			return fmt.Errorf("tlog.integratedTime: %w", err)
		}
		if it != 0 { // 0: none
			at := time.Unix(it, 0).UTC()
			t.IntegratedTime = &at
		}
		if t.LogID, err = decodeString(tm["logId"]); err != nil {
			return fmt.Errorf("tlog.logId: %w", err)
		}
		a.Tlog = t
	}
	return nil
}

// decodeInt reads a JSON integer (no fraction, no exponent).
func decodeInt(raw json.RawMessage, dst *int64) error {
	s := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return errors.New("not an integer")
	}
	*dst = n
	return nil
}
