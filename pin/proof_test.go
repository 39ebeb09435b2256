package pin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
)

// TestLockProof: a signed lock carries the bundles that proved it
// (docs/LOCK.md "proof"): written and read back byte for byte, covered by
// lockDigest, and refused, as a malformed or a modified lock, when it is
// not what Marshal writes or does not match the approval.
func TestLockProof(t *testing.T) {
	// first's base64 has padding and a '+' or '/' (the rows below change them).
	first, second := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","x":"??>??"}`), []byte("second bundle")
	signed := func(t *testing.T) *Lock {
		l, err := NewLock(&digest.Snapshot{Tools: nil}, Approval{Method: evidence.MethodKey, Identity: "sha256:" + strings.Repeat("1", 64),
			BundleDigest: evidence.BundleDigest(first), ApprovedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := signed(t)
	if err := l.SetProof([][]byte{first, second}); err != nil {
		t.Fatal(err)
	}
	good := mustMarshal(t, l)
	back, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Proof) != 2 || !bytes.Equal(back.Proof[0], first) || !bytes.Equal(back.Proof[1], second) {
		t.Fatalf("proof read back as %q", back.Proof)
	}
	b64 := base64.StdEncoding.EncodeToString(first)
	if !strings.ContainsAny(b64, "+/") || !strings.HasSuffix(b64, "=") {
		t.Fatalf("%s: want padding and a '+' or '/'", b64)
	}
	replace := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("the lock has no %q", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	// withProof is the lock with the member "proof" set to raw, resealed.
	withProof := func(raw string) []byte {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		m["proof"] = json.RawMessage(raw)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return reseal(t, out)
	}
	tests := []struct {
		name  string
		data  []byte
		want  error
		match string
	}{
		{"one character of the proof", replace(b64[:8], "AAAAAAAA"), ErrModified, "lockDigest"},
		{"resealed swapped proof", reseal(t, replace(b64, base64.StdEncoding.EncodeToString([]byte(`{"other":1}`)))), ErrModified, "not to the approval's bundleDigest"},
		{"resealed bundles in the other order", reseal(t, replace(`"`+b64+`",`+"\n    "+`"`+base64.StdEncoding.EncodeToString(second)+`"`,
			`"`+base64.StdEncoding.EncodeToString(second)+`",`+"\n    "+`"`+b64+`"`)), ErrModified, "not to the approval's bundleDigest"},
		{"resealed empty proof", withProof(`[]`), ErrMalformed, "0 bundles"},
		{"resealed not base64", reseal(t, replace(b64, "not base64!")), ErrMalformed, "standard base64"},
		{"resealed unpadded base64", reseal(t, replace(b64, strings.TrimRight(b64, "="))), ErrMalformed, "standard base64"},
		{"resealed URL base64", reseal(t, replace(b64, base64.URLEncoding.EncodeToString(first))), ErrMalformed, "standard base64"},
		{"resealed a number", reseal(t, replace(`"`+b64+`"`, "1")), ErrMalformed, "proof"},
		{"resealed an object", withProof(`{"a":["` + b64 + `"]}`), ErrMalformed, "not an array"},
		{"resealed null", withProof(`null`), ErrMalformed, "not an array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse(tc.data)
			if err == nil {
				t.Fatalf("Parse accepted it: %q", l.Proof)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.match) {
				t.Errorf("error %v, want %v saying %q", err, tc.want, tc.match)
			}
		})
	}

	// SetProof refuses what Parse would, and leaves the lock as it was.
	for _, tc := range []struct {
		name   string
		tofu   bool
		bundle [][]byte
		match  string
	}{
		{"another first bundle", false, [][]byte{second, first}, "not to the approval's bundleDigest"},
		{"no bundle", false, [][]byte{}, "from 1 to"},
		{"an empty bundle", false, [][]byte{first, {}}, "bundle #1 is 0 bytes"},
		{"too many", false, bytes.SplitAfter(bytes.Repeat([]byte("x"), MaxProofBundles+1), []byte("x"))[:MaxProofBundles+1], "from 1 to"},
		{"a tofu lock", true, [][]byte{first}, "carries no proof"},
	} {
		t.Run("SetProof "+tc.name, func(t *testing.T) {
			l := signed(t)
			if tc.tofu {
				var err error
				if l, err = NewLock(&digest.Snapshot{}, Approval{Method: MethodTOFU}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.SetProof(tc.bundle); err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Errorf("error %v, want %q", err, tc.match)
			}
			if l.Proof != nil {
				t.Error("the lock was changed")
			}
		})
	}
}
