package proxy

import (
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/mcpwire"
)

// Static resources under the proxy's ResourceMode (docs/PROXY.md, "Static
// resources").

// methodReadResource reads one resource by its uri.
const methodReadResource = "resources/read"

// kindsWithResources are the signed kinds and static resources: what the
// proxy checks under ResourcesPin.
var kindsWithResources = [...]digest.Kind{digest.KindTool, digest.KindPrompt, digest.KindResourceTemplate, digest.KindResource}

// checkedKinds are the kinds whose list results the proxy checks.
func (r *relay) checkedKinds() []digest.Kind {
	if r.o.Resources == ResourcesPin {
		return kindsWithResources[:]
	}
	return digest.Kinds[:]
}

// lists are the definition lists of a result the proxy checks: a
// "resources" array only under ResourcesPin (under pass and hide a result
// that has one is relayed as before).
func (r *relay) lists(env *mcpwire.Message) mcpwire.Lists {
	if r.o.Resources == ResourcesPin {
		return env.Lists
	}
	return env.Lists &^ mcpwire.HasResources
}

// emptyResources is the result the proxy answers resources/list with under
// ResourcesHide.
const emptyResources = `{"resources":[]}`

// readURI returns the uri of resources/read params, read strictly as
// usesDefinition reads a name: ok is false when the params are not an
// object with one string uri.
func readURI(params []byte) (string, bool) {
	if len(params) == 0 || params[0] != '{' {
		return "", false
	}
	m, err := digest.ReadMembers(params, "uri")
	if err != nil {
		return "", false
	}
	v, present := m["uri"]
	if !present || len(v) == 0 || v[0] != '"' {
		return "", false
	}
	uri, err := digest.DecodeString(v)
	return uri, err == nil
}

// readable reports whether a resources/read of uri may reach the server:
// it is an approved resource (there are none under hide: nothing is
// listed), or an approved resource template's uriTemplate matches it whole
// (RFC 6570, as go-sdk's server matches them) and it has no dot-segment
// (hasDotSegment). A template that does not parse matches nothing.
func (a *approvedSet) readable(uri string) bool {
	if a.hasKey(digest.KindResource, uri) {
		return true
	}
	if hasDotSegment(uri) {
		return false
	}
	a.templatesOnce.Do(func() {
		for key := range a.approvedKeys[digest.KindResourceTemplate] {
			if t := compileTemplate(key); t != nil {
				a.templates = append(a.templates, t)
			}
		}
	})
	for _, t := range a.templates {
		if t.Regexp().MatchString(uri) {
			return true
		}
	}
	return false
}

// compileTemplate parses a uriTemplate and its matching expression; nil
// when either fails (a template that cannot be read matches nothing).
func compileTemplate(s string) (t *uritemplate.Template) {
	defer func() {
		if recover() != nil { // Regexp uses regexp.MustCompile
			t = nil
		}
	}()
	t, err := uritemplate.New(s)
	if err != nil {
		return nil
	}
	t.Regexp()
	return t
}

// hasDotSegment reports whether uri has a segment "." or ".." in any
// spelling: segments end at "/", "\", "?" and "#", and "%2e", "%2f" and
// "%5c" count as the characters they encode. A template matches such a URI
// by its text ("{+path}" takes "../", "{id}" takes "%2e%2e"), but the server
// resolves it elsewhere: a WHATWG URL parser (the TypeScript SDK's server
// reads every uri with new URL, then looks its static resources up first)
// removes the dot-segments, and a handler that decodes a variable and joins
// it to a path walks up. Such a read would reach what no approved template
// offers (a hidden static resource, a file outside the template's prefix),
// so it is refused (docs/PROXY.md, "Static resources").
func hasDotSegment(uri string) bool {
	dots := 0 // the dots of the segment so far; -1: not dots only
	for i := 0; i <= len(uri); i++ {
		c := byte('/')
		if i < len(uri) {
			c = uri[i]
		}
		if c == '%' && i+2 < len(uri) {
			switch strings.ToLower(uri[i+1 : i+3]) {
			case "2e":
				c = '.'
				i += 2
			case "2f":
				c = '/'
				i += 2
			case "5c":
				c = '\\'
				i += 2
			}
		}
		switch c {
		case '/', '\\', '?', '#':
			if dots == 1 || dots == 2 {
				return true
			}
			dots = 0
		case '.':
			if dots >= 0 {
				dots++
			}
		default:
			dots = -1
		}
	}
	return false
}
