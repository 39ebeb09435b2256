package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

// echo answers 200 with what it read, 400 when the body could not be
// read (as the go-sdk's handler does), and says whether it saw a token.
func echo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "" {
			w.Header().Set("X-Saw-Authorization", "yes")
		}
		w.Write(b)
	})
}

// TestLimitBody: a body over the limit is answered 413, declared or
// chunked, whatever the handler answers to its failed read.
func TestLimitBody(t *testing.T) {
	h := LimitBody(16, 0)(echo())
	for _, tt := range []struct {
		name    string
		body    string
		chunked bool
		code    int
	}{
		{"under", "0123456789", false, 200},
		{"at the limit", "0123456789abcdef", false, 200},
		{"declared over", "0123456789abcdefX", false, 413},
		{"chunked under", "0123456789", true, 200},
		{"chunked over", strings.Repeat("x", 100), true, 413},
		{"empty", "", false, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // unknown length
			}
			req := httptest.NewRequest(http.MethodPost, "/mcp", body)
			if tt.chunked {
				req.ContentLength = -1
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Errorf("%d %q, want %d", rec.Code, rec.Body.String(), tt.code)
			}
			if tt.code == 413 && !strings.Contains(rec.Body.String(), "larger than 16 bytes") {
				t.Errorf("413 body %q does not say the limit", rec.Body.String())
			}
			if tt.code == 200 && rec.Body.String() != tt.body {
				t.Errorf("body %q, want %q", rec.Body.String(), tt.body)
			}
		})
	}
}

// TestCheckOrigin: the MCP spec's DNS-rebinding rule: an Origin present and
// not allowed is 403 with a JSON-RPC error without id; no Origin passes.
func TestCheckOrigin(t *testing.T) {
	mw, err := CheckOrigin([]string{"https://app.example.com", "http://localhost:6274", "http://[::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(echo())
	for _, tt := range []struct {
		name    string
		origins []string
		code    int
	}{
		{"no Origin (not a browser)", nil, 200},
		{"allowed", []string{"https://app.example.com"}, 200},
		{"allowed, default port", []string{"https://app.example.com:443"}, 200},
		{"allowed, upper case", []string{"HTTPS://APP.Example.COM"}, 200},
		{"allowed with port", []string{"http://localhost:6274"}, 200},
		{"allowed IPv6", []string{"http://[::1]:8080"}, 200},
		{"other port", []string{"http://localhost:6275"}, 403},
		{"other scheme", []string{"http://app.example.com"}, 403},
		{"rebinding page", []string{"http://attacker.example"}, 403},
		{"null", []string{"null"}, 403},
		{"empty", []string{""}, 403},
		{"with a path", []string{"https://app.example.com/x"}, 403},
		{"two Origins", []string{"https://app.example.com", "http://attacker.example"}, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			for _, o := range tt.origins {
				req.Header.Add("Origin", o)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Errorf("Origin %q: %d, want %d", tt.origins, rec.Code, tt.code)
			}
			if tt.code == 403 && (!strings.Contains(rec.Body.String(), `"jsonrpc":"2.0"`) || strings.Contains(rec.Body.String(), `"id"`)) {
				t.Errorf("403 body %q: want a JSON-RPC error without id", rec.Body.String())
			}
		})
	}
	denyAll, err := CheckOrigin(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	rec := httptest.NewRecorder()
	denyAll(echo()).ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Errorf("no allowed origin, a browser's request: %d, want 403", rec.Code)
	}
	for _, bad := range []string{"*", "app.example.com", "ftp://x", "https://a.example/path", "https://u@a.example", "https://a.example:99999", "null"} {
		var oe *OriginError
		if _, err := CheckOrigin([]string{bad}); !errors.As(err, &oe) || oe.Origin != bad {
			t.Errorf("CheckOrigin(%q): %v, want an *OriginError", bad, err)
		}
	}
}

const (
	tokA = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	tokB = "bbbbbbbb-bbbb.bbbb_bbbb~bbbb+bbbb/bb=="
)

// TestBearerTokens: only a listed token passes; 401 with a challenge
// otherwise; the token is not passed on.
func TestBearerTokens(t *testing.T) {
	toks, err := NewTokens([]string{tokA, tokB})
	if err != nil {
		t.Fatal(err)
	}
	h := BearerTokens(toks)(echo())
	for _, tt := range []struct {
		name      string
		auth      []string
		code      int
		challenge string
	}{
		{"none", nil, 401, `Bearer realm="mcpsign"`},
		{"first", []string{"Bearer " + tokA}, 200, ""},
		{"second, lower-case scheme", []string{"bearer " + tokB}, 200, ""},
		{"wrong", []string{"Bearer " + tokA + "x"}, 401, `Bearer realm="mcpsign", error="invalid_token"`},
		{"prefix of one", []string{"Bearer " + tokA[:30]}, 401, `Bearer realm="mcpsign", error="invalid_token"`},
		{"empty", []string{"Bearer "}, 401, `Bearer realm="mcpsign", error="invalid_token"`},
		{"basic", []string{"Basic " + tokA}, 401, `Bearer realm="mcpsign", error="invalid_token"`},
		{"two headers", []string{"Bearer " + tokA, "Bearer " + tokA}, 401, `Bearer realm="mcpsign", error="invalid_token"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code || rec.Header().Get("WWW-Authenticate") != tt.challenge {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"), tt.code, tt.challenge)
			}
			if rec.Header().Get("X-Saw-Authorization") != "" {
				t.Error("the token was passed on to the handler")
			}
			if strings.Contains(rec.Body.String(), tokA) {
				t.Error("the answer holds the token")
			}
		})
	}
	if err := toks.Replace([]string{tokB}); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("a token replaced away still passes: %d", rec.Code)
	}
	if err := toks.Replace([]string{"short"}); err == nil {
		t.Error("Replace took a short token")
	}
}

// TestTokenIdentity: a request BearerTokens lets through carries its
// token's digest in its context (the token itself is gone from the
// headers), one per token; a request that did not go through it carries
// none.
func TestTokenIdentity(t *testing.T) {
	toks, err := NewTokens([]string{tokA, tokB})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][sha256.Size]byte{}
	h := BearerTokens(toks)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := TokenIdentity(r.Context())
		if !ok {
			t.Error("no identity in a request let through")
		}
		seen[r.URL.Query().Get("who")] = id
	}))
	for who, tok := range map[string]string{"a": tokA, "b": tokB} {
		req := httptest.NewRequest(http.MethodGet, "/mcp?who="+who, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if seen["a"] != sha256.Sum256([]byte(tokA)) || seen["b"] != sha256.Sum256([]byte(tokB)) {
		t.Error("the identity is not the token's SHA-256")
	}
	if _, ok := TokenIdentity(context.Background()); ok {
		t.Error("an identity without BearerTokens")
	}
}

// TestReadTokens: a file or a variable, one token a line, comments and
// blank lines skipped; a bad line is named by number, never by content.
func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, text string
		want       int
		line       int
		sentinel   error
	}{
		{"two", "# the front's clients\n" + tokA + "\n\n  " + tokB + "  \r\n", 2, 0, nil},
		{"short", tokA + "\nhunter2hunter2\n", 0, 2, nil},
		{"space inside", "abc def ghi jkl mno pqr stu\n", 0, 1, nil},
		{"empty", "# nothing\n\n", 0, 0, ErrNoTokens},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("MCPSIGN_TEST_TOKENS", tt.text)
			for src, read := range map[string]func() ([]string, error){
				"file": func() ([]string, error) {
					b, err := boundedfile.Read(p, MaxTokensFileBytes, nil)
					if err != nil {
						return nil, err
					}
					return ParseTokens(p, b)
				},
				"env": func() ([]string, error) { return TokensFromEnv("MCPSIGN_TEST_TOKENS") },
			} {
				toks, err := read()
				if tt.want > 0 {
					if err != nil || len(toks) != tt.want {
						t.Errorf("%s: %d tokens, %v; want %d", src, len(toks), err, tt.want)
					}
					continue
				}
				var te *TokenError
				if !errors.As(err, &te) || te.Line != tt.line || (tt.sentinel != nil && !errors.Is(err, tt.sentinel)) {
					t.Errorf("%s: %v; want a *TokenError at line %d", src, err, tt.line)
				}
				if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "def")) {
					t.Errorf("%s: the error %q shows the token", src, err)
				}
			}
		})
	}
	if _, err := TokensFromEnv("MCPSIGN_TEST_NO_SUCH_VARIABLE"); !errors.Is(err, ErrNoTokens) {
		t.Errorf("an unset variable: %v, want ErrNoTokens", err)
	}
}

// TestCORS: what Copilot needs of a registry: the preflight answered, any
// origin allowed to read GETs, ETag exposed; other methods not allowed.
func TestCORS(t *testing.T) {
	h := CORS(CORSOptions{})(echo())
	pre := httptest.NewRequest(http.MethodOptions, "/v0.1/servers", nil)
	pre.Header.Set("Origin", "vscode-file://vscode-app")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "authorization")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(rec.Header().Get("Access-Control-Allow-Methods"), "GET") ||
		!strings.Contains(strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers")), "authorization") ||
		rec.Header().Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
	req := httptest.NewRequest(http.MethodGet, "/v0.1/servers", nil)
	req.Header.Set("Origin", "https://github.com")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "*" || rec.Header().Get("Access-Control-Expose-Headers") != "Etag" && rec.Header().Get("Access-Control-Expose-Headers") != "ETag" {
		t.Errorf("GET: %d %v", rec.Code, rec.Header())
	}
	if rec.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Error("credentials allowed")
	}
	pre = httptest.NewRequest(http.MethodOptions, "/v0.1/servers", nil)
	pre.Header.Set("Origin", "https://github.com")
	pre.Header.Set("Access-Control-Request-Method", "DELETE")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("DELETE preflight allowed: %v", rec.Header())
	}
	only := CORS(CORSOptions{AllowedOrigins: []string{"https://github.com"}})(echo())
	req = httptest.NewRequest(http.MethodGet, "/v0.1/servers", nil)
	req.Header.Set("Origin", "https://attacker.example")
	rec = httptest.NewRecorder()
	only.ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an origin not listed was allowed: %v", rec.Header())
	}
}

// TestLoopbackHost: a request that reached a loopback address must name a
// loopback host; one that reached another address is not checked.
func TestLoopbackHost(t *testing.T) {
	h := LoopbackHost()(echo())
	for _, tt := range []struct {
		local, host string
		code        int
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", 200},
		{"127.0.0.1:8080", "localhost:8080", 200},
		{"127.0.0.1:8080", "LOCALHOST", 200},
		{"[::1]:8080", "[::1]:8080", 200},
		{"127.0.0.1:8080", "attacker.example:8080", 403},
		{"127.0.0.1:8080", "localhost.:8080", 403},
		{"127.0.0.1:8080", "10.0.0.5:8080", 403},
		{"[::1]:8080", "rebind.example", 403},
		{"10.1.2.3:8080", "notes-mcp.mcp.svc", 200},
	} {
		req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		req.Host = tt.host
		addr, err := net.ResolveTCPAddr("tcp", tt.local)
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, addr))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("Host %s on %s: %d, want %d", tt.host, tt.local, rec.Code, tt.code)
		}
	}
}

// TestLimitBodyReplacesHeaders: the 413 that replaces a handler's answer
// to a cut body carries none of the headers the handler set for its own
// body (a Content-Length that would truncate the 413, an ETag, an
// encoding).
func TestLimitBodyReplacesHeaders(t *testing.T) {
	h := LimitBody(16, 0)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err == nil {
			return
		}
		for k, v := range map[string]string{"Content-Length": "3", "ETag": `"x"`, "Content-Encoding": "gzip", "Content-Type": "text/plain"} {
			w.Header().Set(k, v)
		}
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("bad"))
	}))
	for _, tt := range []struct{ header string }{{"Content-Length"}, {"Etag"}, {"Content-Encoding"}} {
		t.Run(tt.header, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader(strings.Repeat("x", 100))))
			req.ContentLength = -1
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 413 || rec.Header().Get(tt.header) != "" {
				t.Errorf("%d with %s %q, want 413 without it", rec.Code, tt.header, rec.Header().Get(tt.header))
			}
		})
	}
}
