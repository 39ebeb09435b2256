package mcpwire

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
