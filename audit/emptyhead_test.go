package audit

import "testing"

// TestEmptyHead: the constant written out is the LineDigest of no bytes.
func TestEmptyHead(t *testing.T) {
	if got := LineDigest(nil); EmptyHead != got {
		t.Fatalf("EmptyHead = %s, LineDigest(nil) = %s", EmptyHead, got)
	}
}
