package proxy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
)

// maxEnvelopeDepth bounds the nesting of a relayed message. MCP messages
// nest a few levels; tool results carrying JSON documents nest more, so the
// bound is generous, but it keeps hostile input from costing unbounded work.
const maxEnvelopeDepth = 10000

// msgKind is what a JSON-RPC message is.
type msgKind uint8

const (
	kindInvalid msgKind = iota
	kindRequest
	kindNotification
	kindResponse
)

func (k msgKind) String() string {
	switch k {
	case kindRequest:
		return "request"
	case kindNotification:
		return "notification"
	case kindResponse:
		return "response"
	}
	return "invalid message"
}

// listMembers flags the list members found at the top level of a result
// object: a result that carries definitions is checked whatever request it
// answers.
type listMembers uint8

const (
	hasTools listMembers = 1 << iota
	hasPrompts
	hasResourceTemplates
)

// envelope is the part of one JSON-RPC message that the proxy reads: what it
// is, its method, its id, and the exact bytes of its params, result and
// error. Every slice points into the line it was parsed from.
type envelope struct {
	kind   msgKind
	method string
	id     []byte // raw id bytes; nil when absent
	idKey  string // canonical id, see idKey; "" when absent
	params []byte
	result []byte
	errorV []byte
	lists  listMembers // list members of an object result
}

// errBatch marks a line that holds a JSON-RPC batch (an array), which MCP
// removed in 2025-06-18 and the proxy does not relay.
var errBatch = errors.New("JSON-RPC batches are not supported")

// envelopeError says why a line is not a JSON-RPC message the proxy can
// read.
type envelopeError struct {
	offset int
	reason string
}

func (e *envelopeError) Error() string {
	return fmt.Sprintf("invalid JSON-RPC message at byte %d: %s", e.offset, e.reason)
}

// parseEnvelope reads one newline-delimited message (without its line end).
// The whole text must be RFC 8259 JSON (strings may hold any bytes a lenient
// reader would accept, as a receiving peer's reader would), the top level an
// object without repeated member names (decoded, so "\u0069d" is "id"), and
// the JSON-RPC members well typed. A top-level array is errBatch.
//
// Strictness about the envelope is what makes the proxy's reading agree with
// the peer's: with a repeated "id" or "result", two readers could see two
// different messages.
func parseEnvelope(line []byte) (envelope, error) {
	var env envelope
	s := scanner{in: line}
	s.space()
	if s.pos >= len(line) {
		return env, s.fail("empty message")
	}
	switch line[s.pos] {
	case '{':
	case '[':
		return env, errBatch
	default:
		return env, s.fail("not a JSON object")
	}
	var seen [6]bool // jsonrpc, id, method, params, result, error
	var hasMethod bool
	err := s.object(1, func(nameStart int, raw []byte) error {
		name, err := decodeName(raw, line[nameStart:nameStart+len(raw)+2])
		if err != nil {
			return &envelopeError{nameStart, err.Error()}
		}
		valStart := s.pos
		slot := memberSlot(name)
		if slot == slotResult && s.pos < len(line) && line[s.pos] == '{' {
			env.lists, err = s.resultObject()
		} else {
			err = s.value(1)
		}
		if err != nil {
			return err
		}
		val := line[valStart:s.pos:s.pos]
		if slot < 0 {
			if isDuplicateOther(&s, name) {
				return &envelopeError{nameStart, "repeated member " + strconv.Quote(name)}
			}
			return nil
		}
		if seen[slot] {
			return &envelopeError{nameStart, "repeated member " + strconv.Quote(name)}
		}
		seen[slot] = true
		switch slot {
		case slotID:
			if env.idKey, err = idKey(val); err != nil {
				return &envelopeError{valStart, err.Error()}
			}
			env.id = val
		case slotMethod:
			if val[0] != '"' {
				return &envelopeError{valStart, "method is not a string"}
			}
			if env.method, err = digest.DecodeString(val); err != nil {
				return &envelopeError{valStart, "method: " + err.Error()}
			}
			hasMethod = true
		case slotParams:
			env.params = val
		case slotResult:
			env.result = val
		case slotError:
			env.errorV = val
		}
		return nil
	})
	if err != nil {
		return env, err
	}
	s.space()
	if s.pos != len(line) {
		return env, s.fail("unexpected data after the message")
	}
	switch {
	case hasMethod:
		if env.result != nil || env.errorV != nil {
			return env, s.fail("a request with a result or an error")
		}
		env.kind = kindNotification
		if env.id != nil {
			if env.idKey == idNull {
				return env, s.fail("a request with a null id")
			}
			env.kind = kindRequest
		}
	case env.result != nil && env.errorV != nil:
		return env, s.fail("a response with both a result and an error")
	case env.result != nil || env.errorV != nil:
		if env.id == nil {
			return env, s.fail("a response without an id")
		}
		env.kind = kindResponse
	default:
		return env, s.fail("neither a request nor a response")
	}
	return env, nil
}

// Slots of the JSON-RPC members in parseEnvelope's seen array.
const (
	slotJSONRPC = iota
	slotID
	slotMethod
	slotParams
	slotResult
	slotError
)

// memberSlot returns the slot of a JSON-RPC member name, or -1. Names are
// matched without regard to case, with Unicode simple folding (so that
// "reſult", with U+017F, is "result"): that is how encoding/json, and so
// the go-sdk and many Go peers, match them. A message with "result" and
// "Result" is two results to such a reader, and refused here as repeated.
func memberSlot(name string) int {
	for i, m := range [...]string{"jsonrpc", "id", "method", "params", "result", "error"} {
		if len(name) >= len(m) && len(name) <= 3*len(m) && strings.EqualFold(name, m) {
			return i
		}
	}
	return -1
}

// isDuplicateOther records a member name other than the JSON-RPC ones and
// reports whether it was seen before. Messages rarely have any such member,
// so the set is allocated on first use.
func isDuplicateOther(s *scanner, name string) bool {
	if s.others == nil {
		s.others = map[string]struct{}{}
	}
	if _, ok := s.others[name]; ok {
		return true
	}
	s.others[name] = struct{}{}
	return false
}

// idNull is the idKey of a null id.
const idNull = "null"

// idKey returns the canonical form of a JSON-RPC id, under which a request
// and its response are matched: "s:" and the decoded string, "n:" and the
// number as a float64 (as most JSON-RPC peers read it, so that 1, 1.0 and
// 1e0 are one id), or "null".
func idKey(raw []byte) (string, error) {
	switch c := raw[0]; {
	case c == '"':
		s, err := digest.DecodeString(raw)
		if err != nil {
			return "", fmt.Errorf("id: %w", err)
		}
		return "s:" + s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "", fmt.Errorf("id %s is out of range", raw)
		}
		return "n:" + strconv.FormatFloat(f, 'g', -1, 64), nil
	case string(raw) == "null":
		return idNull, nil
	}
	return "", errors.New("id is neither a string, a number nor null")
}

// scanner checks the RFC 8259 structure of a message while skipping values.
type scanner struct {
	in     []byte
	pos    int
	others map[string]struct{}
}

func (s *scanner) fail(reason string) error {
	return &envelopeError{s.pos, reason}
}

func (s *scanner) space() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value skips one value.
func (s *scanner) value(depth int) error {
	if s.pos >= len(s.in) {
		return s.fail("unexpected end of message")
	}
	switch b := s.in[s.pos]; {
	case b == '{':
		return s.object(depth+1, nil)
	case b == '[':
		return s.array(depth + 1)
	case b == '"':
		_, err := s.str()
		return err
	case b == '-' || (b >= '0' && b <= '9'):
		return s.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.in)-s.pos >= len(lit) && string(s.in[s.pos:s.pos+len(lit)]) == lit {
				s.pos += len(lit)
				return nil
			}
		}
		return s.fail("invalid character where a value was expected")
	}
}

// object reads the object at s.pos (its '{'). For each member it reads the
// name and the ':', then calls each with where the name starts and its raw
// content (without the quotes); each must read the value. A nil each skips
// every value. Every object of a message is read here, so that all agree on
// what a member is.
func (s *scanner) object(depth int, each func(nameStart int, raw []byte) error) error {
	if depth > maxEnvelopeDepth {
		return s.fail("nesting too deep")
	}
	s.pos++
	s.space()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.space()
		if s.pos >= len(s.in) || s.in[s.pos] != '"' {
			return s.fail("expected a member name")
		}
		nameStart := s.pos
		raw, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return s.fail("expected ':' after a member name")
		}
		s.pos++
		s.space()
		if each == nil {
			err = s.value(depth)
		} else {
			err = each(nameStart, raw)
		}
		if err != nil {
			return err
		}
		s.space()
		if s.pos < len(s.in) {
			switch s.in[s.pos] {
			case ',':
				s.pos++
				continue
			case '}':
				s.pos++
				return nil
			}
		}
		return s.fail("expected ',' or '}' in an object")
	}
}

// resultMembers are the members of a list result that the proxy reads;
// each must appear at most once, spelled exactly (see memberSlot).
var resultMembers = [...]string{"tools", "prompts", "resourceTemplates", "nextCursor"}

// resultObject skips the result object of a response and reports which
// list members it has at its top level. A list member or nextCursor that is
// repeated, or spelled otherwise than exactly but the same to a
// case-insensitive reader ("Tools"), is refused: a peer would read
// definitions the proxy did not check.
func (s *scanner) resultObject() (listMembers, error) {
	var lists listMembers
	var seen [len(resultMembers)]bool
	err := s.object(2, func(nameStart int, raw []byte) error {
		name, err := decodeName(raw, s.in[nameStart:nameStart+len(raw)+2])
		if err != nil {
			return &envelopeError{nameStart, err.Error()}
		}
		for i, m := range resultMembers {
			if len(name) < len(m) || len(name) > 3*len(m) || !strings.EqualFold(name, m) {
				continue
			}
			if name != m {
				return &envelopeError{nameStart, "result member " + strconv.Quote(name) + " would be read as " + strconv.Quote(m)}
			}
			if seen[i] {
				return &envelopeError{nameStart, "repeated result member " + strconv.Quote(name)}
			}
			seen[i] = true
			if i < 3 {
				lists |= 1 << i
			}
		}
		return s.value(2)
	})
	if err != nil {
		return 0, err
	}
	return lists, nil
}

func (s *scanner) array(depth int) error {
	if depth > maxEnvelopeDepth {
		return s.fail("nesting too deep")
	}
	s.pos++
	s.space()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		s.space()
		if err := s.value(depth); err != nil {
			return err
		}
		s.space()
		if s.pos < len(s.in) {
			switch s.in[s.pos] {
			case ',':
				s.pos++
				continue
			case ']':
				s.pos++
				return nil
			}
		}
		return s.fail("expected ',' or ']' in an array")
	}
}

// str skips a string and returns its raw content (without the quotes).
// Escapes are checked for form; content bytes are not checked for UTF-8
// (a string outside the definitions may hold anything a peer accepts).
func (s *scanner) str() ([]byte, error) {
	s.pos++
	start := s.pos
	in := s.in
	for s.pos < len(in) {
		b := in[s.pos]
		switch {
		case b == '"':
			s.pos++
			return in[start : s.pos-1], nil
		case b == '\\':
			if s.pos+1 >= len(in) {
				return nil, s.fail("unterminated string")
			}
			switch in[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if s.pos+6 > len(in) || !isHex4(in[s.pos+2:s.pos+6]) {
					return nil, s.fail("invalid \\u escape")
				}
				s.pos += 6
			default:
				return nil, s.fail("invalid escape")
			}
		case b < 0x20:
			return nil, s.fail("unescaped control character in a string")
		default:
			s.pos++
		}
	}
	return nil, s.fail("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
			return false
		}
	}
	return true
}

func (s *scanner) number() error {
	in, p := s.in, s.pos
	if in[p] == '-' {
		p++
	}
	switch {
	case p >= len(in):
		return s.fail("invalid number")
	case in[p] == '0':
		p++
	case in[p] >= '1' && in[p] <= '9':
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
	default:
		return s.fail("invalid number")
	}
	if p < len(in) && in[p] == '.' {
		p++
		d := p
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
		if p == d {
			return s.fail("invalid number")
		}
	}
	if p < len(in) && (in[p] == 'e' || in[p] == 'E') {
		p++
		if p < len(in) && (in[p] == '+' || in[p] == '-') {
			p++
		}
		d := p
		for p < len(in) && in[p] >= '0' && in[p] <= '9' {
			p++
		}
		if p == d {
			return s.fail("invalid number")
		}
	}
	if p < len(in) {
		switch in[p] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
		default:
			return s.fail("invalid number")
		}
	}
	s.pos = p
	return nil
}

// decodeName decodes a member name: raw is its content, quoted the whole
// string token. Names without escapes are the common case and cost no
// decoding; the names of every message cost no allocation either.
func decodeName(raw, quoted []byte) (string, error) {
	for _, b := range raw {
		if b == '\\' || b >= 0x80 {
			return digest.DecodeString(quoted)
		}
	}
	switch string(raw) { // no conversion: the compiler compares the bytes
	case "jsonrpc":
		return "jsonrpc", nil
	case "id":
		return "id", nil
	case "method":
		return "method", nil
	case "params":
		return "params", nil
	case "result":
		return "result", nil
	case "error":
		return "error", nil
	}
	return string(raw), nil
}
