package hosts

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRemote: a remote entry of every host format becomes a stdio entry
// that runs this mcpsign's proxy in front of its URL, with its headers
// translated for mcpsign; wrap twice is wrap once; unwrap gives back the
// original bytes. An entry that cannot be wrapped is left as it was, with
// the reason.
func TestRemote(t *testing.T) {
	opts := WrapOptions{Self: self, Policy: policy, IsSelf: isSelf}
	for _, tc := range []struct {
		name, host, file, data string
		// headers are the --header values wrap writes; reason, when not
		// empty, a part of why the entry is not wrapped.
		headers []string
		reason  string
	}{
		{"vscode http with ${env:}", "vscode", ".vscode/mcp.json",
			"{\n\t\"servers\": {\n\t\t\"gh\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://api.example/mcp/\", // the API\n\t\t\t\"headers\": {\"Authorization\": \"Bearer ${env:GH_TOKEN}\"},\n\t\t},\n\t},\n}\n",
			[]string{"Authorization: Bearer ${GH_TOKEN}"}, ""},
		{"vscode ${input:}", "vscode", ".vscode/mcp.json",
			`{"inputs": [{"id": "tok", "type": "promptString", "password": true}], "servers": {"gh": {"type": "http", "url": "https://api.example/mcp/", "headers": {"Authorization": "Bearer ${input:tok}"}}}}`,
			nil, "${input…}"},
		{"vscode sse", "vscode", ".vscode/mcp.json",
			`{"servers": {"s": {"type": "sse", "url": "https://x.example/sse"}}}`, nil, `type is "sse"`},
		{"claude-code http with ${VAR:-default}", "claude-code", ".mcp.json",
			`{"mcpServers": {"r": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-Api-Key": "${API_KEY:-none}", "X-Client": "cli"}}}}`,
			[]string{"X-Api-Key: ${API_KEY:-none}", "X-Client: cli"}, ""},
		{"claude-code ${VAR} in the URL", "claude-code", ".mcp.json",
			`{"mcpServers": {"r": {"type": "http", "url": "https://${HOST}/mcp"}}}`, nil, "host variable"},
		{"cursor url and ${env:}", "cursor", ".cursor/mcp.json",
			"{\r\n  \"mcpServers\": {\r\n    \"r\": {\"url\": \"https://x.example/mcp\", \"headers\": {\"Authorization\": \"Bearer ${env:T}\"}}\r\n  }\r\n}\r\n",
			[]string{"Authorization: Bearer ${T}"}, ""},
		{"windsurf serverUrl", "windsurf", "mcp_config.json",
			`{"mcpServers":{"w":{"serverUrl":"https://w.example/mcp"}}}`, nil, ""},
		{"windsurf url", "windsurf", "mcp_config.json",
			`{"mcpServers":{"w":{"url":"https://w.example/mcp"}}}`, nil, `"serverUrl" spelling`},
		{"gemini httpUrl", "gemini", ".gemini/settings.json",
			`{"mcpServers": {"h": {"httpUrl": "https://h.example/mcp", "headers": {"Authorization": "Bearer $TOKEN"}, "timeout": 5000}}}`,
			[]string{"Authorization: Bearer $TOKEN"}, ""},
		{"gemini url is SSE", "gemini", ".gemini/settings.json",
			`{"mcpServers": {"h": {"url": "https://h.example/sse"}}}`, nil, "SSE"},
		{"zed url", "zed", ".zed/settings.json",
			`{"context_servers": {"z": {"url": "https://z.example/mcp", "headers": {"Authorization": "Bearer secret"}}}}`,
			[]string{"Authorization: Bearer secret"}, ""},
		{"claude-desktop url", "claude-desktop", "claude_desktop_config.json",
			`{"mcpServers": {"c": {"url": "http://127.0.0.1:8080/mcp"}}}`, nil, ""},
		{"codex url", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"\n", nil, ""},
		{"codex headers", "codex", ".codex/config.toml",
			"model = \"o3\"\r\n\r\n[mcp_servers.figma]\r\n  url = 'https://mcp.figma.com/mcp' # remote\r\n  bearer_token_env_var = \"FIGMA_TOKEN\"\r\n  http_headers = { \"X-Region\" = \"us-east-1\", \"A\" = \"b\" }\r\n  env_http_headers = { \"X-Auth\" = \"AUTH\" }\r\n  startup_timeout_sec = 20\r\n\r\n[other]\r\nx = 1\r\n",
			[]string{"Authorization: Bearer ${FIGMA_TOKEN}", "A: b", "X-Region: us-east-1", "X-Auth: ${AUTH}"}, ""},
		{"codex bearer_token", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"\nbearer_token = \"sk-1\"\n", nil, `"bearer_token"`},
		{"codex headers sub-table", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"\n[mcp_servers.r.http_headers]\nA = \"b\"\n", nil, "http_headers is not a key"},
		{"codex $ in a static header", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"\nhttp_headers = { A = \"${X}$\" }\n", []string{"A: $${X}$$"}, ""},
		{"cursor literal $", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"r": {"url": "https://x/mcp", "headers": {"A": "p$ss$$w ${env:T}$", "B": "$x {y}"}}}}`,
			[]string{"A: p$$ss$$$$w ${T}$$", "B: $$x {y}"}, ""},
		{"zed fills in nothing", "zed", ".zed/settings.json",
			`{"context_servers": {"z": {"url": "https://z.example/mcp", "headers": {"A": "${HOME} $HOME $"}}}}`,
			[]string{"A: $${HOME} $$HOME $$"}, ""},
		{"gemini $NAME and ${NAME} kept, a lone $ escaped", "gemini", ".gemini/settings.json",
			`{"mcpServers": {"h": {"httpUrl": "https://h.example/mcp", "headers": {"A": "$A ${B} $ ${1x}"}}}}`,
			nil, "${1x…}"},
		{"codex url on the last line", "codex", ".codex/config.toml",
			"[mcp_servers.r]\nurl = \"https://r.example/mcp\"", nil, "line of its own"},
		{"a header name that is no token", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"r": {"url": "https://x/mcp", "headers": {"Bad Name": "v"}}}}`, nil, "HTTP token"},
		{"a header that is no string", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"r": {"url": "https://x/mcp", "headers": {"A": 1}}}}`, nil, "not a string"},
		{"not http", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"r": {"url": "file:///etc/passwd"}}}`, nil, "not http"},
		{"args besides the URL", "cursor", ".cursor/mcp.json",
			`{"mcpServers": {"r": {"url": "https://x/mcp", "args": []}}}`, nil, `"args"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mustHost(t, tc.host)
			orig := []byte(tc.data)
			c, err := Parse(h, tc.file, orig)
			if err != nil {
				t.Fatal(err)
			}
			s := c.Servers()[0]
			if s.Kind != Remote {
				t.Fatalf("read as %s", s.Kind)
			}
			out, changes, err := c.Wrap(opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason != "" {
				if changes[0].Action != ActNotEnforced || !strings.Contains(changes[0].Reason, tc.reason) || !bytes.Equal(out, orig) {
					t.Errorf("%s: %s, want not enforced: %s\n%s", changes[0].Action, changes[0].Reason, tc.reason, out)
				}
				if r := opts.Want().Check(s); !strings.Contains(r, tc.reason) {
					t.Errorf("Check = %q", r)
				}
				return
			}
			if changes[0].Action != ActWrapped {
				t.Fatalf("%s: %s", changes[0].Action, changes[0].Reason)
			}
			wc, err := Parse(h, tc.file, out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			w := wc.Servers()[0]
			want := append([]string{self}, append(wrapPrefix(policy, s.Name, tc.headers, nil), s.URL)...)
			if w.Kind != Stdio || !slices.Equal(w.Argv, want) || opts.Want().Check(w) != "" {
				t.Fatalf("wrapped: %s %q, want %q (%s)\n%s", w.Kind, w.Argv, want, opts.Want().Check(w), out)
			}
			if bytes.Contains(out, []byte(`"http"`)) || bytes.Contains(out, []byte(`"`+h.RemoteKeys[0]+`"`)) {
				t.Errorf("the host would still read it as remote:\n%s", out)
			}
			again, changes, _ := wc.Wrap(opts)
			if !bytes.Equal(again, out) || changes[0].Action != ActAlreadyWrapped {
				t.Errorf("wrap twice: %s\n%s", changes[0].Action, again)
			}
			back, changes, _ := wc.Unwrap(nil)
			if !bytes.Equal(back, orig) || changes[0].Action != ActUnwrapped {
				t.Errorf("unwrap: %s\n%s\nwant\n%s", changes[0].Action, back, orig)
			}
		})
	}
}

// TestRedact: no header value of a file, before or after wrap, is left in
// what Redact returns.
func TestRedact(t *testing.T) {
	h := mustHost(t, "zed")
	data := []byte(`{"context_servers": {"z": {"url": "https://z.example/mcp", "headers": {"Authorization": "Bearer s3cr\u0065t", "X-K": "k3y"}}}}`)
	c, err := Parse(h, "settings.json", data)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Wrap(WrapOptions{Self: self, Policy: policy, IsSelf: isSelf})
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := Parse(h, "settings.json", out)
	servers := append(c.Servers(), wc.Servers()...)
	for _, text := range []string{string(data), string(out)} {
		r := Redact(text, servers)
		for _, secret := range []string{"s3cr", "k3y"} {
			if strings.Contains(r, secret) {
				t.Errorf("%q left in %s", secret, r)
			}
		}
	}
}

// mcpsignExpand reads s as mcpsign reads a --header value: $$ is $, ${NAME}
// is the variable NAME (here "<NAME>"), any other $ an error.
func mcpsignExpand(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 || !envNameRE.MatchString(s[i+2:i+end]) {
				return "", false
			}
			b.WriteString("<" + s[i+2:i+end] + ">")
			i += end
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FuzzHeaderArg checks that what wrap writes for a header is what mcpsign
// reads back as the value the host would have sent: for a host that fills
// in nothing, the value itself; for VS Code, the value with each
// ${env:NAME} read from the environment.
func FuzzHeaderArg(f *testing.F) {
	for _, v := range []string{"Bearer ${env:TOKEN}", "p$ss", "$$", "${input:x}", "a${env:A}b${env:B_2}$", "${", "$}{"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		for _, host := range []string{"zed", "vscode"} {
			h := mustHost(t, host)
			arg, problem := headerArg(h, Header{Name: "X", Value: value})
			if problem != "" {
				continue
			}
			got, ok := mcpsignExpand(strings.TrimPrefix(arg, "X: "))
			want := value
			if host == "vscode" {
				want = regexp.MustCompile(`\$\{env:(`+envName+`)\}`).ReplaceAllString(value, "<$1>")
			}
			if !ok || got != want {
				t.Fatalf("%s: %q written %q, read back %q %v, want %q", host, value, arg, got, ok, want)
			}
		}
	})
}

// TestRedactURL: a URL as printed keeps its host, path and parameter names
// but none of the secrets a URL carries (user info, query values).
func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://z.example/mcp", "https://z.example/mcp"},
		{"https://user:pw@z.example/mcp", "https://<redacted>@z.example/mcp"},
		{"https://z.example/mcp?api_key=s3cret&x=1", "https://z.example/mcp?api_key=<redacted>&x=<redacted>"},
		{"https://tok@z.example/mcp?token=abc#frag", "https://<redacted>@z.example/mcp?token=<redacted>#frag"},
		{"https://z.example/mcp?flag&empty=", "https://z.example/mcp?flag&empty="},
		{"--flag=value", "--flag=value"},
	}
	for _, tc := range tests {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// The diff of a configuration file loses the query values too.
	h := mustHost(t, "zed")
	data := []byte(`{"context_servers": {"z": {"url": "https://z.example/mcp?api_key=k3y-in-query"}}}`)
	c, err := Parse(h, "settings.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if r := Redact(string(data), c.Servers()); strings.Contains(r, "k3y-in-query") {
		t.Errorf("query value left in %s", r)
	}
}
