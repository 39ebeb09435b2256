package monitor

import (
	"errors"
	"testing"
)

func TestParseEntryRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"not JSON", `{`, ErrEntry},
		{"unknown member", `{"kind":"hashedrekord","apiVersion":"0.0.2","x":1}`, ErrEntry},
		{"other kind", `{"kind":"intoto","apiVersion":"0.0.2","spec":{}}`, ErrUnknownKind},
		{"v1 hashedrekord", `{"kind":"hashedrekord","apiVersion":"0.0.1","spec":{}}`, ErrUnknownKind},
		{"no digest", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"signature":{"content":"AA=="}}}}`, ErrEntry},
		{"no verifier", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA=="}}}}`, ErrEntry},
		{"bad certificate", `{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA==","verifier":{"x509Certificate":{"rawBytes":"AAAA"},"keyDetails":"PKIX_ECDSA_P256_SHA_256"}}}}}`, ErrEntry},
		{"dsse without signatures", `{"kind":"dsse","apiVersion":"0.0.2","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_256","digest":"AAAA"}}}}`, ErrEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEntry([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(`{"kind":"hashedrekord","apiVersion":"0.0.2","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"},"signature":{"content":"AA==","verifier":{"publicKey":{"rawBytes":"AAAA"},"keyDetails":"PKIX_ED25519"}}}}}`))
	f.Add([]byte(`{"kind":"dsse","apiVersion":"0.0.2","spec":{"dsseV002":{"payloadHash":{"algorithm":"SHA2_256","digest":"AAAA"},"signatures":[]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEntry(data)
		if err != nil {
			if !errors.Is(err, ErrEntry) {
				t.Fatalf("error not ErrEntry: %v", err)
			}
			return
		}
		if e.Digest == "" || len(e.Signers) == 0 {
			t.Fatalf("accepted %+v", e)
		}
	})
}
