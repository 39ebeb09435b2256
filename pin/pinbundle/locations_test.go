package pinbundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/verify"
)

// TestLocations: bundles before the server in order, nil in the place of
// the server's; a bundle of the server with no snapshot is ErrNeedsServer
// for a lock, after the files are read; a file that cannot be read is a
// ReadError naming it, and no ReadError hides an advertised one.
func TestLocations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if err := os.WriteFile(a, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.json")
	file := Location{File: a}
	server := Location{FromServer: true}

	got, err := Locations{file, server}.Early(ctx)
	if err != nil || len(got) != 2 || string(got[0]) != `{"a":1}` || got[1] != nil {
		t.Fatalf("Early: %q, %v", got, err)
	}
	if _, err := (Locations{server, file}).ForLock(ctx, nil); !errors.Is(err, ErrNeedsServer) {
		t.Errorf("ForLock without a snapshot: %v, want ErrNeedsServer", err)
	}
	// With a snapshot the server's bundle is read from it: a snapshot that
	// advertises nothing is the server's refusal, not ErrNeedsServer.
	if _, err := (Locations{file, server}).ForLock(ctx, &digest.Snapshot{}); err == nil || errors.Is(err, ErrNeedsServer) {
		t.Errorf("ForLock with a snapshot that advertises nothing: %v", err)
	}
	// The file is read first: its error, not the server's absence.
	_, err = Locations{server, {File: missing}}.ForLock(ctx, nil)
	var re *ReadError
	if !errors.As(err, &re) || re.Location.File != missing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ForLock with a missing file: %v, want a ReadError of it", err)
	}
	if got, err := (Locations{file}).Fresh(ctx, nil); err != nil || string(got[0]) != `{"a":1}` {
		t.Errorf("Fresh: %q, %v", got, err)
	}
	// A snapshot that advertises nothing: the server's refusal, no ReadError.
	_, err = server.Fresh(ctx, &digest.Snapshot{})
	if err == nil || !errors.Is(err, ErrAdvertised) || errors.As(err, &re) {
		t.Errorf("Fresh of a server that advertises nothing: %v", err)
	}
}

// TestAdvertisedParsed: the bundle a server advertises inline is parsed
// as it is read (a malformed one is the server's refusal, ErrAdvertised at
// the bundle step, not bytes handed on to be verified); a bundle that
// parses is returned as advertised.
func TestAdvertisedParsed(t *testing.T) {
	ctx := context.Background()
	snap := snapshot(t, honestSnap)
	good := signBundle(t, snap, attest.Options{})
	for _, tc := range []struct {
		name   string
		bundle string
		ok     bool
	}{
		{"a signed bundle", string(good), true},
		{"an object that is no bundle", `{"a":1}`, false},
		{"a bundle of an unknown media type", `{"mediaType":"application/vnd.dev.sigstore.bundle.v9+json"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *snap
			s.Advertised = json.RawMessage(`{"dev.mcpsign/attestation":{"bundle":` + tc.bundle + `}}`)
			got, err := Location{FromServer: true}.Read(ctx, &s)
			if tc.ok {
				if err != nil || !bytes.Equal(got, bytes.TrimSpace([]byte(tc.bundle))) {
					t.Fatalf("Read: %d bytes, %v; want the advertised bundle", len(got), err)
				}
				return
			}
			var se *verify.StepError
			if !errors.As(err, &se) || se.Step != verify.StepBundle || !errors.Is(err, ErrAdvertised) || got != nil {
				t.Fatalf("Read: %q, %v; want the bundle step's ErrAdvertised", got, err)
			}
		})
	}
}
