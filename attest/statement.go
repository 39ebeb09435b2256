// Package attest builds, parses and validates the in-toto Statement that
// mcpsign signs: one subject per definition (and the instructions), and the
// predicate https://mcpsign.dev/definitions/v1 with the server, protocol
// version, Set Digests and, by default, the signed definitions themselves.
//
// The format is normative; docs/STATEMENT.md describes it for other
// implementations.
package attest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textout"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Type URIs of the statement and its predicate, and the DSSE payload type.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://mcpsign.dev/definitions/v1"
	PayloadType   = "application/vnd.in-toto+json"
)

// MaxSubjects is the most subjects a statement may have: sigstore-go refuses
// to verify a statement with more.
const MaxSubjects = 1024

// InstructionsSubject is the subject name of the server's instructions.
const InstructionsSubject = "instructions"

// ErrTooManySubjects is returned by Build when the snapshot has more than
// MaxSubjects definitions (instructions included).
var ErrTooManySubjects = errors.New("too many subjects")

// Subject is one in-toto subject: a named definition and its SHA-256.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Package binds the definitions to a released artifact.
type Package struct {
	PURL   string            `json:"purl"`
	Digest map[string]string `json:"digest,omitempty"`
}

// Source names the source revision the server was built from.
type Source struct {
	Repository string `json:"repository,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Ref        string `json:"ref,omitempty"`
}

// Sets holds the Set Digest of each kind.
type Sets struct {
	Tools             string `json:"tools"`
	Prompts           string `json:"prompts"`
	ResourceTemplates string `json:"resourceTemplates"`
}

// Get returns the Set Digest of kind k.
func (s Sets) Get(k digest.Kind) string {
	switch k {
	case digest.KindTool:
		return s.Tools
	case digest.KindPrompt:
		return s.Prompts
	default:
		return s.ResourceTemplates
	}
}

// Definitions holds the signed definitions, as received from the server.
type Definitions struct {
	Tools             []json.RawMessage `json:"tools"`
	Prompts           []json.RawMessage `json:"prompts"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
}

// Get returns the embedded definitions of kind k.
func (d *Definitions) Get(k digest.Kind) []json.RawMessage {
	switch k {
	case digest.KindTool:
		return d.Tools
	case digest.KindPrompt:
		return d.Prompts
	default:
		return d.ResourceTemplates
	}
}

// Predicate is the mcpsign definitions predicate, v1.
type Predicate struct {
	Server          digest.ServerInfo `json:"server"`
	ProtocolVersion string            `json:"protocolVersion"`
	Sets            Sets              `json:"sets"`
	Package         []Package         `json:"package,omitempty"`
	Source          *Source           `json:"source,omitempty"`
	Definitions     *Definitions      `json:"definitions,omitempty"`
}

// Statement is an in-toto Statement v1 with the mcpsign predicate.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// SubjectName returns the subject name of a definition: "tool/<name>",
// "prompt/<name>" or "resourceTemplate/<uriTemplate>".
func SubjectName(k digest.Kind, key string) string {
	return string(k) + "/" + key
}

// ParseSubjectName splits a subject name into kind and key; ok is false for
// the instructions subject and for malformed names.
func ParseSubjectName(name string) (k digest.Kind, key string, ok bool) {
	kind, key, found := strings.Cut(name, "/")
	k = digest.Kind(kind)
	if !found || !k.Valid() || key == "" {
		return "", "", false
	}
	return k, key, true
}

// Options are the optional parts of a statement.
type Options struct {
	// Packages binds the definitions to released artifacts.
	Packages []Package
	// Source names the source revision; nil leaves it out.
	Source *Source
	// OmitDefinitions leaves the definitions out of the predicate. By
	// default they are embedded so that a verifier can show what changed.
	OmitDefinitions bool
}

// Build returns the statement for a snapshot. It fails, listing every
// culprit, when any definition has no digest (a partial set is never
// signed), and with ErrTooManySubjects past MaxSubjects.
func Build(s *digest.Snapshot, opts Options) (*Statement, error) {
	r := digest.Compute(s)
	if err := r.Err(); err != nil {
		return nil, err
	}
	n := len(r.Definitions)
	if s.Instructions != nil {
		n++
	}
	if n > MaxSubjects {
		return nil, fmt.Errorf("%w: the server has %d definitions and instructions, and a statement holds at most %d (sigstore-go's limit)", ErrTooManySubjects, n, MaxSubjects)
	}
	if n == 0 {
		return nil, errors.New("nothing to sign: the server has no tools, prompts, resource templates or instructions")
	}
	st := &Statement{Type: StatementType, PredicateType: PredicateType}
	for _, d := range r.Definitions {
		st.Subject = append(st.Subject, subject(SubjectName(d.Kind, d.Key), d.Digest))
	}
	if s.Instructions != nil {
		st.Subject = append(st.Subject, subject(InstructionsSubject, r.Instructions))
	}
	st.Predicate = Predicate{
		Server:          s.Server,
		ProtocolVersion: s.ProtocolVersion,
		Sets: Sets{
			Tools:             r.Sets[digest.KindTool],
			Prompts:           r.Sets[digest.KindPrompt],
			ResourceTemplates: r.Sets[digest.KindResourceTemplate],
		},
		Package: opts.Packages,
		Source:  opts.Source,
	}
	if !opts.OmitDefinitions {
		defs := &Definitions{}
		// Embed in the subjects' order (kind, then key).
		for _, d := range r.Definitions {
			switch d.Kind {
			case digest.KindTool:
				defs.Tools = append(defs.Tools, d.Raw)
			case digest.KindPrompt:
				defs.Prompts = append(defs.Prompts, d.Raw)
			case digest.KindResourceTemplate:
				defs.ResourceTemplates = append(defs.ResourceTemplates, d.Raw)
			}
		}
		for _, k := range digest.Kinds {
			if defs.Get(k) == nil {
				setDefs(defs, k, []json.RawMessage{})
			}
		}
		st.Predicate.Definitions = defs
	}
	return st, nil
}

func setDefs(d *Definitions, k digest.Kind, v []json.RawMessage) {
	switch k {
	case digest.KindTool:
		d.Tools = v
	case digest.KindPrompt:
		d.Prompts = v
	default:
		d.ResourceTemplates = v
	}
}

func subject(name, dg string) Subject {
	return Subject{Name: name, Digest: map[string]string{"sha256": strings.TrimPrefix(dg, digest.Prefix)}}
}

// Marshal returns the statement as the JSON payload to sign. Embedded
// definitions keep their members and values exactly (whitespace aside).
func (st *Statement) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		return nil, fmt.Errorf("encoding the statement: %w", err)
	}
	return b.Bytes(), nil
}

// BuildPayload builds the statement of s (Build) and returns it with its
// JSON payload to sign (Marshal).
func BuildPayload(s *digest.Snapshot, opts Options) (*Statement, []byte, error) {
	st, err := Build(s, opts)
	if err != nil {
		return nil, nil, err
	}
	payload, err := st.Marshal()
	if err != nil {
		return nil, nil, err
	}
	return st, payload, nil
}

// Digests returns the signed digest ("sha256:…") of every subject by name.
func (st *Statement) Digests() map[string]string {
	m := make(map[string]string, len(st.Subject))
	for _, s := range st.Subject {
		m[s.Name] = digest.Prefix + s.Digest["sha256"]
	}
	return m
}

// validHex reports whether s is 64 lowercase hex digits.
func validHex(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// ErrChecksumName is the error of Checksums for a subject name that a
// checksums file cannot hold as it is (a line break or a backslash, which
// sha256sum escapes and readers of the format treat differently).
var ErrChecksumName = errors.New("a subject name cannot be written in a checksums file")

// Checksums returns the subjects in the format of sha256sum(1): one line
// "HEX  NAME" per subject, in the statement's order, as actions/attest
// reads its subject-checksums input (docs/PUBLISHING.md).
func (st *Statement) Checksums() ([]byte, error) {
	var b bytes.Buffer
	for _, s := range st.Subject {
		if strings.ContainsAny(s.Name, "\n\r\\") {
			return nil, fmt.Errorf("%w: %s", ErrChecksumName, textsafe.RawQuote(s.Name))
		}
		fmt.Fprintf(&b, "%s  %s\n", s.Digest["sha256"], s.Name)
	}
	return b.Bytes(), nil
}

// MarshalPredicate serializes the predicate alone (predicate type
// PredicateType), as a tool that builds the statement itself takes it.
func (st *Statement) MarshalPredicate() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st.Predicate); err != nil {
		return nil, fmt.Errorf("encoding the predicate: %w", err)
	}
	return b.Bytes(), nil
}

// Summary describes st in one line, as mcpsign prints it: the server's
// name and version, and how many subjects of each kind (server strings
// escaped).
func (st *Statement) Summary() string {
	counts := map[digest.Kind]int{}
	ins := ""
	for _, s := range st.Subject {
		if k, _, ok := ParseSubjectName(s.Name); ok {
			counts[k]++
		} else {
			ins = ", instructions"
		}
	}
	p := st.Predicate
	return fmt.Sprintf("%s %s, %s (%s%s)",
		textsafe.Quote(p.Server.Name), textsafe.Escape(p.Server.Version), textout.Plural(len(st.Subject), "subject"),
		digest.CountText(func(k digest.Kind) int { return counts[k] }), ins)
}
