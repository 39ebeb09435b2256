// Package mcpwire is mcpsign's one reader of what an MCP server says: every
// byte a server sends reaches mcpsign through it, for the listing commands
// (package source) and the enforcing proxy alike, so that what mcpsign
// checks is what a real client holds.
//
// It owns the JSON-RPC framing of stdio lines and Streamable HTTP bodies,
// the strict envelope reader ([Parse]: repeated and case-variant member
// names refused, batches refused, one message per line), the rule that ties
// a response to a request ([Pending]: a byte-identical id, nothing else),
// the hello of both protocol generations ([ParseInitialize],
// [ParseDiscover]), the listing of every page of every kind with its bounds
// ([ListAll]), and (in mcpwire/proctree) the server's process tree.
//
// For Streamable HTTP it reads each response body to its end before
// anything of its answer is used: [ReadContentType] (the body's framing),
// [EventReader] (a strict text/event-stream decoder), [StreamCheck] (one
// answer per POSTed request, only notifications after it, nothing but
// requests and notifications on a GET stream), [ReadResponse] (all of it,
// bounded in bytes and time), [SessionIDs] (one session id per
// connection), and [ParseHeaders] (user headers with ${VAR} from the
// environment). The rules are those of docs/REMOTE.md, "Reading Streamable
// HTTP".
//
// The rules are those of docs/PROXY.md, "Reading what a server says": as
// strict as the strictest official client (the TypeScript SDK, go-sdk) and
// no looser than the loosest, so that no message can mean one thing to
// mcpsign and another to a client.
package mcpwire
