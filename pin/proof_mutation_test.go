package pin

import (
	"strings"
	"testing"
)

// TestDecodeProofStrict: the member "proof" is split by the one strict
// reader (digest.Elements), not by encoding/json, and each bundle is
// written in its one form: an escaped string ("\u0041AAA" for "AAAA"),
// which encoding/json accepted, is refused, as is data after the array
// (refused with the strict reader's reason); the count bound holds.
func TestDecodeProofStrict(t *testing.T) {
	bundles := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`"AAAA",`, n), ",") + "]"
	}
	for _, tc := range []struct {
		name, raw, want string // want "" when accepted
	}{
		{"one bundle", `["AAAA"]`, ""},
		{"the bound", bundles(MaxProofBundles), ""},
		{"over the bound", bundles(MaxProofBundles + 1), "17 bundles: from 1 to 16"},
		{"empty", `[]`, "0 bundles"},
		{"not an array", `{"a":1}`, "not an array"},
		{"invalid UTF-8", "[\"AA\xffA\"]", "#0 is not a bundle"},
		{"lone surrogate", `["\ud800"]`, "#0 is not a bundle"},
		{"data after the array", `["AAAA"] x`, "after the JSON array"},
		{"not a string", `[1]`, "#0: not a string"},
		{"not standard base64", `["AAA"]`, "#0 is not a bundle in standard base64"},
		{"escaped base64", `["\u0041AAA"]`, "#0 is not a bundle in standard base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeProof([]byte(tc.raw))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("decodeProof(%q): %v", tc.raw, err)
			case tc.want == "" && len(got) == 0:
				t.Fatalf("decodeProof(%q): no bundles", tc.raw)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("decodeProof(%q) = %v, want an error with %q", tc.raw, err, tc.want)
			}
		})
	}
}
