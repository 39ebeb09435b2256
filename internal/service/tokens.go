package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

// MaxTokensFileBytes bounds a file of bearer tokens: read it with
// internal/boundedfile at this limit, then ParseTokens.
const MaxTokensFileBytes = 64 << 10

// MinTokenBytes is the shortest bearer token accepted: a token shorter
// than 128 bits of base64 can be guessed.
const MinTokenBytes = 22

// ErrNoTokens is wrapped by the error of a token source that holds none.
var ErrNoTokens = errors.New("no bearer token")

// TokenError says why a token source is refused: where (the file or the
// environment variable), which line, and why. It never holds the token.
type TokenError struct {
	Source string
	Line   int
	Reason string
	Err    error
}

func (e *TokenError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("bearer tokens in %s, line %d: %s", e.Source, e.Line, e.Reason)
	}
	return fmt.Sprintf("bearer tokens in %s: %s", e.Source, e.Reason)
}
func (e *TokenError) Unwrap() error { return e.Err }

// ParseTokens reads bearer tokens from data, the content of source (a
// file's path, for errors): one a line, blank lines and lines starting
// with # ignored. The caller reads a file bounded (MaxTokensFileBytes).
func ParseTokens(source string, data []byte) ([]string, error) {
	return parseTokens(source, string(data))
}

// TokensFromEnv reads bearer tokens from the environment variable name,
// one a line as in a file (a single token is the common case).
func TokensFromEnv(name string) ([]string, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return nil, &TokenError{Source: "$" + name, Reason: "the variable is not set", Err: ErrNoTokens}
	}
	return parseTokens("$"+name, v)
}

func parseTokens(source, text string) ([]string, error) {
	var toks []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if reason := badToken(line); reason != "" {
			return nil, &TokenError{Source: source, Line: i + 1, Reason: reason}
		}
		toks = append(toks, line)
	}
	if len(toks) == 0 {
		return nil, &TokenError{Source: source, Reason: "no token in it", Err: ErrNoTokens}
	}
	return toks, nil
}

// badToken says why t cannot be a bearer token: RFC 6750's b64token
// characters (letters, digits, -._~+/ and trailing =), at least
// MinTokenBytes.
func badToken(t string) string {
	if len(t) < MinTokenBytes {
		return fmt.Sprintf("a token shorter than %d characters", MinTokenBytes)
	}
	end := strings.TrimRight(t, "=")
	for _, c := range []byte(end) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return "a token with a character outside letters, digits and -._~+/= (RFC 6750)"
		}
	}
	return ""
}

// Tokens is a set of accepted bearer tokens, kept as SHA-256 digests and
// compared in constant time. Replace swaps the set atomically (a reload).
type Tokens struct {
	set atomic.Pointer[[][sha256.Size]byte]
}

// NewTokens returns the set of toks, which must be valid bearer tokens
// (ReadTokensFile and TokensFromEnv check them).
func NewTokens(toks []string) (*Tokens, error) {
	t := &Tokens{}
	if err := t.Replace(toks); err != nil {
		return nil, err
	}
	return t, nil
}

// Replace puts toks in force in place of the set, or keeps the set and
// returns why not.
func (t *Tokens) Replace(toks []string) error {
	if len(toks) == 0 {
		return &TokenError{Source: "the token list", Reason: "no token in it", Err: ErrNoTokens}
	}
	ds := make([][sha256.Size]byte, len(toks))
	for i, tok := range toks {
		if reason := badToken(tok); reason != "" {
			return &TokenError{Source: "the token list", Line: i + 1, Reason: reason}
		}
		ds[i] = sha256.Sum256([]byte(tok))
	}
	t.set.Store(&ds)
	return nil
}

// valid compares tok with every token of the set, in constant time: the
// time does not say which token matched or how much of one.
func (t *Tokens) valid(tok string) bool {
	d := sha256.Sum256([]byte(tok))
	ok := 0
	for _, s := range *t.set.Load() {
		ok |= subtle.ConstantTimeCompare(d[:], s[:])
	}
	return ok == 1
}

// tokenIdentityKey is the context key of the identity BearerTokens puts
// in the context of a request it lets through.
type tokenIdentityKey struct{}

// TokenIdentity returns who a request was let through as by BearerTokens:
// the SHA-256 of its bearer token (never the token), and whether it went
// through BearerTokens at all. A handler that keeps state across requests
// (the HTTP front's sessions) binds it to this identity: the token is no
// longer in the request's headers.
func TokenIdentity(ctx context.Context) ([sha256.Size]byte, bool) {
	id, ok := ctx.Value(tokenIdentityKey{}).([sha256.Size]byte)
	return id, ok
}

// BearerTokens lets a request through only with "Authorization: Bearer T",
// T one of t; else it answers 401 with a WWW-Authenticate challenge (RFC
// 6750: error="invalid_token" when a token was given). The Authorization
// header is removed from the request it lets through: the token is the
// service's, never passed on (to an upstream) nor logged; the request's
// context carries its digest instead (TokenIdentity).
func BearerTokens(t *Tokens) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			vs := r.Header.Values("Authorization")
			tok, given := "", false
			if len(vs) == 1 {
				scheme, rest, ok := strings.Cut(vs[0], " ")
				if ok && strings.EqualFold(scheme, "Bearer") {
					tok, given = strings.TrimSpace(rest), true
				}
			}
			if !given || !t.valid(tok) {
				challenge := `Bearer realm="mcpsign"`
				if len(vs) > 0 {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "a valid bearer token is required"})
				return
			}
			r.Header.Del("Authorization")
			r = r.WithContext(context.WithValue(r.Context(), tokenIdentityKey{}, sha256.Sum256([]byte(tok))))
			next.ServeHTTP(w, r)
		})
	}
}
