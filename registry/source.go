package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ErrFetch: a registry could not be read (transport error, status, a
// redirect, a cursor that loops, more pages than the bound).
var ErrFetch = errors.New("reading the registry")

var (
	pageMembers = []string{"servers", "metadata"}
	metaMembers = []string{"nextCursor", "count"}
)

// Position is where a source gave an entry (docs/REGISTRY.md, "Output"):
// the page of an API listing, or the line of a file, and the entry's
// index in its page's servers or its file's array.
type Position struct {
	// Page is the 1-based page of an API listing (0 in a file).
	Page int `json:"page,omitempty"`
	// Line is the 1-based line of a file at which the entry, or the page
	// or array it is in, starts (0 in a listing).
	Line int `json:"line,omitempty"`
	// Index is the 0-based index of the entry in its page's servers, or
	// in its file's array (0 for a value of its own).
	Index int `json:"index"`
}

func (p Position) String() string {
	switch {
	case p.Page > 0:
		return fmt.Sprintf("page %d, entry %d", p.Page, p.Index)
	case p.Line > 0:
		return fmt.Sprintf("line %d, entry %d", p.Line, p.Index)
	}
	return fmt.Sprintf("entry %d", p.Index)
}

// ParsePage reads one page of the registry API ({"servers": [entry…],
// "metadata": {"nextCursor"?, "count"?}}) strictly and returns its entries
// as raw JSON (subslices of data) and the next cursor ("" on the last
// page). The page's own structure is bounded by lim.MaxDepth; an entry
// nested deeper is still returned (its structure checked, without
// recursion), for ParseEntry to refuse it alone: one deep entry does not
// refuse the page, nor the pages after it.
func ParsePage(data []byte, lim Limits) (entries [][]byte, next string, err error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxPageBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, at most %d", ErrPage, len(data), lim.MaxPageBytes)
	}
	data = bytes.TrimSpace(data)
	sc := &jsonscan.Scanner{In: data, MaxDepth: lim.MaxDepth, Escapes: true, SkipDeep: true}
	if len(data) == 0 || data[0] != '{' {
		return nil, "", fmt.Errorf("%w: not a JSON object", ErrPage)
	}
	values := map[string][]byte{}
	var names []string
	hasServers := false
	err = sc.Object(0, func(name jsonscan.Span) error {
		n, err := digest.DecodeString(data[name.Start-1 : name.End+1])
		if err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		if _, dup := values[n]; dup {
			return fmt.Errorf("repeated member %s", textsafe.RawQuote(n))
		}
		names = append(names, n)
		if n == "servers" && sc.Pos < len(data) && data[sc.Pos] == '[' {
			hasServers = true
			start := sc.Pos
			err := sc.Array(1, func(el jsonscan.Span) {
				if len(entries) <= lim.MaxPageEntries {
					entries = append(entries, data[el.Start:el.End:el.End])
				}
			})
			values[n] = data[start:sc.Pos:sc.Pos]
			return err
		}
		v, err := sc.Value(1)
		values[n] = data[v.Start:v.End:v.End]
		return err
	})
	if err == nil && sc.Pos != len(data) {
		err = sc.Fail("unexpected data after the JSON object")
	}
	if err == nil {
		err = digest.CheckCaseVariants(names, pageMembers...)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrPage, err)
	}
	s, ok := values["servers"]
	if !ok {
		return nil, "", fmt.Errorf("%w: no \"servers\"", ErrPage)
	}
	if !hasServers && string(s) != "null" {
		return nil, "", fmt.Errorf("%w: servers: not a JSON array", ErrPage)
	}
	if entries == nil {
		entries = [][]byte{}
	}
	if len(entries) > lim.MaxPageEntries {
		return nil, "", fmt.Errorf("%w: more than %d servers in one page", ErrPage, lim.MaxPageEntries)
	}
	if md, ok := values["metadata"]; ok && string(md) != "null" {
		mm, err := digest.ReadMembers(md, metaMembers...)
		if err != nil {
			return nil, "", fmt.Errorf("%w: metadata: %w", ErrPage, err)
		}
		if c, ok := mm["nextCursor"]; ok && string(c) != "null" {
			if next, err = digest.DecodeString(c); err != nil {
				return nil, "", fmt.Errorf("%w: metadata.nextCursor: %w", ErrPage, err)
			}
			if len(next) > 4096 {
				return nil, "", fmt.Errorf("%w: metadata.nextCursor longer than 4096 bytes", ErrPage)
			}
		}
	}
	return entries, next, nil
}

// boundReader fails once more than limit bytes were read in total.
type boundReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (b *boundReader) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		return 0, fmt.Errorf("%w: a value longer than the bound", ErrPage)
	}
	if rem := b.limit - b.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

// ReadDump is ReadDumpAt without the positions.
func ReadDump(r io.Reader, lim Limits, fn func(raw []byte) error) error {
	return ReadDumpAt(r, lim, func(raw []byte, _ Position) error { return fn(raw) })
}

// lineCounter counts the lines of what a decoder read, for the line of
// each entry; it keeps only the bytes read past the last offset asked.
type lineCounter struct {
	r     io.Reader
	buf   []byte
	off   int64 // the offset of buf[0]
	lines int   // newlines before off
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.buf = append(l.buf, p[:n]...)
	return n, err
}

// line is the 1-based line of offset o (not before the last asked).
func (l *lineCounter) line(o int64) int {
	k := min(max(int(o-l.off), 0), len(l.buf))
	l.lines += bytes.Count(l.buf[:k], []byte{'\n'})
	l.buf = append(l.buf[:0], l.buf[k:]...)
	l.off += int64(k)
	return l.lines + 1
}

// valueLine is the line at which the decoder's next value starts (past
// white space and a ',').
func valueLine(dec *json.Decoder, lc *lineCounter) int {
	o := dec.InputOffset()
	b, _ := io.ReadAll(io.LimitReader(dec.Buffered(), 4096))
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' {
			break
		}
		o++
	}
	return lc.line(o)
}

// ReadDumpAt reads a file of registry documents, streamed: a sequence of
// JSON values (JSON Lines, or values one after another), each an API page,
// an API entry, a bare server.json, or an array of entries (the official
// registry's seed format, which a verified dump writes). Each entry's raw
// bytes and its position (the line it starts at, its index in its page or
// array) are given to fn in order; fn's error stops the reading. Each value
// is bounded by lim.MaxPageBytes (an array's elements each by
// lim.MaxEntryBytes), so memory stays flat however many entries the file
// holds; an entry over lim.MaxEntryBytes is given too, for ParseEntry to
// refuse it alone.
func ReadDumpAt(r io.Reader, lim Limits, fn func(raw []byte, pos Position) error) error {
	lim = lim.withDefaults()
	lc := &lineCounter{r: r}
	br := &boundReader{r: lc}
	dec := json.NewDecoder(br)
	count := 0
	emit := func(raw []byte, pos Position) error {
		if count++; count > lim.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrPage, lim.MaxEntries)
		}
		return fn(raw, pos)
	}
	for {
		br.limit = dec.InputOffset() + 2*int64(lim.MaxPageBytes)
		tok, err := peekDelim(dec, br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tok == '[' {
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: %w", ErrPage, err)
			}
			for i := 0; dec.More(); i++ {
				br.limit = dec.InputOffset() + 2*int64(lim.MaxPageBytes)
				line := valueLine(dec, lc)
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fmt.Errorf("%w: line %d: %w", ErrPage, line, err)
				}
				// An entry over its bound is still given (it is read, within
				// the value's bound): ParseEntry refuses it alone.
				if err := emit(raw, Position{Line: line, Index: i}); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("%w: %w", ErrPage, err)
			}
			continue
		}
		line := valueLine(dec, lc)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrPage, line, err)
		}
		if len(raw) > lim.MaxPageBytes {
			return fmt.Errorf("%w: line %d: a value of %d bytes, at most %d", ErrPage, line, len(raw), lim.MaxPageBytes)
		}
		if isPage(raw) {
			entries, _, err := ParsePage(raw, lim)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			for i, e := range entries {
				if err := emit(e, Position{Line: line, Index: i}); err != nil {
					return err
				}
			}
			continue
		}
		if err := emit(raw, Position{Line: line}); err != nil {
			return err
		}
	}
}

// peekDelim returns the first byte of the next value ('[' for an array),
// or io.EOF when only white space is left.
func peekDelim(dec *json.Decoder, br *boundReader) (byte, error) {
	if !dec.More() {
		// More is false at the end of input, and on a stray closing
		// delimiter: Token tells the two apart.
		if _, err := dec.Token(); err == io.EOF {
			return 0, io.EOF
		} else if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrPage, err)
		}
		return 0, fmt.Errorf("%w: a stray delimiter", ErrPage)
	}
	b, err := io.ReadAll(io.LimitReader(dec.Buffered(), 1))
	if err != nil || len(b) == 0 {
		return 0, fmt.Errorf("%w: cannot read ahead", ErrPage)
	}
	return b[0], nil
}

// isPage reports whether an object has a member "servers" at its top
// level (an API page rather than an entry).
func isPage(raw []byte) bool {
	names, _, err := digest.Members(raw)
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == "servers" {
			return true
		}
	}
	return false
}

// Client reads the generic registry API: /v0.1/servers paged by
// metadata.nextCursor, /v0.1/servers/{name}/versions/{version}, and /v0
// where that is all a registry serves. Its zero value is not usable: set
// Base.
type Client struct {
	// Base is the registry's base URL: https, or http on a loopback host.
	Base string
	// HTTPClient is the client (TLS roots); nil means http.DefaultClient.
	// Redirects are not followed.
	HTTPClient *http.Client
	// PageSize is the limit asked of each page; 0 means 100 (the official
	// registry's maximum).
	PageSize int
	// Timeout bounds each request; 0 means 30 s.
	Timeout time.Duration
	// Limits bound pages and entries.
	Limits Limits
	// Progress, when set, is called after each page with the pages and
	// entries read so far.
	Progress func(pages, entries int)
}

// checkBase accepts https, or http on a loopback host.
func checkBase(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: the base URL does not parse", ErrFetch)
	}
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("%w: the base URL carries user info", ErrFetch)
	case u.Host == "":
		return nil, fmt.Errorf("%w: the base URL %s has no host", ErrFetch, textsafe.RawQuote(textsafe.Cut(u.Redacted(), 120)))
	case u.Scheme == "https":
	case u.Scheme == "http" && netguard.IsLoopbackHost(u.Hostname()):
	default:
		return nil, fmt.Errorf("%w: %s: want https (http only on a loopback host)", ErrFetch, textsafe.RawQuote(textsafe.Cut(u.Redacted(), 120)))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

func (c *Client) get(ctx context.Context, u string, limit int) (body []byte, status int, err error) {
	base := c.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	client := &http.Client{Transport: base.Transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("%w: %s: status %s", ErrFetch, redact(u), resp.Status)
	}
	body, err = boundedfile.ReadAll(resp.Body, redact(u), int64(limit), ErrPage)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	return body, resp.StatusCode, nil
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a URL)"
	}
	return textsafe.Cut(p.Redacted(), 200)
}

// Each is EachAt without the positions.
func (c *Client) Each(ctx context.Context, fn func(raw []byte) error) error {
	return c.EachAt(ctx, func(raw []byte, _ Position) error { return fn(raw) })
}

// errListingTime is the cause of the listing's deadline.
var errListingTime = errors.New("the listing's time budget is spent")

// EachAt lists every server version of the registry, page by page, and
// gives each entry's raw bytes and position (its page and index) to fn in
// order. It tries /v0.1 first and falls back to /v0 when the registry
// answers 404 there. A cursor seen before, more than Limits.MaxPages
// pages, more than Limits.MaxListingBytes or Limits.ListingTimeout for the
// whole listing, a page over the bounds or answering garbage stops the
// listing with an error (fn has then seen the entries before it).
func (c *Client) EachAt(ctx context.Context, fn func(raw []byte, pos Position) error) error {
	base, err := checkBase(c.Base)
	if err != nil {
		return err
	}
	lim := c.Limits.withDefaults()
	size := c.PageSize
	if size <= 0 {
		size = 100
	}
	lctx, cancel := context.WithTimeoutCause(ctx, lim.ListingTimeout, errListingTime)
	defer cancel()
	prefix := "/v0.1"
	seen := map[[32]byte]bool{}
	cursor, entries := "", 0
	var total int64
	for page := 0; ; page++ {
		if page >= lim.MaxPages {
			return fmt.Errorf("%w: more than %d pages", ErrFetch, lim.MaxPages)
		}
		q := url.Values{"limit": {strconv.Itoa(size)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		body, status, err := c.get(lctx, base.String()+prefix+"/servers?"+q.Encode(), lim.MaxPageBytes)
		if err != nil && page == 0 && status == http.StatusNotFound && prefix == "/v0.1" {
			prefix = "/v0"
			page--
			continue
		}
		if err != nil && ctx.Err() == nil && context.Cause(lctx) == errListingTime {
			return fmt.Errorf("%w: %w: more than %s after %d pages", ErrFetch, errListingTime, lim.ListingTimeout, page)
		}
		if err != nil {
			return err
		}
		if total += int64(len(body)); total > lim.MaxListingBytes {
			return fmt.Errorf("%w: the listing's pages exceed %d bytes together after %d pages", ErrFetch, lim.MaxListingBytes, page+1)
		}
		items, next, err := ParsePage(body, lim)
		if err != nil {
			return fmt.Errorf("page %d: %w", page+1, err)
		}
		for i, it := range items {
			if entries++; entries > lim.MaxEntries {
				return fmt.Errorf("%w: more than %d entries", ErrFetch, lim.MaxEntries)
			}
			if err := fn(it, Position{Page: page + 1, Index: i}); err != nil {
				return err
			}
		}
		if c.Progress != nil {
			c.Progress(page+1, entries)
		}
		if next == "" {
			return nil
		}
		h := sha256.Sum256([]byte(next))
		if seen[h] {
			return fmt.Errorf("%w: the cursor %s came back after %d pages: it loops", ErrFetch, textsafe.RawQuote(textsafe.Cut(next, 80)), page+1)
		}
		seen[h] = true
		if len(items) == 0 {
			return fmt.Errorf("%w: an empty page with a next cursor", ErrFetch)
		}
		cursor = next
	}
}

// Version fetches one server version: /v0.1/servers/{name}/versions/{version}
// (the name and the version path-escaped), falling back to /v0.
func (c *Client) Version(ctx context.Context, name, version string) (*Entry, error) {
	base, err := checkBase(c.Base)
	if err != nil {
		return nil, err
	}
	lim := c.Limits.withDefaults()
	var body []byte
	for _, prefix := range []string{"/v0.1", "/v0"} {
		var status int
		body, status, err = c.get(ctx, base.String()+prefix+"/servers/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version), lim.MaxEntryBytes*2)
		if err == nil || status != http.StatusNotFound {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	e, err := ParseEntry(body, lim)
	if err != nil {
		return nil, err
	}
	if e.Name != name || e.Version != version {
		return nil, fmt.Errorf("%w: asked for %s %s, the registry answered %s %s", ErrFetch,
			textsafe.RawQuote(name), textsafe.RawQuote(version), textsafe.RawQuote(e.Name), textsafe.RawQuote(e.Version))
	}
	return e, nil
}
