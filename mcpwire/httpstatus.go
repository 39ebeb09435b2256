package mcpwire

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpsign/mcpsign/internal/netguard"
)

// Errors a [StatusError] matches with errors.Is.
var (
	// ErrUnauthorized: the server answered 401: it wants credentials.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the server answered 403: the credentials sent do not
	// allow the request.
	ErrForbidden = errors.New("forbidden")
)

// StatusError is an HTTP status that refuses a request to a Streamable HTTP
// server outright (not a JSON-RPC error).
type StatusError struct {
	Method string // the HTTP method: POST, GET, DELETE
	Status int
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the server refused the %s request with %d %s", e.Method, e.Status, http.StatusText(e.Status))
	switch e.Status {
	case http.StatusUnauthorized:
		msg += ": it wants credentials"
	case http.StatusForbidden:
		msg += ": the credentials sent do not allow it"
	}
	return msg
}

// Is matches ErrUnauthorized for 401 and ErrForbidden for 403.
func (e *StatusError) Is(target error) bool {
	return target == ErrUnauthorized && e.Status == http.StatusUnauthorized ||
		target == ErrForbidden && e.Status == http.StatusForbidden
}

// MaxRedirects is the most redirects followed for one request, as the
// TypeScript SDK.
const MaxRedirects = 5

// ErrRedirect marks a redirect that is not followed.
var ErrRedirect = errors.New("redirect not followed")

// CheckRedirect is an http.Client CheckRedirect that follows a redirect
// only where every official client would, to the same place: within the
// origin of the first request (scheme, host and port exactly), without
// user info, at most MaxRedirects times, and for a request other than GET
// only 307 and 308 (301, 302 and 303 turn a POST into a GET in Go, and the
// TypeScript SDK does not follow them). Headers given for a server thus
// never leave its origin. The error wraps ErrRedirect and names the target
// origin only (its path and query may carry a token).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	first := via[0]
	if origin(req.URL) != origin(first.URL) {
		return fmt.Errorf("%w: a redirect to another origin (%s), and headers go to %s only", ErrRedirect, origin(req.URL), origin(first.URL))
	}
	if req.URL.User != nil {
		return fmt.Errorf("%w: a redirect to a URL with user info", ErrRedirect)
	}
	if len(via) > MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrRedirect, MaxRedirects)
	}
	if first.Method != http.MethodGet && req.Response != nil {
		if s := req.Response.StatusCode; s != http.StatusTemporaryRedirect && s != http.StatusPermanentRedirect {
			return fmt.Errorf("%w: a %d redirect of a %s (only 307 and 308 keep the method and body)", ErrRedirect, s, first.Method)
		}
	}
	return nil
}

// origin returns scheme://host[:port] of u, lowercased.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// ErrInsecureURL is wrapped by the error of a plain http:// URL of a server
// that is not on a loopback host, unless allowed (URLRule, CheckServerURL).
var ErrInsecureURL = errors.New("plain http:// is allowed only to a server on a loopback host (localhost, 127.0.0.1, ::1): anyone on the way could read and change what it says")

// ErrInsecureCredentials is wrapped by the error of a plain http:// URL of a
// server that is not on a loopback host when credentials would go with the
// requests (a header, OAuth): refused even when plain http is allowed.
var ErrInsecureCredentials = errors.New("credentials (a header, an OAuth token) are never sent over plain http:// to a server that is not on a loopback host")

// URLRule says what CheckServerURL lets through beyond https and plain http to a
// loopback host.
type URLRule struct {
	// AllowInsecureHTTP lets plain http:// reach a server that is not on a
	// loopback host, when no credentials go with the requests.
	AllowInsecureHTTP bool
	// Credentials reports that credentials would go with the requests (a
	// header, an OAuth token): plain http:// off loopback is then refused,
	// AllowInsecureHTTP or not.
	Credentials bool
}

// CheckServerURL checks the URL of a Streamable HTTP server before anything is
// sent to it (docs/REMOTE.md "Plain http"): http or https with a host and no
// fragment; plain http only to a loopback host (netguard.IsLoopbackHost),
// else only under r.AllowInsecureHTTP and without credentials. It is the one
// rule of every command that reads a server, the proxy's bridge and the
// OAuth sign-in; an error wraps ErrInsecureURL or ErrInsecureCredentials
// and names the URL as it may be shown (ShownURL).
func CheckServerURL(u *url.URL, r URLRule) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		switch {
		case netguard.IsLoopbackHost(u.Hostname()):
		case r.Credentials:
			return fmt.Errorf("%s: %w", ShownURL(u), ErrInsecureCredentials)
		case !r.AllowInsecureHTTP:
			return fmt.Errorf("%s: %w", ShownURL(u), ErrInsecureURL)
		}
	default:
		return fmt.Errorf("%s is not an http(s) URL", ShownURL(u))
	}
	if u.Host == "" {
		return fmt.Errorf("%s has no host", ShownURL(u))
	}
	if u.Fragment != "" {
		return fmt.Errorf("%s has a fragment", ShownURL(u))
	}
	return nil
}

// ShownURL is a server URL as it may be shown in a message or a log: without
// user info, query or fragment, any of which may carry a credential (a
// password, a token as user name, an api_key parameter).
func ShownURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	return v.String()
}
