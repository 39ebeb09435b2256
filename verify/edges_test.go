package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
)

// The edges of verify's rules that a mutation run (docs/TESTING.md,
// "Mutation testing") found no test holding: each row fails with the
// mutant it names applied.

// TestOpenArtifactNoAlgorithm: a name with a colon whose prefix is no
// digest algorithm is a file name, never an empty digest (artifact.go:20,
// want >= 0).
func TestOpenArtifactNoAlgorithm(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "release") + ":"
	a, done, err := OpenArtifact(missing)
	if err == nil {
		done()
		t.Fatalf("%q: %+v, want the file's error", missing, a)
	}
}

// TestParseBundleSizeBound: a bundle of exactly MaxBundleBytes is read
// (and refused for what it holds); one byte more is ErrBundleTooLarge
// (bundle.go:37, >= for >).
func TestParseBundleSizeBound(t *testing.T) {
	at := bytes.Repeat([]byte(" "), MaxBundleBytes)
	if _, err := ParseBundle(at, false); err == nil || errors.Is(err, ErrBundleTooLarge) {
		t.Errorf("%d bytes: %v, want a parse error, not ErrBundleTooLarge", len(at), err)
	}
	if _, err := ParseBundle(append(at, ' '), false); !errors.Is(err, ErrBundleTooLarge) {
		t.Errorf("%d bytes: %v, want ErrBundleTooLarge", len(at)+1, err)
	}
}

// TestCertificateMatcherMethods: the certificate method has a matcher as
// the sigstore method has (certmatch.go:44, == for the second !=).
func TestCertificateMatcherMethods(t *testing.T) {
	if _, err := NewCertificateMatcher(MethodCertificate, []Identity{{SAN: "release@corp.example"}}); err != nil {
		t.Errorf("certificate method: %v", err)
	}
}

// TestListSANs: how an error lists a certificate's SANs: "none", a kind
// without a value in parentheses, a named one with its value
// (identity.go:84, 89).
func TestListSANs(t *testing.T) {
	for _, tc := range []struct {
		sans []san
		want string
	}{
		{nil, "none"},
		{[]san{{kind: sanEmail, value: "a@example.com"}}, `e-mail "a@example.com"`},
		{[]san{{kind: sanOther, value: "10.0.0.1"}}, "(other)"},
		{[]san{{kind: sanOtherName, value: "x"}}, "(otherName)"},
		{[]san{{kind: sanURI, value: "https://e.example"}, {kind: sanOther}}, `URI "https://e.example", (other)`},
	} {
		if got := listSANs(tc.sans); got != tc.want {
			t.Errorf("listSANs(%v) = %q, want %q", tc.sans, got, tc.want)
		}
	}
}

// TestValidDNSName: a dNSName criterion's grammar at each of its bounds
// (policy.go:273-285).
func TestValidDNSName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Repeat(label63+".", 3) + strings.Repeat("b", 61) // 4*64-1-2 = 253
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"example.com", true},
		{"*.example.com", true},
		{"a", true},
		{"", false},
		{"*", false},
		{label63 + ".com", true},
		{label63 + "a.com", false},
		{name253, true},
		{name253 + "b", false},
		{"-a.com", false},
		{"a-.com", false},
		{"a-b.com", true},
		{"a..com", false},
		{"azAZ09.com", true},
		{"a`.com", false}, // just below 'a'
		{"a{.com", false}, // just above 'z'
		{"a@.com", false}, // just below 'A'
		{"a[.com", false}, // just above 'Z'
		{"a/.com", false}, // just below '0'
		{"a:.com", false}, // just above '9'
		{"a_b.com", false},
		{"a.*.com", false},
	} {
		if got := validDNSName(tc.name); got != tc.ok {
			t.Errorf("validDNSName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestCompileIdentitiesIndex: an error names the identity's index only
// among several (policy.go:176, >= 1 for > 1).
func TestCompileIdentitiesIndex(t *testing.T) {
	bad := Identity{SANRegexp: "(", Issuer: "https://issuer.example"}
	good := Identity{SAN: "a@example.com", Issuer: "https://issuer.example"}
	if _, err := compileIdentities(MethodSigstore, []Identity{bad}); err == nil || strings.HasPrefix(err.Error(), "identity 0") {
		t.Errorf("one identity: %v, want an error without its index", err)
	}
	if _, err := compileIdentities(MethodSigstore, []Identity{good, bad}); err == nil || !strings.HasPrefix(err.Error(), "identity 1: ") {
		t.Errorf("two identities: %v, want \"identity 1: ...\"", err)
	}
}

// TestNewReport: what a report says of each outcome: verified only with
// no error and a verified result; a signing time, the signed server and
// the counts only when there are some; the counts by status, the
// instructions' row included (report.go:62-89, result.go:91-94).
func TestNewReport(t *testing.T) {
	when := time.Date(2026, 12, 6, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	rows := []Row{{Status: StatusOK}, {Status: StatusOK}, {Status: StatusChanged}}
	for _, tc := range []struct {
		name     string
		res      *Result
		err      error
		verified bool
		check    func(t *testing.T, r *Report)
	}{
		{name: "nothing", verified: false, check: func(t *testing.T, r *Report) {
			if r.Error != "" || r.Counts != nil || r.SigningTime != nil || r.Server != nil {
				t.Errorf("%+v", r)
			}
		}},
		{name: "an error, no result", err: errors.New("bad"), verified: false, check: func(t *testing.T, r *Report) {
			if r.Error != "bad" {
				t.Errorf("error %q", r.Error)
			}
		}},
		{name: "a verified result and an error", res: &Result{Verified: true}, err: errors.New("bad"), verified: false},
		{name: "an unverified result", res: &Result{}, verified: false},
		{name: "verified, nothing more", res: &Result{Verified: true}, verified: true, check: func(t *testing.T, r *Report) {
			if r.SigningTime != nil || r.TimeSource != "" || r.Server != nil || r.Counts != nil {
				t.Errorf("%+v", r)
			}
		}},
		{name: "verified with time, statement and rows", verified: true,
			res: &Result{Verified: true, SigningTime: when, TimeSource: "Tlog", Statement: &attest.Statement{}, Server: digest.ServerInfo{Name: "notes"},
				Definitions: rows, Instructions: &InstructionsRow{Status: StatusChanged}},
			check: func(t *testing.T, r *Report) {
				if r.SigningTime == nil || !r.SigningTime.Equal(when) || r.SigningTime.Location() != time.UTC || r.TimeSource != "Tlog" {
					t.Errorf("signing time %v %q", r.SigningTime, r.TimeSource)
				}
				if r.Server == nil || r.Server.Name != "notes" {
					t.Errorf("server %+v", r.Server)
				}
				if want := map[Status]int{StatusOK: 2, StatusChanged: 2}; !maps.Equal(r.Counts, want) {
					t.Errorf("counts %v, want %v", r.Counts, want)
				}
			}},
		{name: "only the instructions' row", res: &Result{Instructions: &InstructionsRow{Status: StatusOK}}, verified: false,
			check: func(t *testing.T, r *Report) {
				if want := map[Status]int{StatusOK: 1}; !maps.Equal(r.Counts, want) {
					t.Errorf("counts %v, want %v", r.Counts, want)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(tc.res, tc.err)
			if r.Verified != tc.verified {
				t.Errorf("verified %v, want %v", r.Verified, tc.verified)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestASCIIEqualFold: ASCII letters fold at both ends of the range, the
// bytes next to them and every non-ASCII byte compare exactly, and the
// lengths must agree (san.go:114-125).
func TestASCIIEqualFold(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"Example.COM", "example.com", true},
		{"AZ", "az", true},
		{"az", "AZ", true},
		{"@[", "`{", false}, // the bytes just outside A-Z and a-z
		{"`{", "@[", false},
		{"\u212a", "k", false}, // KELVIN SIGN
		{"ab", "abc", false},
		{"abc", "ab", false},
		{"", "", true},
	} {
		if got := asciiEqualFold(tc.a, tc.b); got != tc.want {
			t.Errorf("asciiEqualFold(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestSplitAuthority: userinfo up to the last "@", a port after the last
// ":" unless it is inside an IP literal's brackets (san.go:194-198).
func TestSplitAuthority(t *testing.T) {
	for _, tc := range []struct{ in, user, host, port string }{
		{"example.com", "", "example.com", ""},
		{"u@example.com:8443", "u@", "example.com", ":8443"},
		{"a@b@example.com", "a@b@", "example.com", ""},
		{"@example.com", "@", "example.com", ""},
		{":443", "", "", ":443"},
		{"[::1]", "", "[::1]", ""},
		{"[::1]:443", "", "[::1]", ":443"},
		{"u:pw@[fe80::1]:8", "u:pw@", "[fe80::1]", ":8"},
		{"]:1", "", "]", ":1"},
	} {
		u, h, p := splitAuthority(tc.in)
		if u != tc.user || h != tc.host || p != tc.port {
			t.Errorf("splitAuthority(%q) = %q %q %q, want %q %q %q", tc.in, u, h, p, tc.user, tc.host, tc.port)
		}
	}
}

// TestShortDigest: a digest is cut after 12 hex digits only when longer
// (text.go:22).
func TestShortDigest(t *testing.T) {
	hex12 := "0123456789ab"
	for _, tc := range []struct{ in, want string }{
		{"", "-"},
		{digest.Prefix + hex12, digest.Prefix + hex12},
		{digest.Prefix + hex12 + "c", digest.Prefix + hex12 + "…"},
		{digest.Prefix + strings.Repeat("f", 64), digest.Prefix + "ffffffffffff…"},
		{"sha512:" + strings.Repeat("f", 128), "sha512:" + strings.Repeat("f", 128)},
	} {
		if got := shortDigest(tc.in); got != tc.want {
			t.Errorf("shortDigest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTextServerRenamed: the text report notes a server that calls itself
// otherwise than what was signed, by name or by version, and only then
// (text.go:91).
func TestTextServerRenamed(t *testing.T) {
	signed := digest.ServerInfo{Name: "notes", Version: "1.0.0"}
	for _, tc := range []struct {
		observed digest.ServerInfo
		note     bool
	}{
		{signed, false},
		{digest.ServerInfo{Name: "other", Version: "1.0.0"}, true},
		{digest.ServerInfo{Name: "notes", Version: "2.0.0"}, true},
	} {
		obs := tc.observed
		res := &Result{Verified: true, Statement: &attest.Statement{}, Server: signed, Observed: &obs}
		var b strings.Builder
		if err := WriteResultText(&b, res, nil, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "the server now calls itself"); got != tc.note {
			t.Errorf("observed %+v: note %v, want %v:\n%s", tc.observed, got, tc.note, b.String())
		}
	}
}

// TestSummarizable: only a leaf whose SANs are all DNS names or IP
// addresses gets the placeholder SAN for sigstore-go's summary
// (summary.go:27, 35).
func TestSummarizable(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://ci.example/release")
	for _, tc := range []struct {
		name    string
		tmpl    x509.Certificate
		summary bool
	}{
		{"DNS", x509.Certificate{DNSNames: []string{"release.example"}}, true},
		{"IP", x509.Certificate{IPAddresses: []net.IP{net.ParseIP("192.0.2.1")}}, true},
		{"DNS and IP", x509.Certificate{DNSNames: []string{"release.example"}, IPAddresses: []net.IP{net.ParseIP("192.0.2.1")}}, true},
		{"e-mail", x509.Certificate{EmailAddresses: []string{"release@example.com"}}, false},
		{"URI", x509.Certificate{URIs: []*url.URL{u}}, false},
		{"DNS and e-mail", x509.Certificate{DNSNames: []string{"release.example"}, EmailAddresses: []string{"release@example.com"}}, false},
		{"none", x509.Certificate{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := tc.tmpl
			tmpl.SerialNumber = big.NewInt(1)
			der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			b := &parsedBundle{}
			got, err := summarizable(b, leaf)
			if err != nil {
				t.Fatal(err)
			}
			_, summary := got.(summaryEntity)
			if summary != tc.summary {
				t.Errorf("a summary entity: %v, want %v", summary, tc.summary)
			}
		})
	}
}

// TestCutAuthority: "//" starts an authority, even an empty one; anything
// shorter or else is none (san.go:179).
func TestCutAuthority(t *testing.T) {
	for _, tc := range []struct {
		in, auth, tail string
		ok             bool
	}{
		{"//", "", "", true},
		{"//h", "h", "", true},
		{"//h/p?q#f", "h", "/p?q#f", true},
		{"//h?q", "h", "?q", true},
		{"/", "", "/", false},
		{"", "", "", false},
		{"h/p", "", "h/p", false},
	} {
		a, tail, ok := cutAuthority(tc.in)
		if a != tc.auth || tail != tc.tail || ok != tc.ok {
			t.Errorf("cutAuthority(%q) = %q %q %v, want %q %q %v", tc.in, a, tail, ok, tc.auth, tc.tail, tc.ok)
		}
	}
}

// TestMatchEveryRowChanged: the diff is shown when every definition
// changed too, not only when some did not (match.go:144).
func TestMatchEveryRowChanged(t *testing.T) {
	signed := &digest.Snapshot{Server: digest.ServerInfo{Name: "notes", Version: "1"},
		Tools: []json.RawMessage{json.RawMessage(`{"name":"search_notes","description":"Search the notes.","inputSchema":{"type":"object"}}`)}}
	st, err := attest.Build(signed, attest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	served := *signed
	served.Tools = []json.RawMessage{json.RawMessage(`{"name":"search_notes","description":"Search the notes, then mail them.","inputSchema":{"type":"object"}}`)}
	rows, _, err := match(st, &served)
	if !errors.Is(err, ErrMismatch) || len(rows) != 1 || rows[0].Status != StatusChanged {
		t.Fatalf("rows %+v, %v: want one changed row", rows, err)
	}
	if !strings.Contains(rows[0].Diff, "+  \"description\": \"Search the notes, then mail them.\",") {
		t.Errorf("diff of the only row:\n%s", rows[0].Diff)
	}
}
