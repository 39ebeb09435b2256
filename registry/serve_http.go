package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The bounds of the list route's query (docs/REGISTRY.md, "Serving a
// verified dump"): a request over one is answered 400.
const (
	// MaxServeQuery bounds the whole query string.
	MaxServeQuery = 4096
	// MaxServeSearch bounds search, MaxServeCursor cursor, in bytes.
	MaxServeSearch = 256
	MaxServeCursor = 1024
	// DefaultServeLimit and MaxServeLimit are the list's page size when
	// limit is not given and its largest (the official registry's).
	DefaultServeLimit = 30
	MaxServeLimit     = 100
)

// Server serves a ServedSet on the generic registry API's read routes,
// under /v0.1 and /v0 (docs/REGISTRY.md, "Serving a verified dump"):
// GET /servers (cursor, limit, search, updated_since, version,
// include_deleted), /servers/{name}/versions,
// /servers/{name}/versions/{version} and …/versions/latest. Every 200 has
// a strong ETag (the SHA-256 of its bytes) and If-None-Match answers 304.
// The set is swapped whole (Swap): a request is answered from one set.
// The zero value serves nothing until Swap; CORS, logs and metrics are the
// caller's (internal/service).
type Server struct {
	set atomic.Pointer[ServedSet]
	// reload serializes Reload: a scheduled run and a SIGHUP never both
	// store, the older last.
	reload sync.Mutex
}

// NewServer serves set.
func NewServer(set *ServedSet) *Server {
	s := &Server{}
	s.set.Store(set)
	return s
}

// Swap makes set the one served, atomically, and returns the one before.
func (s *Server) Swap(set *ServedSet) *ServedSet { return s.set.Swap(set) }

// Set is the set served now (nil before the first).
func (s *Server) Set() *ServedSet { return s.set.Load() }

// Routes is s behind an http.ServeMux whose patterns name the read
// routes (/v0.1/servers, /v0.1/servers/{name}/versions,
// /v0.1/servers/{name}/versions/{version}, and /v0's), so that a service
// labels its metrics with them (internal/service); every request is
// answered by s, unknown routes and methods too, as ServeHTTP answers
// them.
func (s *Server) Routes() http.Handler {
	mux := http.NewServeMux()
	for _, v := range []string{"/v0.1", "/v0"} {
		mux.Handle(v+"/servers", s)
		mux.Handle(v+"/servers/{name}/versions", s)
		mux.Handle(v+"/servers/{name}/versions/{version}", s)
	}
	mux.Handle("/", s)
	return mux
}

// problem writes the registry's error shape: the members the official
// registry writes (title, status, detail: RFC 9457, as its huma framework
// writes them) and the one its OpenAPI document gives (error), as
// application/json, the document's content type.
func problem(w http.ResponseWriter, status int, detail string) {
	b, _ := json.Marshal(struct {
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
		Error  string `json:"error"`
	}{http.StatusText(status), status, detail, detail})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	var rest string
	switch {
	case strings.HasPrefix(path, "/v0.1/servers"):
		rest = path[len("/v0.1/servers"):]
	case strings.HasPrefix(path, "/v0/servers"):
		rest = path[len("/v0/servers"):]
	default:
		problem(w, http.StatusNotFound, "Endpoint not found")
		return
	}
	var segs []string
	switch {
	case rest == "":
	case strings.HasPrefix(rest, "/") && len(rest) > 1:
		segs = strings.Split(rest[1:], "/")
	default:
		problem(w, http.StatusNotFound, "Endpoint not found")
		return
	}
	if len(segs) > 3 || (len(segs) >= 1 && segs[0] == "") || (len(segs) >= 2 && segs[1] != "versions") || len(segs) == 1 {
		problem(w, http.StatusNotFound, "Endpoint not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		problem(w, http.StatusMethodNotAllowed, "Method not allowed: this registry serves the read routes only")
		return
	}
	if len(r.URL.RawQuery) > MaxServeQuery {
		problem(w, http.StatusBadRequest, "the query is longer than "+strconv.Itoa(MaxServeQuery)+" bytes")
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		problem(w, http.StatusBadRequest, "the query does not parse")
		return
	}
	if v := q.Get("include_deleted"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			problem(w, http.StatusBadRequest, "include_deleted: not a boolean")
			return
		}
	}
	set := s.set.Load()
	if set == nil {
		problem(w, http.StatusServiceUnavailable, "no verified set loaded yet")
		return
	}
	if len(segs) == 0 {
		s.list(w, r, set, q)
		return
	}
	name, err := url.PathUnescape(segs[0])
	if err != nil {
		problem(w, http.StatusBadRequest, "Invalid server name encoding")
		return
	}
	vs := set.versions[name]
	if len(vs) == 0 {
		problem(w, http.StatusNotFound, "Server not found")
		return
	}
	if len(segs) == 2 {
		writeList(w, r, vs, "")
		return
	}
	version, err := url.PathUnescape(segs[2])
	if err != nil {
		problem(w, http.StatusBadRequest, "Invalid version encoding")
		return
	}
	for _, e := range vs {
		if (version == "latest" && e.latest) || e.version == version {
			writeBody(w, r, e.resp)
			return
		}
	}
	problem(w, http.StatusNotFound, "Server not found")
}

// cursorOf is the opaque cursor after e: base64url of name, a newline,
// version (URL-safe: a client may append it to a URL unescaped, as the
// official registry's importer does).
func cursorOf(e *servedEntry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(e.name + "\n" + e.version))
}

func parseCursor(c string) (name, version string, ok bool) {
	if len(c) > MaxServeCursor {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", false
	}
	name, version, ok = strings.Cut(string(b), "\n")
	return name, version, ok && name != "" && !strings.Contains(version, "\n")
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, set *ServedSet, q url.Values) {
	limit := DefaultServeLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxServeLimit {
			problem(w, http.StatusBadRequest, "limit: an integer from 1 to "+strconv.Itoa(MaxServeLimit))
			return
		}
		limit = n
	}
	search := q.Get("search")
	if len(search) > MaxServeSearch {
		problem(w, http.StatusBadRequest, "search: longer than "+strconv.Itoa(MaxServeSearch)+" bytes")
		return
	}
	search = strings.ToLower(search)
	var since time.Time
	if v := q.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			problem(w, http.StatusBadRequest, "Invalid updated_since format: expected RFC3339 timestamp (e.g., 2025-08-07T13:15:04.280Z)")
			return
		}
		since = t
	}
	version := q.Get("version")
	if len(version) > MaxServeSearch {
		problem(w, http.StatusBadRequest, "version: longer than "+strconv.Itoa(MaxServeSearch)+" bytes")
		return
	}
	from := set.all
	if version == "latest" {
		from = set.latest
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		name, ver, ok := parseCursor(c)
		if !ok {
			problem(w, http.StatusBadRequest, "cursor: malformed (use metadata.nextCursor as it was given)")
			return
		}
		start = sort.Search(len(from), func(i int) bool {
			e := from[i]
			return e.name > name || (e.name == name && e.version > ver)
		})
	}
	match := func(e *servedEntry) bool {
		return (search == "" || strings.Contains(e.lname, search)) &&
			(since.IsZero() || e.verifiedAt.After(since)) &&
			(version == "" || version == "latest" || e.version == version)
	}
	page := make([]*servedEntry, 0, min(limit, len(from)-start))
	next := ""
	for _, e := range from[start:] {
		if !match(e) {
			continue
		}
		if len(page) == limit {
			next = cursorOf(page[len(page)-1])
			break
		}
		page = append(page, e)
	}
	writeList(w, r, page, next)
}

// writeList writes a ServerList: the entries, and metadata with count and
// nextCursor when there is a next page.
func writeList(w http.ResponseWriter, r *http.Request, es []*servedEntry, next string) {
	n := 64
	for _, e := range es {
		n += len(e.resp) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"servers":[`)
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.resp)
	}
	b.WriteString(`],"metadata":{`)
	if next != "" {
		b.WriteString(`"nextCursor":"` + next + `",`)
	}
	b.WriteString(`"count":` + strconv.Itoa(len(es)) + `}}`)
	writeBody(w, r, b.Bytes())
}

// writeBody writes a 200 JSON body with its strong ETag, or 304 when
// If-None-Match names it (or is "*").
func writeBody(w http.ResponseWriter, r *http.Request, body []byte) {
	h := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(h[:]) + `"`
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatch is If-None-Match's weak comparison (RFC 9110, 13.1.2) of a
// list of entity tags with the strong tag etag.
func etagMatch(inm, etag string) bool {
	if len(inm) > 8192 {
		return false
	}
	for t := range strings.SplitSeq(inm, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// Reload makes the set load returns the one served, only when load
// returned one (a whole dump read, a whole verification run): on an
// error the set served is kept, and the error returned.
func (s *Server) Reload(ctx context.Context, load func(context.Context) (*ServedSet, error)) (*ServedSet, error) {
	s.reload.Lock()
	defer s.reload.Unlock()
	set, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if set == nil {
		return nil, errors.New("registry: no set loaded")
	}
	s.set.Store(set)
	return set, nil
}
