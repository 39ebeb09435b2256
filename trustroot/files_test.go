package trustroot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/internal/atomicfile"
	"github.com/mcpsign/mcpsign/internal/testkit/shareddata"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.json")
	if err := os.WriteFile(existing, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("new"))
	for name, tc := range map[string]struct {
		path      string
		overwrite bool
		wantErr   error
	}{
		"a new file":                    {filepath.Join(dir, "new.json"), false, nil},
		"an existing file is kept":      {existing, false, atomicfile.ErrExists},
		"an existing file, overwritten": {existing, true, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var told []string
			err := WriteFile(tc.path, []byte("new"), tc.overwrite, func(p, h string) { told = append(told, p, h) })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if len(told) != 0 {
					t.Errorf("told %v of a file not written", told)
				}
				return
			}
			if len(told) != 2 || told[0] != tc.path || told[1] != hex.EncodeToString(sum[:]) {
				t.Errorf("told %v", told)
			}
			if b, _ := os.ReadFile(tc.path); string(b) != "new" {
				t.Errorf("file holds %q", b)
			}
		})
	}
}

// TestFetchFilesChecksFirst: an output that may not be written is refused
// before the TUF repository is asked (it would fail: nothing listens on
// the mirror's port), and nothing is written.
func TestFetchFilesChecksFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "signing_config.json")
	if err := os.WriteFile(existing, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "trusted_root.json")
	opts := Options{CacheDir: t.TempDir(), Mirror: "http://127.0.0.1:1", Timeout: time.Second}
	err := FetchFiles(context.Background(), opts, FetchFilesOptions{TrustedRoot: root, SigningConfig: existing})
	if !errors.Is(err, atomicfile.ErrExists) {
		t.Fatalf("err %v, want atomicfile.ErrExists", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written: %v", root, err)
	}
}

func TestReadFileReport(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bad := filepath.Join(t.TempDir(), "bad\x1b.json")
	if err := os.WriteFile(bad, []byte(`{"mediaType": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	good := shareddata.Path(t, realRoot)
	rep, err := ReadFileReport(good, now)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	if want := DescribeFile(good, data, productionRoot(t), now); rep.SHA256 != want.SHA256 || rep.File != good ||
		len(rep.CertificateAuthorities) != len(want.CertificateAuthorities) || len(rep.CertificateAuthorities) == 0 {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if _, err := ReadFileReport(bad, now); err == nil || !strings.Contains(err.Error(), "bad\x1b.json: trusted root: ") {
		// Raw: the edge that prints the error escapes it, once.
		t.Errorf("a file that does not parse: %v, want it named", err)
	}
	if _, err := ReadFileReport(filepath.Join(t.TempDir(), "missing.json"), now); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestEntrySetCreateOptions(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for name, tc := range map[string]struct {
		set      EntrySet
		wantKind string
		wantErr  func(error) bool
	}{
		"a certificate authority's file": {EntrySet{CertificateAuthorities: Entries{Files: []string{missing}}}, KindCertificateAuthority,
			func(err error) bool { return errors.As(err, new(*FileError)) && errors.Is(err, os.ErrNotExist) }},
		"a timestamp authority's URL": {EntrySet{TimestampAuthorities: Entries{URLs: []string{"https://tsa.example"}}}, KindTimestampAuthority,
			func(err error) bool { return errors.As(err, new(*PartError)) }},
		"a transparency log's start": {EntrySet{TransparencyLogs: Entries{Starts: []string{"x"}}}, KindTransparencyLog,
			func(err error) bool { return errors.As(err, new(*PartError)) }},
		"a CT log's file": {EntrySet{CTLogs: Entries{Files: []string{missing}}}, KindCTLog,
			func(err error) bool { return errors.As(err, new(*FileError)) }},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.set.CreateOptions()
			var ee *EntriesError
			if !errors.As(err, &ee) || ee.Kind != tc.wantKind || !tc.wantErr(err) {
				t.Errorf("err %v, want an EntriesError of %s", err, tc.wantKind)
			}
		})
	}
	opts, err := (&EntrySet{}).CreateOptions()
	if err != nil || len(opts.CertificateAuthorities)+len(opts.TransparencyLogs) != 0 {
		t.Errorf("no entries: %+v, %v", opts, err)
	}
}
