package mcpwire

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHeaders(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value"
	env := map[string]string{"TOKEN": secret, "EMPTY": "", "CRLF": "a\r\nX-Evil: 1", "DOLLAR": "$x", "AZ_az_09": "v", "_0": "v"}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	for _, tt := range []struct {
		in   []string
		name string
		want []string
		err  string
	}{
		{in: []string{"Authorization: Bearer ${TOKEN}"}, name: "Authorization", want: []string{"Bearer " + secret}},
		{in: []string{"x-api-key:${TOKEN}", "X-Api-Key: k2"}, name: "X-Api-Key", want: []string{secret, "k2"}},
		{in: []string{"X-A: a:b  "}, name: "X-A", want: []string{"a:b"}},
		{in: []string{"X-A: $${TOKEN} costs $$5"}, name: "X-A", want: []string{"${TOKEN} costs $5"}},
		{in: []string{"X-A: ${DOLLAR}${EMPTY}"}, name: "X-A", want: []string{"$x"}},
		{in: []string{"X-A: ${UNSET_VAR}"}, err: "UNSET_VAR is not set"},
		{in: []string{"X-A: $TOKEN"}, err: "neither ${NAME} nor $$"},
		{in: []string{"X-A: ${TOKEN"}, err: "without its closing"},
		{in: []string{"X-A: ${1X}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${CRLF}"}, err: "CRLF holds a line break"},
		{in: []string{"Bearer " + secret}, err: "want \"Name: value\""},
		{in: []string{"Bad Name " + secret + ": x"}, err: "not a valid HTTP header name"},
		{in: []string{"Accept: ${TOKEN}"}, err: "set by the MCP transport"},
		{in: []string{"Mcp-Session-Id: x"}, err: "set by the MCP transport"},
		{in: []string{"X-A: a\x00" + secret}, err: "line break or NUL"},
		// The argument a refusal names, counted from 1.
		{in: []string{"X-A: a", "no colon"}, err: "header #2: want"},
		{in: []string{"X(A): a"}, err: "header #1: the name is not"},
		// Environment variable names: letters, digits (not first) and _,
		// each range to its ends; the bytes just outside refused.
		{in: []string{"X-A: ${AZ_az_09}"}, name: "X-A", want: []string{"v"}},
		{in: []string{"X-A: ${_0}"}, name: "X-A", want: []string{"v"}},
		{in: []string{"X-A: ${0A}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${9A}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A@}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A[}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A`}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A{}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A/}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A:}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${A-B}"}, err: "no environment variable name"},
		{in: []string{"X-A: ${}"}, err: "no environment variable name"},
		// Header names: RFC 9110 tokens; a space or a delimiter refused.
		{in: []string{"X A: v"}, err: "not a valid HTTP header name"},
		{in: []string{"\"X: v"}, err: "not a valid HTTP header name"},
		{in: []string{"X\x7f: v"}, err: "not a valid HTTP header name"},
		{in: []string{"X~!#$%&'*+-.^_`|: v"}, name: "X~!#$%&'*+-.^_`|", want: []string{"v"}},
	} {
		h, err := ParseHeaders(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrHeader) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			} else if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "X-Evil") {
				t.Errorf("%q: the error shows a value: %v", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got := h.Values(tt.name); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: %s = %q, want %q", tt.in, tt.name, got, tt.want)
		}
	}
}

// FuzzParseHeaders: whatever the argument, a parsed header holds no line
// break or NUL, and no error shows the environment's value or the part of
// the argument after its colon.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer ${TOKEN}", "X: $$${TOKEN}$$", "X: ${", "X: $", "Bad Name: v", "X:${TOKEN}${TOKEN}", "X: ${UNSET}"} {
		f.Add(s)
	}
	const secret = "fuzz-secret-value"
	lookup := func(name string) (string, bool) { return secret, name == "TOKEN" }
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHeaders([]string{line}, lookup)
		if err != nil {
			_, value, _ := strings.Cut(line, ":")
			if strings.Contains(err.Error(), secret) || len(strings.TrimSpace(value)) > 3 && strings.Contains(err.Error(), strings.TrimSpace(value)) {
				t.Fatalf("error %q shows a value", err)
			}
			return
		}
		for _, vs := range h {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("value %q", v)
				}
			}
		}
	})
}

func TestHasHeader(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		lines []string
		name  string
		want  bool
	}{
		{[]string{"Authorization: Bearer ${T}"}, "Authorization", true},
		{[]string{"X-A: 1", "  authorization :x"}, "Authorization", true},
		{[]string{"X-Authorization: x", "X-A: Authorization: x"}, "Authorization", false},
		{[]string{"no colon"}, "No Colon", false},
		{nil, "Authorization", false},
		{[]string{"x-api-key: k"}, "X-API-Key", true},
	} {
		if got := HasHeader(tt.lines, tt.name); got != tt.want {
			t.Errorf("HasHeader(%q, %q) = %v, want %v", tt.lines, tt.name, got, tt.want)
		}
	}
}
