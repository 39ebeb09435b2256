package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFindFiles: the user files of a home directory; a named file needs
// no home directory, a search does; an unknown host is refused.
func TestFindFiles(t *testing.T) {
	home := t.TempDir()
	user := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(user, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	withHome := env(map[string]string{"HOME": home})
	files, err := FindFiles(withHome, "claude-code", "")
	if err != nil || len(files) != 1 || files[0].Path != user || files[0].Host.Name != "claude-code" {
		t.Fatalf("%+v %v", files, err)
	}
	var uh *UnknownHostError
	if _, err := FindFiles(withHome, "nope", ""); !errors.As(err, &uh) {
		t.Errorf("unknown host: %v", err)
	}
	t.Setenv("HOME", "") // os.UserHomeDir finds none either
	noHome := env(nil)
	if _, err := FindFiles(noHome, "", ""); !errors.Is(err, ErrNoHome) {
		t.Errorf("a search without a home directory: %v", err)
	}
	files, err = FindFiles(noHome, "", "proj/.mcp.json")
	if err != nil || len(files) != 1 || files[0].Path != "proj/.mcp.json" || files[0].Host.Name != "claude-code" {
		t.Errorf("a named file without a home directory: %+v %v", files, err)
	}
}
