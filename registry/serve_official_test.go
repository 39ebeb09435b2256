package registry

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/registrylocal"
)

// TestOfficialRegistrySeedsFromServe: the official registry server
// (v1.5.0, on PostgreSQL, started by scripts/registry-local) seeds itself
// from registry serve's /v0/servers URL (MCP_REGISTRY_SEED_FROM: its
// importer pages through the cursor and creates each server through its
// own publish validators) and ends up with exactly the served entries,
// each with its attestation hint.
func TestOfficialRegistrySeedsFromServe(t *testing.T) {
	t.Parallel()
	specs := append(append([]servedSpec(nil), serveSpecs...), manySpecs(70)...)
	set := loadSet(t, servedDump(t, specs))
	srv := httptest.NewServer(NewServer(set))
	defer srv.Close()
	off := registrylocal.StartSeeded(t, srv.URL+"/v0/servers")
	if out := off.Output(); !strings.Contains(out, fmt.Sprintf("Import completed successfully: all %d servers created", len(specs))) {
		t.Fatalf("the official registry's import:\n%s", out)
	}
	var got []string
	err := ListAt(context.Background(), off.URL, Client{}, nil)(func(raw []byte, pos Position) error {
		e, err := ParseEntry(raw, Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", pos, err)
		}
		if len(e.Pointers) != 1 || e.Pointers[0].Digest != dg {
			return fmt.Errorf("%s %s: the attestation hint did not survive: %s", e.Name, e.Version, raw)
		}
		got = append(got, e.Name+"@"+e.Version)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range specs {
		want = append(want, s.name+"@"+s.version)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the official registry holds\n%v\nwant\n%v", got, want)
	}
}
