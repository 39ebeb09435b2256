package actiontest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeAction(t *testing.T, yml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "action.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t *testing.T, dir string, inputs map[string]string) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := &Runner{ActionDir: dir, Workspace: t.TempDir(), Temp: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}, Inputs: inputs}
	return r.Run(ctx)
}

const toy = `
name: toy
inputs:
  who: {required: true}
  greeting: {default: hello}
outputs:
  said: {value: "${{ steps.say.outputs.said }}"}
runs:
  using: composite
  steps:
    - id: probe
      shell: bash
      run: echo "skip=yes" >> "$GITHUB_OUTPUT"
    - if: steps.probe.outputs.skip != 'yes'
      uses: actions/never@0000000000000000000000000000000000000000
    - id: say
      shell: bash
      env:
        WHO: ${{ inputs.who }}
        GREETING: ${{ inputs.greeting }}
        ACTION_PATH: ${{ github.action_path }}
      run: |
        test "$ACTION_PATH" = "$GITHUB_ACTION_PATH"
        { echo "said<<EOF"; printf '%s, %s\nline two\n' "$GREETING" "$WHO"; echo "EOF"; } >> "$GITHUB_OUTPUT"
        echo "said it" >> "$GITHUB_STEP_SUMMARY"
`

func TestRunnerToy(t *testing.T) {
	res, err := run(t, writeAction(t, toy), map[string]string{"who": "world; rm -rf /"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Outputs["said"], "hello, world; rm -rf /\nline two"; got != want {
		t.Fatalf("output said = %q, want %q", got, want)
	}
	if strings.Join(res.Ran, ",") != "probe,say" || res.Summary != "said it\n" {
		t.Fatalf("ran %v, summary %q", res.Ran, res.Summary)
	}
}

func TestRunnerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yml string
		inputs    map[string]string
		want      string
		unsup     bool
	}{
		{"unknown expression", strings.Replace(toy, "${{ inputs.greeting }}", "${{ github.token }}", 1), map[string]string{"who": "x"}, `"github.token"`, true},
		{"function call", strings.Replace(toy, "${{ inputs.greeting }}", "${{ toJSON(inputs) }}", 1), map[string]string{"who": "x"}, "toJSON", true},
		{"unterminated", strings.Replace(toy, "${{ inputs.greeting }}", "${{ inputs.greeting", 1), map[string]string{"who": "x"}, "unterminated", true},
		{"uses that would run", strings.Replace(toy, "!= 'yes'", "== 'yes'", 1), map[string]string{"who": "x"}, "uses actions/never", true},
		{"other condition", strings.Replace(toy, "steps.probe.outputs.skip != 'yes'", "always()", 1), map[string]string{"who": "x"}, "always()", true},
		{"other shell", strings.Replace(toy, "shell: bash", "shell: pwsh", 1), map[string]string{"who": "x"}, "pwsh", true},
		{"unknown expression in a skipped step", strings.Replace(toy, "uses: actions/never@0000000000000000000000000000000000000000", "uses: actions/never@0000000000000000000000000000000000000000\n      with: {token: \"${{ github.token }}\"}", 1), map[string]string{"who": "x"}, `"github.token"`, true},
		{"required input missing", toy, nil, `required input "who"`, false},
		{"undeclared input", toy, map[string]string{"who": "x", "whom": "y"}, `input "whom" is not declared`, false},
		{"failing step", strings.Replace(toy, `echo "skip=yes"`, "exit 3; echo", 1), map[string]string{"who": "x"}, "step probe: bash: exit status 3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, writeAction(t, tc.yml), tc.inputs)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnsupported) != tc.unsup {
				t.Fatalf("error %v, want one containing %q (unsupported: %v)", err, tc.want, tc.unsup)
			}
		})
	}
}

func TestParseOutputFile(t *testing.T) {
	got, err := ParseOutputFile([]byte("a=1\nb<<X\nline\nX=no\nX\nc=\n"))
	if err != nil || got["a"] != "1" || got["b"] != "line\nX=no" || got["c"] != "" || len(got) != 3 {
		t.Fatalf("%v %q", err, got)
	}
	if _, err := ParseOutputFile([]byte("b<<X\nline\n")); err == nil || !strings.Contains(err.Error(), "never closed") {
		t.Fatalf("unclosed delimiter: %v", err)
	}
	if _, err := ParseOutputFile([]byte("novalue\n")); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed line: %v", err)
	}
}

func FuzzParseOutputFile(f *testing.F) {
	for _, s := range []string{"a=1\n", "b<<X\nv\nX\n", "b<<X\n", "=x\n", "a<<\n\n", "<<X\nv\nX\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		outs, err := ParseOutputFile(b)
		if err == nil {
			for k := range outs {
				if k == "" {
					t.Fatalf("empty name accepted")
				}
			}
		}
	})
}
