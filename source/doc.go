// Package source gets a [digest.Snapshot] from a SOURCE: a snapshot file, an
// MCP server started as a command over stdio, or an MCP server reached at a
// Streamable HTTP URL.
//
// A live server is asked for everything it offers, page by page, straight
// from the wire: the package speaks JSON-RPC itself over a go-sdk transport
// connection and keeps every result exactly as the server sent it (never the
// typed go-sdk values, which drop unknown members, and never a cached page).
// It speaks both protocol generations: it first tries the 2026-07-28
// server/discover request (SEP-2575), and falls back to the initialize
// handshake (2025-11-25 and earlier) when the server does not support it, as
// the go-sdk client does. The negotiated protocol version is recorded in the
// snapshot. Unless a version is forced, the server is then read again under
// every version of the initialize handshake, each in a session of its own,
// and refused when two serve different definitions or instructions
// ([EraError]; docs/DISCOVERY.md, "Both eras").
//
// Every failure of a live source is a [*StageError] naming the stage (start,
// initialize, tools/list page N, ...). A started server is always shut down
// before [Load] returns, also on error and on context cancellation: its stdin
// is closed, then its process group gets SIGTERM and finally SIGKILL.
package source
