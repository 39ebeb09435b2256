package policy

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// TestEveryMemberRead: every name a table allows is read, none accepted and
// ignored (for a security policy, failing open): a value no member takes
// (an array of an array) under each name of each table is refused, at that
// member's JSON Pointer.
func TestEveryMemberRead(t *testing.T) {
	t.Parallel()
	const head = `{"kind":"mcpsign.policy","policyVersion":1,`
	type place struct {
		names []string
		doc   func(name string) string // the policy with [[]] under name
		at    string                   // the pointer of the object
	}
	places := []place{
		{topTable().names(), func(n string) string {
			return strings.Replace(`{"kind":"mcpsign.policy","policyVersion":1,"NAME":[[]]}`, `"NAME"`, strconv.Quote(n), 1)
		}, ""},
		{trustTable().names(), func(n string) string { return head + `"trust":{` + strconv.Quote(n) + `:[[]]}}` }, "/trust"},
		{tufTable().names(), func(n string) string { return head + `"trust":{"tuf":{` + strconv.Quote(n) + `:[[]]}}}` }, "/trust/tuf"},
		{serverTable().names(), func(n string) string { return head + `"servers":{"a":{` + strconv.Quote(n) + `:[[]]}}}` }, "/servers/a"},
		{revokedTable().names(), func(n string) string { return head + `"revoked":{` + strconv.Quote(n) + `:[[]]}}` }, "/revoked"},
		{repositorySignerTable().names(), func(n string) string {
			return head + `"servers":{"io.github.a/*":{"repositorySigner":{` + strconv.Quote(n) + `:[[]]}}}}`
		}, "/servers/io.github.a~1*/repositorySigner"},
		{serverRequestsTable().names(), func(n string) string {
			return head + `"servers":{"a":{"serverRequests":{` + strconv.Quote(n) + `:[[]]}}}}`
		}, "/servers/a/serverRequests"},
	}
	for _, m := range identityMethods {
		m := m
		var names []string
		for _, n := range identityTables()[m].names() {
			if n != "method" { // read first, to pick the table
				names = append(names, n)
			}
		}
		places = append(places, place{names, func(n string) string {
			return head + `"servers":{"a":{"identities":[{"method":"` + string(m) + `",` + strconv.Quote(n) + `:[[]]}]}}}`
		}, "/servers/a/identities/0"})
	}
	for _, pl := range places {
		for _, n := range pl.names {
			doc := pl.doc(n)
			if n == "kind" || n == "policyVersion" {
				doc = strings.Replace(head+`"x":0}`, `"`+n+`":`+map[string]string{"kind": `"mcpsign.policy"`, "policyVersion": "1"}[n], `"`+n+`":[[]]`, 1)
				doc = strings.Replace(doc, `,"x":0`, ``, 1)
			}
			_, err := Parse([]byte(doc), "/p.json")
			want := pl.at + "/" + digest.PointerToken(n)
			// At the member, or an element of it.
			if err == nil || !strings.Contains(err.Error(), want+":") && !strings.Contains(err.Error(), want+"/") {
				t.Errorf("%s: %v, want a refusal at %s", doc, err, want)
			}
		}
	}
}

// TestErrorOrder: of several bad members, the one reported is the first
// in its table, whatever their order in the file and however Go orders a
// map: the same file gives the same error every time.
func TestErrorOrder(t *testing.T) {
	t.Parallel()
	const head = `{"kind":"mcpsign.policy","policyVersion":1,`
	for _, c := range []struct {
		members []string // each bad
		wrap    func(obj string) string
		want    string
	}{
		// An identity's strings, each not in canonical form.
		{[]string{`"workflowName":" w"`, `"sourceRef":" r"`, `"subject":" s"`, `"workflowTrigger":" t"`, `"issuer":"https://i"`, `"method":"sigstore"`},
			func(o string) string { return head + `"servers":{"a":{"identities":[` + o + `]}}}` }, "/servers/a/identities/0/subject:"},
		{[]string{`"dns":" d"`, `"email":" e"`, `"uri":" u"`, `"san":" s"`, `"method":"certificate"`},
			func(o string) string { return head + `"servers":{"a":{"identities":[` + o + `]}}}` }, "/servers/a/identities/0/san:"},
		// A server's members.
		{[]string{`"resources":"all"`, `"mode":"off"`, `"threshold":0`, `"bundle":"http://x"`, `"audit":""`},
			func(o string) string { return head + `"servers":{"a":` + o + `}}` }, "/servers/a/threshold:"},
		{[]string{`"serverRequests":{"logging":"x","sampling":"y"}`, `"clientCapabilities":[]`},
			func(o string) string { return head + `"servers":{"a":` + o + `}}` }, "/servers/a/clientCapabilities:"},
		{[]string{`"triggers":[]`, `"refs":["x"]`, `"owner":"-"`, `"workflow":"x"`},
			func(o string) string { return head + `"servers":{"io.github.a/*":{"repositorySigner":` + o + `}}}` }, "/repositorySigner/workflow:"},
		// The file's top level and trust.
		{[]string{`"revoked":{"bundles":["x"]}`, `"trust":{"caIntermediates":"i"}`, `"defaults":{"lock":"l"}`},
			func(o string) string { return strings.TrimSuffix(head, ",") + "," + strings.TrimPrefix(o, "{") }, "/trust/caIntermediates:"},
	} {
		var first string
		for i := range 64 {
			ms := append([]string(nil), c.members...)
			if i > 0 {
				rand.Shuffle(len(ms), func(a, b int) { ms[a], ms[b] = ms[b], ms[a] })
			}
			doc := c.wrap("{" + strings.Join(ms, ",") + "}")
			_, err := Parse([]byte(doc), "/p.json")
			if err == nil {
				t.Fatalf("accepted: %s", doc)
			}
			if i == 0 {
				first = err.Error()
				if !strings.Contains(first, c.want) {
					t.Errorf("%s: %v, want the error at %s", doc, err, c.want)
				}
			} else if err.Error() != first {
				t.Errorf("%s: %v, the same members in another order gave %v", doc, err, first)
				break
			}
		}
	}
}
