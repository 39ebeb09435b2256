package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin/capability"
)

// ChangeKind says how something differs from side A to side B.
type ChangeKind string

// The kinds of change.
const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
)

// Field diff formats (FieldChange.Format).
const (
	FormatText = "text" // a string member, diffed as text
	FormatJSON = "json" // any other member, diffed as indented JSON (RFC 8785 member order)
)

// FieldChange is one top-level member of a definition that differs.
type FieldChange struct {
	Field  string     `json:"field"`
	Change ChangeKind `json:"change"`
	Format string     `json:"format"`
	// Diff is the unified diff (Text) of the member's text, raw:
	// escape it before showing it.
	Diff      string `json:"diff"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Breaking change rules (Breaking.Rule).
const (
	BreakingRemovedDefinition = "removed-definition"
	BreakingRemovedParameter  = "removed-parameter"
	BreakingNewlyRequired     = "newly-required-parameter"
	BreakingParameterType     = "parameter-type-changed"
	BreakingNewCapability     = "new-capability"
	// BreakingHiddenCharacters: a text of the definition (a string value
	// or a member name, at any depth, "_meta" aside) holds more of some
	// invisible, bidirectional-control or tag character (textsafe.Hidden)
	// than before; for a new definition, any at all.
	BreakingHiddenCharacters = "hidden-characters"
)

// Breaking is a change that can break a client or widen what a tool may
// do.
type Breaking struct {
	Rule      string      `json:"rule"`
	Kind      digest.Kind `json:"kind"`
	Key       string      `json:"key"`
	Parameter string      `json:"parameter,omitempty"`
	// Field is the top-level member of a hidden-characters change, and
	// Characters the characters it gained ("U+200B"), in code point order.
	Field      string   `json:"field,omitempty"`
	Characters []string `json:"characters,omitempty"`
	// Message is for people; server text in it (a key, a parameter, a
	// member name) is raw, quoted with textsafe.RawQuote: escape the whole
	// message where it is printed (WriteText does), and only there
	// (docs/JSON.md: JSON carries raw strings).
	Message string `json:"message"`
}

// DefinitionChange is one definition added, removed or changed from A to B.
type DefinitionChange struct {
	Kind      digest.Kind `json:"kind"`
	Key       string      `json:"key"`
	Change    ChangeKind  `json:"change"`
	OldDigest string      `json:"oldDigest,omitempty"`
	NewDigest string      `json:"newDigest,omitempty"`
	// Invalid says why a definition has no digest (it cannot match).
	Invalid string `json:"invalid,omitempty"`
	// Fields are the members that differ, when both definitions are at
	// hand.
	Fields []FieldChange `json:"fields,omitempty"`
	// NoContent is true when a side has only the digest (a bundle that
	// embeds no definitions): the members that changed are unknown.
	NoContent bool `json:"noContent,omitempty"`
	// Capabilities of a tool on each side, and what it gained and lost.
	OldCapabilities    *capability.Tool        `json:"oldCapabilities,omitempty"`
	NewCapabilities    *capability.Tool        `json:"newCapabilities,omitempty"`
	GainedCapabilities []capability.Capability `json:"gainedCapabilities,omitempty"`
	LostCapabilities   []capability.Capability `json:"lostCapabilities,omitempty"`
	Breaking           []Breaking              `json:"breaking,omitempty"`
}

// ServerChange is a change of serverInfo.
type ServerChange struct {
	Old digest.ServerInfo `json:"old"`
	New digest.ServerInfo `json:"new"`
}

// ValueChange is a change of one string.
type ValueChange struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// InstructionsChange is a change of the instructions.
type InstructionsChange struct {
	Change    ChangeKind `json:"change"`
	OldDigest string     `json:"oldDigest,omitempty"`
	NewDigest string     `json:"newDigest,omitempty"`
	// Diff is the text diff when both sides have the text (a bundle has
	// only the digest).
	Diff      string `json:"diff,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Result is everything that differs from side A to side B.
type Result struct {
	A            *Side               `json:"a"`
	B            *Side               `json:"b"`
	Server       *ServerChange       `json:"server,omitempty"`
	Protocol     *ValueChange        `json:"protocolVersion,omitempty"`
	Instructions *InstructionsChange `json:"instructions,omitempty"`
	// Definitions that differ, by kind (tool, prompt, resourceTemplate)
	// then key.
	Definitions []DefinitionChange `json:"definitions"`
	// Breaking lists every breaking change of Definitions, in order.
	Breaking []Breaking `json:"breaking"`
}

// Changed reports whether anything differs.
func (d *Result) Changed() bool {
	return d.Server != nil || d.Protocol != nil || d.Instructions != nil || len(d.Definitions) > 0
}

// Count returns the number of definitions with the given change.
func (d *Result) Count(c ChangeKind) int {
	n := 0
	for _, dc := range d.Definitions {
		if dc.Change == c {
			n++
		}
	}
	return n
}

// ErrFailOn is the error of ParseFailOn (and of pin.ParseFailOn) for a
// word they do not know.
var ErrFailOn = errors.New("unknown failure threshold")

// FailOn is when the diff command fails (exit 1). Its words are
// verify-pin's (pin.FailOn), with breaking besides; docs/DRIFT.md.
type FailOn string

// --fail-on values of diff.
const (
	FailOnAny        FailOn = "drift"      // anything differs (alias "any")
	FailOnBreaking   FailOn = "breaking"   // a breaking change
	FailOnCapability FailOn = "capability" // a new-capability or hidden-characters change
	FailOnNone       FailOn = "never"      // never (alias "none")
)

// ParseFailOn reads a --fail-on value of diff: drift, breaking,
// capability or never; any and none are aliases of drift and never.
func ParseFailOn(s string) (FailOn, error) {
	switch f := FailOn(s); f {
	case FailOnAny, FailOnBreaking, FailOnCapability, FailOnNone:
		return f, nil
	case "any":
		return FailOnAny, nil
	case "none":
		return FailOnNone, nil
	}
	return "", fmt.Errorf("%w %s: want drift (or any), breaking, capability or never (or none)", ErrFailOn, textsafe.RawQuote(s))
}

// Failed reports whether the diff fails under f.
func (d *Result) Failed(f FailOn) bool {
	switch f {
	case FailOnNone:
		return false
	case FailOnBreaking:
		return len(d.Breaking) > 0
	case FailOnCapability:
		for _, b := range d.Breaking {
			if b.Rule == BreakingNewCapability || b.Rule == BreakingHiddenCharacters {
				return true
			}
		}
		return false
	}
	return d.Changed()
}

// Options tune Diff. The zero value is ready to use.
type Options struct {
	// Text bounds every text diff.
	Text TextOptions
	// MaxTotalBytes bounds the text diffs of one Diff together; past it
	// the remaining member diffs are left empty and marked truncated. 0
	// means DefaultMaxBytes.
	MaxTotalBytes int
}

// DefaultMaxBytes is the default of Options.MaxTotalBytes.
const DefaultMaxBytes = 16 << 20

// budget is what is left of Options.MaxTotalBytes.
type budget struct{ left int }

// textDiff is Text within the budget.
func (b *budget) textDiff(x, y string, o TextOptions) (string, bool) {
	if b.left <= 0 {
		return "", x != y
	}
	o = o.WithDefaults()
	o.MaxBytes = min(o.MaxBytes, b.left)
	d, trunc := Text(x, y, o)
	b.left -= len(d)
	return d, trunc
}

// Compare compares side a (the old, approved or reference state) with side b
// (the new one): server, protocol version, instructions, and every
// definition by kind and key. A definition without a digest on either side
// never matches. Capabilities of tools are computed with each side's own
// overrides.
func Compare(a, b *Side, opts Options) *Result {
	res := &Result{A: a, B: b, Definitions: []DefinitionChange{}, Breaking: []Breaking{}}
	if a.Server != b.Server {
		res.Server = &ServerChange{Old: a.Server, New: b.Server}
	}
	if a.ProtocolVersion != b.ProtocolVersion {
		res.Protocol = &ValueChange{Old: a.ProtocolVersion, New: b.ProtocolVersion}
	}
	bud := &budget{left: opts.MaxTotalBytes}
	if bud.left <= 0 {
		bud.left = DefaultMaxBytes
	}
	res.Instructions = diffInstructions(a, b, opts.Text, bud)

	resources := a.Resources && b.Resources
	ga, gb := groupDefinitions(a.Definitions, resources), groupDefinitions(b.Definitions, resources)
	keys := make([]defKey, 0, len(ga)+len(gb))
	for k := range ga {
		keys = append(keys, k)
	}
	for k := range gb {
		if _, ok := ga[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y defKey) int {
		return digest.CompareKeys(x.kind, x.key, y.kind, y.key)
	})
	for _, k := range keys {
		dc, ok := diffDefinition(k, ga[k], gb[k], a, b, opts.Text, bud)
		if !ok {
			continue
		}
		res.Definitions = append(res.Definitions, dc)
		res.Breaking = append(res.Breaking, dc.Breaking...)
	}
	return res
}

type defKey struct {
	kind digest.Kind
	key  string
}

// groupDefinitions groups a side's definitions by kind and key. A
// definition whose key could not be read gets a key of its own ("#3"), so
// that it is always added or removed. Resources are left out unless
// resources is set (both sides hold them).
func groupDefinitions(defs []digest.Definition, resources bool) map[defKey][]digest.Definition {
	g := make(map[defKey][]digest.Definition, len(defs))
	for _, d := range defs {
		if d.Kind == digest.KindResource && !resources {
			continue
		}
		k := defKey{d.Kind, d.Key}
		if d.Key == "" {
			k.key = "#" + strconv.Itoa(d.Index)
		}
		g[k] = append(g[k], d)
	}
	return g
}

func diffInstructions(a, b *Side, o TextOptions, bud *budget) *InstructionsChange {
	if a.InstructionsDigest == b.InstructionsDigest {
		return nil
	}
	ic := &InstructionsChange{Change: Changed, OldDigest: a.InstructionsDigest, NewDigest: b.InstructionsDigest}
	switch {
	case a.InstructionsDigest == "":
		ic.Change = Added
	case b.InstructionsDigest == "":
		ic.Change = Removed
	}
	if a.Instructions != nil || b.Instructions != nil {
		var old, cur string
		if a.Instructions != nil {
			old = *a.Instructions
		}
		if b.Instructions != nil {
			cur = *b.Instructions
		}
		// A side without the text but with a digest (a bundle) cannot be
		// diffed as text.
		if (a.Instructions != nil || a.InstructionsDigest == "") && (b.Instructions != nil || b.InstructionsDigest == "") {
			ic.Diff, ic.Truncated = bud.textDiff(old, cur, o)
		}
	}
	return ic
}

// diffDefinition compares the copies of one kind and key on each side; ok
// is false when they are the same.
func diffDefinition(k defKey, olds, news []digest.Definition, a, b *Side, o TextOptions, bud *budget) (DefinitionChange, bool) {
	dc := DefinitionChange{Kind: k.kind, Key: k.key}
	var old, cur *digest.Definition
	if len(olds) > 0 {
		old = &olds[0]
		dc.OldDigest = old.Digest
	}
	if len(news) > 0 {
		cur = &news[0]
		dc.NewDigest = cur.Digest
	}
	dc.Invalid = invalidReason(olds, "A")
	if r := invalidReason(news, "B"); r != "" {
		dc.Invalid = strings.TrimPrefix(dc.Invalid+"; "+r, "; ")
	}
	switch {
	case old == nil:
		dc.Change = Added
	case cur == nil:
		dc.Change = Removed
	case dc.Invalid == "" && old.Digest == cur.Digest:
		return dc, false
	default:
		dc.Change = Changed
	}
	if k.kind == digest.KindTool {
		if old != nil {
			dc.OldCapabilities = classifySide(old, a)
		}
		if cur != nil {
			dc.NewCapabilities = classifySide(cur, b)
			dc.GainedCapabilities = dc.NewCapabilities.Gained(dc.OldCapabilities)
		}
		if old != nil {
			dc.LostCapabilities = dc.OldCapabilities.Gained(dc.NewCapabilities)
		}
	}
	if dc.Change == Changed && len(olds) == 1 && len(news) == 1 {
		if old.Raw == nil || cur.Raw == nil {
			dc.NoContent = true
		} else {
			dc.Fields = diffFields(old.Raw, cur.Raw, o, bud)
		}
	}
	dc.Breaking = breakingChanges(&dc, old, cur)
	return dc, true
}

// invalidReason describes why the copies of one key on one side cannot
// match: a definition without a digest, or more than one copy.
func invalidReason(defs []digest.Definition, side string) string {
	if len(defs) > 1 {
		return fmt.Sprintf("side %s has %d definitions with this key", side, len(defs))
	}
	if len(defs) == 1 && defs[0].Err != nil {
		return fmt.Sprintf("side %s: no digest: %v", side, defs[0].Err)
	}
	return ""
}

func classifySide(d *digest.Definition, s *Side) *capability.Tool {
	if d.Raw == nil {
		if ov, ok := s.Capabilities[d.Key]; ok {
			return capability.Classify(nil, ov)
		}
		return &capability.Tool{
			Capabilities: []capability.Capability{capability.Unknown},
			Sources: map[capability.Capability][]capability.Source{
				capability.Unknown: {{From: capability.FromDefault, Detail: "the definition is not embedded: only its digest is known"}},
			},
		}
	}
	var ov []capability.Capability
	if s.Capabilities != nil {
		ov = s.Capabilities[d.Key]
	}
	return capability.Classify(d.Raw, ov)
}

// fieldOrder puts the members people read first first; others follow in
// byte order.
var fieldOrder = []string{"name", "uriTemplate", "title", "description", "inputSchema", "outputSchema", "arguments", "annotations", "mimeType"}

// diffFields diffs the top-level members of two definitions, "_meta" aside
// (it is not digested either).
func diffFields(oldRaw, newRaw json.RawMessage, o TextOptions, bud *budget) []FieldChange {
	var om, nm map[string]json.RawMessage
	if json.Unmarshal(oldRaw, &om) != nil || json.Unmarshal(newRaw, &nm) != nil {
		// Not objects: diff them whole.
		fc := FieldChange{Field: "", Change: Changed, Format: FormatJSON}
		fc.Diff, fc.Truncated = bud.textDiff(indentJSON(oldRaw), indentJSON(newRaw), o)
		return []FieldChange{fc}
	}
	names := map[string]bool{}
	for n := range om {
		names[n] = true
	}
	for n := range nm {
		names[n] = true
	}
	delete(names, "_meta")
	ordered := make([]string, 0, len(names))
	for _, n := range fieldOrder {
		if names[n] {
			ordered = append(ordered, n)
			delete(names, n)
		}
	}
	ordered = append(ordered, slices.Sorted(maps.Keys(names))...)
	var out []FieldChange
	for _, n := range ordered {
		ov, inOld := om[n]
		nv, inNew := nm[n]
		oc, nc := canonicalOrRaw(ov), canonicalOrRaw(nv)
		if inOld && inNew && bytes.Equal(oc, nc) {
			continue
		}
		fc := FieldChange{Field: n, Change: Changed}
		switch {
		case !inOld:
			fc.Change = Added
		case !inNew:
			fc.Change = Removed
		}
		os, oIsStr := stringOrAbsent(ov, inOld)
		ns, nIsStr := stringOrAbsent(nv, inNew)
		if oIsStr && nIsStr {
			fc.Format = FormatText
			fc.Diff, fc.Truncated = bud.textDiff(os, ns, o)
		} else {
			fc.Format = FormatJSON
			var ot, nt string
			if inOld {
				ot = indentJSON(oc)
			}
			if inNew {
				nt = indentJSON(nc)
			}
			fc.Diff, fc.Truncated = bud.textDiff(ot, nt, o)
		}
		out = append(out, fc)
	}
	return out
}

// stringOrAbsent decodes a string member; an absent member counts as a
// string (the empty text) so that an added description diffs as text.
func stringOrAbsent(raw json.RawMessage, present bool) (string, bool) {
	if !present {
		return "", true
	}
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func canonicalOrRaw(raw json.RawMessage) []byte {
	if raw == nil {
		return nil
	}
	if c, err := digest.Canonicalize(raw); err == nil {
		return c
	}
	return raw
}

// indentJSON writes a JSON value indented by two spaces, one member or
// element per line.
func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// breakingChanges lists what in a definition change can break a client:
// a removed definition, a removed or newly required parameter (tool
// inputSchema properties and required; prompt arguments), a parameter whose
// type changed, a tool that gained delete or exec.
func breakingChanges(dc *DefinitionChange, old, cur *digest.Definition) []Breaking {
	var out []Breaking
	add := func(rule, param, msg string) {
		out = append(out, Breaking{Rule: rule, Kind: dc.Kind, Key: dc.Key, Parameter: param, Message: msg})
	}
	if dc.Change == Removed {
		add(BreakingRemovedDefinition, "", fmt.Sprintf("%s %s was removed", dc.Kind, textsafe.RawQuote(dc.Key)))
		return out
	}
	if dc.Change == Changed && old.Raw != nil && cur.Raw != nil {
		op, np := parameters(dc.Kind, old.Raw), parameters(dc.Kind, cur.Raw)
		for _, name := range op.names {
			if _, ok := np.params[name]; !ok {
				add(BreakingRemovedParameter, name, fmt.Sprintf("parameter %s was removed", textsafe.RawQuote(name)))
			}
		}
		for _, name := range np.names {
			if np.params[name].required && !op.params[name].required {
				if _, existed := op.params[name]; existed {
					add(BreakingNewlyRequired, name, fmt.Sprintf("parameter %s is now required", textsafe.RawQuote(name)))
				} else {
					add(BreakingNewlyRequired, name, fmt.Sprintf("new parameter %s is required", textsafe.RawQuote(name)))
				}
			}
			if was, ok := op.params[name]; ok {
				now := np.params[name]
				if now.typ != nil && !bytes.Equal(was.typ, now.typ) {
					from := "no type"
					if was.typ != nil {
						from = string(was.typ)
					}
					add(BreakingParameterType, name, fmt.Sprintf("parameter %s changed type from %s to %s", textsafe.RawQuote(name), from, string(now.typ)))
				}
			}
		}
	}
	for _, c := range dc.GainedCapabilities {
		if c.Dangerous() {
			if dc.Change == Added {
				add(BreakingNewCapability, "", fmt.Sprintf("new tool %s has the %s capability", textsafe.RawQuote(dc.Key), c))
			} else {
				add(BreakingNewCapability, "", fmt.Sprintf("tool %s gained the %s capability", textsafe.RawQuote(dc.Key), c))
			}
		}
	}
	if cur != nil && cur.Raw != nil {
		var oldRaw json.RawMessage
		if old != nil {
			oldRaw = old.Raw
		}
		for _, h := range gainedHidden(oldRaw, cur.Raw) {
			out = append(out, Breaking{
				Rule: BreakingHiddenCharacters, Kind: dc.Kind, Key: dc.Key, Field: h.field, Characters: h.chars,
				Message: fmt.Sprintf("%s %s: %s gained hidden characters (%s)", dc.Kind, textsafe.RawQuote(dc.Key),
					fieldName(h.field), strings.Join(h.chars, ", ")),
			})
		}
	}
	return out
}

func fieldName(f string) string {
	if f == "" {
		return "the definition"
	}
	return textsafe.RawQuote(f)
}

type hiddenGain struct {
	field string
	chars []string
}

// gainedHidden returns, per top-level member of cur ("_meta" aside, as it is
// not digested), the hidden characters (textsafe.Hidden) it holds more of
// than the same member of old, in any string value or member name. A nil
// old (a new definition, or one known by digest only) has none.
func gainedHidden(old, cur json.RawMessage) []hiddenGain {
	om, nm := hiddenByMember(old), hiddenByMember(cur)
	var out []hiddenGain
	for _, f := range slices.Sorted(maps.Keys(nm)) {
		var chars []string
		for _, r := range slices.Sorted(maps.Keys(nm[f])) {
			if nm[f][r] > om[f][r] {
				chars = append(chars, fmt.Sprintf("U+%04X", r))
			}
		}
		if len(chars) > 0 {
			out = append(out, hiddenGain{field: f, chars: chars})
		}
	}
	return out
}

// hiddenByMember counts the hidden characters of a definition by top-level
// member; a value that is not an object is counted under "".
func hiddenByMember(raw json.RawMessage) map[string]map[rune]int {
	out := map[string]map[rune]int{}
	if raw == nil {
		return out
	}
	countString := func(field, s string) {
		for _, r := range s {
			if textsafe.Hidden(r) {
				if out[field] == nil {
					out[field] = map[rune]int{}
				}
				out[field][r]++
			}
		}
	}
	count := func(field string, b []byte) {
		// Token yields member names as strings too.
		dec := json.NewDecoder(bytes.NewReader(b))
		for {
			tok, err := dec.Token()
			if err != nil {
				return
			}
			if s, ok := tok.(string); ok {
				countString(field, s)
			}
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		count("", raw)
		return out
	}
	delete(m, "_meta")
	for name, v := range m {
		countString(name, name)
		count(name, v)
	}
	return out
}

type param struct {
	required bool
	typ      []byte // canonical JSON of the schema's "type", nil when absent
}

type paramSet struct {
	names  []string // sorted
	params map[string]param
}

// parameters reads a tool's inputSchema properties and required list, or a
// prompt's arguments. Anything unreadable yields no parameters.
func parameters(k digest.Kind, raw json.RawMessage) paramSet {
	ps := paramSet{params: map[string]param{}}
	var def map[string]json.RawMessage
	if json.Unmarshal(raw, &def) != nil {
		return ps
	}
	switch k {
	case digest.KindTool:
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if json.Unmarshal(def["inputSchema"], &schema) != nil {
			return ps
		}
		for name, s := range schema.Properties {
			p := param{}
			var sm map[string]json.RawMessage
			if json.Unmarshal(s, &sm) == nil {
				if t, ok := sm["type"]; ok {
					p.typ = canonicalOrRaw(t)
				}
			}
			ps.params[name] = p
		}
		for _, name := range schema.Required {
			p := ps.params[name]
			p.required = true
			ps.params[name] = p
		}
	case digest.KindPrompt:
		var args []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		}
		if json.Unmarshal(def["arguments"], &args) != nil {
			return ps
		}
		for _, a := range args {
			ps.params[a.Name] = param{required: a.Required}
		}
	}
	ps.names = slices.Sorted(maps.Keys(ps.params))
	return ps
}
