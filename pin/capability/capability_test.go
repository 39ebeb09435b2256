package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/source"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"delete_note", "delete note"},
		{"createOrUpdateFile", "create or update file"},
		{"get-tiny-image", "get tiny image"},
		{"puppeteer.navigate", "puppeteer navigate"},
		{"HTTPRequest", "http request"},
		{"sendHTTPRequestNow", "send http request now"},
		{"getV2Items", "get v 2 items"},
		{"RUN_COMMAND", "run command"},
		{"Déjà vu, écrire!", "déjà vu écrire"},
		{"a\u200bb", "a b"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := strings.Join(splitWords(tc.in), " "); got != tc.want {
			t.Errorf("splitWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func caps(cs ...Capability) []Capability { return cs }

func TestClassifyTool(t *testing.T) {
	tests := []struct {
		name string
		def  string
		ov   []Capability
		want []Capability
		// sources that must be among the reasons, as "capability=from:detail"
		sources []string
	}{
		{"read-only hint", `{"name":"x","annotations":{"readOnlyHint":true}}`, nil, caps(Read), []string{"read=annotation:readOnlyHint"}},
		{"destructive hint", `{"name":"x","annotations":{"destructiveHint":true}}`, nil, caps(Delete), []string{"delete=annotation:destructiveHint"}},
		{"open-world hint", `{"name":"x","annotations":{"openWorldHint":true}}`, nil, caps(Network), nil},
		{"false hints add nothing", `{"name":"x","annotations":{"readOnlyHint":false,"destructiveHint":false,"openWorldHint":false}}`, nil, caps(Unknown), nil},
		{"idempotent is informative", `{"name":"x","annotations":{"idempotentHint":true}}`, nil, caps(Unknown), nil},
		{"a rule never removes: read-only but named delete", `{"name":"delete_cache","annotations":{"readOnlyHint":true}}`, nil, caps(Read, Delete), []string{"delete=name:delete"}},
		{"snake name", `{"name":"remove_user"}`, nil, caps(Delete), []string{"delete=name:remove"}},
		{"camel name", `{"name":"purgeCache"}`, nil, caps(Delete), nil},
		{"kebab name", `{"name":"drop-table"}`, nil, caps(Delete), nil},
		{"word boundary: no match inside words", `{"name":"dropbox_list","description":"Lists a Dropbox folder."}`, nil, caps(Read), nil},
		{"word boundary: 'address' is not 'add'", `{"name":"address_book"}`, nil, caps(Unknown), nil},
		{"run+command in the name", `{"name":"run_command"}`, nil, caps(Exec), []string{"exec=name:run+command"}},
		{"run+script in the description", `{"name":"go","description":"Runs the given script."}`, nil, caps(Exec), []string{"exec=description:runs+script"}},
		{"run alone is not exec", `{"name":"run_report","description":"Runs the weekly report."}`, nil, caps(Unknown), nil},
		{"shell", `{"name":"terminal","description":"Open a shell on the host."}`, nil, caps(Exec), []string{"exec=description:shell"}},
		{"eval", `{"name":"js_eval"}`, nil, caps(Exec), nil},
		{"evaluate counts in names only", `{"name":"score","description":"Evaluate the quality of an answer."}`, nil, caps(Unknown), nil},
		{"puppeteer evaluate", `{"name":"puppeteer_evaluate","description":"Execute JavaScript in the browser console"}`, nil, caps(Network, Exec), nil},
		{"fetch reads over the network", `{"name":"fetch"}`, nil, caps(Read, Network), nil},
		{"webhook", `{"name":"notify","description":"Calls a webhook."}`, nil, caps(Network), nil},
		{"inflections in descriptions", `{"name":"x","description":"Deletes, erasing and purged."}`, nil, caps(Delete), []string{"delete=description:deletes", "delete=description:erasing", "delete=description:purged"}},
		{"y-ending verbs", `{"name":"x","description":"Queries the index."}`, nil, caps(Read), []string{"read=description:queries"}},
		{"doubled consonant", `{"name":"x","description":"Dropping rows."}`, nil, caps(Delete), nil},
		{"name-only words do not count in prose", `{"name":"x","description":"The status of a set of open items."}`, nil, caps(Unknown), nil},
		{"title counts as text", `{"name":"x","title":"Send email"}`, nil, caps(Write), nil},
		{"annotation title counts as text", `{"name":"x","annotations":{"title":"Wipe disk"}}`, nil, caps(Delete), nil},
		{"hidden text between words still splits", "{\"name\":\"x\",\"description\":\"safe\u200bdelete\"}", nil, caps(Delete), nil},
		{"nothing matched", `{"name":"echo","description":"Echoes the input."}`, nil, caps(Unknown), []string{"unknown=default:no annotation, name or description rule matched"}},
		{"not an object", `[1,2]`, nil, caps(Unknown), nil},
		{"override replaces", `{"name":"run_command"}`, caps(Read), caps(Read), []string{"read=override:capabilities override"}},
		{"override sorted", `{"name":"x"}`, caps(Exec, Read), caps(Read, Exec), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify([]byte(tc.def), tc.ov)
			if !slices.Equal(got.Capabilities, tc.want) {
				t.Errorf("capabilities %v, want %v (sources %v)", got.Capabilities, tc.want, got.Sources)
			}
			for _, c := range got.Capabilities {
				if len(got.Sources[c]) == 0 {
					t.Errorf("%s has no source", c)
				}
			}
			for _, s := range tc.sources {
				c, src, _ := strings.Cut(s, "=")
				from, detail, _ := strings.Cut(src, ":")
				if !slices.Contains(got.Sources[Capability(c)], Source{From: from, Detail: detail}) {
					t.Errorf("sources of %s are %v, want %s:%s among them", c, got.Sources[Capability(c)], from, detail)
				}
			}
		})
	}
	if got := Classify([]byte(`{"name":"x","annotations":{"idempotentHint":true}}`), nil); got.Idempotent == nil || !*got.Idempotent {
		t.Error("idempotentHint not recorded")
	}
}

// Names of tools of the official MCP servers (modelcontextprotocol/servers
// and servers-archived), classified by their names alone.
func TestClassifyOfficialToolNames(t *testing.T) {
	tests := []struct {
		names string
		want  []Capability
	}{
		// filesystem
		{"read_file read_text_file read_media_file read_multiple_files list_directory list_directory_with_sizes search_files get_file_info list_allowed_directories", caps(Read)},
		{"write_file edit_file create_directory move_file", caps(Write)},
		{"directory_tree", caps(Unknown)},
		// memory
		{"create_entities create_relations add_observations", caps(Write)},
		{"delete_entities delete_observations delete_relations", caps(Delete)},
		{"read_graph search_nodes open_nodes", caps(Read)},
		// fetch
		{"fetch", caps(Read, Network)},
		// git
		{"git_status git_diff_unstaged git_diff_staged git_diff git_log git_show", caps(Read)},
		{"git_commit git_add git_create_branch", caps(Write)},
		{"git_reset git_checkout git_branch", caps(Unknown)},
		// github
		{"create_or_update_file push_files create_repository create_issue fork_repository create_branch update_issue add_issue_comment", caps(Write)},
		{"search_repositories get_file_contents list_issues search_code search_issues search_users get_issue", caps(Read)},
		// "request" is a network word: a pull request tool gets network too.
		{"create_pull_request merge_pull_request", caps(Write, Network)},
		{"get_pull_request list_pull_requests", caps(Read, Network)},
		// The noun "commits" reads as the verb: rules err towards more
		// capabilities, never fewer.
		{"list_commits", caps(Read, Write)},
		// puppeteer
		{"puppeteer_navigate", caps(Network)},
		{"puppeteer_screenshot", caps(Read)},
		{"puppeteer_click puppeteer_fill", caps(Write)},
		{"puppeteer_evaluate", caps(Exec)},
		// sqlite
		{"read_query list_tables describe_table", caps(Read)},
		{"create_table", caps(Write)},
		{"write_query", caps(Read, Write)},
		// slack
		{"slack_list_channels slack_get_channel_history slack_get_users", caps(Read)},
		{"slack_post_message slack_reply_to_thread slack_add_reaction", caps(Write)},
		// everything, time, sequential thinking
		{"echo sequentialthinking convert_time", caps(Unknown)},
		{"get-sum get-env get_current_time getTinyImage", caps(Read)},
		{"printEnv longRunningOperation", caps(Unknown)},
		// shell-style servers
		{"run_command execute_command shell_exec run_script exec bash_run executeCode launch_process", caps(Exec)},
	}
	for _, tc := range tests {
		for _, name := range strings.Fields(tc.names) {
			got := Classify([]byte(fmt.Sprintf(`{"name":%q}`, name)), nil)
			if !slices.Equal(got.Capabilities, tc.want) {
				t.Errorf("%s: %v, want %v (sources %v)", name, got.Capabilities, tc.want, got.Sources)
			}
		}
	}
}

// The official servers installed under testdata/npm (npm ci there), listed
// live: every tool is classified, with sources, and the ones whose behavior
// is known get the capabilities they have. Skipped without npm packages
// (an error under MCPSIGN_REQUIRE_E2E=1).
func TestClassifyOfficialServers(t *testing.T) {
	modules := filepath.Join("..", "..", "testdata", "npm", "node_modules", "@modelcontextprotocol")
	if _, err := os.Stat(modules); err != nil {
		fixtures.MissingE2E(t, "no npm packages in testdata/npm")
	}
	tests := []struct {
		argv []string
		want map[string][]Capability
	}{
		{[]string{"node", filepath.Join(modules, "server-filesystem", "dist", "index.js"), t.TempDir()}, map[string][]Capability{
			"read_text_file":   caps(Read),
			"write_file":       caps(Write, Delete), // destructiveHint: it overwrites
			"move_file":        caps(Write, Delete),
			"create_directory": caps(Write),
			"search_files":     caps(Read),
		}},
		{[]string{"node", filepath.Join(modules, "server-memory", "dist", "index.js")}, map[string][]Capability{
			"create_entities": caps(Write),
			"delete_entities": caps(Delete),
			"read_graph":      caps(Read),
		}},
		{[]string{"node", filepath.Join(modules, "server-everything", "dist", "index.js"), "stdio"}, map[string][]Capability{
			"echo":    caps(Read), // readOnlyHint
			"get-sum": caps(Read),
		}},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(tc.argv[1]))), func(t *testing.T) {
			t.Parallel() // a server of its own
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// server-everything exits only at the SIGTERM after the grace.
			// Read under go-sdk's profile, the one these expectations were
			// written for: under the default (fullest) profile the server
			// adds trigger-*-async tools whose descriptions say the CLIENT
			// "executes" a task, which the description rule takes for exec
			// (a false positive left to the classifier's owner).
			s, err := source.Load(ctx, source.Spec{Command: tc.argv}, source.Options{ShutdownGrace: 200 * time.Millisecond,
				ClientCapabilities: []byte(`{"roots":{"listChanged":true}}`)})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, raw := range s.Tools {
				name, _ := jsonString(jsonObject(raw)["name"])
				got := Classify(raw, nil)
				seen[name] = true
				if got.Has(Exec) {
					t.Errorf("%s: exec (%v): none of these tools runs commands", name, got.Sources)
				}
				if want, ok := tc.want[name]; ok && !slices.Equal(got.Capabilities, want) {
					t.Errorf("%s: %v, want %v (sources %v)", name, got.Capabilities, want, got.Sources)
				}
			}
			for name := range tc.want {
				if !seen[name] {
					t.Errorf("the server has no tool %s", name)
				}
			}
		})
	}
}

func TestParseOverrides(t *testing.T) {
	tests := []struct {
		in   string
		want string // fmt of the result, or the error text
	}{
		{`{"tools":{"a":["write","read"],"b":["exec"]}}`, "map[a:[read write] b:[exec]]"},
		{`{"tools":{}}`, "map[]"},
		{`{"tools":{"a":[]}}`, "is empty"},
		{`{"tools":{"a":["root"]}}`, `"root" is not a capability`},
		{`{"tools":{"a":["read","read"]}}`, "listed twice"},
		{`{"tools":{"a":"read"}}`, "want a list"},
		{`{"tools":{"":["read"]}}`, "empty"},
		{`{"tools":{"a":["read"]},"prompts":{}}`, `unknown member "prompts"`},
		{`{"Tools":{"a":["read"]}}`, `unknown member "Tools"`},
		{`{"tools":{"a":["read"],"a":["exec"]}}`, "repeated"},
		{`{}`, `"tools" is missing`},
		{`[]`, "not a JSON object"},
		{`{"tools":{"a":["read"]}`, "ErrOverrides"},
	}
	for _, tc := range tests {
		o, err := ParseOverrides([]byte(tc.in))
		got := fmt.Sprint(o)
		if err != nil {
			if !errors.Is(err, ErrOverrides) {
				t.Errorf("%s: error %v does not wrap ErrOverrides", tc.in, err)
			}
			got = err.Error()
			if tc.want == "ErrOverrides" {
				continue
			}
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("ParseOverrides(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := ParseOverrides(make([]byte, MaxOverridesBytes+1)); err == nil {
		t.Error("oversized overrides accepted")
	}
}

// TestSourceText: a source reads as what matched; the run+command rule
// names its two words, not a name "run+command" that no tool has.
func TestSourceText(t *testing.T) {
	for _, tc := range []struct {
		s    Source
		want string
	}{
		{Source{From: FromName, Detail: "run+command"}, `name words "run" and "command"`},
		{Source{From: FromDescription, Detail: "launch+script"}, `description words "launch" and "script"`},
		{Source{From: FromName, Detail: "delete"}, `name "delete"`},
		{Source{From: FromAnnotation, Detail: "destructiveHint"}, `annotation "destructiveHint"`},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
	tool := Classify(json.RawMessage(`{"name":"run_command"}`), nil)
	if d := Describe(tool); !strings.Contains(d, `exec (name words "run" and "command")`) {
		t.Errorf("run_command: %s", d)
	}
}
