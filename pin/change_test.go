package pin

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// TestChange is what a manual approval reviews: the sets that changed and
// what to expect, and a server that serves anything else than expected.
func TestChange(t *testing.T) {
	t.Parallel()
	snapOf := func(desc string, ins *string) *digest.Snapshot {
		return &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"}, Instructions: ins,
			Tools: []json.RawMessage{json.RawMessage(`{"name":"t","description":"` + desc + `","inputSchema":{"type":"object"}}`)}}
	}
	old := snapOf("old", nil)
	held, err := NewLock(old, Approval{Method: MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	same, err := NewChange(held, old)
	if err != nil || !same.None() || len(same.Expect()) != 0 || len(same.Stale(nil, nil)) != 0 {
		t.Fatalf("unchanged: %+v %v", same, err)
	}
	ins := "be nice"
	now := snapOf("new", &ins)
	c, err := NewChange(held, now)
	if err != nil || c.None() {
		t.Fatalf("changed: %+v %v", c, err)
	}
	tools := c.Served[digest.KindTool]
	if want := []string{"tools=" + tools, "instructions=" + c.Instructions}; !slices.Equal(c.Expect(), want) {
		t.Fatalf("expect %v, want %v", c.Expect(), want)
	}
	if stale := c.Stale(map[digest.Kind]string{digest.KindTool: tools}, &c.Instructions); len(stale) != 0 {
		t.Fatalf("what was reviewed is stale: %v", stale)
	}
	stale := c.Stale(map[digest.Kind]string{digest.KindTool: held.Sets.Tools}, nil)
	if len(stale) != 2 || StaleSet(stale[0]) != "tools" || StaleSet(stale[1]) != "instructions" || !strings.Contains(stale[1], "expected none") {
		t.Fatalf("stale %v: want tools and instructions", stale)
	}

	// The approval replaces the lock only while it is the lock reviewed.
	path := filepath.Join(t.TempDir(), "n.mcpsign.lock")
	if err := held.WriteWith(context.Background(), path, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	next, err := ApproveManual(context.Background(), path, held, now, Approval{Reason: "reviewed", Approver: "alice"}, nil)
	if err != nil || next.Approval.Method != MethodManual || next.Approval.PreviousLockDigest != held.LockDigest {
		t.Fatalf("approved %+v, %v", next, err)
	}
	if _, err := ApproveManual(context.Background(), path, held, now, Approval{Reason: "again", Approver: "alice"}, nil); !errors.Is(err, ErrLockChanged) {
		t.Fatalf("approving over a changed lock: %v, want ErrLockChanged", err)
	}
}
