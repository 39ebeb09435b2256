package mcpwire

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// ErrHeader marks a header argument that cannot be sent. Its errors name
// the header (and the environment variable) but never the value.
var ErrHeader = errors.New("bad header")

// ParseHeaders reads repeatable "Name: value" arguments (a command's
// --header) into an http.Header, for the requests to a Streamable HTTP
// server. In a value, ${NAME} is replaced by the environment variable NAME
// as lookupEnv returns it (os.LookupEnv), so that a token need not sit in a
// host's configuration or a shell's history; "$$" is a literal "$", and
// any other "$" is an error. An unset variable is an error naming it. The
// value is trimmed of surrounding space before expansion, never after.
// The resulting header is checked with [CheckHeaders]. Errors wrap
// ErrHeader and never hold a value (docs/REMOTE.md, "Headers").
func ParseHeaders(lines []string, lookupEnv func(name string) (string, bool)) (http.Header, error) {
	h := http.Header{}
	for i, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: header #%d: want \"Name: value\"", ErrHeader, i+1)
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("%w: header #%d: the name is not a valid HTTP header name", ErrHeader, i+1)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		v, err := expandEnv(strings.TrimSpace(value), lookupEnv)
		if err != nil {
			return nil, fmt.Errorf("%w: header %s: %w", ErrHeader, canon, err)
		}
		h.Add(canon, v)
	}
	if err := CheckHeaders(h); err != nil {
		return nil, err
	}
	return h, nil
}

// HasHeader reports whether the "Name: value" lines that ParseHeaders
// reads set the header name (compared canonically, as HTTP does).
func HasHeader(lines []string, name string) bool {
	canon := textproto.CanonicalMIMEHeaderKey(name)
	for _, line := range lines {
		n, _, _ := strings.Cut(line, ":")
		if textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n)) == canon {
			return true
		}
	}
	return false
}

// expandEnv replaces ${NAME} and $$ in s. Its errors name the variable,
// never a value.
func expandEnv(s string, lookupEnv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case strings.HasPrefix(s, "$"):
			b.WriteByte('$')
			s = s[1:]
		case strings.HasPrefix(s, "{"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", errors.New("a ${ without its closing }")
			}
			name := s[1:end]
			if !envName(name) {
				return "", errors.New("${...} holds no environment variable name (want ${NAME}, NAME of letters, digits and _)")
			}
			v, ok := lookupEnv(name)
			if !ok {
				return "", fmt.Errorf("the environment variable %s is not set", name)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return "", fmt.Errorf("the environment variable %s holds a line break or NUL", name)
			}
			b.WriteString(v)
			s = s[end+1:]
		default:
			return "", errors.New("a $ that is neither ${NAME} nor $$ (write $$ for a literal $)")
		}
	}
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// transportHeader reports whether a header (canonical name) is set by the
// Streamable HTTP transport itself.
func transportHeader(canon string) bool {
	switch canon {
	case "Content-Type", "Content-Length", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version",
		"Last-Event-Id", "Transfer-Encoding", "Connection":
		return true
	}
	return false
}

// CheckHeaders checks headers a user gives for a Streamable HTTP server:
// valid names, none the transport sets itself (Content-Type,
// Content-Length, Accept, Mcp-Session-Id, Mcp-Protocol-Version,
// Last-Event-Id, Transfer-Encoding, Connection), no line break or NUL in a
// value. Errors wrap ErrHeader and name the header, never its value.
func CheckHeaders(h http.Header) error {
	for name, values := range h {
		if !validHeaderName(name) {
			return fmt.Errorf("%w: a header name that is not a valid HTTP header name", ErrHeader)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if transportHeader(canon) {
			return fmt.Errorf("%w: header %s is set by the MCP transport and cannot be given", ErrHeader, canon)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("%w: header %s: the value holds a line break or NUL", ErrHeader, canon)
			}
		}
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}
