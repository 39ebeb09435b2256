package netguard

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

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
// fragment; plain http only to a loopback host (IsLoopbackHost),
// else only under r.AllowInsecureHTTP and without credentials. It is the one
// rule of every command that reads a server, the proxy's bridge and the
// OAuth sign-in; an error wraps ErrInsecureURL or ErrInsecureCredentials
// and names the URL as it may be shown (ShownURL).
func CheckServerURL(u *url.URL, r URLRule) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		switch {
		case IsLoopbackHost(u.Hostname()):
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
