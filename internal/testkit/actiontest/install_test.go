package actiontest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestMain removes what preinstall made once the tests ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if installed.dir != "" {
		_ = os.RemoveAll(installed.dir)
	}
	os.Exit(code)
}

// installed is the action's install step, run once per test process
// (preinstall).
var installed struct {
	once sync.Once
	dir  string // its RUNNER_TEMP
	err  error
	log  []byte
}

// preinstall puts into temp/mcpsign-action/bin what the action's install
// step builds there (scripts/action/sign.sh install: go install ./cmd/...
// from the action's source), built once per test process by that same
// step. The install step of each run then finds its binaries up to date (go
// install compares the build ID of the file it would write with the one it
// would link) and links nothing, where each run would otherwise link
// mcpsign and mcpsign-proxy again, about 2 s of CPU. A source changed in
// between is built again all the same, and the step still runs in full.
func preinstall(t *testing.T, temp string) {
	t.Helper()
	installed.once.Do(func() {
		installed.dir, installed.err = os.MkdirTemp("", "mcpsign-action-install-")
		if installed.err != nil {
			return
		}
		ws := filepath.Join(installed.dir, "workspace")
		if installed.err = os.Mkdir(ws, 0o700); installed.err != nil {
			return
		}
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "action", "sign.sh"), "install")
		cmd.Env = append(jobEnv(t, ws, installed.dir), "GITHUB_ACTION_PATH="+repoRoot(t), "GITHUB_OUTPUT="+filepath.Join(installed.dir, "output"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		installed.err = cmd.Run()
		installed.log = out.Bytes()
	})
	if installed.err != nil {
		t.Fatalf("the action's install step, run once for every test: %v\n%s", installed.err, installed.log)
	}
	from := filepath.Join(installed.dir, "mcpsign-action", "bin")
	to := filepath.Join(temp, "mcpsign-action", "bin")
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil || len(ents) == 0 {
		t.Fatalf("the action's install step left nothing in %s: %v", from, err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
