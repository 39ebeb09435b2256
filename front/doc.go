// Package front is the HTTP front of 'mcpsign serve' (docs/SERVE.md): an
// http.Handler that speaks Streamable HTTP to many MCP clients at once and
// relays each client session through the same relay core as the stdio
// proxy and the bridge (proxy.Run), so that the same reader, lock, policy,
// roll-forward and audit rules apply and nothing reaches a client before it
// was checked.
//
// A client session (protocols up to 2025-11-25: initialize, Mcp-Session-Id)
// is one go-sdk StreamableServerTransport, which does the HTTP framing
// (POST, the GET stream, SSE), connected to one proxy.Run: a stdio upstream
// runs once per client session, an HTTP upstream gets one upstream session
// per client session. A stateless request of the 2026-07-28 generation (no
// session id, its protocol version in _meta) is relayed through a relay of
// its own, which lists and checks the upstream before the request reaches
// it. Drift seen by any relay marks the upstream drifted (Ready fails) until
// a roll-forward or a Reload; all relays share one policy, whose checks the
// front runs one at a time, so that a signed update rolls the lock forward
// once for all sessions.
package front
