package evidence

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestValid(t *testing.T) {
	for m, want := range map[Method]bool{MethodSigstore: true, MethodKey: true, MethodCertificate: true, "tofu": false, "manual": false, "": false, "Key": false} {
		if m.Valid() != want {
			t.Errorf("%q.Valid() = %v", m, !want)
		}
	}
}

func TestTlogEqual(t *testing.T) {
	at := time.Unix(1767225600, 0).UTC()
	sameInstant := at.In(time.FixedZone("x", 3600))
	later := at.Add(time.Second)
	base := Tlog{LogIndex: 7, LogID: "ab", IntegratedTime: &at}
	tests := []struct {
		name string
		u    Tlog
		want bool
	}{
		{"same", Tlog{LogIndex: 7, LogID: "ab", IntegratedTime: new(at)}, true},
		{"same instant, another zone", Tlog{LogIndex: 7, LogID: "ab", IntegratedTime: &sameInstant}, true},
		{"another index", Tlog{LogIndex: 8, LogID: "ab", IntegratedTime: &at}, false},
		{"another log", Tlog{LogIndex: 7, LogID: "cd", IntegratedTime: &at}, false},
		{"another time", Tlog{LogIndex: 7, LogID: "ab", IntegratedTime: &later}, false},
		{"no time", Tlog{LogIndex: 7, LogID: "ab"}, false},
	}
	for _, tc := range tests {
		if got := base.Equal(tc.u); got != tc.want {
			t.Errorf("%s: Equal = %v", tc.name, got)
		}
		if got := tc.u.Equal(base); got != tc.want {
			t.Errorf("%s (reversed): Equal = %v", tc.name, got)
		}
	}
	if !(Tlog{LogIndex: 1, LogID: "ab"}).Equal(Tlog{LogIndex: 1, LogID: "ab"}) {
		t.Error("two entries without a time differ")
	}
}

func TestKeyID(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	want := "sha256:" + hex.EncodeToString(sum[:])
	id, err := KeyID(k.Public())
	if err != nil || id != want {
		t.Fatalf("KeyID = %q (%v), want %q", id, err, want)
	}
	tests := []struct {
		name, hint, want string
	}{
		{"the bundle's hint of the key", base64.StdEncoding.EncodeToString(sum[:]), want},
		{"unpadded", base64.RawStdEncoding.EncodeToString(sum[:]), ""},
		{"URL alphabet", strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 16))), ""},
		{"a SHA-1", base64.StdEncoding.EncodeToString(sum[:20]), ""},
		{"the hex ID itself", want, ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		got, ok := KeyIDOfHint(tc.hint)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: KeyIDOfHint(%q) = %q, %v; want %q", tc.name, tc.hint, got, ok, tc.want)
		}
	}
	if _, err := KeyID("not a key"); err == nil {
		t.Error("KeyID of a string")
	}
}
