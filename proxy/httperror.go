package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// ConnectError is what Run returns when the remote server could not be
// used at all, or the session with it could not go on: it could not be
// reached, TLS failed, it asks for credentials or refuses them, redirects,
// no longer knows the session, did not accept a message in time, or a
// message for it could not be sent.
// Its message is one line that names what failed and what to do.
type ConnectError struct {
	// URL is the endpoint as shown: no user info or query (netguard.ShownURL).
	URL string
	// Status is the HTTP status when the server answered (0 otherwise).
	Status int
	// What says what failed, Hint what to do; Err is the cause, if any.
	What, Hint string
	Err        error
}

func (e *ConnectError) Error() string {
	msg := e.What
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *ConnectError) Unwrap() error { return e.Err }

// ErrInsecureURL is the error of an http:// URL whose host is not a
// loopback address (netguard.ErrInsecureURL, the one rule).
var ErrInsecureURL = netguard.ErrInsecureURL

// CheckURL checks a remote server's URL as every command does
// (netguard.CheckServerURL): https, or http to a loopback host, or, under
// r, plain http elsewhere without credentials; a host; no fragment.
func CheckURL(u *url.URL, r netguard.URLRule) error { return netguard.CheckServerURL(u, r) }

// originOf is the scheme and host of u, lowercased.
func originOf(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// transportError names why the server could not be reached.
func (u *httpConn) transportError(err error) error {
	if u.ctx.Err() != nil {
		return io.EOF // stopped
	}
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, mcpwire.ErrRedirect):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "the server at " + u.redacted() + " redirects",
			Hint: "a redirect is followed within the server's origin only, and for a POST only with 307 or 308: give the final URL"}
	case errors.As(err, &cert) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &rec):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "TLS with " + u.origin + " failed",
			Hint: "the server's certificate is not trusted for this host name: check the URL, or the system's certificate store"}
	case errors.As(err, &dns):
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "cannot resolve the server's host " + u.origin,
			Hint: "check the URL and the network"}
	case errors.As(err, &op) && op.Op == "dial":
		return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
			What: "cannot connect to " + u.redacted(),
			Hint: "is the server running, and is the URL right?"}
	}
	return &ConnectError{URL: u.redacted(), Err: unwrapURL(err),
		What: "the request to " + u.redacted() + " failed",
		Hint: "check the server and the network"}
}

// unwrapURL drops the *url.Error around err, whose message repeats the
// URL unredacted.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func messageWhat(m *mcpwire.Message) string {
	if m.Kind == mcpwire.KindResponse {
		return "response"
	}
	return textsafe.Cut(m.Method, 100) + " notification"
}

func statusText(resp *http.Response) string {
	return textsafe.Cut(resp.Status, 100)
}

// Sentinels in the chain of Run's errors, for errors.Is: ErrUnauthorized
// and ErrForbidden in a *ConnectError when a remote server answered 401 or
// 403; ErrProtocol and ErrMessageTooLarge in a *BlockedError's Err when the
// server broke the protocol or sent a message over
// Options.MaxMessageBytes. They are the wire layer's own values (package
// source exports the same ones), so one errors.Is serves both packages.
var (
	ErrUnauthorized    = mcpwire.ErrUnauthorized
	ErrForbidden       = mcpwire.ErrForbidden
	ErrProtocol        = mcpwire.ErrProtocol
	ErrMessageTooLarge = mcpwire.ErrMessageTooLarge
)
