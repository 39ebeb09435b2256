package attest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testsnap"
	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

// exampleSnapshot is the small server of internal/testkit/fixtures/testsnap.
func exampleSnapshot() *digest.Snapshot { return testsnap.Example() }

func TestBuildAndParse(t *testing.T) {
	snap := exampleSnapshot()
	st, err := Build(snap, Options{
		Packages: []Package{{PURL: "pkg:npm/example@1.0.0", Digest: map[string]string{"sha512": "ab"}}},
		Source:   &Source{Repository: "https://github.com/o/r", Commit: strings.Repeat("a", 40), Ref: "refs/tags/v1.0.0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"tool/search_notes", "tool/write_note", "prompt/summarize", "resourceTemplate/notes://{id}", "instructions"}
	if len(st.Subject) != len(wantNames) {
		t.Fatalf("subjects %+v", st.Subject)
	}
	r := digest.Compute(snap)
	for i, name := range wantNames {
		if st.Subject[i].Name != name {
			t.Errorf("subject %d is %q, want %q", i, st.Subject[i].Name, name)
		}
	}
	d := st.Digests()
	for _, def := range r.Definitions {
		if d[SubjectName(def.Kind, def.Key)] != def.Digest {
			t.Errorf("%s/%s digest mismatch", def.Kind, def.Key)
		}
	}
	if d[InstructionsSubject] != r.Instructions {
		t.Error("instructions subject")
	}
	if st.Predicate.Sets.Tools != r.Sets[digest.KindTool] {
		t.Error("tools set digest")
	}
	payload, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(payload)
	if err != nil {
		t.Fatalf("%v\n%s", err, payload)
	}
	if raw, ok := got.EmbeddedDefinition(digest.KindTool, "write_note"); !ok || !strings.Contains(string(raw), "execution") {
		t.Errorf("embedded definition lost: %s", raw)
	}
	if got.Predicate.Source.Ref != "refs/tags/v1.0.0" {
		t.Error("source lost")
	}

	st.Predicate.Definitions = nil
	none, err := Build(snap, Options{OmitDefinitions: true})
	if err != nil || none.Predicate.Definitions != nil {
		t.Fatal("OmitDefinitions")
	}
	p2, _ := none.Marshal()
	if strings.Contains(string(p2), `"definitions":`) {
		t.Error("definitions embedded despite OmitDefinitions")
	}
	if _, err := Parse(p2); err != nil {
		t.Fatal(err)
	}
}

func TestBuildRefusals(t *testing.T) {
	bad := exampleSnapshot()
	bad.Tools = append(bad.Tools, json.RawMessage(`{"name":"x","n":1e20}`))
	var ie *digest.InvalidDefinitionsError
	if _, err := Build(bad, Options{}); !errors.As(err, &ie) {
		t.Fatalf("want InvalidDefinitionsError, got %v", err)
	}
	big := &digest.Snapshot{}
	for i := 0; i <= MaxSubjects; i++ {
		big.Tools = append(big.Tools, json.RawMessage(`{"name":"t`+strings.Repeat("x", i%7)+string(rune('a'+i%26))+`_`+itoa(i)+`"}`))
	}
	if _, err := Build(big, Options{}); !errors.Is(err, ErrTooManySubjects) {
		t.Fatalf("want ErrTooManySubjects, got %v", err)
	}
	if _, err := Build(&digest.Snapshot{}, Options{}); err == nil {
		t.Error("an empty server must not be signable")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// mutate builds a valid payload, lets f change its JSON object, and returns
// the payload again.
func mutate(t *testing.T, f func(m map[string]any)) []byte {
	st, err := Build(exampleSnapshot(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := st.Marshal()
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, _ := json.Marshal(m)
	return out
}

func TestParseRefusals(t *testing.T) {
	subjects := func(m map[string]any) []any { return m["subject"].([]any) }
	pred := func(m map[string]any) map[string]any { return m["predicate"].(map[string]any) }
	tests := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"v0.1 statement", mutate(t, func(m map[string]any) { m["_type"] = "https://in-toto.io/Statement/v0.1" }), ErrStatementType},
		{"other statement", mutate(t, func(m map[string]any) { m["_type"] = "https://example.com/v1" }), ErrStatementType},
		{"predicate type", mutate(t, func(m map[string]any) { m["predicateType"] = "https://slsa.dev/provenance/v1" }), ErrPredicateType},
		{"duplicate subject", mutate(t, func(m map[string]any) { m["subject"] = append(subjects(m), subjects(m)[0]) }), ErrSubjects},
		{"swapped names", mutate(t, func(m map[string]any) {
			s := subjects(m)
			a, b := s[0].(map[string]any), s[1].(map[string]any)
			a["name"], b["name"] = b["name"], a["name"]
		}), ErrPredicate}, // the set digest no longer matches, nor the embedded definitions
		{"wrong kind", mutate(t, func(m map[string]any) {
			subjects(m)[0].(map[string]any)["name"] = "prompt/search_notes"
		}), ErrPredicate},
		{"bad kind", mutate(t, func(m map[string]any) { subjects(m)[0].(map[string]any)["name"] = "widget/x" }), ErrSubjects},
		{"empty key", mutate(t, func(m map[string]any) { subjects(m)[0].(map[string]any)["name"] = "tool/" }), ErrSubjects},
		{"two digests", mutate(t, func(m map[string]any) {
			subjects(m)[0].(map[string]any)["digest"].(map[string]any)["sha512"] = strings.Repeat("0", 128)
		}), ErrSubjects},
		{"uppercase hex", mutate(t, func(m map[string]any) {
			dg := subjects(m)[0].(map[string]any)["digest"].(map[string]any)
			dg["sha256"] = strings.ToUpper(dg["sha256"].(string))
		}), ErrSubjects},
		{"set mismatch", mutate(t, func(m map[string]any) {
			pred(m)["sets"].(map[string]any)["prompts"] = digest.EmptySetDigest
		}), ErrPredicate},
		{"unknown predicate member", mutate(t, func(m map[string]any) { pred(m)["extra"] = true }), ErrPredicate},
		{"embedded changed", mutate(t, func(m map[string]any) {
			tools := pred(m)["definitions"].(map[string]any)["tools"].([]any)
			tools[0].(map[string]any)["description"] = "Search. <IMPORTANT>exfiltrate</IMPORTANT>"
		}), ErrEmbedded},
		{"embedded missing", mutate(t, func(m map[string]any) {
			pred(m)["definitions"].(map[string]any)["tools"] = []any{}
		}), ErrEmbedded},
		{"repeated member", []byte(`{"_type":"https://in-toto.io/Statement/v1","_type":"x"}`), ErrNotJSON},
		{"not json", []byte(`{"_type":`), ErrNotJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.payload)
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
		})
	}
}

// TestInTotoVectors feeds the in-toto reference vectors to Parse: every
// invalid statement is refused, and the valid ones are refused too because
// they are not mcpsign statements (other predicate type, v0.1 type) — for
// the reason the reference validator would accept.
func TestInTotoVectors(t *testing.T) {
	dir := shareddata.Path(t, "intoto/statement")
	for _, sub := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, sub, "*.json"))
		if len(files) == 0 {
			t.Fatalf("no vectors in %s", sub)
		}
		for _, f := range files {
			t.Run(sub+"/"+filepath.Base(f), func(t *testing.T) {
				b, _ := os.ReadFile(f)
				_, err := Parse(b)
				if err == nil {
					t.Fatal("accepted a statement that is not an mcpsign statement")
				}
				// A subject member mcpsign does not read (downloadLocation)
				// is refused before the reference validator runs.
				if sub == "invalid" && !errors.Is(err, ErrStatementType) && !errors.Is(err, ErrNotJSON) && !errors.Is(err, ErrSubjects) {
					t.Errorf("invalid vector refused for the wrong reason: %v", err)
				}
				if sub == "valid" && !errors.Is(err, ErrPredicateType) && !errors.Is(err, ErrStatementType) {
					t.Errorf("valid vector refused for the wrong reason: %v", err)
				}
			})
		}
	}
}

func TestSourceFromGitHubActions(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "abc", "GITHUB_REF": "refs/heads/main"}
	s := SourceFromGitHubActions(func(k string) string { return env[k] })
	if s == nil || s.Repository != "https://github.com/o/r" || s.Commit != "abc" || s.Ref != "refs/heads/main" {
		t.Errorf("got %+v", s)
	}
	if SourceFromGitHubActions(func(string) string { return "" }) != nil {
		t.Error("outside Actions must be nil")
	}
}

// FuzzParse: no panic; an accepted statement marshals back to one that is
// accepted, a lenient reader (encoding/json, names matched without
// regard to case, last one wins) reads the same statement from the bytes,
// and so does in-toto's own reader (protojson, which sigstore-go and other
// in-toto tools read statements with), whose validator accepts it.
func FuzzParse(f *testing.F) {
	st, _ := Build(exampleSnapshot(), Options{})
	p, _ := st.Marshal()
	f.Add(p)
	f.Add([]byte(fullPayload(f)))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":"x","predicate":{}}`))
	for _, h := range hostileStatements(f) {
		f.Add([]byte(h.payload))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := Parse(in)
		if err != nil {
			return
		}
		if err := sameAsInToto(st, in); err != nil {
			t.Fatal(err)
		}
		var lenient Statement
		if err := json.Unmarshal(in, &lenient); err != nil {
			t.Fatalf("accepted, but encoding/json refuses it: %v", err)
		}
		if lenient.Type != st.Type || lenient.PredicateType != st.PredicateType ||
			!reflect.DeepEqual(lenient.Subject, st.Subject) || lenient.Predicate.Server != st.Predicate.Server ||
			lenient.Predicate.ProtocolVersion != st.Predicate.ProtocolVersion || lenient.Predicate.Sets != st.Predicate.Sets ||
			!reflect.DeepEqual(lenient.Predicate.Source, st.Predicate.Source) || len(lenient.Predicate.Package) != len(st.Predicate.Package) ||
			(lenient.Predicate.Definitions == nil) != (st.Predicate.Definitions == nil) {
			t.Fatalf("a lenient reader reads another statement:\n%+v\n%+v", lenient, *st)
		}
		if d := st.Predicate.Definitions; d != nil {
			for _, k := range digest.Kinds {
				if len(lenient.Predicate.Definitions.Get(k)) != len(d.Get(k)) {
					t.Fatalf("%s: a lenient reader reads %d definitions, mcpsign %d", k, len(lenient.Predicate.Definitions.Get(k)), len(d.Get(k)))
				}
			}
		}
		// Whatever is accepted is self-consistent and marshals back to
		// something accepted.
		out, err := st.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("accepted statement does not survive a round trip: %v", err)
		}
	})
}

// fullPayload is a valid statement with every object mcpsign reads.
func fullPayload(t testing.TB) string {
	st, err := Build(exampleSnapshot(), Options{
		Packages: []Package{{PURL: "pkg:npm/example@1.0.0", Digest: map[string]string{"sha512": "ab"}}},
		Source:   &Source{Repository: "https://github.com/o/r", Commit: "c", Ref: "refs/tags/v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// hostileStatements are valid statements edited so that a lenient reader
// (encoding/json: names matched without regard to case, last one wins,
// or protojson: proto field names) reads something else than mcpsign: each
// must be refused, naming the member, with the sentinel of its object.
func hostileStatements(t testing.TB) []struct {
	name, payload string
	want          error
	msg           string
} {
	full := fullPayload(t)
	edit := func(old, new string) string {
		if !strings.Contains(full, old) {
			t.Fatalf("no %q in the payload", old)
		}
		return strings.Replace(full, old, new, 1)
	}
	const garbageSets = `"sets": {"tools": "x", "prompts": "x", "resourceTemplates": "x"}, `
	return []struct {
		name, payload string
		want          error
		msg           string
	}{
		// The statement's top level.
		{"proto name predicate_type", edit(`"predicateType"`, `"predicate_type"`), ErrStatementType, `unknown member "predicate_type"`},
		{"proto name type", edit(`"_type"`, `"type"`), ErrStatementType, `unknown member "type"`},
		{"Subject beside subject", edit(`"predicateType"`, `"Subject": [], "predicateType"`), ErrStatementType, `member "Subject" is not "subject"`},
		{"Predicate after predicate", edit(`"predicateType"`, `"Predicate": {}, "predicateType"`), ErrStatementType, `member "Predicate" is not "predicate"`},
		{"unknown top member", edit(`"predicateType"`, `"extra": 1, "predicateType"`), ErrStatementType, `unknown member "extra"`},
		{"no predicate", full[:strings.Index(full, `,
  "predicate": {`)] + "}", ErrStatementType, `statement: member "predicate" is missing`},

		// Subject entries.
		{"subject Name", edit(`"name": "tool/search_notes",`, `"name": "tool/search_notes", "Name": "tool/evil",`), ErrSubjects, `subject[0]: member "Name" is not "name"`},
		{"subject uri", edit(`"name": "tool/search_notes",`, `"name": "tool/search_notes", "uri": "https://x",`), ErrSubjects, `subject[0]: unknown member "uri"`},
		{"subject download_location", edit(`"name": "tool/search_notes",`, `"name": "tool/search_notes", "download_location": "x",`), ErrSubjects, `unknown member "download_location"`},
		{"subject Digest", edit(`"name": "tool/search_notes",`, `"name": "tool/search_notes", "Digest": {},`), ErrSubjects, `member "Digest" is not "digest"`},

		// The predicate.
		{"garbage sets then Sets", edit(`"sets": {`, garbageSets+`"Sets": {`), ErrPredicate, `predicate: member "Sets" is not "sets"`},
		{"Sets then garbage sets", edit(`"sets": {`, `"Sets": {"tools": "x", "prompts": "x", "resourceTemplates": "x"}, "sets": {`), ErrPredicate, `member "Sets" is not "sets"`},
		{"empty definitions then Definitions", edit(`"definitions": {`, `"definitions": {"tools": [], "prompts": [], "resourceTemplates": []}, "Definitions": {`), ErrPredicate, `member "Definitions" is not "definitions"`},
		{"long s definitionſ", edit(`"definitions": {`, `"definitions": {"tools": [], "prompts": [], "resourceTemplates": []}, "definition\u017f": {`), ErrPredicate, "member \"definition\u017f\" (spelled with U+017F) is not \"definitions\""},
		{"Server", edit(`"server": {`, `"Server": {"name": "evil", "version": ""}, "server": {`), ErrPredicate, `member "Server" is not "server"`},
		{"protocolversion", edit(`"protocolVersion"`, `"protocolversion": "x", "protocolVersion"`), ErrPredicate, `member "protocolversion" is not "protocolVersion"`},
		{"unknown predicate member", edit(`"sets": {`, `"extra": true, "sets": {`), ErrPredicate, `predicate: unknown member "extra"`},
		{"server Name", edit(`"name": "example",`, `"name": "example", "Name": "evil",`), ErrPredicate, `predicate.server: member "Name" is not "name"`},
		{"server no version", edit(`"name": "example",
      "version": "1.0.0"`, `"name": "example"`), ErrPredicate, `predicate.server: member "version" is missing`},
		{"sets Tools", edit(`"tools": "sha256:`, `"Tools": "x", "tools": "sha256:`), ErrPredicate, `predicate.sets: member "Tools" is not "tools"`},
		{"package PURL", edit(`"purl": `, `"PURL": "pkg:npm/evil@1", "purl": `), ErrPredicate, `predicate.package[0]: member "PURL" is not "purl"`},
		{"package unknown", edit(`"purl": `, `"url": "x", "purl": `), ErrPredicate, `predicate.package[0]: unknown member "url"`},
		{"source Ref", edit(`"ref": `, `"Ref": "refs/heads/evil", "ref": `), ErrPredicate, `predicate.source: member "Ref" is not "ref"`},
		{"source unknown", edit(`"ref": `, `"branch": "x", "ref": `), ErrPredicate, `predicate.source: unknown member "branch"`},
		{"definitions Tools", edit(`"definitions": {`, `"definitions": {"Tools": [],`), ErrPredicate, `predicate.definitions: member "Tools" is not "tools"`},
		{"definitions unknown", edit(`"definitions": {`, `"definitions": {"resources": [],`), ErrPredicate, `predicate.definitions: unknown member "resources"`},
		{"null source", regexp.MustCompile(`"source": \{[^}]*\}`).ReplaceAllString(full, `"source": null`), ErrPredicate, `predicate.source: not a JSON object`},
		{"null definitions", full[:strings.Index(full, `"definitions": {`)] + `"definitions": null}}`, ErrPredicate, `predicate.definitions: not a JSON object`},
		{"definitions not arrays", edit(`"prompts": [`, `"prompts": {}, "x": [`), ErrPredicate, `predicate.definitions: unknown member "x"`},
		{"non-string protocol version", edit(`"protocolVersion": "2025-11-25"`, `"protocolVersion": 1`), ErrPredicate, `predicate.protocolVersion: not a JSON string`},
	}
}

func TestParseStrictMembers(t *testing.T) {
	if _, err := Parse([]byte(fullPayload(t))); err != nil {
		t.Fatalf("the unedited payload: %v", err)
	}
	for _, tt := range hostileStatements(t) {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.payload))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("want %v with %q, got %v", tt.want, tt.msg, err)
			}
		})
	}
}

func TestCheckSource(t *testing.T) {
	cert := &Source{Repository: "https://github.com/a/b", Commit: "c1", Ref: "refs/tags/v1"}
	for _, tc := range []struct {
		name    string
		claimed *Source
		field   string // "" means agree
	}{
		{"equal", &Source{Repository: "https://github.com/a/b", Commit: "c1", Ref: "refs/tags/v1"}, ""},
		{"subset", &Source{Commit: "c1"}, ""},
		{"nil", nil, ""},
		{"commit", &Source{Repository: "https://github.com/a/b", Commit: "c2"}, "source.commit"},
		{"repository first", &Source{Repository: "https://github.com/a/c", Commit: "c2"}, "source.repository"},
		{"ref", &Source{Ref: "refs/heads/main"}, "source.ref"},
	} {
		err := CheckSource(tc.claimed, cert)
		var me *SourceMismatchError
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.As(err, &me) || !errors.Is(err, ErrSourceMismatch) || me.Field.Claim != tc.field {
			t.Errorf("%s: %v; want a mismatch of %s", tc.name, err, tc.field)
		}
	}
	if err := CheckSource(&Source{Commit: "x"}, &Source{}); err != nil {
		t.Errorf("a field the certificate lacks is compared: %v", err)
	}
}

// sameAsInToto checks that in-toto's reading of payload (protojson) is
// st, mcpsign's: the same type, predicate type, and subjects with the same
// names and digests and nothing else; and that in-toto's validator accepts
// it. Parse accepts only spellings that both read alike: this holds by
// construction, and is checked here so that it stays so.
func sameAsInToto(st *Statement, payload []byte) error {
	var ref intoto.Statement
	if err := protojson.Unmarshal(payload, &ref); err != nil {
		return fmt.Errorf("accepted, but in-toto's reader refuses it: %w", err)
	}
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("accepted, but in-toto's validator refuses it: %w", err)
	}
	if ref.GetType() != st.Type || ref.GetPredicateType() != st.PredicateType {
		return fmt.Errorf("in-toto reads type %q and predicate type %q, mcpsign %q and %q", ref.GetType(), ref.GetPredicateType(), st.Type, st.PredicateType)
	}
	subs := ref.GetSubject()
	if len(subs) != len(st.Subject) {
		return fmt.Errorf("in-toto reads %d subjects, mcpsign %d", len(subs), len(st.Subject))
	}
	for i, rs := range subs {
		s := st.Subject[i]
		if rs.GetName() != s.Name || !maps.Equal(rs.GetDigest(), s.Digest) || rs.GetUri() != "" || len(rs.GetContent()) != 0 ||
			rs.GetDownloadLocation() != "" || rs.GetMediaType() != "" || rs.GetAnnotations() != nil {
			return fmt.Errorf("subject #%d reads differently to in-toto", i)
		}
	}
	return nil
}

// TestSameAsInToto: what Parse accepts, in-toto's reader reads alike; a
// hostile spelling in-toto's reader would read otherwise Parse refuses.
func TestSameAsInToto(t *testing.T) {
	t.Parallel()
	for _, p := range []string{fullPayload(t), func() string {
		st, _ := Build(exampleSnapshot(), Options{})
		p, _ := st.Marshal()
		return string(p)
	}()} {
		st, err := Parse([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := sameAsInToto(st, []byte(p)); err != nil {
			t.Fatal(err)
		}
		// The check can fail: a subject renamed behind mcpsign's back.
		other := *st
		other.Subject = append([]Subject{{Name: "tool/other", Digest: st.Subject[0].Digest}}, st.Subject[1:]...)
		if err := sameAsInToto(&other, []byte(p)); err == nil {
			t.Fatal("a subject read differently passes")
		}
	}
	for _, h := range hostileStatements(t) {
		if _, err := Parse([]byte(h.payload)); err == nil {
			t.Errorf("%s: accepted", h.name)
		}
	}
}

// TestBuildPayload: the payload is the statement's Marshal, and a
// snapshot Build refuses gives no statement and no payload.
func TestBuildPayload(t *testing.T) {
	bad := exampleSnapshot()
	bad.Tools = append(bad.Tools, json.RawMessage(`{"name":"x","n":1e20}`))
	for name, tc := range map[string]struct {
		snap    *digest.Snapshot
		wantErr bool
	}{
		"a snapshot":                   {exampleSnapshot(), false},
		"an invalid definition":        {bad, true},
		"a server with no definitions": {&digest.Snapshot{}, true},
	} {
		t.Run(name, func(t *testing.T) {
			st, payload, err := BuildPayload(tc.snap, Options{})
			if tc.wantErr {
				if err == nil || st != nil || payload != nil {
					t.Errorf("BuildPayload: %v, %v, %q", st, err, payload)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := st.Marshal()
			if string(payload) != string(want) {
				t.Errorf("payload %s, want %s", payload, want)
			}
			if _, err := Parse(payload); err != nil {
				t.Error(err)
			}
		})
	}
}
