package pin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

// docsExample returns the first ```json block of docs/LOCK.md.
func docsExample(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "LOCK.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/LOCK.md has no json block")
	}
	return []byte(block)
}

// The example lock of docs/LOCK.md is a valid lock, its lockDigest follows
// the documented recipe, and mcpsign writes it byte for byte.
func TestDocsLockExample(t *testing.T) {
	data := docsExample(t)
	l, err := Parse(data)
	if err != nil {
		t.Fatalf("the documented lock does not read: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "lockDigest")
	without, _ := json.Marshal(m)
	canon, err := digest.Canonicalize(without)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(canon, []byte(`{"approval":{"approvedAt":"2026-05-01T12:00:00Z","bundleDigest":`)) {
		t.Errorf("JCS text starts %.80s", canon)
	}
	if got := digest.InstructionsDigest(string(canon)); got != l.LockDigest {
		t.Errorf("recipe gives %s, lockDigest is %s", got, l.LockDigest)
	}
	again, err := l.Marshal()
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("mcpsign writes the example differently (%v):\n%s", err, again)
	}
}
