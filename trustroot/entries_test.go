package trustroot

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEntries(t *testing.T) {
	t.Parallel()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "log.pub")
	if err := os.WriteFile(key, keyPEM(t, &k.PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, err := Entries{Files: []string{key, key}, URLs: []string{"https://a.example"}, Origins: []string{"", "b.example"},
		Starts: []string{"2025-01-31T00:00:00Z"}}.Logs()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)
	if len(logs) != 2 || logs[0].BaseURL != "https://a.example" || logs[1].BaseURL != "" || logs[1].Origin != "b.example" ||
		!logs[0].Start.Equal(start) || !logs[1].Start.IsZero() || !bytes.Equal(logs[0].KeyPEM, keyPEM(t, &k.PublicKey)) {
		t.Errorf("logs %+v", logs)
	}
	for name, tc := range map[string]struct {
		es   Entries
		want func(error) bool
	}{
		"a URL without a file": {Entries{URLs: []string{"https://a.example"}}, func(err error) bool {
			var pe *PartError
			return errors.As(err, &pe) && pe.Part == PartURL && pe.Got == 1 && pe.Files == 0
		}},
		"two ends for one file": {Entries{Files: []string{key}, Ends: []string{"", ""}}, func(err error) bool {
			var pe *PartError
			return errors.As(err, &pe) && pe.Part == PartEnd && pe.Got == 2 && pe.Files == 1
		}},
		"a start that is no time": {Entries{Files: []string{key}, Starts: []string{"yesterday"}}, func(err error) bool {
			var te *TimeError
			return errors.As(err, &te) && te.Part == PartStart && te.Value == "yesterday"
		}},
		"a missing file": {Entries{Files: []string{filepath.Join(t.TempDir(), "none.pem")}}, func(err error) bool {
			var fe *FileError
			return errors.As(err, &fe) && errors.Is(err, os.ErrNotExist)
		}},
	} {
		if _, err := tc.es.Authorities(); !tc.want(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
