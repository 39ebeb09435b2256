package registry

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// The members of a package that decide how it is installed and started
// (docs/REGISTRY.md, "What each member of server.json is").

// runtimesFor are the programs a host may run a package of registryType
// with, each of which installs it from its type's registry by the name
// the purl binds (none for a type mcpsign does not know: any hint is then
// refused).
func runtimesFor(registryType string) []string {
	switch registryType {
	case "npm":
		return []string{"npx"}
	case "pypi":
		return []string{"uvx", "pipx", "python"}
	case "nuget":
		return []string{"dnx"}
	case "oci":
		return []string{"docker"}
	}
	return nil
}

// checkTransport refuses a package transport other than {"type":"stdio"}:
// a streamable-http or sse transport names a URL (and headers) a host
// connects to, which no statement binds, as remotes[] do.
func (e *Entry) checkTransport(v []byte, ptr string) error {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	names, m, err := digest.Members(v)
	if err != nil {
		return e.memberErr(ErrEntry, ptr, "%v", err)
	}
	if err := digest.CheckCaseVariants(names, "type", "url", "headers"); err != nil {
		return e.memberErr(ErrEntry, ptr, "%v", err)
	}
	typ, err := e.optString(m, "type", ptr+"/type")
	if err != nil {
		return err
	}
	if typ != "stdio" {
		e.unbound(ptr, "transport %s: a URL and headers a host connects with, which no statement binds (as remotes): only stdio", textsafe.Quote(textsafe.Cut(typ, 40)))
		return nil
	}
	for _, n := range names {
		if n != "type" {
			e.unbound(ptr+"/"+digest.PointerToken(n), "a stdio transport has only a type: nothing binds another member")
		}
	}
	e.Bound = append(e.Bound, ptr+"/type")
	return nil
}

// checkInputs records as unbound every input of a package (its
// packageArguments, or with env its environmentVariables) whose content
// the registry chooses: a value, a default, choices, variables, or a named
// argument (the registry chose the flag); for an environment variable,
// also any name of the class that steers what a runtime or an installer
// does (SteeringVariable), even one the user is asked for. What is left
// is informational: an input the user gives (docs/REGISTRY.md).
func (e *Entry) checkInputs(v []byte, ptr string, env bool) error {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	items, err := digest.Elements(v)
	if err != nil {
		return e.memberErr(ErrEntry, ptr, "%v", err)
	}
	for i, it := range items {
		ip := ptr + "/" + strconv.Itoa(i)
		m, err := digest.ReadMembers(it, inputMembers...)
		if err != nil {
			return e.memberErr(ErrEntry, ip, "%v", err)
		}
		for _, n := range []string{"value", "default", "choices", "variables"} {
			if x, ok := m[n]; ok && string(x) != "null" {
				e.unbound(ip+"/"+n, "content the registry chooses for how the package starts, which no statement binds: only an input the user gives (no value, default, choices or variables) is informational")
			}
		}
		name, err := e.optString(m, "name", ip+"/name")
		if err != nil {
			return err
		}
		typ, err := e.optString(m, "type", ip+"/type")
		if err != nil {
			return err
		}
		switch {
		case env && !envName(name):
			e.unbound(ip+"/name", "%s is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*): hosts may set it as another", textsafe.Quote(textsafe.Cut(name, 80)))
		case env && SteeringVariable(name):
			e.unbound(ip+"/name", "%s steers what a runtime or an installer fetches or runs (docs/REGISTRY.md): refused, whoever gives its value", textsafe.Quote(textsafe.Cut(name, 80)))
		case !env && typ == "named":
			e.unbound(ip, "a named argument: the registry chose the flag %s, which no statement binds", textsafe.Quote(textsafe.Cut(name, 80)))
		case !env && typ != "positional":
			e.unbound(ip+"/type", "an argument of type %s: only a positional argument the user gives is informational", textsafe.Quote(textsafe.Cut(typ, 40)))
		}
		for name := range m {
			if !slices.Contains(inputMembers, name) {
				e.unbound(ip+"/"+digest.PointerToken(name), "a member the published server.json schema does not define")
			}
		}
	}
	return nil
}

// envName reports whether name is a portable environment variable name.
func envName(name string) bool {
	for i, c := range []byte(name) {
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return name != ""
}

// SteeringVariable reports whether an environment variable named name
// (ASCII case ignored: npm reads npm_config_* in any case, Windows
// ignores case) steers what a runtime or an installer fetches or runs
// (docs/REGISTRY.md, "Environment variables"): the package managers'
// configuration (npm_config_*, PIP_*, UV_*, PIPX_*, POETRY_*, NUGET_*,
// DOTNET_*, DOCKER_*, YARN_*, PNPM_*, BUN_*, DENO_*, COREPACK_*, CARGO_*,
// GOFLAGS, GOPROXY and the Go command's others), the interpreters' (NODE_*, PYTHON*, JAVA_TOOL_OPTIONS,
// _JAVA_OPTIONS, JDK_JAVA_OPTIONS, RUBY*, PERL*), the dynamic loader's
// (LD_*, DYLD_*), proxies and trust (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY,
// NO_PROXY, SSL_CERT_*, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE), and PATH,
// HOME, SHELL, BASH_ENV, ENV, TMPDIR, XDG_*, GIT_*.
func SteeringVariable(name string) bool {
	n := strings.ToUpper(name)
	for _, p := range []string{"NPM_", "PIP_", "PIPX_", "UV_", "POETRY_", "NUGET_", "DOTNET_", "DOCKER_", "YARN_", "PNPM_", "BUN_", "DENO_", "COREPACK_", "CARGO_", "RUSTUP_", "NODE_", "PYTHON", "RUBY", "GEM_", "BUNDLE_", "PERL", "LD_", "DYLD_", "SSL_CERT_", "XDG_", "GIT_", "CONDA_", "JAVA_", "_JAVA_", "JDK_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	switch n {
	case "GOFLAGS", "GOPROXY", "GOPATH", "GOROOT", "GOBIN", "GOENV", "GOTOOLCHAIN", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE", "GOWORK", "GOMODCACHE", "GODEBUG",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PATH", "HOME", "SHELL", "BASH_ENV", "ENV", "TMPDIR", "TEMP", "TMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "COMSPEC", "PATHEXT":
		return true
	}
	return false
}
