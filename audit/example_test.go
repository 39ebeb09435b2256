package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsign/mcpsign/audit"
	"github.com/mcpsign/mcpsign/digest"
)

// A lock writer records the approval with AppendAt, which hands it the
// log's head to keep in the lock (its auditHead); later, Check with that
// anchor finds a log cut before the approval.
func ExampleCheck() {
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "audit.jsonl")
	lockDigest := "sha256:7b6c4c93fd95ab521fbd66a41ffb22e6615e75e126dbbc692c21142b8ce68619"

	var head string // what the lock records as its auditHead
	err := audit.AppendAt(context.Background(), log, func(h string) (*audit.Event, error) {
		head = h
		return &audit.Event{
			Time: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Event: audit.Approved,
			Server: digest.ServerInfo{Name: "notes", Version: "1.2.0"}, LockAfter: lockDigest,
			Evidence: &audit.Evidence{Method: "tofu"},
		}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	anchor := audit.Anchor{Name: "the lock notes.lock", Head: head, LockDigest: lockDigest}
	sum, err := audit.Check(log, audit.CheckOptions{Anchors: []audit.Anchor{anchor}})
	fmt.Println(sum.Events, err)

	os.Truncate(log, 0) // the approval cut
	_, err = audit.Check(log, audit.CheckOptions{Anchors: []audit.Anchor{anchor}})
	fmt.Println(err != nil)
	// Output:
	// 1 <nil>
	// true
}
