package proxy

import "github.com/mcpsign/mcpsign/internal/mcpwire"

// The JSON-RPC error codes of the proxy's own answers (besides BlockedCode
// and InterruptedCode), named once here.
const (
	// codeInvalidRequest is JSON-RPC's "invalid request": a batch, an id
	// already in flight.
	codeInvalidRequest = -32600
	// codeInvalidParams is JSON-RPC's "invalid params": the name of an
	// unknown tool or prompt, as MCP servers answer it.
	codeInvalidParams = -32602
	// codeInternalError is JSON-RPC's "internal error": too many requests
	// in flight, an HTTP error status with no JSON-RPC answer in its body.
	codeInternalError = -32603
	// codeResourceNotFound is MCP's error code for a resource the server
	// does not have: a refused resources/read is answered with it.
	codeResourceNotFound = -32002
	// codeRefusedServerRequest answers a server request the client may not
	// receive: "method not found", as a client without a handler for it
	// answers.
	codeRefusedServerRequest = mcpwire.CodeMethodNotFound
	// codeRefusedInputRequests answers a client request whose
	// input_required result the proxy refused.
	codeRefusedInputRequests = codeInternalError
)
