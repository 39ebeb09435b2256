package proxy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
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
	env, err := readEnvelope(line)
	var se *jsonscan.Error
	if errors.As(err, &se) {
		return env, &envelopeError{se.Offset, se.Reason}
	}
	return env, err
}

func readEnvelope(line []byte) (envelope, error) {
	var env envelope
	s := &jsonscan.Scanner{In: line, MaxDepth: maxEnvelopeDepth, Escapes: true}
	s.Space()
	if s.Pos >= len(line) {
		return env, s.Fail("empty message")
	}
	switch line[s.Pos] {
	case '{':
	case '[':
		return env, errBatch
	default:
		return env, s.Fail("not a JSON object")
	}
	var seen [6]bool // jsonrpc, id, method, params, result, error
	var others map[string]struct{}
	var hasMethod bool
	err := s.Object(0, func(nameSpan jsonscan.Span) error {
		nameStart := nameSpan.Start - 1
		name, err := decodeName(line[nameSpan.Start:nameSpan.End], line[nameStart:nameSpan.End+1])
		if err != nil {
			return &envelopeError{nameStart, err.Error()}
		}
		valStart := s.Pos
		slot := memberSlot(name)
		if slot == slotResult && s.Pos < len(line) && line[s.Pos] == '{' {
			env.lists, err = resultObject(s)
		} else {
			_, err = s.Value(1)
		}
		if err != nil {
			return err
		}
		val := line[valStart:s.Pos:s.Pos]
		if slot < 0 {
			// Messages rarely have members of their own: the set of their
			// names is made on first use.
			if others == nil {
				others = map[string]struct{}{}
			}
			if _, dup := others[name]; dup {
				return &envelopeError{nameStart, "repeated member " + strconv.Quote(name)}
			}
			others[name] = struct{}{}
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
	s.Space()
	if s.Pos != len(line) {
		return env, s.Fail("unexpected data after the message")
	}
	switch {
	case hasMethod:
		if env.result != nil || env.errorV != nil {
			return env, s.Fail("a request with a result or an error")
		}
		env.kind = kindNotification
		if env.id != nil {
			if env.idKey == idNull {
				return env, s.Fail("a request with a null id")
			}
			env.kind = kindRequest
		}
	case env.result != nil && env.errorV != nil:
		return env, s.Fail("a response with both a result and an error")
	case env.result != nil || env.errorV != nil:
		if env.id == nil {
			return env, s.Fail("a response without an id")
		}
		env.kind = kindResponse
	default:
		return env, s.Fail("neither a request nor a response")
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

// resultMembers are the members of a list result that the proxy reads;
// each must appear at most once, spelled exactly (see memberSlot).
var resultMembers = [...]string{"tools", "prompts", "resourceTemplates", "nextCursor"}

// resultObject skips the result object of a response and reports which
// list members it has at its top level. A list member or nextCursor that is
// repeated, or spelled otherwise than exactly but the same to a
// case-insensitive reader ("Tools"), is refused: a peer would read
// definitions the proxy did not check.
func resultObject(s *jsonscan.Scanner) (listMembers, error) {
	var lists listMembers
	var seen [len(resultMembers)]bool
	err := s.Object(1, func(nameSpan jsonscan.Span) error {
		nameStart := nameSpan.Start - 1
		name, err := decodeName(s.In[nameSpan.Start:nameSpan.End], s.In[nameStart:nameSpan.End+1])
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
		_, err = s.Value(2)
		return err
	})
	if err != nil {
		return 0, err
	}
	return lists, nil
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
