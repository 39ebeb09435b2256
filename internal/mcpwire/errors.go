package mcpwire

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// What a server can be refused for; errors wrap one of these.
var (
	// ErrProtocol: the server broke JSON-RPC or MCP: a message that does not
	// parse strictly, a response that answers no pending request, an
	// unsupported protocol version, a list result that is not one.
	ErrProtocol = errors.New("protocol error")
	// ErrCursorLoop: a list result repeated an earlier cursor.
	ErrCursorLoop = errors.New("cursor loop")
	// ErrTooManyPages: a listing had more pages than allowed.
	ErrTooManyPages = errors.New("too many pages")
	// ErrListingTooLarge: the pages of a listing, all kinds together, held
	// more bytes than its budget.
	ErrListingTooLarge = errors.New("listing too large")
)

// RPCError is a JSON-RPC error answer to one of mcpsign's own requests.
type RPCError struct {
	Method  string
	Code    int64
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("server answered %s with error %d: %s", e.Method, e.Code, textsafe.RawQuote(textsafe.Cut(e.Message, 512)))
}

// ReadRPCError reads the error object of an answer to method strictly
// (digest.ReadMembers: a repeated or case-variant "code" or "message" is
// refused). What cannot be read is left out: an unreadable object is an
// RPCError with code 0 and the message "unreadable error object".
func ReadRPCError(method string, raw []byte) *RPCError {
	e := &RPCError{Method: method, Message: "unreadable error object"}
	m, err := digest.ReadMembers(raw, "code", "message", "data")
	if err != nil {
		return e
	}
	if c, err := strconv.ParseInt(string(m["code"]), 10, 64); err == nil {
		e.Code = c
	}
	if msg, err := digest.DecodeString(m["message"]); err == nil {
		e.Message = msg
	}
	return e
}

// ListError is a failure while listing one page of one kind.
type ListError struct {
	Method string // the list method
	Page   int    // from 1
	Err    error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("%s page %d: %v", e.Method, e.Page, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }
