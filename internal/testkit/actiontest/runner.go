// Package actiontest runs a composite GitHub Action (action.yml) on this
// machine the way a GitHub runner runs one, for tests of the repository's
// own action (docs/PUBLISHING.md): its steps in order, each `run` step as
// `bash --noprofile --norc -eo pipefail FILE` in the workspace, with
// GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_ACTION_PATH set per step,
// step `if:` conditions, and the action's outputs.
//
// It knows only the expressions the action uses: ${{ inputs.NAME }},
// ${{ github.action_path }}, ${{ steps.ID.outputs.NAME }}, and in `if:`
// the comparison `steps.ID.outputs.NAME == 'LITERAL'` (or !=). Any other
// expression is refused, so the action cannot come to depend on something
// these tests do not exercise. A `uses:` step is refused unless its `if:`
// skips it.
package actiontest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrUnsupported is wrapped by every refusal of something the runner does
// not implement (an expression, a shell, a `uses:` step that would run).
var ErrUnsupported = errors.New("not supported by the test runner")

// Action is the part of action.yml the runner reads.
type Action struct {
	Name    string                 `yaml:"name"`
	Inputs  map[string]ActionInput `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []Step `yaml:"steps"`
	} `yaml:"runs"`
}

// ActionInput is one declared input.
type ActionInput struct {
	Required bool    `yaml:"required"`
	Default  *string `yaml:"default"`
}

// Step is one step of a composite action.
type Step struct {
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Env   map[string]string `yaml:"env"`
}

// Load parses dir/action.yml.
func Load(dir string) (*Action, error) {
	b, err := os.ReadFile(filepath.Join(dir, "action.yml"))
	if err != nil {
		return nil, fmt.Errorf("actiontest: %w", err)
	}
	var a Action
	if err := yaml.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("actiontest: action.yml: %w", err)
	}
	if a.Runs.Using != "composite" {
		return nil, fmt.Errorf("actiontest: runs.using %q: %w", a.Runs.Using, ErrUnsupported)
	}
	return &a, nil
}

// Runner runs an action. Env is the runner's environment (PATH, HOME,
// GITHUB_*, RUNNER_TEMP, ACTIONS_ID_TOKEN_REQUEST_*...); the runner adds
// GITHUB_ACTION_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and the step's env.
type Runner struct {
	ActionDir string            // the action's checkout: github.action_path
	Workspace string            // working directory of every step
	Temp      string            // RUNNER_TEMP: the runner's files go here too
	Env       []string          // the job's environment
	Inputs    map[string]string // the `with:` of the calling workflow step
	Stdout    io.Writer         // steps' stdout (nil: discarded)
	Stderr    io.Writer         // steps' stderr (nil: discarded)
}

// Result is what a run produced, also when a step failed.
type Result struct {
	Outputs map[string]string            // the action's outputs
	Steps   map[string]map[string]string // outputs by step id
	Ran     []string                     // ids (or "#N") of the steps run
	Summary string                       // the step summaries, concatenated
}

// Run loads and runs the action. A failing step ends the run with an
// error naming it; Result holds what was produced up to then.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	a, err := Load(r.ActionDir)
	if err != nil {
		return nil, err
	}
	res := &Result{Outputs: map[string]string{}, Steps: map[string]map[string]string{}}
	inputs, err := r.inputs(a)
	if err != nil {
		return res, err
	}
	ex := &evaluator{inputs: inputs, actionPath: r.ActionDir, steps: res.Steps}
	// Every expression of the action must be one the runner knows, also in
	// steps that a condition skips here.
	for i, st := range a.Runs.Steps {
		fields := []string{st.Run, st.Uses}
		for _, m := range []map[string]string{st.With, st.Env} {
			for _, v := range m {
				fields = append(fields, v)
			}
		}
		for _, f := range fields {
			if _, err := ex.expand(f); err != nil {
				return res, fmt.Errorf("actiontest: step %d: %w", i+1, err)
			}
		}
		if st.If != "" {
			if _, err := ex.condition(st.If); err != nil {
				return res, fmt.Errorf("actiontest: step %d: if: %w", i+1, err)
			}
		}
	}
	var summary strings.Builder
	defer func() { res.Summary = summary.String() }()
	for i, st := range a.Runs.Steps {
		name := st.ID
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		if st.If != "" {
			ok, err := ex.condition(st.If)
			if err != nil {
				return res, fmt.Errorf("actiontest: step %s: if: %w", name, err)
			}
			if !ok {
				continue
			}
		}
		if st.Uses != "" {
			return res, fmt.Errorf("actiontest: step %s: uses %s: %w", name, st.Uses, ErrUnsupported)
		}
		if st.Shell != "bash" {
			return res, fmt.Errorf("actiontest: step %s: shell %q: %w", name, st.Shell, ErrUnsupported)
		}
		outs, sum, err := r.runStep(ctx, ex, i, st)
		summary.WriteString(sum)
		res.Ran = append(res.Ran, name)
		if st.ID != "" {
			res.Steps[st.ID] = outs
		}
		if err != nil {
			return res, fmt.Errorf("actiontest: step %s: %w", name, err)
		}
	}
	for k, o := range a.Outputs {
		v, err := ex.expand(o.Value)
		if err != nil {
			return res, fmt.Errorf("actiontest: output %s: %w", k, err)
		}
		res.Outputs[k] = v
	}
	return res, nil
}

func (r *Runner) inputs(a *Action) (map[string]string, error) {
	in := map[string]string{}
	for k, v := range r.Inputs {
		if _, ok := a.Inputs[k]; !ok {
			return nil, fmt.Errorf("actiontest: input %q is not declared in action.yml", k)
		}
		in[k] = v
	}
	for k, d := range a.Inputs {
		if _, ok := in[k]; ok {
			continue
		}
		switch {
		case d.Default != nil:
			in[k] = *d.Default
		case d.Required:
			return nil, fmt.Errorf("actiontest: required input %q not given", k)
		default:
			in[k] = ""
		}
	}
	return in, nil
}

func (r *Runner) runStep(ctx context.Context, ex *evaluator, i int, st Step) (map[string]string, string, error) {
	dir, err := os.MkdirTemp(r.Temp, fmt.Sprintf("step%d-", i+1))
	if err != nil {
		return nil, "", err
	}
	script, err := ex.expand(st.Run)
	if err != nil {
		return nil, "", fmt.Errorf("run: %w", err)
	}
	file := filepath.Join(dir, "script.sh")
	outFile := filepath.Join(dir, "output")
	sumFile := filepath.Join(dir, "summary")
	for _, f := range []struct{ path, data string }{{file, script}, {outFile, ""}, {sumFile, ""}} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			return nil, "", err
		}
	}
	env := append([]string(nil), r.Env...)
	env = append(env, "GITHUB_ACTION_PATH="+r.ActionDir, "GITHUB_OUTPUT="+outFile, "GITHUB_STEP_SUMMARY="+sumFile, "GITHUB_ACTION="+st.ID)
	for k, v := range st.Env {
		x, err := ex.expand(v)
		if err != nil {
			return nil, "", fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+x)
	}
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", file)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.Workspace, env, r.Stdout, r.Stderr
	runErr := cmd.Run()
	sum, _ := os.ReadFile(sumFile)
	b, err := os.ReadFile(outFile)
	if err != nil {
		return nil, string(sum), err
	}
	outs, perr := ParseOutputFile(b)
	if runErr != nil {
		return outs, string(sum), fmt.Errorf("bash: %w", runErr)
	}
	return outs, string(sum), perr
}

// ParseOutputFile reads a GITHUB_OUTPUT file: lines NAME=VALUE, or
// NAME<<DELIMITER, the value's lines, and DELIMITER alone on a line.
func ParseOutputFile(b []byte) (map[string]string, error) {
	outs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			if name == "" || delim == "" {
				return outs, fmt.Errorf("GITHUB_OUTPUT: malformed line %q", line)
			}
			var val []string
			closed := false
			for sc.Scan() {
				if sc.Text() == delim {
					closed = true
					break
				}
				val = append(val, sc.Text())
			}
			if !closed {
				return outs, fmt.Errorf("GITHUB_OUTPUT: %s: delimiter %q never closed", name, delim)
			}
			outs[name] = strings.Join(val, "\n")
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok || name == "" {
			return outs, fmt.Errorf("GITHUB_OUTPUT: malformed line %q", line)
		}
		outs[name] = val
	}
	if err := sc.Err(); err != nil {
		return outs, fmt.Errorf("GITHUB_OUTPUT: %w", err)
	}
	return outs, nil
}

type evaluator struct {
	inputs     map[string]string
	actionPath string
	steps      map[string]map[string]string
}

var (
	exprRe = regexp.MustCompile(`\$\{\{(.*?)\}\}`)
	nameRe = `[A-Za-z_][A-Za-z0-9_-]*`
	refRe  = regexp.MustCompile(`^(?:inputs\.(` + nameRe + `)|github\.action_path|steps\.(` + nameRe + `)\.outputs\.(` + nameRe + `))$`)
	condRe = regexp.MustCompile(`^(steps\.` + nameRe + `\.outputs\.` + nameRe + `)\s*(==|!=)\s*'([^']*)'$`)
)

// value resolves one reference.
func (e *evaluator) value(ref string) (string, error) {
	m := refRe.FindStringSubmatch(ref)
	switch {
	case m == nil:
		return "", fmt.Errorf("expression %q: %w", ref, ErrUnsupported)
	case m[1] != "":
		v, ok := e.inputs[m[1]]
		if !ok {
			return "", fmt.Errorf("expression %q: no such input", ref)
		}
		return v, nil
	case m[2] != "":
		return e.steps[m[2]][m[3]], nil // as on a runner: unset is ""
	default:
		return e.actionPath, nil
	}
}

func (e *evaluator) expand(s string) (string, error) {
	var firstErr error
	out := exprRe.ReplaceAllStringFunc(s, func(x string) string {
		v, err := e.value(strings.TrimSpace(exprRe.FindStringSubmatch(x)[1]))
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	})
	if firstErr == nil && strings.Contains(exprRe.ReplaceAllString(s, ""), "${{") {
		firstErr = fmt.Errorf("unterminated expression in %q: %w", s, ErrUnsupported)
	}
	return out, firstErr
}

func (e *evaluator) condition(s string) (bool, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "${{") && strings.HasSuffix(s, "}}") {
		s = strings.TrimSpace(s[3 : len(s)-2])
	}
	m := condRe.FindStringSubmatch(s)
	if m == nil {
		return false, fmt.Errorf("condition %q: %w", s, ErrUnsupported)
	}
	v, err := e.value(m[1])
	if err != nil {
		return false, err
	}
	return (v == m[3]) == (m[2] == "=="), nil
}
