package attest

import (
	"encoding/json"
	"errors"
	"fmt"

	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// What a statement can be refused for; Parse wraps one of these, so that a
// verifier can report which check failed.
var (
	ErrNotJSON       = errors.New("statement is not strict JSON")
	ErrStatementType = errors.New("wrong statement type")
	ErrPredicateType = errors.New("wrong predicate type")
	ErrSubjects      = errors.New("invalid subjects")
	ErrPredicate     = errors.New("invalid predicate")
	ErrEmbedded      = errors.New("embedded definitions do not match the subjects")
)

// MaxStatementBytes bounds the payload Parse reads.
const MaxStatementBytes = 64 << 20

// Parse reads a signed statement payload and validates it completely:
//
//   - strict JSON (no repeated member names, valid UTF-8, RFC 8259 numbers);
//   - an in-toto Statement v1 (v0.1 is refused) that the in-toto reference
//     validator accepts, with predicate type PredicateType;
//   - every object mcpsign reads (the statement, each subject, the
//     predicate, server, sets, each package, source, definitions) has only
//     the members docs/STATEMENT.md names, spelled exactly, and the required
//     ones: an unknown member, or one that differs only in case ("Sets"), is
//     refused, named, wrapping ErrStatementType, ErrSubjects or ErrPredicate
//     for the object it is in;
//   - what in-toto's own reader (protojson) reads is what mcpsign reads:
//     type, predicate type, subject names and digests (mcpsign's reader
//     accepts only spellings that both read alike; FuzzParse checks it
//     against in-toto's reader and its validator, which a statement Parse
//     accepts always passes);
//   - subjects: unique, well-formed names (kind/key or "instructions"), each
//     with exactly one sha256 digest of 64 lowercase hex digits;
//   - predicate: well-formed Set Digests that equal the Set Digests
//     recomputed from the subjects;
//   - embedded definitions, when present: each digests and keys to exactly
//     one subject, and together they cover every definition subject.
func Parse(payload []byte) (*Statement, error) {
	if len(payload) > MaxStatementBytes {
		return nil, fmt.Errorf("%w: %d bytes is more than the %d allowed", ErrNotJSON, len(payload), MaxStatementBytes)
	}
	if _, err := digest.Canonicalize(payload); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	st, predicate, err := readEnvelope(payload)
	if err != nil {
		return nil, err
	}
	if err := st.inTotoValid(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStatementType, err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("%w: %s, want %s", ErrStatementType, textsafe.RawQuote(st.Type), textsafe.RawQuote(StatementType))
	}
	if st.PredicateType != PredicateType {
		return nil, fmt.Errorf("%w: %s, want %s", ErrPredicateType, textsafe.RawQuote(st.PredicateType), textsafe.RawQuote(PredicateType))
	}
	if err := readPredicate(predicate, &st.Predicate); err != nil {
		return nil, err
	}
	if err := st.validateSubjects(); err != nil {
		return nil, err
	}
	if err := st.validatePredicate(); err != nil {
		return nil, err
	}
	return st, nil
}

// inTotoValid runs the in-toto reference validator on the statement as
// mcpsign read it (type, subjects, predicate type; the predicate, which
// readEnvelope requires, stands as an empty one): in-toto's own checks,
// without a second reading of the bytes.
func (st *Statement) inTotoValid() error {
	ref := intoto.Statement{Type: st.Type, PredicateType: st.PredicateType, Predicate: &structpb.Struct{},
		Subject: make([]*intoto.ResourceDescriptor, len(st.Subject))}
	for i, s := range st.Subject {
		ref.Subject[i] = &intoto.ResourceDescriptor{Name: s.Name, Digest: s.Digest}
	}
	return ref.Validate()
}

func (st *Statement) validateSubjects() error {
	if len(st.Subject) == 0 {
		return fmt.Errorf("%w: no subjects", ErrSubjects)
	}
	if len(st.Subject) > MaxSubjects {
		return fmt.Errorf("%w: %d subjects, at most %d allowed", ErrSubjects, len(st.Subject), MaxSubjects)
	}
	seen := make(map[string]bool, len(st.Subject))
	for i, s := range st.Subject {
		if seen[s.Name] {
			return fmt.Errorf("%w: subject %s appears twice", ErrSubjects, textsafe.RawQuote(s.Name))
		}
		seen[s.Name] = true
		if s.Name != InstructionsSubject {
			if _, _, ok := ParseSubjectName(s.Name); !ok {
				return fmt.Errorf("%w: subject #%d name %s is not tool/…, prompt/…, resourceTemplate/… or instructions", ErrSubjects, i, textsafe.RawQuote(s.Name))
			}
		}
		if len(s.Digest) != 1 || !validHex(s.Digest["sha256"]) {
			return fmt.Errorf("%w: subject %s must have exactly one digest, sha256 in 64 lowercase hex digits", ErrSubjects, textsafe.RawQuote(s.Name))
		}
	}
	return nil
}

func (st *Statement) validatePredicate() error {
	p := &st.Predicate
	if p.Server.Name == "" {
		return fmt.Errorf("%w: server.name is empty", ErrPredicate)
	}
	// Recompute each kind's Set Digest from the subjects: the sets are
	// derived data and must agree.
	pairs := map[digest.Kind][]digest.KeyDigest{}
	for _, s := range st.Subject {
		if k, key, ok := ParseSubjectName(s.Name); ok {
			pairs[k] = append(pairs[k], digest.KeyDigest{Key: key, Digest: digest.Prefix + s.Digest["sha256"]})
		}
	}
	for _, k := range digest.Kinds {
		got := p.Sets.Get(k)
		if !digest.ValidDigest(got) {
			return fmt.Errorf("%w: sets.%s is not a sha256 digest", ErrPredicate, k.ListMember())
		}
		if want := digest.SetDigest(pairs[k]); got != want {
			return fmt.Errorf("%w: sets.%s %s does not match the subjects (%s)", ErrPredicate, k.ListMember(), got, want)
		}
	}
	for i, pk := range p.Package {
		if pk.PURL == "" {
			return fmt.Errorf("%w: package #%d has no purl", ErrPredicate, i)
		}
	}
	if p.Definitions != nil {
		return st.validateEmbedded()
	}
	return nil
}

// validateEmbedded checks that the embedded definitions are exactly the
// definition subjects: each one digests, its key names a subject of its
// kind with the same digest, and no subject is left without one.
func (st *Statement) validateEmbedded() error {
	digests := st.Digests()
	covered := 0
	for _, k := range digest.Kinds {
		snap := &digest.Snapshot{}
		snap.SetDefinitions(k, st.Predicate.Definitions.Get(k))
		r := digest.Compute(snap)
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: %w", ErrEmbedded, err)
		}
		for _, d := range r.Definitions {
			name := SubjectName(k, d.Key)
			want, ok := digests[name]
			if !ok {
				return fmt.Errorf("%w: embedded %s has no subject", ErrEmbedded, textsafe.RawQuote(name))
			}
			if want != d.Digest {
				return fmt.Errorf("%w: embedded %s digests to %s, the subject says %s", ErrEmbedded, textsafe.RawQuote(name), d.Digest, want)
			}
			covered++
		}
	}
	want := len(st.Subject)
	if _, ok := digests[InstructionsSubject]; ok {
		want--
	}
	if covered != want {
		return fmt.Errorf("%w: %d definition subjects, %d embedded definitions", ErrEmbedded, want, covered)
	}
	return nil
}

// DefinitionSubjects returns the definition subjects as kind, key and digest.
func (st *Statement) DefinitionSubjects() []digest.Definition {
	var out []digest.Definition
	for _, s := range st.Subject {
		if k, key, ok := ParseSubjectName(s.Name); ok {
			out = append(out, digest.Definition{Kind: k, Key: key, Digest: digest.Prefix + s.Digest["sha256"]})
		}
	}
	return out
}

// EmbeddedDefinition returns the signed definition of kind k with key, when
// the statement embeds definitions.
func (st *Statement) EmbeddedDefinition(k digest.Kind, key string) (json.RawMessage, bool) {
	if st.Predicate.Definitions == nil {
		return nil, false
	}
	snap := &digest.Snapshot{}
	snap.SetDefinitions(k, st.Predicate.Definitions.Get(k))
	if d, ok := digest.Compute(snap).Lookup(k, key); ok {
		return d.Raw, true
	}
	return nil, false
}
