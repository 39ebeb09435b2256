package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/lazy"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Capability is something a tool may do.
type Capability string

// The capabilities, in their canonical order.
const (
	Read    Capability = "read"
	Write   Capability = "write"
	Delete  Capability = "delete"
	Network Capability = "network"
	Exec    Capability = "exec"
	// Unknown is given to a tool that no annotation or rule classifies.
	Unknown Capability = "unknown"
)

// All lists every capability in canonical order.
var All = [...]Capability{Read, Write, Delete, Network, Exec, Unknown}

// Valid reports whether c is one of All.
func (c Capability) Valid() bool { return slices.Contains(All[:], c) }

// Dangerous reports whether gaining c is a drift error of its own
// (pin-capability-added): delete and exec.
func (c Capability) Dangerous() bool { return c == Delete || c == Exec }

func capRank(c Capability) int { return slices.Index(All[:], c) }

// Sort sorts and deduplicates capabilities in canonical order.
func Sort(cs []Capability) []Capability {
	slices.SortFunc(cs, func(a, b Capability) int { return capRank(a) - capRank(b) })
	return slices.Compact(cs)
}

// Where a capability came from (Source.From).
const (
	FromAnnotation  = "annotation"  // a tool annotation hint
	FromName        = "name"        // a word of the tool's name
	FromDescription = "description" // a word of its title or description
	FromOverride    = "override"    // a capabilities override (caps.json)
	FromDefault     = "default"     // nothing matched: unknown
)

// Source is one reason a tool has a capability.
type Source struct {
	From   string `json:"from"`   // FromAnnotation, FromName, …
	Detail string `json:"detail"` // the hint ("destructiveHint") or the word(s) matched ("delete", "run+command")
}

func (s Source) String() string {
	if s.From == FromDefault || s.From == FromOverride {
		return s.Detail
	}
	if verb, noun, ok := strings.Cut(s.Detail, "+"); ok {
		// The run+command rule: two words of the name or text, not one
		// that reads "run+command" (the tool is run_command).
		return s.From + " words " + textsafe.RawQuote(verb) + " and " + textsafe.RawQuote(noun)
	}
	return s.From + " " + textsafe.RawQuote(s.Detail)
}

// Tool is what one tool may do and why.
type Tool struct {
	// Capabilities in canonical order; never empty (Unknown when
	// nothing matched).
	Capabilities []Capability `json:"capabilities"`
	// Sources says, per capability, where it came from: annotations first,
	// then name rules, then description rules; or only the override.
	Sources map[Capability][]Source `json:"sources"`
	// Overridden is true when an override replaced the computed set.
	Overridden bool `json:"overridden,omitempty"`
	// Idempotent is the tool's idempotentHint when it gives one; it is
	// informative and adds no capability.
	Idempotent *bool `json:"idempotent,omitempty"`
}

// Has reports whether c is among the capabilities.
func (t *Tool) Has(c Capability) bool { return slices.Contains(t.Capabilities, c) }

// add records a capability and its source; it never removes one.
func (t *Tool) add(c Capability, s Source) {
	if !slices.Contains(t.Sources[c], s) {
		t.Sources[c] = append(t.Sources[c], s)
	}
	if !t.Has(c) {
		t.Capabilities = append(t.Capabilities, c)
	}
}

// Gained returns the capabilities of t that old lacks, in canonical order.
// A nil old has none.
func (t *Tool) Gained(old *Tool) []Capability {
	var out []Capability
	for _, c := range t.Capabilities {
		if old == nil || !old.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// MaxDescriptionScan bounds the bytes of a title or description that the
// description rules read. A longer text is read to this length and marked
// unknown as well, since the rest was not classified.
const MaxDescriptionScan = 1 << 20

// Classify returns the capabilities of one raw tool definition:
//
//  1. annotations: readOnlyHint true gives read, destructiveHint true
//     delete, openWorldHint true network (idempotentHint is recorded only);
//  2. name rules: the words of the name (snake_case, camelCase, kebab-case
//     and dotted names are split into words) against the verb lists;
//  3. description rules: the words of the title, annotations.title and
//     description against the same lists.
//
// A rule only ever adds a capability. When nothing matched the tool is
// Unknown. A non-nil override replaces the result entirely. A definition
// that is not a JSON object is Unknown.
func Classify(raw json.RawMessage, override []Capability) *Tool {
	t := &Tool{Sources: map[Capability][]Source{}}
	if override != nil {
		t.Overridden = true
		for _, c := range Sort(slices.Clone(override)) {
			t.add(c, Source{From: FromOverride, Detail: "capabilities override"})
		}
		return t
	}
	var def map[string]json.RawMessage
	if err := json.Unmarshal(raw, &def); err != nil {
		t.add(Unknown, Source{From: FromDefault, Detail: "the definition is not a JSON object"})
		return t
	}
	var texts []string
	if ann := jsonObject(def["annotations"]); ann != nil {
		if jsonBool(ann["readOnlyHint"]) {
			t.add(Read, Source{From: FromAnnotation, Detail: "readOnlyHint"})
		}
		if jsonBool(ann["destructiveHint"]) {
			t.add(Delete, Source{From: FromAnnotation, Detail: "destructiveHint"})
		}
		if jsonBool(ann["openWorldHint"]) {
			t.add(Network, Source{From: FromAnnotation, Detail: "openWorldHint"})
		}
		var idem bool
		if v, ok := ann["idempotentHint"]; ok && json.Unmarshal(v, &idem) == nil {
			t.Idempotent = &idem
		}
		if s, ok := jsonString(ann["title"]); ok {
			texts = append(texts, s)
		}
	}
	if name, ok := jsonString(def["name"]); ok {
		classifyWords(t, FromName, splitWords(name))
	}
	for _, m := range []string{"title", "description"} {
		if s, ok := jsonString(def[m]); ok {
			texts = append(texts, s)
		}
	}
	var truncated bool
	var words []string
	for _, s := range texts {
		if len(s) > MaxDescriptionScan {
			s, truncated = s[:MaxDescriptionScan], true
		}
		words = append(words, splitWords(s)...)
	}
	classifyWords(t, FromDescription, words)
	if len(t.Capabilities) == 0 {
		t.add(Unknown, Source{From: FromDefault, Detail: "no annotation, name or description rule matched"})
	} else if truncated {
		t.add(Unknown, Source{From: FromDefault, Detail: "description longer than " + strconv.Itoa(MaxDescriptionScan) + " bytes was not read to the end"})
	}
	t.Capabilities = Sort(t.Capabilities)
	return t
}

func jsonObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func jsonBool(raw json.RawMessage) bool {
	var b bool
	return len(raw) > 0 && json.Unmarshal(raw, &b) == nil && b
}

func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// verbs maps each rule word to its capabilities. A word may give more than
// one ("fetch" reads and uses the network).
var verbs = lazy.New(verbTable)

func verbTable() map[Capability][]string {
	return map[Capability][]string{
		Delete: {"delete", "remove", "drop", "purge", "destroy", "erase", "wipe", "truncate",
			"unlink", "rm", "rmdir", "del", "trash", "kill", "uninstall", "revoke"},
		Write: {"create", "update", "write", "send", "post", "put", "set", "insert", "modify", "edit",
			"add", "upload", "save", "patch", "append", "rename", "move", "replace", "push", "commit",
			"merge", "publish", "submit", "store", "upsert", "overwrite", "mkdir", "install", "fork",
			"assign", "fill", "click", "reply"},
		Read: {"get", "list", "search", "read", "fetch", "query", "find", "lookup", "show", "view",
			"describe", "retrieve", "load", "inspect", "browse", "download", "ls", "cat", "grep",
			"status", "log", "info", "diff", "screenshot", "open"},
		Exec: {"exec", "execute", "shell", "eval", "evaluate", "spawn", "subprocess", "bash", "sh",
			"zsh", "powershell", "pwsh", "popen"},
		Network: {"fetch", "http", "https", "url", "uri", "webhook", "download", "upload", "request",
			"browse", "browser", "curl", "wget", "web", "website", "webpage", "internet", "crawl",
			"scrape", "navigate", "socket", "dns", "ping", "smtp"},
	}
}

// nameOnly are rule words too common in prose to count in a description:
// they count in a tool's name only.
var nameOnly = lazy.New(nameOnlyTable)

func nameOnlyTable() map[string]bool {
	return map[string]bool{
		"evaluate": true, "sh": true, "rm": true, "del": true, "ls": true, "cat": true, "status": true,
		"log": true, "info": true, "diff": true, "open": true, "set": true, "add": true, "put": true,
		"post": true, "type": true, "fill": true, "click": true, "store": true, "move": true,
		"start": true,
	}
}

// Two-word exec rule: a run verb and a command noun anywhere in the same
// name (or the same text), e.g. run_command, launchProcess, "runs a script".
var (
	runVerbs  = []string{"run", "launch", "invoke", "start"}
	runTarget = []string{"command", "cmd", "script", "code", "program", "process", "binary", "executable"}
)

// wordRule is what one word form gives.
type wordRule struct {
	caps []Capability
	base string // the verb it is a form of
}

// forms maps every form of every rule word (delete, deletes, deleted,
// deleting…) to what it gives. Built once from verbs.
var forms = lazy.New(buildForms) // built on first use: not at every mcpsign start-up

// runForms maps the forms of the run verbs and command nouns to their base
// word; the value's first byte tells which list ('v' or 't').
var runForms = lazy.New(buildRunForms)

func buildForms() map[string]wordRule {
	m := map[string]wordRule{}
	for _, c := range All {
		for _, v := range verbs.Get()[c] {
			for _, f := range inflect(v) {
				r := m[f]
				if r.base == "" {
					r.base = v
				}
				if !slices.Contains(r.caps, c) {
					r.caps = append(r.caps, c)
				}
				m[f] = r
			}
		}
	}
	return m
}

func buildRunForms() map[string]string {
	m := map[string]string{}
	for _, v := range runVerbs {
		for _, f := range inflect(v) {
			m[f] = "v" + v
		}
	}
	m["ran"] = "vrun"
	for _, t := range runTarget {
		for _, f := range inflect(t) {
			m[f] = "t" + t
		}
	}
	return m
}

// inflect returns the word and its common English forms: -s/-es, -ed/-d,
// -ing (dropping a final e, or doubling a final consonant), -ies/-ied.
func inflect(w string) []string {
	out := []string{w, w + "s", w + "es", w + "ed", w + "ing"}
	n := len(w)
	last := w[n-1]
	switch {
	case last == 'e':
		out = append(out, w+"d", w[:n-1]+"ing")
	case last == 'y' && n > 1 && !isVowel(w[n-2]):
		out = append(out, w[:n-1]+"ies", w[:n-1]+"ied")
	case n >= 3 && !isVowel(last) && isVowel(w[n-2]) && !isVowel(w[n-3]) && last != 'w' && last != 'x' && last != 'y':
		out = append(out, w+string(last)+"ing", w+string(last)+"ed")
	}
	return out
}

func isVowel(b byte) bool { return strings.IndexByte("aeiou", b) >= 0 }

// classifyWords applies the one-word rules and the run+command rule to the
// words of a name or a text.
func classifyWords(t *Tool, from string, words []string) {
	var runVerb, runNoun string
	for _, w := range words {
		if r, ok := forms.Get()[w]; ok && (from == FromName || !nameOnly.Get()[r.base]) {
			for _, c := range r.caps {
				t.add(c, Source{From: from, Detail: w})
			}
		}
		if b, ok := runForms.Get()[w]; ok && (from == FromName || !nameOnly.Get()[b[1:]]) {
			if b[0] == 'v' && runVerb == "" {
				runVerb = w
			} else if b[0] == 't' && runNoun == "" {
				runNoun = w
			}
		}
	}
	if runVerb != "" && runNoun != "" {
		t.add(Exec, Source{From: from, Detail: runVerb + "+" + runNoun})
	}
}

// splitWords splits a name or a text into lowercase words: at every
// character that is not a letter or digit (so snake_case, kebab-case and
// dotted names split), at a lower-to-upper case change (camelCase), before
// the last capital of a run followed by a lowercase letter (HTTPRequest →
// http request), and between letters and digits.
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for i, w := 0, 0; i < len(s); i += w {
		var r rune
		r, w = utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			prev = 0
			continue
		}
		if len(cur) > 0 {
			switch {
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush()
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush()
			case unicode.IsLower(r) && unicode.IsUpper(prev) && len(cur) > 1:
				// "HTTPRequest": the R starts the next word.
				last := cur[len(cur)-1]
				cur = cur[:len(cur)-1]
				flush()
				cur = append(cur, last)
			}
		}
		cur = append(cur, r)
		prev = r
	}
	flush()
	return words
}

// Overrides are capability overrides per tool name, as given in a caps.json
// file ({"tools": {"name": ["read", …]}}) and stored in the lock. An
// override replaces the computed capabilities of the tool it names.
type Overrides map[string][]Capability

// Limits of ParseOverrides.
const (
	MaxOverridesBytes = 1 << 20
	MaxOverrideTools  = 10000
)

// ErrOverrides wraps every reason ParseOverrides refuses a file.
var ErrOverrides = errors.New("invalid capabilities overrides")

// ParseOverrides reads a caps.json document strictly: one member "tools",
// an object from tool name to a non-empty list of distinct capabilities.
// The lists come back in canonical order.
func ParseOverrides(data []byte) (Overrides, error) {
	if len(data) > MaxOverridesBytes {
		return nil, fmt.Errorf("%w: %d bytes is more than the %d allowed", ErrOverrides, len(data), MaxOverridesBytes)
	}
	tools, err := toolsMember(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOverrides, err)
	}
	o, err := ParseOverrideTools(tools, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOverrides, err)
	}
	return o, nil
}

// toolsMember reads a caps.json document with the strict reader of package
// digest and returns its one member, "tools"; any other member is refused.
func toolsMember(data []byte) (json.RawMessage, error) {
	if _, err := digest.Canonicalize(data); err != nil {
		return nil, err
	}
	names, values, err := digest.Members(data)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, name := range names {
		if name != "tools" {
			unknown = append(unknown, textsafe.RawQuote(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(unknown) > 5 {
			unknown = append(unknown[:5], "…")
		}
		return nil, fmt.Errorf("unknown member %s", strings.Join(unknown, ", "))
	}
	tools, ok := values["tools"]
	if !ok {
		return nil, errors.New(`member "tools" is missing`)
	}
	return tools, nil
}

// ParseOverrideTools reads the "tools" object of overrides (the caller has
// read the whole text strictly); strict (in a lock) also requires each list
// in canonical order, so that a lock has one form.
func ParseOverrideTools(raw json.RawMessage, strict bool) (Overrides, error) {
	var tools map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil || tools == nil {
		return nil, errors.New(`"tools" must be an object from tool name to a list of capabilities`)
	}
	if len(tools) > MaxOverrideTools {
		return nil, fmt.Errorf("%d tools, at most %d allowed", len(tools), MaxOverrideTools)
	}
	o := make(Overrides, len(tools))
	for name, v := range tools {
		if name == "" {
			return nil, errors.New("a tool name is empty")
		}
		var list []Capability
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("tool %s: want a list of capability names", textsafe.RawQuote(name))
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("tool %s: the list is empty (say \"unknown\" for a tool you cannot classify)", textsafe.RawQuote(name))
		}
		for _, c := range list {
			if !c.Valid() {
				return nil, fmt.Errorf("tool %s: %s is not a capability (want read, write, delete, network, exec or unknown)", textsafe.RawQuote(name), textsafe.RawQuote(string(c)))
			}
		}
		sorted := Sort(slices.Clone(list))
		if len(sorted) != len(list) {
			return nil, fmt.Errorf("tool %s: a capability is listed twice", textsafe.RawQuote(name))
		}
		if strict && !slices.Equal(sorted, list) {
			return nil, fmt.Errorf("tool %s: capabilities are not in the order read, write, delete, network, exec, unknown", textsafe.RawQuote(name))
		}
		o[name] = sorted
	}
	return o, nil
}

// MarshalJSON writes the overrides in their file form, {"tools": {…}},
// names sorted (UTF-8 byte order), each list in canonical order, with <, >
// and & kept as they are.
func (o Overrides) MarshalJSON() ([]byte, error) {
	tools := make(map[string][]Capability, len(o))
	for name, cs := range o {
		tools[name] = append([]Capability{}, Sort(slices.Clone(cs))...)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Tools map[string][]Capability `json:"tools"`
	}{tools}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
