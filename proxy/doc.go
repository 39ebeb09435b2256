// Package proxy is the enforcing proxy of mcpsign: it relays
// newline-delimited JSON-RPC between a client and an MCP server byte for
// byte, letting nothing reach the client that a Policy does not approve.
// The server is an Upstream: a child process on its stdio
// (CommandUpstream), a Streamable HTTP endpoint (HTTPUpstream), or a go-sdk
// transport such as a server in the host's own process
// (TransportUpstream); one relay checks them all alike.
//
// Run holds the client's traffic after the handshake until the proxy has
// listed every page of the server's tools, prompts and resource templates
// itself (with request ids the client cannot use, whose answers are never
// forwarded) and the policy approved them with the instructions; it then
// checks every list result the client receives and lists again on every
// list_changed notification. When the policy refuses, Run answers every
// held, pending and later request with JSON-RPC error BlockedCode, stops
// the server (a child's whole process group), writes the report (escaped)
// and returns a *BlockedError once the client leaves.
//
// LockPolicy is the Policy of a lock file (package pin): drift rules,
// signed first use, and signed updates that roll the lock forward when the
// publisher the lock records signed them for the same server and they do
// not go back; a lock another process wrote is adopted only when it is at
// least as strong and verifies again. The verifier is a VerifyFunc:
// pinbundle.Verifier verifies in the same process, CommandVerifier hands
// the definitions to another process (mcpsign-proxy runs 'mcpsign
// proxy-verify'). The format of what the proxy does on the wire is
// documented in docs/PROXY.md.
package proxy
