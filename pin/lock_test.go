package pin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/examplesnap"
	"github.com/mcpsign/mcpsign/pin/capability"
)

func TestLockRoundTrip(t *testing.T) {
	snap := examplesnap.Live(t, "rugpull")
	approvals := []Approval{
		{Method: MethodTOFU},
		{
			Method: evidence.MethodSigstore, Identity: "https://github.com/acme/server/.github/workflows/release.yml@refs/tags/v1.0.0",
			Issuer: "https://token.actions.githubusercontent.com", BundleDigest: digest.InstructionsDigest("bundle"),
			Tlog: &evidence.Tlog{LogIndex: 123456789, LogID: strings.Repeat("ab", 32), IntegratedTime: new(time.Unix(1767225600, 0).UTC())},
		},
		{Method: evidence.MethodKey, Identity: "sha256:" + strings.Repeat("0", 64), BundleDigest: digest.InstructionsDigest("b")},
		{Method: evidence.MethodCertificate, Identity: "CN=release,O=Example", BundleDigest: digest.InstructionsDigest("c")},
	}
	for _, a := range approvals {
		t.Run(string(a.Method), func(t *testing.T) {
			l, err := NewLock(snap, a)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetCapabilities(capability.Overrides{"run_command": {capability.Exec, capability.Network}}); err != nil {
				t.Fatal(err)
			}
			data := mustMarshal(t, l)
			path := filepath.Join(t.TempDir(), "mcp.lock.json")
			if err := l.Write(context.Background(), path); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			again := mustMarshal(t, got)
			if !bytes.Equal(data, again) {
				t.Errorf("marshal(read(lock)) differs from the lock:\n%s\n---\n%s", data, again)
			}
			if got.LockDigest != l.LockDigest || !got.Approval.ApprovedAt.Equal(l.Approval.ApprovedAt) || got.Approval.Method != a.Method {
				t.Errorf("read back %+v, want %+v", got.Approval, l.Approval)
			}
			if fmt.Sprint(got.Capabilities) != fmt.Sprint(l.Capabilities) {
				t.Errorf("capabilities %v, want %v", got.Capabilities, l.Capabilities)
			}
			// The lock's definitions are the snapshot's: a check finds nothing.
			if r := got.Check(snap); len(r.Findings) != 0 {
				t.Errorf("check of the pinned snapshot: %+v", r.Findings)
			}
			// The lock's snapshot digests like the original.
			if a, b := digest.Compute(got.Snapshot()), digest.Compute(snap); fmt.Sprint(a.Sets, a.Instructions) != fmt.Sprint(b.Sets, b.Instructions) {
				t.Errorf("lock snapshot digests %v, want %v", a.Sets, b.Sets)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("lock file mode %v, %v", fi.Mode(), err)
			}
		})
	}
}

// The lockDigest must be reproducible by another implementation: JCS of the
// lock object without lockDigest, SHA-256, per docs/LOCK.md.
func TestLockDigestRecipe(t *testing.T) {
	data := mustMarshal(t, tofuLock(t, "honest"))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var recorded string
	json.Unmarshal(m["lockDigest"], &recorded)
	delete(m, "lockDigest")
	without, _ := json.Marshal(m) // any serialization: JCS normalizes it
	canon, err := digest.Canonicalize(without)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest.InstructionsDigest(string(canon)); got != recorded {
		t.Errorf("sha256(JCS(lock without lockDigest)) = %s, lockDigest = %s", got, recorded)
	}
}

// reseal recomputes the lockDigest of an edited lock, as a deliberate forger
// would, so that the checks behind the digest are reached.
func reseal(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	dg, err := digestWithout(m, "lockDigest")
	if err != nil {
		t.Fatal(err)
	}
	old := m["lockDigest"]
	return bytes.Replace(data, old, []byte(`"`+dg+`"`), 1)
}

func TestReadRefusesBadLocks(t *testing.T) {
	good := mustMarshal(t, tofuLock(t, "honest"))
	replace := func(old, new string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			if !bytes.Contains(good, []byte(old)) {
				t.Fatalf("the lock has no %q", old)
			}
			return bytes.Replace(good, []byte(old), []byte(new), 1)
		}
	}
	resealed := func(old, new string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return reseal(t, replace(old, new)(t)) }
	}
	lastHex := good[bytes.LastIndex(good, []byte(`"`+"\n}"))-1]
	flipped := byte('0')
	if lastHex == '0' {
		flipped = '1'
	}
	tests := []struct {
		name  string
		data  func(t *testing.T) []byte
		want  error
		match string
	}{
		{"one byte of a description", replace("Delete a note by", "Delete a nose by"), ErrModified, "lockDigest is sha256:"},
		{"one byte of approval", replace(`"approvedAt":"2026-05-01T12:00:00Z"`, `"approvedAt":"2026-05-01T12:00:01Z"`), ErrModified, "never edited by hand"},
		{"approval method", replace(`"method":"tofu"`, `"method":"key"`), ErrModified, "lockDigest"},
		{"one byte of lockDigest", func(*testing.T) []byte {
			b := bytes.Clone(good)
			b[bytes.LastIndex(b, []byte(`"`+"\n}"))-1] = flipped
			return b
		}, ErrModified, "lockDigest"},
		{"resealed edited definition", resealed("Delete a note by", "Delete a nose by"), ErrModified, "is not the digest of the recorded definition"},
		{"resealed edited digest", resealed(`"digest": "sha256:a`, `"digest": "sha256:b`), ErrModified, "does not agree with itself"},
		{"resealed edited set", resealed(`{"tools": "sha256:`, `{"tools": "sha256:0`), ErrMalformed, "sets"},
		{"resealed unknown member", resealed(`"lockVersion": 1,`, `"lockVersion": 1, "extra": true,`), ErrMalformed, `unknown member "extra"`},
		{"resealed unknown approval member", resealed(`"method":"tofu"`, `"method":"tofu","note":"x"`), ErrMalformed, `unknown member "note"`},
		{"resealed case-folded member", resealed(`"protocolVersion"`, `"ProtocolVersion"`), ErrMalformed, `unknown member "ProtocolVersion"`},
		{"resealed tofu with identity", resealed(`"identity":""`, `"identity":"me"`), ErrMalformed, "tofu approval has no identity"},
		{"resealed key method without bundle", resealed(`"method":"tofu","identity":""`, `"method":"key","identity":"k"`), ErrMalformed, "bundleDigest"},
		{"resealed missing approval", resealed(`"approval": {`, `"approva1": {`), ErrMalformed, ""},
		{"resealed definitions out of order", func(t *testing.T) []byte {
			var m map[string]json.RawMessage
			json.Unmarshal(good, &m)
			var defs []json.RawMessage
			json.Unmarshal(m["definitions"], &defs)
			defs[0], defs[1] = defs[1], defs[0]
			m["definitions"], _ = json.Marshal(defs)
			out, _ := json.Marshal(m)
			return reseal(t, out)
		}, ErrModified, "out of order"},
		{"resealed empty capabilities", resealed(`"approval":`, `"capabilities": {"tools": {}}, "approval":`), ErrMalformed, "empty"},
		{"resealed override of an unknown tool", resealed(`"approval":`, `"capabilities": {"tools": {"nope": ["read"]}}, "approval":`), ErrModified, `"nope"`},
		{"resealed bad capability", resealed(`"approval":`, `"capabilities": {"tools": {"read_file": ["root"]}}, "approval":`), ErrMalformed, `"root" is not a capability`},
		{"resealed tlog float", resealed(`"bundleDigest":""`, `"bundleDigest":"","tlog":{"logIndex":1.5,"logId":"ab","integratedTime":1}`), ErrMalformed, "logIndex"},
		{"wrong kind", replace(`"kind": "mcpsign.lock"`, `"kind": "mcpsign.snapshot"`), ErrMalformed, `kind is "mcpsign.snapshot"`},
		{"future version", replace(`"lockVersion": 1`, `"lockVersion": 2`), ErrUnsupportedVersion, "lockVersion 2"},
		{"repeated member", replace(`"lockVersion": 1,`, `"lockVersion": 1, "lockVersion": 1,`), ErrMalformed, "repeated"},
		{"invalid UTF-8", replace("Delete a note", "Delete a \xff note"), ErrMalformed, "UTF-8"},
		{"truncated", func(*testing.T) []byte { return good[:len(good)/2] }, ErrMalformed, ""},
		{"empty", func(*testing.T) []byte { return nil }, ErrMalformed, ""},
		{"not an object", func(*testing.T) []byte { return []byte(`[1]`) }, ErrMalformed, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hand-edited.lock.json")
			data := tc.data(t)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Read(path)
			if err == nil {
				t.Fatalf("Read accepted the lock: %+v", l.Approval)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			var le *LockError
			if !errors.As(err, &le) || le.Path != path || !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the file: %v", err)
			}
			if !strings.Contains(err.Error(), tc.match) {
				t.Errorf("error %q does not say %q", err, tc.match)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, data) {
				t.Error("Read changed the file")
			}
		})
	}
}

func TestReadMissingAndNotRegular(t *testing.T) {
	dir := t.TempDir()
	// Too large: refused by its size, before it is read (a sparse file).
	big := filepath.Join(dir, "big.lock")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxLockBytes + 1)
	f.Close()
	if _, err := Read(big); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized lock: %v", err)
	}
	if _, err := Parse(make([]byte, MaxLockBytes+1)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized lock bytes: %v", err)
	}
	_, err = Read(filepath.Join(dir, "none.lock.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing lock: %v, want fs.ErrNotExist", err)
	}
	if _, err := Read(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory: %v", err)
	}
}

func TestNewLockRefuses(t *testing.T) {
	snap := examplesnap.Live(t, "honest")
	bad := *snap
	bad.Tools = append(bad.Tools[:0:0], snap.Tools...)
	bad.Tools = append(bad.Tools, snap.Tools[0]) // a repeated key
	tests := []struct {
		name string
		snap *digest.Snapshot
		a    Approval
		want string
	}{
		{"repeated key", &bad, Approval{Method: MethodTOFU}, "duplicate key"},
		{"unknown method", snap, Approval{Method: "trust-me"}, "approval method"},
		{"sigstore without identity", snap, Approval{Method: evidence.MethodSigstore, BundleDigest: digest.InstructionsDigest("")}, "identity"},
		{"sigstore without bundle digest", snap, Approval{Method: evidence.MethodSigstore, Identity: "a@example.com"}, "bundleDigest"},
		{"tofu with a bundle", snap, Approval{Method: MethodTOFU, BundleDigest: digest.InstructionsDigest("")}, "tofu"},
		{"tlog index too large", snap, Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: digest.InstructionsDigest(""), Tlog: &evidence.Tlog{LogIndex: 1 << 53, LogID: "ab"}}, "2^53"},
		{"tlog time too large", snap, Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: digest.InstructionsDigest(""), Tlog: &evidence.Tlog{LogID: "ab", IntegratedTime: new(time.Unix(1<<53, 0).UTC())}}, "2^53"},
		{"tlog index negative", snap, Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: digest.InstructionsDigest(""), Tlog: &evidence.Tlog{LogIndex: -1, LogID: "ab"}}, "2^53"},
		{"tlog id not hex", snap, Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: digest.InstructionsDigest(""), Tlog: &evidence.Tlog{LogID: "XYZ"}}, "logId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLock(tc.snap, tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewLock: %v, want an error about %q", err, tc.want)
			}
		})
	}
	// Each bound inclusive: 2^53-1 is the largest index and time.
	top := Approval{Method: evidence.MethodKey, Identity: "k", BundleDigest: digest.InstructionsDigest(""), ApprovedAt: time.Now(),
		Tlog: &evidence.Tlog{LogIndex: 1<<53 - 1, LogID: "ab", IntegratedTime: new(time.Unix(1<<53-1, 0).UTC())}}
	if _, err := NewLock(snap, top); err != nil {
		t.Errorf("a log index and time of 2^53-1: %v", err)
	}
	l := tofuLock(t, "honest")
	if err := l.SetCapabilities(capability.Overrides{"run_command": {capability.Read}}); err == nil || !strings.Contains(err.Error(), "run_command") {
		t.Errorf("override of a tool the server does not have: %v", err)
	}
}

func TestCreateDoesNotReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.lock.json")
	ctx := context.Background()
	first, second := tofuLock(t, "honest"), tofuLock(t, "rugpull")
	if err := first.Create(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := second.Create(ctx, path); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	got, err := Read(path)
	if err != nil || got.LockDigest != first.LockDigest {
		t.Fatalf("after a refused Create: %v, %v", got, err)
	}
}

func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.lock.json")
	ctx := context.Background()
	honest, rug := tofuLock(t, "honest"), tofuLock(t, "rugpull")
	// No lock yet: fn sees nil.
	if err := Update(ctx, path, func(cur *Lock) (*Lock, error) {
		if cur != nil {
			t.Error("Update on no lock gave a lock")
		}
		return honest, nil
	}); err != nil {
		t.Fatal(err)
	}
	// nil leaves the file alone.
	if err := Update(ctx, path, func(cur *Lock) (*Lock, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path); err != nil || got.LockDigest != honest.LockDigest {
		t.Fatalf("after a no-op Update: %v", err)
	}
	// A modified lock stops the update before fn.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte("Delete a note"), []byte("Delete a nose"), 1), 0o644)
	err := Update(ctx, path, func(cur *Lock) (*Lock, error) {
		t.Error("fn called on a modified lock")
		return rug, nil
	})
	if !errors.Is(err, ErrModified) {
		t.Errorf("Update of a modified lock: %v", err)
	}
}

func TestFileLockWaitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.lock.json")
	hold := make(chan struct{})
	held := make(chan struct{})
	go func() {
		withFileLock(context.Background(), path, func() error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	defer close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := tofuLock(t, "honest").Write(ctx, path)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Write while another writer holds the lock: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waited %v", d)
	}
}

// TestWriteLeavesNothingBeside: writing a lock leaves the lock only (no
// zero-byte PATH.lock sidecar, no temporary file).
func TestWriteLeavesNothingBeside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.lock")
	l := tofuLock(t, "honest")
	if err := l.Create(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if err := Update(context.Background(), path, func(cur *Lock) (*Lock, error) { return cur, nil }); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "mcp.lock" {
		t.Errorf("files beside the lock: %v", entries)
	}
}

// A definition's top-level _meta is not digested: the lock stores the
// definition without it, so that nothing undigested is pinned (or shown as
// approved).
func TestLockStoresNoMeta(t *testing.T) {
	s := &digest.Snapshot{Tools: []json.RawMessage{
		json.RawMessage(`{"name":"t","_meta":{"n":1.5,"x":[1,2],"note":"unsigned"},"description":"d"}`),
		json.RawMessage(`{"\u005fmeta":{},"name":"u"}`),
	}}
	l, err := NewLock(s, Approval{Method: MethodTOFU})
	if err != nil {
		t.Fatal(err)
	}
	data := mustMarshal(t, l)
	if bytes.Contains(data, []byte("_meta")) || bytes.Contains(data, []byte(`\u005fmeta`)) {
		t.Errorf("the lock holds _meta:\n%s", data)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if r := back.Check(s); len(r.Findings) != 0 {
		t.Errorf("findings %+v", r.Findings)
	}
	if string(back.Definitions[0].Definition) != `{"name":"t","description":"d"}` {
		t.Errorf("stored %s", back.Definitions[0].Definition)
	}
	// A lock written with a _meta member is refused.
	forged := reseal(t, bytes.Replace(data, []byte(`{"name":"t",`), []byte(`{"name":"t","_meta":{},`), 1))
	if _, err := Parse(forged); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "_meta") {
		t.Errorf("a lock with _meta: %v", err)
	}
}

// TestParseRefusesRepeatedDefinition: a lock that lists one definition
// twice is refused, even resealed.
func TestParseRefusesRepeatedDefinition(t *testing.T) {
	data := mustMarshal(t, resourceLock(t, resourceSnap()))
	i := bytes.Index(data, []byte(`{"kind": "tool"`))
	k := bytes.Index(data[i:], []byte(`"definition": `)) // the entry's last line
	if i < 0 || k < 0 {
		t.Fatalf("no tool entry in\n%s", data)
	}
	j := i + k + bytes.IndexByte(data[i+k:], '\n')
	var twice []byte
	twice = append(twice, data[:j]...)
	twice = append(twice, ",\n    "...)
	twice = append(twice, data[i:j]...)
	twice = append(twice, data[j:]...)
	_, err := Parse(reseal(t, twice))
	if !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), "out of order or repeated") {
		t.Errorf("Parse of a repeated definition: %v", err)
	}
}

// TestValidateProofBundleSize: a proof bundle may be up to
// boundedfile.MaxBundleBytes, inclusive.
func TestValidateProofBundleSize(t *testing.T) {
	for _, tt := range []struct {
		size   int
		tooBig bool
	}{
		{boundedfile.MaxBundleBytes, false},
		{boundedfile.MaxBundleBytes + 1, true},
	} {
		b := bytes.Repeat([]byte("x"), tt.size)
		l := &Lock{Approval: Approval{Method: evidence.MethodKey, BundleDigest: evidence.BundleDigest(b)}, Proof: [][]byte{b}}
		err := l.validateProof()
		if got := err != nil && strings.Contains(err.Error(), "bytes: from 1 to"); got != tt.tooBig {
			t.Errorf("a proof bundle of %d bytes: %v", tt.size, err)
		}
	}
}

// TestParseSizeBound: a lock of MaxLockBytes reads (white space after its
// object is allowed); one byte more is refused before it is read.
func TestParseSizeBound(t *testing.T) {
	data := mustMarshal(t, resourceLock(t, resourceSnap()))
	for _, tt := range []struct {
		size int
		ok   bool
	}{{MaxLockBytes, true}, {MaxLockBytes + 1, false}} {
		padded := append(bytes.Clone(data), bytes.Repeat([]byte(" "), tt.size-len(data))...)
		_, err := Parse(padded)
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("a lock of %d bytes: %v, want ok %v", tt.size, err, tt.ok)
		}
	}
}

// TestParseAuditHead: a lock's auditHead is a sha256 digest or absent.
func TestParseAuditHead(t *testing.T) {
	data := mustMarshal(t, resourceLock(t, resourceSnap()))
	for _, tt := range []struct {
		head string
		ok   bool
	}{
		{`"` + digest.InstructionsDigest("") + `"`, true},
		{`"sha256:0"`, false},
		{`"x"`, false},
		{`7`, false},
	} {
		edited := bytes.Replace(data, []byte(`"approval": {`), []byte(`"auditHead": `+tt.head+`, "approval": {`), 1)
		if bytes.Equal(edited, data) {
			t.Fatalf("no approval member in\n%s", data)
		}
		_, err := Parse(reseal(t, edited))
		if tt.ok != (err == nil) || !tt.ok && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "auditHead")) {
			t.Errorf("auditHead %s: %v, want ok %v", tt.head, err, tt.ok)
		}
	}
}

// TestCarryOverrides: a capability override is carried to the next lock
// for a tool whose definition did not change, and only then.
func TestCarryOverrides(t *testing.T) {
	prev := tofuLock(t, "honest")
	name := prev.Definitions[0].Key
	if err := prev.SetCapabilities(capability.Overrides{name: {capability.Read}}); err != nil {
		t.Fatal(err)
	}
	same := tofuLock(t, "honest")
	same.CarryOverrides(prev)
	if got := same.Capabilities[name]; len(got) != 1 || got[0] != capability.Read {
		t.Errorf("override of unchanged %s: %v, want read", name, same.Capabilities)
	}
	none := tofuLock(t, "honest")
	none.CarryOverrides(tofuLock(t, "honest"))
	if len(none.Capabilities) != 0 {
		t.Errorf("overrides %v carried from a lock without any", none.Capabilities)
	}
}
