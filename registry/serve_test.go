package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/mcpsign/mcpsign/policy"
)

// The official registry's OpenAPI document (testdata/openapi/README.md
// says where it came from): every response the tests get is validated
// against it with kin-openapi, a validator no one here wrote.
var (
	oaOnce   sync.Once
	oaRouter routers.Router
	oaErr    error
)

func openapiRouter(t testing.TB) routers.Router {
	t.Helper()
	oaOnce.Do(func() {
		l := openapi3.NewLoader()
		var doc *openapi3.T
		if doc, oaErr = l.LoadFromFile(filepath.Join("testdata", "openapi", "openapi.yaml")); oaErr != nil {
			return
		}
		// The document's own examples do not all validate (a publish
		// example without transport): its schemas are what is checked.
		if oaErr = doc.Validate(l.Context, openapi3.DisableExamplesValidation(), openapi3.AllowExtraSiblingFields("$id")); oaErr != nil {
			return
		}
		oaRouter, oaErr = gorillamux.NewRouter(doc)
	})
	if oaErr != nil {
		t.Fatal(oaErr)
	}
	return oaRouter
}

// checkOpenAPI validates one exchange against the official document: the
// request, and the response's status, content type and body (a status the
// document does not give for the route, 304 aside, fails). /v0 is served
// as /v0.1, which the document describes.
func checkOpenAPI(t testing.TB, req *http.Request, status int, h http.Header, body []byte) {
	t.Helper()
	r := req.Clone(context.Background())
	u := *r.URL
	u.Scheme, u.Host = "http", "127.0.0.1"
	if rest, ok := strings.CutPrefix(u.Path, "/v0/"); ok {
		u.Path, u.RawPath = "/v0.1/"+rest, ""
		if u.RawPath != "" || strings.Contains(r.URL.RawPath, "%") {
			u.RawPath = "/v0.1/" + strings.TrimPrefix(r.URL.RawPath, "/v0/")
		}
	}
	r.URL = &u
	route, params, err := openapiRouter(t).FindRoute(r)
	if err != nil && status == http.StatusNotFound {
		return // a route the document does not have: 404, as it should
	}
	if err != nil {
		t.Errorf("%s %s: no route in the official document: %v", req.Method, req.URL, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if status < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: the request does not validate: %v", req.Method, req.URL, err)
		}
	}
	if status == http.StatusNotModified || req.Method == http.MethodHead {
		return
	}
	if route.Operation.Responses.Status(status) == nil && status < 400 {
		t.Errorf("%s %s: status %d is not in the document", req.Method, req.URL, status)
		return
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: false}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: the response does not validate against the official document: %v", req.Method, req.URL, err)
	}
}

// get asks h and validates the exchange (checkOpenAPI).
func get(t testing.TB, h http.Handler, target string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	checkOpenAPI(t, req, rec.Code, rec.Header(), body)
	return rec.Code, rec.Header(), body
}

type apiList struct {
	Servers []struct {
		Server json.RawMessage `json:"server"`
		Meta   struct {
			Official struct {
				Status   string `json:"status"`
				IsLatest bool   `json:"isLatest"`
			} `json:"io.modelcontextprotocol.registry/official"`
			Verified *VerifiedBlock `json:"dev.mcpsign/verified"`
		} `json:"_meta"`
	} `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
}

func (l apiList) ids(t testing.TB) []string {
	var out []string
	for _, s := range l.Servers {
		var sv struct{ Name, Version string }
		if err := json.Unmarshal(s.Server, &sv); err != nil {
			t.Fatal(err)
		}
		if s.Meta.Verified == nil || len(s.Meta.Verified.Signers) == 0 {
			t.Errorf("%s %s served without its dev.mcpsign/verified block", sv.Name, sv.Version)
		}
		out = append(out, sv.Name+"@"+sv.Version)
	}
	return out
}

func decodeList(t testing.TB, body []byte) apiList {
	t.Helper()
	var l apiList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if l.Metadata.Count != len(l.Servers) {
		t.Errorf("count %d, %d servers", l.Metadata.Count, len(l.Servers))
	}
	return l
}

func loadSet(t testing.TB, dump []byte) *ServedSet {
	t.Helper()
	set, err := LoadServed(context.Background(), bytes.NewReader(dump), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var serveSpecs = []servedSpec{
	{name: "io.github.acme/notes", version: "1.0.0", verifiedAt: "2026-11-01T00:00:00Z"},
	{name: "io.github.acme/notes", version: "1.10.0", status: "deprecated", verifiedAt: "2026-12-01T00:00:00Z"},
	{name: "io.github.acme/notes", version: "1.9.0", verifiedAt: "2026-12-02T00:00:00Z"},
	{name: "io.github.acme/Search", version: "2.0.0+build.7", verifiedAt: "2026-12-03T00:00:00Z"},
	{name: "com.example/tool", version: "0.1.0", verifiedAt: "2026-10-01T00:00:00Z"},
}

// TestServeRoutes: each read route, its parameters and its errors, every
// exchange validated against the official registry's OpenAPI document.
func TestServeRoutes(t *testing.T) {
	t.Parallel()
	// Through the route patterns the service labels metrics with: the
	// answers are ServeHTTP's.
	h := NewServer(loadSet(t, servedDump(t, serveSpecs))).Routes()
	for _, c := range []struct {
		target string
		status int
		want   string // the entries, name@version, in order
	}{
		{"/v0.1/servers", 200, "com.example/tool@0.1.0 io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.0.0 io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0"},
		{"/v0/servers", 200, "com.example/tool@0.1.0 io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.0.0 io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0"},
		{"/v0.1/servers?version=latest", 200, "com.example/tool@0.1.0 io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.10.0"},
		{"/v0.1/servers?version=1.9.0", 200, "io.github.acme/notes@1.9.0"},
		{"/v0.1/servers?search=SEARCH", 200, "io.github.acme/Search@2.0.0+build.7"},
		{"/v0.1/servers?search=acme&version=latest&limit=1", 200, "io.github.acme/Search@2.0.0+build.7"},
		{"/v0.1/servers?updated_since=2026-12-01T00:00:00Z", 200, "io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.9.0"},
		{"/v0.1/servers?updated_since=2026-12-01T00:00:00Z&include_deleted=true", 200, "io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.9.0"},
		{"/v0.1/servers/io.github.acme%2Fnotes/versions", 200, "io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0 io.github.acme/notes@1.0.0"},
		{"/v0/servers/io.github.acme%2Fnotes/versions", 200, "io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0 io.github.acme/notes@1.0.0"},
		{"/v0.1/servers/io.github.acme%2Fnotes/versions/latest", 200, "io.github.acme/notes@1.10.0"},
		{"/v0.1/servers/io.github.acme%2Fnotes/versions/1.0.0", 200, "io.github.acme/notes@1.0.0"},
		{"/v0.1/servers/io.github.acme%2FSearch/versions/2.0.0%2Bbuild.7", 200, "io.github.acme/Search@2.0.0+build.7"},
		{"/v0.1/servers/io.github.acme%2Fnotes/versions/9.9.9", 404, ""},
		{"/v0.1/servers/io.github.acme%2Fnone/versions", 404, ""},
		{"/v0.1/servers/io.github.acme%2Fnone/versions/latest", 404, ""},
		{"/v0.1/servers/io.github.acme/notes/versions", 404, ""},
		{"/v0.1/servers/io.github.acme%2Fnotes", 404, ""},
		{"/v0.1/servers/io.github.acme%2Fnotes/versions/1.0.0/x", 404, ""},
		{"/v0.1/serversx", 404, ""},
		{"/v0.2/servers", 404, ""},
		{"/", 404, ""},
		{"/v0.1/servers?limit=0", 400, ""},
		{"/v0.1/servers?limit=101", 400, ""},
		{"/v0.1/servers?limit=ten", 400, ""},
		{"/v0.1/servers?cursor=%21%21", 400, ""},
		{"/v0.1/servers?cursor=bm9uZXdsaW5l", 400, ""}, // base64url of "nonewline"
		{"/v0.1/servers?cursor=" + strings.Repeat("A", MaxServeCursor+4), 400, ""},
		{"/v0.1/servers?updated_since=yesterday", 400, ""},
		{"/v0.1/servers?include_deleted=maybe", 400, ""},
		{"/v0.1/servers?search=" + strings.Repeat("a", MaxServeSearch+1), 400, ""},
		{"/v0.1/servers?x=" + strings.Repeat("a", MaxServeQuery), 400, ""},
		{"/v0.1/servers?search=" + strings.Repeat("a", MaxServeSearch), 200, ""},
		{"/v0.1/servers?version=" + strings.Repeat("1", MaxServeSearch), 200, ""},
		{"/v0.1/servers?version=" + strings.Repeat("1", MaxServeSearch+1), 400, ""},
		{"/v0.1/servers?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("a/"+strings.Repeat("a", MaxServeCursor*3/4-4)+"\n1")), 200, // MaxServeCursor bytes
			"com.example/tool@0.1.0 io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.0.0 io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0"},
		{"/v0.1/servers?x=" + strings.Repeat("a", MaxServeQuery-2), 200, "com.example/tool@0.1.0 io.github.acme/Search@2.0.0+build.7 io.github.acme/notes@1.0.0 io.github.acme/notes@1.10.0 io.github.acme/notes@1.9.0"},
		{"/v0.1/servers/io.github.acme%2Fnotes/other", 404, ""},
		{"/v0.1/servers/io.github.acme%2Fnotes/other/1.0.0", 404, ""},
		{"/v0.1/servers?search=%zz", 400, ""},
	} {
		t.Run(c.target[:min(len(c.target), 80)], func(t *testing.T) {
			code, hdr, body := get(t, h, c.target)
			if code != c.status {
				t.Fatalf("status %d, want %d: %s", code, c.status, body)
			}
			if code != 200 {
				var p struct {
					Title, Detail, Error string
					Status               int
				}
				if hdr.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p) != nil || p.Status != code || p.Detail == "" || p.Error != p.Detail {
					t.Errorf("not the registry's error shape: %s %s", hdr.Get("Content-Type"), body)
				}
				return
			}
			if hdr.Get("ETag") == "" || hdr.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", hdr)
			}
			var got []string
			if strings.Contains(c.target, "/versions/") {
				got = decodeList(t, []byte(`{"servers":[`+string(body)+`],"metadata":{"count":1}}`)).ids(t)
			} else {
				got = decodeList(t, body).ids(t)
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("got  %s\nwant %s", strings.Join(got, " "), c.want)
			}
		})
	}
}

// TestServeLatestAndStatus: isLatest and the status in the official
// block, and the verified block served beside it.
func TestServeLatestAndStatus(t *testing.T) {
	t.Parallel()
	h := NewServer(loadSet(t, servedDump(t, serveSpecs)))
	_, _, body := get(t, h, "/v0.1/servers/io.github.acme%2Fnotes/versions")
	l := decodeList(t, body)
	var latest []bool
	for _, s := range l.Servers {
		latest = append(latest, s.Meta.Official.IsLatest)
	}
	if len(latest) != 3 || !latest[0] || latest[1] || latest[2] || l.Servers[0].Meta.Official.Status != "deprecated" || l.Servers[1].Meta.Official.Status != "active" {
		t.Errorf("latest %v, statuses %+v", latest, l.Servers)
	}
	if srv := string(l.Servers[0].Server); strings.Contains(srv, VerifiedMember) || !strings.Contains(srv, AttestationMember) {
		t.Errorf("the server.json served: %s", srv)
	}
	if v := l.Servers[0].Meta.Verified; v == nil || v.Policy != "io.github.acme/*" || v.Signers[0].Issuer != "https://token.actions.githubusercontent.com" {
		t.Errorf("verified block %+v", v)
	}
}

// TestServePaging: walking the cursor gives every entry once, in order,
// for every page size; a cursor outlives a reload that dropped its entry.
func TestServePaging(t *testing.T) {
	t.Parallel()
	specs := manySpecs(110)
	h := NewServer(loadSet(t, servedDump(t, specs)))
	for _, limit := range []string{"3", "7", "100", ""} {
		seen := map[string]bool{}
		var order []string
		cursor := ""
		for pages := 0; ; pages++ {
			q := url.Values{}
			if limit != "" {
				q.Set("limit", limit)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if pages > 300 {
				t.Fatal("the cursor does not end")
			}
			_, _, body := get(t, h, "/v0.1/servers?"+q.Encode())
			l := decodeList(t, body)
			for _, id := range l.ids(t) {
				if seen[id] {
					t.Fatalf("limit %s: %s twice", limit, id)
				}
				seen[id] = true
				order = append(order, id)
			}
			if cursor = l.Metadata.NextCursor; cursor == "" {
				break
			}
			if strings.ContainsAny(cursor, "+/=%&") {
				t.Fatalf("cursor %q is not URL-safe", cursor)
			}
		}
		if len(order) != len(specs) {
			t.Errorf("limit %s: %d entries, want %d", limit, len(order), len(specs))
		}
	}
	// A cursor at an entry a reload removed still continues after it.
	_, _, body := get(t, h, "/v0.1/servers?limit=2")
	cur := decodeList(t, body).Metadata.NextCursor
	h.Swap(loadSet(t, servedDump(t, specs[2:])))
	_, _, body = get(t, h, "/v0.1/servers?limit=1&cursor="+cur)
	if got := decodeList(t, body).ids(t); len(got) != 1 || got[0] != specs[2].name+"@"+specs[2].version {
		t.Errorf("after the reload: %v", got)
	}
}

// TestServeETag: a strong ETag over the bytes; If-None-Match answers 304
// without a body; another set gives another tag; HEAD has no body.
func TestServeETag(t *testing.T) {
	t.Parallel()
	h := NewServer(loadSet(t, servedDump(t, serveSpecs)))
	for _, target := range []string{"/v0.1/servers?limit=2", "/v0.1/servers/io.github.acme%2Fnotes/versions", "/v0.1/servers/io.github.acme%2Fnotes/versions/latest"} {
		code, hdr, body := get(t, h, target)
		tag := hdr.Get("ETag")
		if code != 200 || !strings.HasPrefix(tag, `"`) || strings.HasPrefix(tag, "W/") {
			t.Fatalf("%s: %d %q", target, code, tag)
		}
		_, hdr2, body2 := get(t, h, target)
		if hdr2.Get("ETag") != tag || !bytes.Equal(body, body2) {
			t.Errorf("%s: not stable", target)
		}
		for _, inm := range []string{tag, `"x", ` + tag, "*", "W/" + tag} {
			if code, _, body := get(t, h, target, "If-None-Match", inm); code != http.StatusNotModified || len(body) != 0 {
				t.Errorf("%s If-None-Match %s: %d %q", target, inm, code, body)
			}
		}
		if code, _, _ := get(t, h, target, "If-None-Match", `"other"`); code != 200 {
			t.Errorf("%s: another tag: %d", target, code)
		}
		req := httptest.NewRequest(http.MethodHead, target, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != tag {
			t.Errorf("HEAD %s: %d %d", target, rec.Code, rec.Body.Len())
		}
	}
	_, hdr, _ := get(t, h, "/v0.1/servers")
	h.Swap(loadSet(t, servedDump(t, serveSpecs[:2])))
	if _, hdr2, _ := get(t, h, "/v0.1/servers"); hdr2.Get("ETag") == hdr.Get("ETag") {
		t.Error("another set, the same ETag")
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/v0.1/servers", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, rec.Code)
		}
	}
}

// TestLoadServedRefuses: a dump that does not read, or holds one entry
// mcpsign did not verify, is refused whole with a *ServeLoadError
// wrapping ErrNotServable.
func TestLoadServedRefuses(t *testing.T) {
	t.Parallel()
	good := string(servedDump(t, serveSpecs[:1]))
	entry := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(good), "["), "]"))
	block := func(old, new string) string {
		if !strings.Contains(entry, old) {
			t.Fatalf("%q not in %s", old, entry)
		}
		return "[" + entry + ",\n" + strings.Replace(strings.Replace(entry, `"1.0.0"`, `"2.0.0"`, 2), old, new, 1) + "]"
	}
	deprecated := string(servedDump(t, serveSpecs[1:2]))
	i := strings.LastIndex(deprecated, `"status":"deprecated"`)
	otherStatus := deprecated[:i] + `"status":"active"` + deprecated[i+len(`"status":"deprecated"`):]
	for _, c := range []struct {
		name, dump, want string
	}{
		{"not JSON", `[{"name":`, "line"},
		{"the block's status not the entry's", otherStatus, `status "active", but the entry's is "deprecated"`},
		{"a bare entry without the block", "[" + realServerJSON("a/b", "1", "") + "]", "no /_meta/dev.mcpsign~1verified"},
		{"a repeated member", block(`"policy"`, `"policy":"x","policy"`), "repeated"},
		{"an unknown member in the block", block(`"policy"`, `"trusted":true,"policy"`), "unknown field"},
		{"no signers", block(`"signers":[`, `"signers":[],"x":[`), "unknown field"},
		{"empty signers", strings.Replace(good, `"signers":[{`, `"signers":[],"y":[{`, 1), "unknown field"},
		{"a bundle the entry does not list", block(`"bundles":["sha256:1111`, `"bundles":["sha256:2222`), "not a bundle the entry lists"},
		{"a bad time", block(`"verifiedAt":"`, `"verifiedAt":"yesterday`), "verifiedAt"},
		{"status deleted", block(`"policy"`, `"status":"deleted","policy"`), "not one that is served"},
		{"/version not bound", block(`"/version",`, ``), "/version"},
		{"a member no statement binds", block(`"repository"`, `"remotes":[{"type":"sse","url":"https://e.example"}],"repository"`), "remotes"},
		{"twice", "[" + entry + "," + entry + "]", "the same name and version"},
		{"twice in another case", "[" + entry + "," + strings.Replace(entry, "acme/notes", "ACME/notes", 1) + "]", "the same name and version"},
		{"invalid UTF-8", "[" + strings.Replace(entry, "Notes server", "Notes \xff", 1) + "]", "UTF-8"},
		{"invalid UTF-8, the entry named", "[" + strings.Replace(entry, "Notes server", "Notes \xff", 1) + "]", `the dump's entry "io.github.acme/notes" "1.0.0" (`},
		// A file being rewritten in place (cp, a configuration tool) is
		// empty for a moment: served, it would take every entry down.
		// Text is escaped once, where it is printed (the CLI, the log): the
		// error holds the server's characters, not their escapes.
		{"a status with a bidi control", block(`"policy"`, `"status":"act\u202eive","policy"`), "status \"act\u202eive\": not one that is served"},
		// encoding/json matches member names ignoring case, a registry
		// client does not: the two would read different signers.
		{"a case variant of a member of the block", block(`"policy"`, `"Signers":[{"method":"key","identity":"forged"}],"policy"`), "Signers"},
		{"a case-folded variant (U+017F)", block(`"policy"`, `"ſigners":[{"method":"key","identity":"forged"}],"policy"`), "igners"},
		{"a case variant in a signer", block(`"identity":`, `"Identity":"forged","identity":`), "signers/0"},
		{"an empty file", "", "empty"},
		{"only white space", " \n\t\n", "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadServed(context.Background(), strings.NewReader(c.dump), Limits{})
			var le *ServeLoadError
			if !errors.Is(err, ErrNotServable) || !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v (want %q)", err, c.want)
			}
		})
	}
	if set, err := LoadServed(context.Background(), strings.NewReader(good), Limits{}); err != nil || set.Len() != 1 {
		t.Fatalf("the good dump: %v", err)
	}
	if set, err := LoadServed(context.Background(), strings.NewReader("[]\n"), Limits{}); err != nil || set.Len() != 0 {
		t.Fatalf("an empty dump: %v", err)
	}
}

// TestServeSwapWhole: readers during swaps see one whole set per
// response, never a mix.
func TestServeSwapWhole(t *testing.T) {
	t.Parallel()
	a, b := loadSet(t, servedDump(t, manySpecs(40))), loadSet(t, servedDump(t, manySpecs(20)))
	h := NewServer(a)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v0.1/servers?limit=100", nil))
				var l apiList
				if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || (len(l.Servers) != 40 && len(l.Servers) != 20) {
					t.Errorf("a response of %d entries: %v", len(l.Servers), err)
					return
				}
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			h.Swap(b)
		} else {
			h.Swap(a)
		}
	}
	close(done)
	wg.Wait()
}

// TestVerifyServed: the scheduled run's path (RunSource) serves only
// what verified, and a run that fails gives no set.
func TestVerifyServed(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{"a/*":{}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := New(Options{Policy: pf})
	dir := t.TempDir()
	src := filepath.Join(dir, "entries.jsonl")
	if err := os.WriteFile(src, []byte(serverJSON("a/b", "1", "")+"\n"+serverJSON("c/d", "1", "")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, sum, err := v.VerifyServed(context.Background(), src, SourceOptions{}, Limits{})
	if err != nil || sum.Entries != 2 || set.Len() != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
	if set, _, err := v.VerifyServed(context.Background(), filepath.Join(dir, "none"), SourceOptions{}, Limits{}); err == nil || set != nil {
		t.Fatalf("a source that does not read gave a set: %v", err)
	}
	// With VerifiedOut, the run writes its dump in a directory of its own
	// beside it (the rename to VerifiedOut is then atomic), removed after.
	outDir := t.TempDir()
	out := filepath.Join(outDir, "verified.json")
	beside := false
	_, _, err = v.VerifyServed(context.Background(), src, SourceOptions{VerifiedOut: out, RunOptions: RunOptions{Emit: func(*Result) error {
		des, _ := os.ReadDir(outDir)
		for _, de := range des {
			beside = beside || strings.HasPrefix(de.Name(), ".mcpsign-serve-") && de.IsDir()
		}
		return nil
	}}}, Limits{})
	des, _ := os.ReadDir(outDir)
	if err != nil || !beside || len(des) != 1 || des[0].Name() != "verified.json" {
		t.Fatalf("error %v, a directory beside VerifiedOut %v, left %v", err, beside, des)
	}
}

// TestServeReloadKeepsOld: a reload that fails (a dump with one entry
// mcpsign did not verify) keeps the set served.
func TestServeReloadKeepsOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "verified.json")
	if err := os.WriteFile(path, servedDump(t, serveSpecs), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(ctx context.Context) (*ServedSet, error) { return LoadServedFile(ctx, path, Limits{}) }
	h := &Server{}
	if code, _, _ := get(t, h, "/v0.1/servers"); code != http.StatusServiceUnavailable {
		t.Errorf("before the first set: %d", code)
	}
	if _, err := h.Reload(context.Background(), load); err != nil || h.Set().Len() != len(serveSpecs) {
		t.Fatal(err)
	}
	bad := strings.Replace(string(servedDump(t, serveSpecs[:1])), `"dev.mcpsign/verified"`, `"dev.mcpsign/unverified"`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Reload(context.Background(), load); !errors.Is(err, ErrNotServable) {
		t.Fatalf("a dump without the block reloaded: %v", err)
	}
	if h.Set().Len() != len(serveSpecs) {
		t.Errorf("the old set was not kept: %d entries", h.Set().Len())
	}
}

// TestLoadServedFiles: the shards of a sharded run are one set; a name
// and version in two of them, or one file that is refused, refuses all.
func TestLoadServedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, specs []servedSpec) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, servedDump(t, specs), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, dup := write("a.json", serveSpecs[:2]), write("b.json", serveSpecs[2:]), write("dup.json", serveSpecs[1:2])
	set, err := LoadServedFiles(context.Background(), []string{a, b}, Limits{})
	if err != nil || set.Len() != len(serveSpecs) {
		t.Fatalf("%v", err)
	}
	if _, err := LoadServedFiles(context.Background(), []string{a, b, dup}, Limits{}); !errors.Is(err, ErrNotServable) || !strings.Contains(err.Error(), "dup.json") {
		t.Errorf("a duplicate across shards: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("[{"), 0o644)
	if _, err := LoadServedFiles(context.Background(), []string{a, bad}, Limits{}); !errors.Is(err, ErrNotServable) {
		t.Errorf("a shard that does not read: %v", err)
	}
}

// TestEtagMatch: If-None-Match names the tag, weak or strong, in a list,
// or "*"; a header of 8192 bytes is read, a longer one is not.
func TestEtagMatch(t *testing.T) {
	t.Parallel()
	const tag = `"abc"`
	for _, c := range []struct {
		inm  string
		want bool
	}{
		{tag, true},
		{`W/"abc"`, true},
		{`"x", ` + tag, true},
		{`*`, true},
		{`"abd"`, false},
		{strings.Repeat(" ", 8192-len(tag)) + tag, true},
		{strings.Repeat(" ", 8193-len(tag)) + tag, false},
	} {
		if got := etagMatch(c.inm, tag); got != c.want {
			t.Errorf("etagMatch(%.20q… (%d bytes)) = %v, want %v", c.inm, len(c.inm), got, c.want)
		}
	}
}

// TestServeLoadErrorText: a refused dump entry is named by its name and
// version when they read, by its position alone when they do not.
func TestServeLoadErrorText(t *testing.T) {
	t.Parallel()
	named := (&ServeLoadError{Name: "a/b", Version: "1", Err: errors.New("why")}).Error()
	unnamed := (&ServeLoadError{Err: errors.New("why")}).Error()
	if !strings.HasPrefix(named, `registry: the dump's entry "a/b" "1" (`) || !strings.HasSuffix(named, "is refused, and the dump with it: why") {
		t.Errorf("named: %s", named)
	}
	if !strings.HasPrefix(unnamed, `registry: the dump's entry (`) || strings.Contains(unnamed, `""`) {
		t.Errorf("unnamed: %s", unnamed)
	}
}
