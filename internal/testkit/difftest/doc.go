// Package difftest holds the differential tests of the enforcing proxy
// against the official MCP clients (docs/PROXY.md, "How the proxy is tested
// against real clients"). It has no API: everything is in its tests.
//
// The server is scripted (package scriptserver; under -race the tests run it
// built without the race detector, otherwise the test binary serves it): a
// stdio MCP server that speaks raw JSON-RPC lines (no SDK), honest by
// default and hostile as a transcript says: answers under loosely equal ids,
// members in another case or repeated, answers that differ between the
// proxy's own listing and the client's, list_changed storms, a rewrite of
// the lock file, lines with trailing spaces or CRLF. Each transcript runs
// behind `mcpsign proxy` (built as a host installs it) with two real
// clients: the official TypeScript SDK (testdata/npm/tsclient.mjs, through
// node) and go-sdk (in process, its connection wrapped to read the raw
// results). The oracle: either the session is blocked (the proxy exits 42 or
// 2, no tools/call reached the server after its first scripted line, the
// lock is untouched), or what the client ends up holding (instructions,
// tool, prompt and resource-template definitions, compared by key and JSON
// content) is what the lock approved; in both cases nothing the lock does
// not hold reached the client and every request got exactly one answer in
// time. `mcpsign verify-pin` must agree with the proxy on every transcript a
// listing alone can trigger.
//
// FuzzProxyTranscript runs mutated transcripts through proxy.Run in process
// with the go-sdk client and checks the same oracle.
//
// The TypeScript half needs node and testdata/npm/node_modules (`npm ci`
// there); without them it is skipped, unless MCPSIGN_REQUIRE_E2E=1.
package difftest
