package registry

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzServeRequest: any path and query a client sends is answered with a
// status the API documents and a JSON body, never a panic; a 200 list
// never holds more than the limit.
func FuzzServeRequest(f *testing.F) {
	for _, s := range []string{
		"/v0.1/servers", "/v0.1/servers?limit=1&cursor=aW8uZ2l0aHViLmFjbWUvbm90ZXMKMS4wLjA", "/v0/servers?search=NOTES&version=latest",
		"/v0.1/servers/io.github.acme%2Fnotes/versions", "/v0.1/servers/io.github.acme%2Fnotes/versions/latest",
		"/v0.1/servers?updated_since=2026-11-15T00:00:00Z", "/v0.1/servers/%zz/versions", "/v0.1/servers?cursor=%0A",
		"/v0.1/servers/a/versions/1.0.0%2Bbuild.7", "/v0.1/servers?limit=100&include_deleted=true",
	} {
		f.Add(s)
	}
	set := loadSet(f, servedDump(f, serveSpecs))
	h := NewServer(set).Routes()
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || target[0] != '/' { // "*": the mux's bare 400

			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, req.RequestURI = u, target
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 404:
		case 301, 307, 308: // the mux cleaning a path
			return
		default:
			t.Fatalf("%s: %d", target, rec.Code)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: not JSON: %q", target, rec.Body.Bytes())
		}
		var l struct{ Servers []json.RawMessage }
		if rec.Code == 200 && json.Unmarshal(rec.Body.Bytes(), &l) == nil && len(l.Servers) > MaxServeLimit {
			t.Fatalf("%s: %d servers", target, len(l.Servers))
		}
	})
}
