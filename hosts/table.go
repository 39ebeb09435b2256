package hosts

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/internal/lazy"
)

// Format is the syntax of a host's configuration file.
type Format int

const (
	// JSONC is JSON with comments and trailing commas (read and edited
	// with hujson, so that comments and layout are kept).
	JSONC Format = iota
	// TOML is Codex's config.toml.
	TOML
)

// Host describes one MCP host: where its configuration files are and where
// in them its servers are (docs/HOSTS.md "The host table").
type Host struct {
	// Name is what --host takes.
	Name string
	// Display is the host's product name.
	Display string
	Format  Format
	// Maps are the paths, from the file's top level, of the objects whose
	// members are servers; "*" matches every member (Claude Code's
	// projects.*.mcpServers).
	Maps [][]string
	// FileMaps replaces Maps for the host's files of a given base name
	// (VS Code keeps servers under "servers" in mcp.json and under
	// "mcp"."servers" in settings.json).
	FileMaps map[string][][]string
	// RemoteKeys are the members that give a remote server's URL.
	RemoteKeys []string
	// User are the user-level files per GOOS, as templates: "~" is the home
	// directory, "%APPDATA%" the Windows roaming application data directory,
	// "$XDG_CONFIG_HOME" the XDG configuration directory and "$CODEX_HOME"
	// Codex's home (Env).
	User map[string][]string
	// Project are the project files, relative to the project directory.
	Project []string
}

const anyOS = "*"

// table is every host mcpsign knows, built on first use (its maps would be
// work at every start). Keep it the one place host paths are written down.
var table = lazy.New(hostTable)

func hostTable() []Host {
	return []Host{
		{
			Name: "claude-desktop", Display: "Claude Desktop", Format: JSONC,
			Maps:       [][]string{{"mcpServers"}},
			RemoteKeys: []string{"url"},
			User: map[string][]string{
				"darwin":  {"~/Library/Application Support/Claude/claude_desktop_config.json"},
				"windows": {"%APPDATA%/Claude/claude_desktop_config.json"},
				"linux":   {"$XDG_CONFIG_HOME/Claude/claude_desktop_config.json"},
			},
		},
		{
			Name: "claude-code", Display: "Claude Code", Format: JSONC,
			Maps:       [][]string{{"mcpServers"}, {"projects", "*", "mcpServers"}},
			RemoteKeys: []string{"url"},
			User:       map[string][]string{anyOS: {"~/.claude.json"}},
			Project:    []string{".mcp.json"},
		},
		{
			Name: "vscode", Display: "VS Code", Format: JSONC,
			// VS Code moves "mcpServers" into "servers" and runs both.
			Maps: [][]string{{"servers"}, {"mcpServers"}},
			// VS Code before 1.102 reads servers from the "mcp" setting (later
			// ones move them to mcp.json); its settings reader splits dotted
			// member names, so "mcp.servers" is that map too.
			FileMaps: map[string][][]string{
				"settings.json": {{"mcp", "servers"}, {"mcp", "mcpServers"}, {"mcp.servers"}},
			},
			RemoteKeys: []string{"url"},
			User: map[string][]string{
				"darwin":  {"~/Library/Application Support/Code/User/mcp.json", "~/Library/Application Support/Code/User/settings.json"},
				"windows": {"%APPDATA%/Code/User/mcp.json", "%APPDATA%/Code/User/settings.json"},
				"linux":   {"$XDG_CONFIG_HOME/Code/User/mcp.json", "$XDG_CONFIG_HOME/Code/User/settings.json"},
			},
			Project: []string{".vscode/mcp.json", ".vscode/settings.json"},
		},
		{
			Name: "cursor", Display: "Cursor", Format: JSONC,
			Maps:       [][]string{{"mcpServers"}},
			RemoteKeys: []string{"url"},
			User:       map[string][]string{anyOS: {"~/.cursor/mcp.json"}},
			Project:    []string{".cursor/mcp.json"},
		},
		{
			Name: "windsurf", Display: "Windsurf", Format: JSONC,
			Maps:       [][]string{{"mcpServers"}},
			RemoteKeys: []string{"serverUrl", "url"},
			User:       map[string][]string{anyOS: {"~/.codeium/windsurf/mcp_config.json"}},
		},
		{
			Name: "zed", Display: "Zed", Format: JSONC,
			Maps:       [][]string{{"context_servers"}},
			RemoteKeys: []string{"url"},
			User: map[string][]string{
				"darwin":  {"~/.config/zed/settings.json"},
				"windows": {"%APPDATA%/Zed/settings.json"},
				"linux":   {"$XDG_CONFIG_HOME/zed/settings.json"},
			},
			Project: []string{".zed/settings.json"},
		},
		{
			Name: "gemini", Display: "Gemini CLI", Format: JSONC,
			Maps:       [][]string{{"mcpServers"}},
			RemoteKeys: []string{"httpUrl", "url"},
			User:       map[string][]string{anyOS: {"~/.gemini/settings.json"}},
			Project:    []string{".gemini/settings.json"},
		},
		{
			Name: "codex", Display: "Codex", Format: TOML,
			Maps:       [][]string{{"mcp_servers"}},
			RemoteKeys: []string{"url"},
			User:       map[string][]string{anyOS: {"$CODEX_HOME/config.toml"}},
			// Codex reads a project's .codex/config.toml in trusted projects.
			Project: []string{".codex/config.toml"},
		},
	}
}

// MapsFor returns the paths of the server maps in h's file at path: by its
// base name, FileMaps or else Maps.
func (h Host) MapsFor(path string) [][]string {
	if m, ok := h.FileMaps[filepath.Base(path)]; ok {
		return m
	}
	return h.Maps
}

// Hosts returns every known host, in a fixed order.
func Hosts() []Host {
	out := make([]Host, len(table.Get()))
	copy(out, table.Get())
	return out
}

// Lookup returns the host named name (Host.Name).
func Lookup(name string) (Host, bool) {
	for _, h := range table.Get() {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

// Env is where to look for configuration files.
type Env struct {
	// GOOS selects the per-OS paths (runtime.GOOS).
	GOOS string
	// Home is the user's home directory.
	Home string
	// AppData is %APPDATA% (Windows); empty means Home/AppData/Roaming.
	AppData string
	// XDGConfigHome is $XDG_CONFIG_HOME; empty means Home/.config.
	XDGConfigHome string
	// CodexHome is $CODEX_HOME, Codex's home directory; empty means
	// Home/.codex, as for Codex. A relative one is relative to the current
	// directory, as for Codex.
	CodexHome string
	// Dir is the project directory for project files; empty means none.
	Dir string
}

// Paths returns the configuration files of h under env: its user files,
// then its project files, each once. They need not exist.
func (h Host) Paths(env Env) []string {
	var out []string
	add := func(p string) {
		p = filepath.Clean(p)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	tmpls := h.User[env.GOOS]
	if t, ok := h.User[anyOS]; ok {
		tmpls = t
	}
	roots := []struct{ token, dir string }{
		{"~/", env.Home},
		{"%APPDATA%/", cmp.Or(env.AppData, filepath.Join(env.Home, "AppData", "Roaming"))},
		{"$XDG_CONFIG_HOME/", cmp.Or(env.XDGConfigHome, filepath.Join(env.Home, ".config"))},
		{"$CODEX_HOME/", cmp.Or(env.CodexHome, filepath.Join(env.Home, ".codex"))},
	}
	for _, t := range tmpls {
		for _, r := range roots {
			if rest, ok := strings.CutPrefix(t, r.token); ok {
				t = filepath.Join(r.dir, filepath.FromSlash(rest))
				break
			}
		}
		add(t)
	}
	if env.Dir != "" {
		for _, p := range h.Project {
			add(filepath.Join(env.Dir, filepath.FromSlash(p)))
		}
	}
	return out
}

// Infer returns the host path is a file of under env (one of its Paths),
// or else the one Infer tells from its name: $CODEX_HOME/config.toml is
// Codex's whatever the directory is called.
func (env Env) Infer(path string) (Host, bool) {
	p := filepath.Clean(path)
	for _, h := range table.Get() {
		if slices.Contains(h.Paths(env), p) {
			return h, true
		}
	}
	return Infer(path)
}

// Infer returns the host whose files are named like path: by the file's
// name and, where names are shared (mcp.json, settings.json), its directory
// (for VS Code's user settings.json, Code/User/).
func Infer(path string) (Host, bool) {
	base := filepath.Base(path)
	parent := filepath.Base(filepath.Dir(path))
	name := ""
	switch base {
	case "claude_desktop_config.json":
		name = "claude-desktop"
	case ".claude.json", ".mcp.json":
		name = "claude-code"
	case "mcp_config.json":
		name = "windsurf"
	case "config.toml":
		if parent == ".codex" {
			name = "codex"
		}
	case "mcp.json":
		switch parent {
		case ".vscode", "User":
			name = "vscode"
		case ".cursor":
			name = "cursor"
		}
	case "settings.json":
		switch parent {
		case "zed", ".zed", "Zed":
			name = "zed"
		case ".gemini":
			name = "gemini"
		case ".vscode":
			name = "vscode"
		case "User":
			if filepath.Base(filepath.Dir(filepath.Dir(path))) == "Code" {
				name = "vscode"
			}
		}
	}
	if name == "" {
		return Host{}, false
	}
	return Lookup(name)
}
