package auditevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/audit/auditevent"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/pin"
)

// TestAnchors: a lock written with an audit log anchors it, with the
// heads after the locks; a lock without a head, a head that is no
// digest, and a missing lock are refused.
func TestAnchors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap := &digest.Snapshot{Server: digest.ServerInfo{Name: "n", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}
	newLock := func() *pin.Lock {
		l, err := pin.NewLock(snap, pin.Approval{Method: pin.MethodTOFU})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := newLock()
	anchored, bare := filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")
	if err := auditevent.WriteLock(context.Background(), anchored, l, false, filepath.Join(dir, "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := auditevent.WriteLock(context.Background(), bare, newLock(), false, ""); err != nil {
		t.Fatal(err)
	}
	head := "sha256:" + strings.Repeat("ab", 32)
	got, err := auditevent.Anchors([]string{anchored}, []string{head})
	if err != nil || len(got) != 2 || got[0].LockDigest != l.LockDigest || got[0].Head == "" ||
		got[1].Head != head || got[1].Name != "the expected head" {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := auditevent.Anchors(nil, nil); err != nil || len(got) != 0 {
		t.Errorf("no anchors: %+v %v", got, err)
	}
	var nh *auditevent.NoHeadError
	if _, err := auditevent.Anchors([]string{anchored, bare}, nil); !errors.As(err, &nh) || nh.Path != bare {
		t.Errorf("a lock without a head: %v", err)
	}
	var he *auditevent.HeadError
	if _, err := auditevent.Anchors([]string{anchored}, []string{head, "sha256:AB"}); !errors.As(err, &he) ||
		err.Error() != `"sha256:AB": want sha256: and 64 lowercase hex digits` {
		t.Errorf("a head that is no digest: %v", err)
	}
	if _, err := auditevent.Anchors([]string{filepath.Join(dir, "none.lock")}, []string{"x"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing lock (before the heads): %v", err)
	}
}
