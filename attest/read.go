package attest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// The members of each object of a statement that mcpsign reads, required
// first (docs/STATEMENT.md). Every other member is refused, and so is every
// repeated one: encoding/json would match names without regard to case
// (last one wins) and ignore unknown ones, and in-toto's protojson reads
// proto field names too ("predicate_type").
var (
	statementMembers  = members{required: []string{"_type", "subject", "predicateType", "predicate"}}
	subjectMembers    = members{required: []string{"name", "digest"}}
	predicateMembers  = members{required: []string{"server", "protocolVersion", "sets"}, optional: []string{"package", "source", "definitions"}}
	serverMembers     = members{required: []string{"name", "version"}}
	setsMembers       = members{required: []string{"tools", "prompts", "resourceTemplates"}}
	packageMembers    = members{required: []string{"purl"}, optional: []string{"digest"}}
	sourceMembers     = members{optional: []string{"repository", "commit", "ref"}}
	definitionMembers = members{required: []string{"tools", "prompts", "resourceTemplates"}}
)

type members struct{ required, optional []string }

// object reads the JSON object raw at path (for messages) strictly: no
// repeated member, no member but the known ones, every required one
// present. Errors wrap sentinel and name the member.
func (ms members) object(raw []byte, path string, sentinel error) (map[string][]byte, error) {
	names, values, err := digest.Members(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", sentinel, path, err)
	}
	for _, name := range names {
		if slices.Contains(ms.required, name) || slices.Contains(ms.optional, name) {
			continue
		}
		for _, known := range slices.Concat(ms.required, ms.optional) {
			if digest.CaseVariant(name, known) {
				return nil, fmt.Errorf("%w: %s: member %s is not %s (member names are matched exactly)", sentinel, path, digest.QuoteName(name), textsafe.RawQuote(known))
			}
		}
		return nil, fmt.Errorf("%w: %s: unknown member %s", sentinel, path, digest.QuoteName(name))
	}
	for _, name := range ms.required {
		if _, ok := values[name]; !ok {
			return nil, fmt.Errorf("%w: %s: member %s is missing", sentinel, path, textsafe.RawQuote(name))
		}
	}
	return values, nil
}

// str decodes the JSON string raw at path strictly.
func str(raw []byte, path string, sentinel error) (string, error) {
	s, err := digest.DecodeString(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", sentinel, path, err)
	}
	return s, nil
}

// elements splits the JSON array raw at path.
func elements(raw []byte, path string, sentinel error) ([][]byte, error) {
	items, err := digest.Elements(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", sentinel, path, err)
	}
	return items, nil
}

// digestMap reads a digest object: algorithm names to strings.
func digestMap(raw []byte, path string, sentinel error) (map[string]string, error) {
	names, values, err := digest.Members(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", sentinel, path, err)
	}
	m := make(map[string]string, len(names))
	for _, name := range names {
		if m[name], err = str(values[name], path+"."+name, sentinel); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// stringMembers reads the string members of the object values into dst, by name.
func stringMembers(values map[string][]byte, path string, sentinel error, dst map[string]*string) error {
	for name, p := range dst {
		v, ok := values[name]
		if !ok {
			continue
		}
		s, err := str(v, path+"."+name, sentinel)
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}

// readEnvelope reads the statement's top level and its subjects (strict
// JSON already), exactly as docs/STATEMENT.md spells them; the predicate is
// left to readPredicate, once the predicate type is known to be ours.
func readEnvelope(payload []byte) (*Statement, []byte, error) {
	top, err := statementMembers.object(payload, "statement", ErrStatementType)
	if err != nil {
		return nil, nil, err
	}
	st := &Statement{}
	if err := stringMembers(top, "statement", ErrStatementType, map[string]*string{"_type": &st.Type, "predicateType": &st.PredicateType}); err != nil {
		return nil, nil, err
	}
	subjects, err := elements(top["subject"], "subject", ErrSubjects)
	if err != nil {
		return nil, nil, err
	}
	for i, raw := range subjects {
		path := fmt.Sprintf("subject[%d]", i)
		m, err := subjectMembers.object(raw, path, ErrSubjects)
		if err != nil {
			return nil, nil, err
		}
		var s Subject
		if s.Name, err = str(m["name"], path+".name", ErrSubjects); err != nil {
			return nil, nil, err
		}
		if s.Digest, err = digestMap(m["digest"], path+".digest", ErrSubjects); err != nil {
			return nil, nil, err
		}
		st.Subject = append(st.Subject, s)
	}
	return st, top["predicate"], nil
}

// readPredicate reads the predicate exactly as docs/STATEMENT.md spells
// it: server, sets, each package, source and definitions included.
func readPredicate(raw []byte, p *Predicate) error {
	m, err := predicateMembers.object(raw, "predicate", ErrPredicate)
	if err != nil {
		return err
	}
	if err := stringMembers(m, "predicate", ErrPredicate, map[string]*string{"protocolVersion": &p.ProtocolVersion}); err != nil {
		return err
	}
	server, err := serverMembers.object(m["server"], "predicate.server", ErrPredicate)
	if err != nil {
		return err
	}
	if err := stringMembers(server, "predicate.server", ErrPredicate, map[string]*string{"name": &p.Server.Name, "version": &p.Server.Version}); err != nil {
		return err
	}
	sets, err := setsMembers.object(m["sets"], "predicate.sets", ErrPredicate)
	if err != nil {
		return err
	}
	if err := stringMembers(sets, "predicate.sets", ErrPredicate, map[string]*string{
		"tools": &p.Sets.Tools, "prompts": &p.Sets.Prompts, "resourceTemplates": &p.Sets.ResourceTemplates,
	}); err != nil {
		return err
	}
	if raw, ok := m["package"]; ok {
		pkgs, err := elements(raw, "predicate.package", ErrPredicate)
		if err != nil {
			return err
		}
		for i, raw := range pkgs {
			path := fmt.Sprintf("predicate.package[%d]", i)
			pm, err := packageMembers.object(raw, path, ErrPredicate)
			if err != nil {
				return err
			}
			var pk Package
			if pk.PURL, err = str(pm["purl"], path+".purl", ErrPredicate); err != nil {
				return err
			}
			if d, ok := pm["digest"]; ok {
				if pk.Digest, err = digestMap(d, path+".digest", ErrPredicate); err != nil {
					return err
				}
			}
			p.Package = append(p.Package, pk)
		}
	}
	if raw, ok := m["source"]; ok {
		sm, err := sourceMembers.object(raw, "predicate.source", ErrPredicate)
		if err != nil {
			return err
		}
		p.Source = &Source{}
		if err := stringMembers(sm, "predicate.source", ErrPredicate, map[string]*string{
			"repository": &p.Source.Repository, "commit": &p.Source.Commit, "ref": &p.Source.Ref,
		}); err != nil {
			return err
		}
	}
	if raw, ok := m["definitions"]; ok {
		dm, err := definitionMembers.object(raw, "predicate.definitions", ErrPredicate)
		if err != nil {
			return err
		}
		p.Definitions = &Definitions{}
		for _, k := range digest.Kinds {
			path := "predicate.definitions." + k.ListMember()
			items, err := elements(dm[k.ListMember()], path, ErrPredicate)
			if err != nil {
				return err
			}
			defs := make([]json.RawMessage, len(items))
			for i, it := range items {
				defs[i] = bytes.Clone(it)
			}
			setDefs(p.Definitions, k, defs)
		}
	}
	return nil
}
