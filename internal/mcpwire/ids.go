package mcpwire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Pending is the set of requests sent to a server and not yet answered,
// keyed by the exact bytes of their ids. It is not safe for concurrent use.
//
// A response is tied to a request only by a byte-identical id: "1" answers
// the request whose id was 1, and "1.0", "1e0", "\"1\"" or "-0" answer
// nothing. The official SDKs match ids loosely (the TypeScript SDK looks up
// Number(id), so -0, "0" and "" all find request 0; go-sdk truncates
// a number to an integer, so 2.5 finds request 2): an answer that one of
// them could take for a pending request's, or that answers nothing pending,
// is a protocol violation, since mcpsign and a client would disagree on
// what it answers (docs/PROXY.md, "Response ids").
type Pending[T any] struct {
	m map[string]T
}

// ErrIDInUse is the error of Add for an id that is pending already.
var ErrIDInUse = errors.New("a request with this id is pending already")

// Add records a request sent under id.
func (p *Pending[T]) Add(id []byte, v T) error {
	if p.m == nil {
		p.m = map[string]T{}
	}
	if _, dup := p.m[string(id)]; dup {
		return ErrIDInUse
	}
	p.m[string(id)] = v
	return nil
}

// Take removes and returns the request that a response with id answers. A
// response whose id is not byte-identical to a pending one's is an
// *IDError (wrapping ErrProtocol) naming the request a loose reader would
// match it to, if any.
func (p *Pending[T]) Take(id []byte) (T, error) {
	v, ok := p.m[string(id)]
	if ok {
		delete(p.m, string(id))
		return v, nil
	}
	var zero T
	e := &IDError{ID: string(id)}
	for k := range p.m {
		if by := LooseMatch([]byte(k), id); by != "" {
			e.Loose, e.By = k, by
			break
		}
	}
	return zero, e
}

// Len returns the number of pending requests.
func (p *Pending[T]) Len() int { return len(p.m) }

// Drain removes every pending request and calls fn with each.
func (p *Pending[T]) Drain(fn func(id []byte, v T)) {
	for k, v := range p.m {
		fn([]byte(k), v)
	}
	clear(p.m)
}

// IDError is a response whose id answers no pending request.
type IDError struct {
	ID    string // the response's id, raw
	Loose string // the id of a pending request a loose reader would match it to
	By    string // which reader: "the TypeScript SDK", "go-sdk"
}

func (e *IDError) Error() string {
	msg := "a response with id " + textsafe.Cut(e.ID, 80) + " answers no pending request"
	if e.Loose != "" {
		msg += fmt.Sprintf(" (%s would take it for the answer to request %s)", e.By, textsafe.Cut(e.Loose, 80))
	}
	return msg
}

func (e *IDError) Unwrap() error { return ErrProtocol }

// LooseMatch reports which official SDK, if any, would take a response with
// id resp for the answer to a request sent with id req (both raw JSON):
// "the TypeScript SDK" (it looks up Number(id) among its numeric ids),
// "go-sdk" (it decodes a number as float64 and truncates it to an integer),
// both joined by " and ", or "" for neither. Byte-identical ids are not a loose match.
func LooseMatch(req, resp []byte) string {
	if string(req) == string(resp) {
		return ""
	}
	var by []string
	if rq, ok := jsNumber(req); ok && isNumber(req) {
		if rs, ok := jsNumber(resp); ok && rq == rs {
			by = append(by, "the TypeScript SDK")
		}
	}
	if rq, ok := goSDKKey(req); ok {
		if rs, ok := goSDKKey(resp); ok && rq == rs {
			by = append(by, "go-sdk")
		}
	}
	return strings.Join(by, " and ")
}

func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// jsNumber is JavaScript's Number() of a JSON id value: a number as itself,
// a string converted as Number(string) does (trimmed; "" is 0; 0x, 0o and
// 0b prefixes; "Infinity"). NaN, and null (its schema takes only a string
// or a number as an id), are no number (ok false).
func jsNumber(raw []byte) (float64, bool) {
	switch {
	case isNumber(raw):
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f + 0, true // -0 is 0 to a Map lookup (SameValueZero)
	case len(raw) > 0 && raw[0] == '"':
		s, err := digest.DecodeString(raw)
		if err != nil {
			return 0, false
		}
		s = strings.TrimFunc(s, jsSpace)
		if s == "" {
			return 0, true
		}
		for _, p := range []struct {
			prefix string
			base   int
		}{{"0x", 16}, {"0X", 16}, {"0o", 8}, {"0O", 8}, {"0b", 2}, {"0B", 2}} {
			if strings.HasPrefix(s, p.prefix) {
				n, err := strconv.ParseUint(s[2:], p.base, 64)
				if err != nil || strings.ContainsRune(s, '_') {
					return 0, false
				}
				return float64(n), true
			}
		}
		switch strings.TrimLeft(s, "+-") {
		case "Infinity":
			if s[0] == '-' {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		}
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
				return 0, false
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f + 0, true
	}
	return 0, false
}

// jsSpace is JavaScript's white space and line terminators, which Number()
// trims.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// goSDKKey is the id go-sdk v1.8.0 matches a response under
// (jsonrpc2.MakeID of IDValue): a string as itself, a number truncated to
// int64.
func goSDKKey(raw []byte) (string, bool) {
	v, ok := IDValue(raw)
	if !ok {
		return "", false
	}
	if f, isNumber := v.(float64); isNumber {
		return "n:" + strconv.FormatInt(int64(f), 10), true
	}
	return "s:" + v.(string), true
}

// IDValue is a JSON-RPC id value as a JSON decoder gives it to go-sdk's
// jsonrpc.MakeID: a number as a float64, a string (strictly decoded) as a
// string. ok is false for anything else (null, a string that is not
// strict, a number out of float64's range).
func IDValue(raw []byte) (v any, ok bool) {
	switch {
	case isNumber(raw):
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, false
		}
		return f, true
	case len(raw) > 0 && raw[0] == '"':
		s, err := digest.DecodeString(raw)
		if err != nil {
			return nil, false
		}
		return s, true
	}
	return nil, false
}

// Get returns the request pending under id (byte-identical), leaving it
// pending.
func (p *Pending[T]) Get(id []byte) (T, bool) {
	v, ok := p.m[string(id)]
	return v, ok
}
