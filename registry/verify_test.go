package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/policy"
)

// TestFetchBudgetExhausted: once the entry's bundles have used its whole
// byte bound, the next bundle is not fetched at all.
func TestFetchBudgetExhausted(t *testing.T) {
	t.Parallel()
	full, one := bytes.Repeat([]byte("x"), 1000), []byte("y")
	var calls atomic.Int32
	v, err := New(Options{Policy: keyPolicy(t), MaxBundleBytes: 1000, Fetch: func(_ context.Context, p Pointer) ([]byte, error) {
		calls.Add(1)
		if strings.HasSuffix(p.URL, "/1") {
			return full, nil
		}
		return one, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	raw := serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":[`+
		`{"bundleUrl":"https://x/1","bundleDigest":"`+PointerDigest(full)+`"},`+
		`{"bundleUrl":"https://x/2","bundleDigest":"`+PointerDigest(one)+`"}]}}`)
	r := v.VerifyEntry(context.Background(), []byte(raw))
	if r.Verified || r.Step != StepFetch || !strings.Contains(r.Reason, "bundles 2 to 2: the entry's bundles exceed 1000 bytes together") {
		t.Fatalf("want the second bundle refused unfetched: %+v", r)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d bundles fetched, want 1", n)
	}
}

// TestFetchDeadlineShared: every bundle of an entry is fetched under one
// deadline, one bundle's bound from the start of the entry's fetches, so
// that 32 bundles cannot hold a worker for 32 bounds (checked here
// without timing: TestFetchBudgetPerEntry shows it over https).
func TestFetchDeadlineShared(t *testing.T) {
	t.Parallel()
	const bound = time.Hour
	var deadlines []time.Time
	v, err := New(Options{Policy: keyPolicy(t), FetchTimeout: bound, Fetch: func(ctx context.Context, p Pointer) ([]byte, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline")
		}
		deadlines = append(deadlines, d)
		return []byte(p.URL), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var ptrs []string
	for i := range 32 {
		u := fmt.Sprintf("https://x/%d", i)
		ptrs = append(ptrs, `{"bundleUrl":"`+u+`","bundleDigest":"`+PointerDigest([]byte(u))+`"}`)
	}
	raw := serverJSON("a/b", "1", `,"_meta":{"`+PublisherProvided+`":{"`+AttestationMember+`":[`+strings.Join(ptrs, ",")+`]}}`)
	start := time.Now()
	r := v.VerifyEntry(context.Background(), []byte(raw))
	if r.Verified || r.Step == StepFetch {
		t.Fatalf("want every bundle fetched, then a failure past fetch: %+v", r)
	}
	if len(deadlines) != 32 {
		t.Fatalf("%d fetches, want 32 (%+v)", len(deadlines), r)
	}
	for i, d := range deadlines {
		if !d.Equal(deadlines[0]) {
			t.Fatalf("bundle %d fetched with deadline %s, bundle 0 with %s: want one for the entry", i, d, deadlines[0])
		}
	}
	if d := deadlines[0]; d.Before(start.Add(bound)) || d.After(time.Now().Add(bound)) {
		t.Fatalf("deadline %s is not one bound (%s) from the entry's start %s", d, bound, start)
	}
}

// TestVerifierCloseWithFetch: a verifier given its own Fetch has no
// fetcher to close.
func TestVerifierCloseWithFetch(t *testing.T) {
	t.Parallel()
	v, err := New(Options{Policy: keyPolicy(t), Fetch: func(context.Context, Pointer) ([]byte, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
}

// TestPrepareNamespaceOwner: an entry's namespace owner is checked against
// its repository.url when its signer is derived from that repository, and
// only then: a server with its own identities takes any repository.url.
func TestPrepareNamespaceOwner(t *testing.T) {
	t.Parallel()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1,"servers":{`+
		`"io.github.acme/*":{"repositorySigner":{"workflow":"release.yml"}},`+
		`"io.github.bob/*":{"identities":[{"method":"sigstore","issuer":"https://token.actions.githubusercontent.com",`+
		`"subject":"https://github.com/bob/x/.github/workflows/release.yml@refs/heads/main"}]}}}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Options{Policy: pf, Fetch: func(context.Context, Pointer) ([]byte, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		server, name, repo string
		owner              bool // refused for the namespace's owner
	}{
		{"io.github.acme/*", "io.github.acme/notes", "https://github.com/evil/notes", true},
		{"io.github.acme/*", "io.github.acme/notes", "https://github.com/ACME/notes", false},
		{"io.github.bob/*", "io.github.bob/x", "https://github.com/evil/x", false},
	} {
		t.Run(tt.name+" "+tt.repo, func(t *testing.T) {
			_, err := v.prepare(context.Background(), tt.server, &Entry{Name: tt.name, RepositoryURL: tt.repo})
			if got := err != nil && strings.Contains(err.Error(), "its repository.url is"); got != tt.owner {
				t.Errorf("prepare: %v; want refused for its namespace owner: %v", err, tt.owner)
			}
		})
	}
}

// emptyPolicyVerifier returns a Verifier under a policy that names no
// server, whose fetches all fail.
func emptyPolicyVerifier(t *testing.T) *Verifier {
	t.Helper()
	pf, err := policy.Parse([]byte(`{"kind":"mcpsign.policy","policyVersion":1}`), "/p.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Options{Policy: pf, Fetch: func(context.Context, Pointer) ([]byte, error) { return nil, errors.New("none") }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunPositions: Run numbers the entries of its listing from 0, in the
// listing's order.
func TestRunPositions(t *testing.T) {
	t.Parallel()
	v := emptyPolicyVerifier(t)
	list := func(fn func([]byte) error) error {
		for _, name := range []string{"a/x", "a/y", "a/z"} {
			if err := fn([]byte(serverJSON(name, "1", ""))); err != nil {
				return err
			}
		}
		return nil
	}
	var got []string
	if _, err := v.Run(context.Background(), list, RunOptions{Workers: 2, Emit: func(r *Result) error {
		got = append(got, fmt.Sprintf("%s@%d", r.Name, r.Position.Index))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if want := "a/x@0 a/y@1 a/z@2"; strings.Join(got, " ") != want {
		t.Errorf("results %q, want %q", got, want)
	}
}

// TestResultTextStatus: a result's line names a status other than active.
func TestResultTextStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ status, want string }{
		{"", `FAILED   "a/b" "1" (entry 0) at step status: x`},
		{StatusActive, `FAILED   "a/b" "1" (entry 0) at step status: x`},
		{StatusDeleted, `FAILED   "a/b" "1" (entry 0, deleted) at step status: x`},
	} {
		r := &Result{Name: "a/b", Version: "1", Status: tt.status, Step: StepStatus, Reason: "x"}
		if got := r.Text(); got != tt.want {
			t.Errorf("status %q: %q, want %q", tt.status, got, tt.want)
		}
	}
}

// TestSummaryTable: the table names other shards and interrupted entries
// when there are any.
func TestSummaryTable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sum        Summary
		shards, in bool
	}{
		{Summary{}, false, false},
		{Summary{OtherShards: 1}, true, false},
		{Summary{Interrupted: 1}, false, true},
	} {
		tab := tt.sum.Table()
		if strings.Contains(tab, "in other shards") != tt.shards || strings.Contains(tab, "interrupted") != tt.in {
			t.Errorf("%+v:\n%s", tt.sum, tab)
		}
	}
}

// TestRunWithdrawsDuplicates: a name and version listed twice is refused
// at its second place, and the first is withdrawn at the end, every one
// emitted.
func TestRunWithdrawsDuplicates(t *testing.T) {
	t.Parallel()
	v := emptyPolicyVerifier(t)
	list := func(fn func([]byte) error) error {
		for _, name := range []string{"a/x", "a/y", "a/x", "a/y"} {
			if err := fn([]byte(serverJSON(name, "1", ""))); err != nil {
				return err
			}
		}
		return nil
	}
	var got []string
	if _, err := v.Run(context.Background(), list, RunOptions{Workers: 1, Emit: func(r *Result) error {
		got = append(got, fmt.Sprintf("%s@%d:%s", r.Name, r.Position.Index, r.Step))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if want := "a/x@0:policy a/y@1:policy a/x@2:duplicate a/y@3:duplicate a/x@0:duplicate a/y@1:duplicate"; strings.Join(got, " ") != want {
		t.Errorf("results %q, want %q", got, want)
	}
}
