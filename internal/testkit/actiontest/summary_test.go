package actiontest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hostile is what a server, a certificate or a statement may carry to
// rewrite a Markdown summary: new lines and rows, pipes that end a cell,
// backticks that end a code span, HTML, links, images, and a line
// separator.
const hostile = "notes\n| injected | row |\n<img src=https://evil.example/x.png>\n[click](https://evil.example)`code`|pipe\u2028![i](https://evil.example/i.png)\r\n### heading"

// TestSummaryEscapes: the Action's step summary, written by sign.sh itself
// from hostile values, keeps its shape: every server-, certificate- and
// statement-provided string stays one string inside one code span (or the
// fenced block), so that no row, heading, link, image or HTML is added
// (docs/PUBLISHING.md "Outputs").
func TestSummaryEscapes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq")
	}
	work := t.TempDir()
	write := func(name string, v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(work, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	digest := "sha256:" + strings.Repeat("a", 64)
	write("digest.json", map[string]any{
		"counts":       map[string]int{"tools": 1, "prompts": 0, "resourceTemplates": 0},
		"sets":         map[string]string{"tools": digest, "prompts": digest, "resourceTemplates": digest},
		"instructions": nil,
	})
	write("sign.json", map[string]any{
		"server":   map[string]string{"name": hostile, "version": "1.0.0|x\n| v |"},
		"subjects": 1,
		"identity": map[string]any{"source": map[string]string{"repository": hostile}},
	})
	stmt, _ := json.Marshal(map[string]any{"predicate": map[string]any{
		"source":  map[string]string{"commit": hostile},
		"package": []map[string]string{{"purl": "pkg:npm/a@1\n| package | `pkg:npm/evil@6.6.6` |"}, {"purl": hostile}},
	}})
	bundle := write("b|`x`\n.sigstore.json", map[string]any{"dsseEnvelope": map[string]string{"payload": base64.StdEncoding.EncodeToString(stmt)}})

	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "action", "sign.sh"), "summary",
		work, bundle, hostile, "https://issuer.example\n| x |", digest, "command")
	cmd.Env = append(os.Environ(), "INPUT_SERVER="+hostile, "INPUT_PACKAGE=p\n```\n<img src=x>.tgz", "INPUT_TRUSTED_ROOT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sign.sh summary: %v\n%s", err, out)
	}
	summary := string(out)
	t.Logf("summary:\n%s", summary)

	codeSpan := regexp.MustCompile("`[^`]*`")
	lines := strings.Split(strings.TrimSuffix(summary, "\n"), "\n")
	var rows, fenced int
	inFence := false
	for i, l := range lines {
		switch {
		case inFence && l == "```":
			inFence = false
			continue
		case inFence:
			if strings.Contains(l, "`") {
				t.Errorf("line %d: a backtick in the fenced block: %q", i+1, l)
			}
			fenced++
			continue
		case l == "```sh":
			inFence = true
			continue
		case l == "" || l == "A host verifies these definitions with:":
			continue
		case strings.HasPrefix(l, "### mcpsign: signed `"):
			if strings.Count(l, "`") != 2 || !strings.HasSuffix(l, "`") || i != 0 {
				t.Errorf("line %d: the heading is not one code span: %q", i+1, l)
			}
			continue
		case strings.HasPrefix(l, "|"):
			// A row: three pipes that are not escaped (two cells).
			if n := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(l, -1)); n != 3 {
				t.Errorf("line %d: %d cell separators, want 3: %q", i+1, n, l)
			}
			rows++
		default:
			t.Errorf("line %d is not the summary's: %q", i+1, l)
			continue
		}
		rest := codeSpan.ReplaceAllString(l, "")
		if strings.ContainsAny(rest, "<>[]!`") {
			t.Errorf("line %d: Markdown or HTML outside a code span: %q", i+1, rest)
		}
	}
	// header, separator, bundle, statement, subjects, 3 kinds,
	// instructions, identity, issuer, source repository (certificate),
	// source commit (statement), two packages.
	if rows != 15 || inFence || fenced != 4 {
		t.Errorf("%d rows (want 15), %d fenced lines (want 4), fence closed %v", rows, fenced, !inFence)
	}
	for _, want := range []string{"`notes?\\| injected \\| row \\|?<img src=https://evil.example/x.png>?[click](https://evil.example)?code?\\|pipe?![i]", "| package | `pkg:npm/a@1?\\| package \\| ?pkg:npm/evil@6.6.6? \\|` |",
		"--certificate-oidc-issuer 'https://issuer.example?| x |'"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}
