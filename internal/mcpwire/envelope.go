package mcpwire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/jsonscan"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// MaxDepth bounds the nesting of a message: go-sdk v1.8.0 refuses a
// message that nests deeper than 1000 levels (objects and arrays, the
// envelope included), so a deeper one would reach one official client and
// not the other.
const MaxDepth = 1000

// Kind is what a JSON-RPC message is.
type Kind uint8

// The kinds of message.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid message"
}

// Lists flags the definition lists found at the top level of a result
// object: a result that carries definitions is checked whatever request it
// answers.
type Lists uint8

// The definition lists of a result.
const (
	HasTools Lists = 1 << iota
	HasPrompts
	HasResourceTemplates
	// HasResources: a "resources" array (resources/list), the static
	// resources a policy may pin (docs/POLICY.md).
	HasResources
)

// ListFlag returns the flag of kind k's list member.
func ListFlag(k digest.Kind) Lists {
	switch k {
	case digest.KindTool:
		return HasTools
	case digest.KindPrompt:
		return HasPrompts
	case digest.KindResource:
		return HasResources
	}
	return HasResourceTemplates
}

// Message is the part of one JSON-RPC message that mcpsign reads: what it
// is, its method, its id, and the exact bytes of its params, result and
// error. Every slice points into the bytes it was parsed from.
type Message struct {
	Kind   Kind
	Method string
	ID     []byte // raw id bytes, exactly as sent; nil when absent
	Params []byte
	Result []byte
	Error  []byte
	Lists  Lists // the definition lists of an object result
	// Versioned says the message has "jsonrpc":"2.0". Both official SDKs
	// drop a message without it; a reader of server messages treats its
	// absence as a protocol violation.
	Versioned bool
}

// NullID reports whether the message's id is null.
func (m *Message) NullID() bool { return string(m.ID) == "null" }

// ErrBatch marks a message that is a JSON-RPC batch (an array), which MCP
// removed in 2025-06-18 and mcpsign neither relays nor reads.
var ErrBatch = errors.New("JSON-RPC batches are not supported")

// SyntaxError says why bytes are not a JSON-RPC message mcpsign can read.
type SyntaxError struct {
	Offset int
	Reason string
	// Text is what the peer wrote around Offset, quoted as it is (raw: the
	// edge that prints the error escapes it, internal/textsafe) and cut
	// short at UTF-8 boundaries; set by
	// ParseFromServer, empty from Parse.
	Text string
}

func (e *SyntaxError) Error() string {
	msg := fmt.Sprintf("invalid JSON-RPC message at byte %d: %s", e.Offset, e.Reason)
	if e.Text != "" {
		msg += "; the server wrote " + e.Text
	}
	return msg
}

// excerptBytes is about how much of a refused message its error shows.
const excerptBytes = 80

// excerpt returns the bytes of data around offset, quoted (raw: escaped
// where the error is printed), cut at rune boundaries, with "…" where it was cut.
func excerpt(data []byte, offset int) string {
	start := max(0, min(offset, len(data))-excerptBytes/4)
	for start > 0 && !utf8.RuneStart(data[start]) {
		start--
	}
	end := min(len(data), start+excerptBytes)
	for end > start && end < len(data) && !utf8.RuneStart(data[end]) {
		end--
	}
	if end == start {
		// No rune starts within the excerpt (bytes that are not UTF-8):
		// cut it where it is, raw as the rest.
		end = min(len(data), start+excerptBytes)
	}
	s := textsafe.RawQuote(string(data[start:end]))
	if start > 0 {
		s = "…" + s
	}
	if end < len(data) {
		s += "…"
	}
	return s
}

// Parse reads one message (a line without its line end, or the body of an
// HTTP message). The whole text must be RFC 8259 JSON (strings may hold any
// bytes a lenient reader would accept, as a receiving peer's reader would),
// the top level an object, and the JSON-RPC members well typed. A top-level
// array is ErrBatch; anything else unreadable a *SyntaxError.
//
// Member names are decoded ("\u0069d" is "id") and must be unique. A name
// that is not one of the JSON-RPC members but equal to one under Unicode
// case folding ("ID", "Result", "reſult" with U+017F) is refused: a
// case-insensitive reader (encoding/json, and so many Go peers) reads it as
// that member, a case-sensitive one (the TypeScript SDK, go-sdk) does not,
// and the two would see two different messages (docs/PROXY.md, "Reading
// what a server says"). The same holds for the list members of a result
// ("tools", "prompts", "resourceTemplates", "nextCursor").
func Parse(data []byte) (Message, error) {
	m, err := parse(data)
	var se *jsonscan.Error
	if errors.As(err, &se) {
		return m, &SyntaxError{Offset: se.Offset, Reason: se.Reason}
	}
	return m, err
}

func parse(data []byte) (Message, error) {
	var m Message
	s := &jsonscan.Scanner{In: data, MaxDepth: MaxDepth - 1, Escapes: true} // the scanner counts from 0
	s.Space()
	if s.Pos >= len(data) {
		return m, s.Fail("empty message")
	}
	switch data[s.Pos] {
	case '{':
	case '[':
		return m, ErrBatch
	default:
		return m, s.Fail("not a JSON object")
	}
	var seen [len(envelopeMembers)]bool
	var others map[string]struct{}
	var hasMethod bool
	err := s.Object(0, func(nameSpan jsonscan.Span) error {
		nameStart := nameSpan.Start - 1
		name, err := decodeName(data[nameSpan.Start:nameSpan.End], data[nameStart:nameSpan.End+1])
		if err != nil {
			return &SyntaxError{Offset: nameStart, Reason: err.Error()}
		}
		valStart := s.Pos
		slot, err := memberSlot(envelopeMembers[:], name)
		if err != nil {
			return &SyntaxError{Offset: nameStart, Reason: err.Error()}
		}
		if slot == slotResult && s.Pos < len(data) && data[s.Pos] == '{' {
			m.Lists, err = resultObject(s)
		} else {
			_, err = s.Value(1)
		}
		if err != nil {
			return err
		}
		val := data[valStart:s.Pos:s.Pos]
		if slot < 0 {
			// Messages rarely have members of their own: the set of their
			// names is made on first use.
			if others == nil {
				others = map[string]struct{}{}
			}
			if _, dup := others[name]; dup {
				return &SyntaxError{Offset: nameStart, Reason: "repeated member " + textsafe.RawQuote(name)}
			}
			others[name] = struct{}{}
			return nil
		}
		if seen[slot] {
			return &SyntaxError{Offset: nameStart, Reason: "repeated member " + textsafe.RawQuote(name)}
		}
		seen[slot] = true
		switch slot {
		case slotJSONRPC:
			if string(val) != `"2.0"` {
				return &SyntaxError{Offset: valStart, Reason: "jsonrpc is not \"2.0\""}
			}
			m.Versioned = true
		case slotID:
			if err := checkID(val); err != nil {
				return &SyntaxError{Offset: valStart, Reason: err.Error()}
			}
			m.ID = val
		case slotMethod:
			if val[0] != '"' {
				return &SyntaxError{Offset: valStart, Reason: "method is not a string"}
			}
			if m.Method, err = digest.DecodeString(val); err != nil {
				return &SyntaxError{Offset: valStart, Reason: "method: " + err.Error()}
			}
			hasMethod = true
		case slotParams:
			m.Params = val
		case slotResult:
			m.Result = val
		case slotError:
			m.Error = val
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	s.Space()
	if s.Pos != len(data) {
		return m, s.Fail("unexpected data after the message")
	}
	switch {
	case hasMethod:
		if m.Result != nil || m.Error != nil {
			return m, s.Fail("a request with a result or an error")
		}
		m.Kind = KindNotification
		if m.ID != nil {
			if m.NullID() {
				return m, s.Fail("a request with a null id")
			}
			m.Kind = KindRequest
		}
	case m.Result != nil && m.Error != nil:
		return m, s.Fail("a response with both a result and an error")
	case m.Result != nil || m.Error != nil:
		if m.ID == nil {
			return m, s.Fail("a response without an id")
		}
		m.Kind = KindResponse
	default:
		return m, s.Fail("neither a request nor a response")
	}
	return m, nil
}

// envelopeMembers are the JSON-RPC members, in the order of their slots.
var envelopeMembers = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// Slots of the JSON-RPC members in parse's seen array.
const (
	slotJSONRPC = iota
	slotID
	slotMethod
	slotParams
	slotResult
	slotError
)

// memberSlot returns the index of name among known, or -1 when it is none
// of them. A name equal to a known one only under Unicode simple case
// folding (how encoding/json matches member names: "Result", "reſult") is
// an error: readers would disagree on what it is.
func memberSlot(known []string, name string) (int, error) {
	for i, m := range known {
		if name == m {
			return i, nil
		}
	}
	for _, m := range known {
		if digest.CaseVariant(name, m) {
			return -1, fmt.Errorf("member %s would be read as %s by a case-insensitive reader", textsafe.RawQuote(name), textsafe.RawQuote(m))
		}
	}
	return -1, nil
}

// checkID checks that raw is a JSON-RPC id: a string, a number or null.
// Its bytes are kept as they are: a response is tied to a request only by a
// byte-identical id (see Pending).
func checkID(raw []byte) error {
	switch c := raw[0]; {
	case c == '"':
		if _, err := digest.DecodeString(raw); err != nil {
			return fmt.Errorf("id: %w", err)
		}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return nil // the scanner checked the number grammar
	case string(raw) == "null":
		return nil
	}
	return errors.New("id is neither a string, a number nor null")
}

// resultMembers are the members of a list result that mcpsign reads; each
// must appear at most once, spelled exactly (see memberSlot).
// resultMembers are the list members of a result, in the order of their
// Lists flags, then nextCursor.
var resultMembers = [...]string{"tools", "prompts", "resourceTemplates", "resources", "nextCursor"}

// resultObject skips the result object of a response and reports which
// list members it has at its top level. A list member or nextCursor that is
// repeated, or spelled otherwise than exactly but the same to a
// case-insensitive reader ("Tools"), is refused: a peer would read
// definitions mcpsign did not check.
func resultObject(s *jsonscan.Scanner) (Lists, error) {
	var lists Lists
	var seen [len(resultMembers)]bool
	err := s.Object(1, func(nameSpan jsonscan.Span) error {
		nameStart := nameSpan.Start - 1
		name, err := decodeName(s.In[nameSpan.Start:nameSpan.End], s.In[nameStart:nameSpan.End+1])
		if err != nil {
			return &SyntaxError{Offset: nameStart, Reason: err.Error()}
		}
		i, err := memberSlot(resultMembers[:], name)
		if err != nil {
			return &SyntaxError{Offset: nameStart, Reason: "result " + err.Error()}
		}
		if i >= 0 {
			if seen[i] {
				return &SyntaxError{Offset: nameStart, Reason: "repeated result member " + textsafe.RawQuote(name)}
			}
			seen[i] = true
			if i < len(resultMembers)-1 {
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

// ParseFromServer is Parse for a message a server sent: it must also carry
// "jsonrpc":"2.0", without which both official SDKs drop a message that
// mcpsign would have read. Every error wraps ErrProtocol.
func ParseFromServer(data []byte) (Message, error) {
	m, err := Parse(data)
	var se *SyntaxError
	if errors.As(err, &se) {
		se.Text = excerpt(data, se.Offset)
	}
	if err == nil && !m.Versioned {
		err = errors.New(`a message without "jsonrpc":"2.0"`)
	}
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return m, nil
}
