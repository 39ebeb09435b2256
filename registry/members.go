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
		e.unbound(ptr, "transport %s: a URL and headers a host connects with, which no statement binds (as remotes): only stdio", textsafe.RawQuote(textsafe.Cut(typ, 40)))
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
			e.unbound(ip+"/name", "%s is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*): hosts may set it as another", textsafe.RawQuote(textsafe.Cut(name, 80)))
		case env && SteeringVariable(name):
			e.unbound(ip+"/name", "%s steers what a runtime or an installer fetches or runs (docs/REGISTRY.md): refused, whoever gives its value", textsafe.RawQuote(textsafe.Cut(name, 80)))
		case !env && typ == "named":
			e.unbound(ip, "a named argument: the registry chose the flag %s, which no statement binds", textsafe.RawQuote(textsafe.Cut(name, 80)))
		case !env && typ != "positional":
			e.unbound(ip+"/type", "an argument of type %s: only a positional argument the user gives is informational", textsafe.RawQuote(textsafe.Cut(typ, 40)))
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

// SteeringVariable reports whether an environment variable named name is
// runtime-shaped: of a class that a language runtime, the dynamic loader,
// a shell, a compiler or a package manager reads to decide what it
// fetches, loads or runs (docs/REGISTRY.md, "Environment variables"). The
// rule fails closed: the variables a user is asked for that pass are the
// server's own settings and credentials (ACME_TOKEN, GOOGLE_API_KEY,
// LOG_LEVEL), and any name of a runtime's shape is refused, whether or not
// anything reads it today. ASCII case is ignored (npm reads npm_config_*
// in any case, Windows ignores case). A name is runtime-shaped when it
//
//   - contains PATH, PRELOAD, LIBRARY, CA_BUNDLE, CA_CERT, CAINFO or
//     CAFILE (CLASSPATH, GCONV_PATH, NODE_PATH, LD_LIBRARY_PATH, PATHEXT,
//     REQUESTS_CA_BUNDLE), or REGISTRY, INDEX_URL, MIRROR, DOWNLOAD,
//     _BINARY_ or CDNURL (where an installer or an install script
//     fetches from: ELECTRON_MIRROR, PUPPETEER_DOWNLOAD_BASE_URL,
//     SASS_BINARY_SITE, CHROMEDRIVER_CDNURL);
//   - ends with _OPTIONS, _OPTS, FLAGS, _PROXY or HOME (NODE_OPTIONS,
//     MAVEN_OPTS, RUSTFLAGS, HTTPS_PROXY, JAVA_HOME, GNUPGHOME);
//   - begins with one of steeringPrefixes (LD_, DYLD_, GCONV_,
//     NPM_, PIP_, UV_, PYTHON, NODE_, JAVA_, CORECLR_, COMPLUS_, DOTNET_,
//     RUBY, PERL, GEM_, BUNDLE_, CARGO_, RUST, GIT_, …), or with "_";
//   - is GO followed by letters and digits only, or begins with GO_ or
//     CGO_ (the shape of every variable the Go toolchain and runtime
//     read: GOFLAGS, GOPROXY, GO111MODULE, GODEBUG, CGO_LDFLAGS);
//   - is one of steeringNames (SHELL, ENV, IFS, TMPDIR, CC, EDITOR,
//     COMSPEC, …).
func SteeringVariable(name string) bool {
	n := strings.ToUpper(name)
	for _, in := range []string{"PATH", "PRELOAD", "LIBRARY", "CA_BUNDLE", "CA_CERT", "CAINFO", "CAFILE",
		"REGISTRY", "INDEX_URL", "MIRROR", "DOWNLOAD", "_BINARY_", "CDNURL"} {
		if strings.Contains(n, in) {
			return true
		}
	}
	for _, suf := range []string{"_OPTIONS", "_OPTS", "FLAGS", "_PROXY", "HOME"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	if strings.HasPrefix(n, "_") || slices.ContainsFunc(steeringPrefixes(), func(p string) bool { return strings.HasPrefix(n, p) }) {
		return true
	}
	if strings.HasPrefix(n, "GO") && strings.Trim(n[2:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "" {
		return true
	}
	return slices.Contains(steeringNames(), n)
}

// steeringPrefixes begin the names that the dynamic loader and the C
// library (LD_, DYLD_, GCONV_, GLIBC_, MALLOC_), the package managers and
// build tools, the language runtimes, the shells, and the tools they run
// (git, ssh, TLS libraries, containers) read. Upper case.
func steeringPrefixes() []string {
	return []string{
		"LD_", "DYLD_", "GCONV_", "GLIBC_", "MALLOC_",
		"NPM_", "NODE_", "NODEJS_", "NVM_", "YARN_", "PNPM_", "BUN_", "DENO_", "COREPACK_", "ELECTRON_",
		"PUPPETEER_", "PLAYWRIGHT_", "CYPRESS_", "PRISMA_", "SHARP_",
		"PIP_", "PIPX_", "PIPENV_", "UV_", "POETRY_", "PDM_", "HATCH_", "CONDA_", "MAMBA_", "PYTHON", "PYENV_", "VIRTUAL_ENV",
		"JAVA_", "JDK_", "JRE_", "JVM_", "MAVEN_", "GRADLE_", "SBT_",
		"CORECLR_", "COMPLUS_", "DOTNET_", "NUGET_", "MSBUILD",
		"RUBY", "GEM_", "BUNDLE_", "BUNDLER_", "PERL", "PHP", "COMPOSER_", "LUA_", "ERL_", "ELIXIR_", "MIX_", "TCL",
		"GO_", "CGO_", "CARGO_", "RUST", "CMAKE_", "PKG_CONFIG",
		"BASH_", "ZSH_", "GIT_", "SSH_", "GNUPG", "GPG_", "SSL_", "OPENSSL_", "CURL_", "WGET",
		"DOCKER_", "BUILDKIT_", "CONTAINERS_", "HOMEBREW_", "XDG_",
	}
}

// steeringNames are the whole names of that class without a prefix of
// their own: the shell's, the temporary directories, the compilers a
// native build runs, the programs other tools start, Windows' system
// directories, and the C library's resolver files. Upper case.
func steeringNames() []string {
	return []string{
		"SHELL", "ENV", "IFS", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "ZDOTDIR",
		"TMPDIR", "TEMP", "TMP",
		"CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "MAKE",
		"EDITOR", "VISUAL", "PAGER", "BROWSER",
		"COMSPEC", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "SYSTEMROOT", "WINDIR", "PROGRAMDATA",
		"HOSTALIASES", "LOCALDOMAIN", "RESOLV_HOST_CONF", "GETCONF_DIR", "TZDIR", "SSLKEYLOGFILE",
	}
}
