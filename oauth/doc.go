// Package oauth signs mcpsign in to a remote (Streamable HTTP) MCP server
// that is protected with OAuth 2.1, as the MCP authorization specification
// says a client does, and gives what reads that server an
// [http.RoundTripper] that sends the token.
//
// It is a package of its own, beside source and proxy rather than inside
// either, because both plug it in: the HTTP source (listing a remote
// server) and the bridge (proxy -- https://…) take an *http.Client or an
// http.RoundTripper in their options, and [New] makes one. It imports no
// other mcpsign package but the internal leaves (atomic files, file locks,
// escaping), so that the proxy links no more than it needs.
//
// The protocol work is go-sdk's auth package: protected-resource metadata
// discovery (RFC 9728) from the 401's WWW-Authenticate, authorization server
// metadata (RFC 8414), dynamic client registration (RFC 7591) or a
// pre-registered client ID, the authorization code grant with PKCE (S256),
// the resource indicator (RFC 8707), the state and iss checks (RFC 9207).
// This package adds what go-sdk leaves to the client: the loopback redirect
// (127.0.0.1, a random port or the given one), the browser (an opener
// function) and the URL on stderr, the token cache, refresh, and messages
// that say what failed and never carry a secret.
//
// Tokens are cached one file per server URL and client, mode 0600, under
// the user's config directory (os.UserConfigDir()/mcpsign/oauth), written
// atomically and under a file lock (docs/REMOTE.md "Authentication").
//
// No access token, refresh token, authorization code, client secret or
// header value ever appears in an error or in what is printed: errors from
// the authorization server are reduced to their status and error code, and
// every message is scrubbed of the secrets at hand before it leaves.
package oauth
