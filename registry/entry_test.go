package registry

import (
	"errors"
	"strings"
	"testing"
)

// TestParseServerBounds: a server.json of exactly MaxEntryBytes and
// exactly MaxPackages packages reads; one more is refused; the repository
// is read when given, and null is none.
func TestParseServerBounds(t *testing.T) {
	t.Parallel()
	pkg := `{"registryType":"npm","identifier":"n","version":"1.0.0","transport":{"type":"stdio"}}`
	two := serverJSON("a/b", "1", `,"packages":[`+pkg+`,`+pkg+`]`)
	repo := serverJSON("a/b", "1", `,"repository":{"url":"https://github.com/a/b","source":"github"}`)
	for _, tt := range []struct {
		name, in string
		lim      Limits
		ok       bool
		repoURL  string
	}{
		{name: "at the size bound", in: two, lim: Limits{MaxEntryBytes: len(two)}, ok: true},
		{name: "over the size bound", in: two, lim: Limits{MaxEntryBytes: len(two) - 1}},
		{name: "at the package bound", in: two, lim: Limits{MaxPackages: 2}, ok: true},
		{name: "over the package bound", in: two, lim: Limits{MaxPackages: 1}},
		{name: "version of 1024 bytes", in: serverJSON("a/b", strings.Repeat("1", 1024), ""), ok: true},
		{name: "version of 1025 bytes", in: serverJSON("a/b", strings.Repeat("1", 1025), "")},
		{name: "empty version", in: serverJSON("a/b", "", "")},
		{name: "repository", in: repo, ok: true, repoURL: "https://github.com/a/b"},
		{name: "repository null", in: serverJSON("a/b", "1", `,"repository":null`), ok: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseServer([]byte(tt.in), tt.lim)
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrEntry) {
				t.Fatalf("ParseServer: %v, want ok %v", err, tt.ok)
			}
			if err == nil && e.RepositoryURL != tt.repoURL {
				t.Errorf("repository URL %q, want %q", e.RepositoryURL, tt.repoURL)
			}
		})
	}
}

// TestParseEntryBounds: an API entry may be a quarter longer than
// MaxEntryBytes (its _meta beside the server), its server at most
// MaxEntryBytes; a bare server.json at most MaxEntryBytes. Each bound is
// inclusive.
func TestParseEntryBounds(t *testing.T) {
	t.Parallel()
	server := serverJSON("a/b", "1", `,"title":"`+strings.Repeat("t", 200)+`"`)
	n := len(server)
	// api is an API entry of total bytes around server (at least n+30).
	api := func(total int) string {
		head, tail := `{"server":`+server+`,"_meta":{"pad":"`, `"}}`
		return head + strings.Repeat("x", total-len(head)-len(tail)) + tail
	}
	for _, tt := range []struct {
		name, in string
		max      int
		ok       bool
	}{
		{name: "API entry at the bound", in: api(n + n/4), max: n, ok: true},
		{name: "API entry over the bound", in: api(n + n/4 + 1), max: n},
		{name: "API entry's server over the bound", in: api(n + n/4), max: n - 1},
		{name: "server.json at the bound", in: server, max: n, ok: true},
		{name: "server.json over the bound", in: server, max: n - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEntry([]byte(tt.in), Limits{MaxEntryBytes: tt.max})
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrEntry) {
				t.Fatalf("ParseEntry of %d bytes: %v, want ok %v", len(tt.in), err, tt.ok)
			}
		})
	}
}

// TestEnvironmentVariablesRead: a package's environmentVariables are read
// as strictly as its packageArguments: a member that is not an array of
// input objects is refused.
func TestEnvironmentVariablesRead(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, member string
		ok           bool
	}{
		{"none", `null`, true},
		{"an input the user gives", `[{"name":"TOKEN","description":"d"}]`, true},
		{"not an array", `{"name":"TOKEN"}`, false},
		{"an input not an object", `["TOKEN"]`, false},
		{"a repeated member", `[{"name":"A","name":"B"}]`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := serverJSON("a/b", "1", `,"packages":[{"registryType":"npm","identifier":"n","version":"1.0.0","transport":{"type":"stdio"},"environmentVariables":`+tt.member+`}]`)
			if _, err := ParseServer([]byte(in), Limits{}); tt.ok != (err == nil) {
				t.Errorf("ParseServer: %v, want ok %v", err, tt.ok)
			}
		})
	}
}
