package oidcissuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestActionsTokenHandler(t *testing.T) {
	is, err := New("http://127.0.0.1:1", key(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(is.ActionsTokenHandler("request-secret", Claims{Email: "ci@example.com"}))
	defer srv.Close()

	for _, tc := range []struct {
		name, auth, query string
		wantCode          int
		wantAud           string
	}{
		{"audience asked for", "bearer request-secret", "?audience=sigstore", 200, "sigstore"},
		{"default audience", "Bearer request-secret", "", 200, DefaultAudience},
		{"other audience", "bearer request-secret", "?audience=other", 200, "other"},
		{"no authorization", "", "?audience=sigstore", 401, ""},
		{"wrong request token", "bearer request-secreT", "?audience=sigstore", 401, ""},
		{"not bearer", "basic request-secret", "?audience=sigstore", 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.query, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode != 200 {
				if strings.Count(string(body), ".") >= 2 && strings.Contains(string(body), "value") {
					t.Fatalf("refusal carries a token: %s", body)
				}
				return
			}
			var v struct {
				Value string `json:"value"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(v.Value, ".")
			if len(parts) != 3 {
				t.Fatalf("value is not a compact JWT")
			}
			p, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var c struct{ Aud, Email, Iss string }
			if err := json.Unmarshal(p, &c); err != nil {
				t.Fatal(err)
			}
			if c.Aud != tc.wantAud || c.Email != "ci@example.com" || c.Iss != is.URL() {
				t.Fatalf("claims %+v", c)
			}
		})
	}
}

func TestActionsTokenHandlerEmptyRequestTokenRefusesAll(t *testing.T) {
	srv := httptest.NewServer(ActionsTokenHandler("", func(context.Context, string) (string, error) { return "a.b.c", nil }))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
}

func TestMintExtraClaims(t *testing.T) {
	is, err := New("http://127.0.0.1:1/github", key(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	is.ServeHTTP(rec, httptest.NewRequest("GET", "/token?sub=repo:acme/notes:ref:refs/tags/v1&claim.repository=acme/notes&claim.sha=abc", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p, _ := base64.RawURLEncoding.DecodeString(strings.Split(rec.Body.String(), ".")[1])
	var c map[string]any
	if err := json.Unmarshal(p, &c); err != nil {
		t.Fatal(err)
	}
	if c["repository"] != "acme/notes" || c["sha"] != "abc" || c["sub"] != "repo:acme/notes:ref:refs/tags/v1" || c["iss"] != "http://127.0.0.1:1/github" {
		t.Fatalf("claims %v", c)
	}
	if _, ok := c["email"]; ok {
		t.Fatalf("a token without email has an email claim: %v", c)
	}
	for _, q := range []string{"?sub=x&claim.iss=evil", "?sub=x&claim.email_verified=false", "?sub=x&claim.=v", "?sub=x&claim.a=1&claim.a=2", "?claim.repository=x"} {
		rec := httptest.NewRecorder()
		is.ServeHTTP(rec, httptest.NewRequest("GET", "/token"+q, nil))
		if rec.Code != http.StatusBadRequest || strings.Count(rec.Body.String(), ".") == 2 && !strings.Contains(rec.Body.String(), " ") {
			t.Errorf("%s: status %d %q, want 400", q, rec.Code, rec.Body)
		}
	}
}
