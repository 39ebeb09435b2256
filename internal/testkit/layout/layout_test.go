// Package layout holds the tests of the module's floors: which package may
// import which (README.md, "Layout"), and how large the relay core's files
// and functions may grow (size_test.go).
package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/mcpsign/mcpsign"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages runs go list over the whole module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	cmd.Dir = "../../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// rel is a package's path inside the module, "" for one outside it.
func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// isLeaf says whether p is one of internal/'s production leaves. The wire
// layer, internal/mcpwire, is internal (only the project's packages use its
// API) but no leaf: it stands on digest, a room of its own.
func isLeaf(p string) bool {
	r, ok := strings.CutPrefix(p, "internal/")
	return ok && !under(p, "internal/app") && !under(p, "internal/testkit") && !under(p, wire) && !strings.Contains(r, "/")
}

// wire is the wire layer's room.
const wire = "internal/mcpwire"

// room is the unit of the floor plan: a top-level directory, or one package
// directly under internal/, internal/app or internal/testkit.
func room(p string) string {
	parts := strings.Split(p, "/")
	switch {
	case parts[0] != "internal":
		return parts[0]
	case len(parts) >= 3 && (parts[1] == "app" || parts[1] == "testkit"):
		return strings.Join(parts[:3], "/")
	case len(parts) >= 2:
		return strings.Join(parts[:2], "/")
	}
	return p
}

func TestImports(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				to, ok := rel(imp)
				if !ok {
					continue
				}
				switch {
				case isLeaf(from) && !isLeaf(to) && !test:
					t.Errorf("%s is a production leaf but imports %s", from, to)
				case under(to, "internal/testkit") && !test && !under(from, "internal/testkit") && !under(from, "scripts"):
					t.Errorf("%s is production code but imports the test infrastructure %s", from, to)
				case under(to, "internal/app") && !under(from, "cmd") && !under(from, "internal/app") && !under(from, "internal/testkit") && !test:
					t.Errorf("%s is a library but imports the program %s", from, to)
				case under(to, "cmd") && !under(from, "cmd") && !under(from, "internal/testkit"):
					t.Errorf("%s imports the command %s", from, to)
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		check(p.XTestImports, true)
	}
}

// TestFloors checks that the rooms' import graph (production imports only)
// has no cycle, so that every room stands on a floor above all it imports.
func TestFloors(t *testing.T) {
	edges := map[string]map[string]bool{}
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok || room(to) == room(from) {
				continue
			}
			if edges[room(from)] == nil {
				edges[room(from)] = map[string]bool{}
			}
			edges[room(from)][room(to)] = true
		}
	}
	floor := map[string]int{}
	const visiting = -1
	var visit func(r string, path []string) int
	visit = func(r string, path []string) int {
		switch f, ok := floor[r]; {
		case ok && f == visiting:
			t.Fatalf("rooms import each other: %s", strings.Join(append(path, r), " → "))
		case ok:
			return f
		}
		floor[r] = visiting
		f := 0
		for to := range edges[r] {
			f = max(f, visit(to, append(path, r))+1)
		}
		floor[r] = f
		return f
	}
	var rooms []string
	for r := range edges {
		rooms = append(rooms, r)
	}
	sort.Strings(rooms)
	for _, r := range rooms {
		visit(r, nil)
	}
	for _, leaf := range rooms {
		if isLeaf(leaf) && floor[leaf] > 1 {
			t.Errorf("the leaf %s stands on floor %d", leaf, floor[leaf])
		}
	}
	if testing.Verbose() {
		for _, r := range rooms {
			t.Logf("floor %d: %s", floor[r], r)
		}
	}
}

// mayImport is, for the rooms low in the house, every room of ours that
// their production code may import (README.md, "Layout"): what a room
// names here is all it needs, so a new import of anything else is a
// change of the design, not of the code. internal/'s production leaves
// may be imported by every room. Rooms not named here are held by
// mustNotImport.
var mayImport = map[string][]string{
	"digest":    {},
	"evidence":  {},
	"trustroot": {"evidence"},
	"attest":    {"digest"},
	wire:        {"digest"},
	"source":    {"digest", wire},
	// sign takes its vocabulary (Method, the key ID, the log entry) from
	// evidence, never from verify: signing does not verify a policy.
	"sign":   {"attest", "evidence", "trustroot"},
	"verify": {"attest", "digest", "evidence", "trustroot"},
	"hosts":  {"policy"},
	"oauth":  {},
}

// mustNotImport is, for the rooms higher up, the rooms they must not
// import: data flows one way (Source → Snapshot → Statement → sign →
// Bundle; Bundle + Snapshot + Policy → verify → Lock → proxy), and
// nothing downstream reaches back upstream.
var mustNotImport = map[string][]string{
	// pin records what verify decided; it neither signs nor speaks to
	// servers itself.
	"pin": {"sign", wire, "proxy", "policy", "hosts", "monitor", "audit"},
	// The proxy verifies through a sub-process: it links no Sigstore code.
	"proxy":  {"sign", "verify", "trustroot", "policy", "source", "hosts", "monitor"},
	"policy": {"sign", wire, "proxy", "hosts", "monitor", "audit"},
	"audit":  {"sign", "verify", "trustroot", "policy", "source", wire, "proxy", "hosts", "monitor"},
}

// TestDesignImports checks mayImport and mustNotImport on the production
// imports of every package.
func TestDesignImports(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		r := room(from)
		allowed, closed := mayImport[r]
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok || room(to) == r || isLeaf(to) {
				continue
			}
			switch {
			case closed && !slices.Contains(allowed, room(to)):
				t.Errorf("%s imports %s: %s may import only %v (and internal/'s leaves)", from, to, r, allowed)
			case slices.Contains(mustNotImport[r], room(to)):
				t.Errorf("%s imports %s: %s must not import %s", from, to, r, room(to))
			}
		}
	}
}
