package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/testpki"
	"github.com/mcpsign/mcpsign/internal/testkit/sigstack"
	"github.com/mcpsign/mcpsign/sign"
)

// runWith runs mcpsign in-process with an environment.
func runWith(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &out,
		stderr:     &errb,
		getenv:     func(k string) string { return env[k] },
		isTerminal: func() bool { return false },
	}
	code = run(context.Background(), args, a)
	return code, out.String(), errb.String()
}

var (
	exampleSnapOnce sync.Once
	exampleSnapData []byte
	exampleDigest   digest.Report
)

// exampleSnapshot writes the example server's snapshot into dir and returns
// its path, with the digest command's output for the live server.
func exampleSnapshot(t *testing.T, dir string) (string, digest.Report) {
	t.Helper()
	exampleSnapOnce.Do(func() {
		server := fixtures.BuildExampleServerNoRace(t)
		code, out, stderr := runCLI(t, "digest", "--format", "json", "--", server)
		if code != 0 {
			t.Fatalf("digest: exit %d %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &exampleDigest); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "example.snapshot.json")
		if code, _, stderr := runCLI(t, "snapshot", "-o", p, "--", server); code != 0 {
			t.Fatalf("snapshot: exit %d %s", code, stderr)
		}
		exampleSnapData, _ = os.ReadFile(p)
	})
	if exampleSnapData == nil {
		t.Fatal("no example snapshot")
	}
	p := filepath.Join(dir, "example.snapshot.json")
	if err := os.WriteFile(p, exampleSnapData, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, exampleDigest
}

// checkStatementMatchesDigest checks that a statement's subjects, Set
// Digests and embedded definitions are what 'mcpsign digest' reported.
func checkStatementMatchesDigest(t *testing.T, payload []byte, want digest.Report, embedded bool) *attest.Statement {
	t.Helper()
	st, err := attest.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	subj := st.DefinitionSubjects()
	if len(subj) != len(want.Definitions) {
		t.Fatalf("%d definition subjects, digest lists %d", len(subj), len(want.Definitions))
	}
	for i, d := range want.Definitions {
		if subj[i].Kind != d.Kind || subj[i].Key != d.Key || subj[i].Digest != d.Digest {
			t.Errorf("subject %d: %v, digest says %v", i, subj[i], d)
		}
		raw, ok := st.EmbeddedDefinition(d.Kind, d.Key)
		if ok != embedded {
			t.Fatalf("%s/%s embedded: %v", d.Kind, d.Key, ok)
		}
		if ok {
			got, err := digest.DefinitionDigest(raw)
			if err != nil || got != d.Digest {
				t.Errorf("embedded %s/%s digests to %s, digest says %s", d.Kind, d.Key, got, d.Digest)
			}
		}
	}
	for _, k := range digest.Kinds {
		if w := want.Sets[k.ListMember()]; w == nil || *w != st.Predicate.Sets.Get(k) {
			t.Errorf("set %s: %s, digest says %v", k.ListMember(), st.Predicate.Sets.Get(k), w)
		}
	}
	if want.Instructions == nil || st.Digests()[attest.InstructionsSubject] != *want.Instructions {
		t.Error("instructions subject differs")
	}
	return st
}

func TestAttestCommand(t *testing.T) {
	dir := t.TempDir()
	snap, want := exampleSnapshot(t, dir)
	out := filepath.Join(dir, "statement.json")
	code, _, stderr := runWith(t, nil, "attest", snap, "-o", out)
	if code != 0 || !strings.Contains(stderr, "9 subjects (5 tools, 2 prompts, 1 resource template, instructions)") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	payload, _ := os.ReadFile(out)
	st := checkStatementMatchesDigest(t, payload, want, true)
	if st.Predicate.Source != nil || st.Predicate.Package != nil {
		t.Error("source or package without flags or Actions")
	}

	// Not replaced without --force; replaced with it; to stdout with -.
	if code, _, stderr := runWith(t, nil, "attest", snap, "-o", out, "--no-embed-definitions"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("overwrite: exit %d %s", code, stderr)
	}
	gh := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/notes", "GITHUB_SHA": strings.Repeat("c", 40), "GITHUB_REF": "refs/tags/v1.0.0"}
	code, stdout, stderr := runWith(t, gh, "attest", snap, "-o", "-", "--no-embed-definitions", "--source-ref", "refs/tags/v1.0.1",
		"--package-purl", "pkg:npm/%40acme/notes@1.0.1", "--package-digest", "sha512:"+strings.Repeat("ab", 64))
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	st = checkStatementMatchesDigest(t, []byte(stdout), want, false)
	src := st.Predicate.Source
	if src == nil || src.Repository != "https://github.com/acme/notes" || src.Commit != strings.Repeat("c", 40) || src.Ref != "refs/tags/v1.0.1" {
		t.Errorf("source %+v", src)
	}
	if len(st.Predicate.Package) != 1 || st.Predicate.Package[0].Digest["sha512"] != strings.Repeat("ab", 64) {
		t.Errorf("package %+v", st.Predicate.Package)
	}

	for _, bad := range [][]string{
		{"--package-purl", "npm:foo"},
		{"--package-purl", "pkg:npm/a", "--package-digest", "SHA256:00"},
		{"--package-purl", "pkg:npm/a", "--package-purl", "pkg:npm/b", "--package-digest", "sha256:" + strings.Repeat("0", 64)},
		{"--source-ref", "refs/tags/v1\n\x1b[31m"},
	} {
		args := append([]string{"attest", snap, "-o", "-"}, bad...)
		if code, _, stderr := runWith(t, nil, args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d", bad, code)
		}
	}
}

func TestAttestRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "statement.json")
	bad := fixtures.BuildBadServer(t)
	code, _, stderr := runWith(t, nil, "attest", "-o", out, "--", bad, "--behavior", "invalid-definitions")
	if code != 1 || !strings.Contains(stderr, "cannot be digested") || !strings.Contains(stderr, "repeated member name") {
		t.Errorf("invalid definitions: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a statement was written for invalid definitions")
	}
	// The same for sign: nothing signed, no bundle.
	bundlePath := filepath.Join(dir, "b.json")
	code, _, stderr = runWith(t, nil, "sign", "key", "--key", keyFile(t, "ed25519-pkcs8.pem"), "-o", bundlePath, "--", bad, "--behavior", "invalid-definitions")
	if code != 1 || !strings.Contains(stderr, "cannot be digested") {
		t.Errorf("sign of invalid definitions: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(bundlePath); err == nil {
		t.Error("a bundle was written for invalid definitions")
	}

	// More than 1024 subjects.
	var tools []string
	for i := 0; i < 1025; i++ {
		tools = append(tools, fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i))
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(`{"tools":[`+strings.Join(tools, ",")+`]}`), 0o644)
	code, _, stderr = runWith(t, nil, "attest", big, "-o", out)
	if code != 2 || !strings.Contains(stderr, "1025 definitions") || !strings.Contains(stderr, "at most 1024") {
		t.Errorf("1025 subjects: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a statement was written for 1025 subjects")
	}
}

// keyFile returns a test key of package sign.
func keyFile(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "sign", "testdata", "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeygenCommand(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	dir := t.TempDir()
	prefix := filepath.Join(dir, "release")
	const pw = "correct horse battery staple"
	env := map[string]string{"KEY_PW": pw}
	code, stdout, stderr := runWith(t, env, "keygen", "-o", prefix, "--password-env", "KEY_PW")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	fi, err := os.Stat(prefix + ".key")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi, err)
	}
	keyPEM, _ := os.ReadFile(prefix + ".key")
	pubPEM, _ := os.ReadFile(prefix + ".pub")
	if !bytes.HasPrefix(keyPEM, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----")) || !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----")) {
		t.Fatalf("files:\n%s\n%s", keyPEM, pubPEM)
	}
	if strings.Contains(stdout+stderr, pw) {
		t.Error("the password was printed")
	}
	// OpenSSL reads the key, when it is there.
	if openssl, err := exec.LookPath("openssl"); err == nil {
		cmd := exec.Command(openssl, "pkey", "-in", prefix+".key", "-passin", "env:KEY_PW", "-pubout")
		cmd.Env = append(os.Environ(), "KEY_PW="+pw)
		out, err := cmd.Output()
		if err != nil || !bytes.Equal(out, pubPEM) {
			t.Errorf("openssl: %v\n%s", err, out)
		}
	}
	// Not replaced without --force.
	code, _, stderr = runWith(t, env, "keygen", "-o", prefix, "--password-env", "KEY_PW", "--algorithm", "ed25519")
	if code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("overwrite: exit %d %s", code, stderr)
	}
	if after, _ := os.ReadFile(prefix + ".key"); !bytes.Equal(after, keyPEM) {
		t.Error("key replaced without --force")
	}
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no password source", []string{"-o", filepath.Join(dir, "a")}, "--password-env"},
		{"empty variable", []string{"-o", filepath.Join(dir, "b"), "--password-env", "UNSET"}, "unset or empty"},
		{"unknown algorithm", []string{"-o", filepath.Join(dir, "c"), "--algorithm", "dsa", "--password-env", "KEY_PW"}, "ecdsa-p256"},
	} {
		code, _, stderr := runWith(t, env, append([]string{"keygen"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.msg) {
			t.Errorf("%s: exit %d %s", tt.name, code, stderr)
		}
		if m, _ := filepath.Glob(tt.args[1] + ".*"); len(m) > 0 {
			t.Errorf("%s: files left: %v", tt.name, m)
		}
	}
}

// bundlePayload loads a bundle file with sigstore-go and returns it with
// its DSSE payload.
func bundlePayload(t *testing.T, path string) (*bundle.Bundle, []byte) {
	t.Helper()
	b, err := bundle.LoadJSONFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	env := b.GetDsseEnvelope()
	if env == nil || env.PayloadType != attest.PayloadType {
		t.Fatal("not a DSSE in-toto bundle")
	}
	return b, env.Payload
}

func publicKeyMaterial(t *testing.T, pubPEM []byte) (root.TrustedMaterial, crypto.PublicKey) {
	t.Helper()
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	k := root.NewExpiringKey(v, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return k, nil }), pub
}

func TestSignKeyCommand(t *testing.T) {
	t.Parallel() // its own temporary directory and processes
	dir := t.TempDir()
	snap, want := exampleSnapshot(t, dir)
	const testdataPW = "test-password"
	keygen, _ := sharedKeys(t) // a key 'mcpsign keygen' wrote
	// pub: the public key keygen wrote beside its key (reading it from the
	// private key would derive the key's encryption key once more, 600,000
	// PBKDF2 iterations in this race-instrumented process); "" for the
	// public key of the private key.
	keys := map[string]struct{ key, pw, pub string }{
		"ecdsa-p256 (keygen)":   {keygen.key, sharedKeyPassword, keygen.pub},
		"ecdsa-p384 pbkdf2":     {keyFile(t, "ec-p384-pkcs8-pbkdf2.pem"), testdataPW, ""},
		"ed25519 pkcs8 scrypt":  {keyFile(t, "ed25519-pkcs8-scrypt.pem"), testdataPW, ""},
		"rsa-2048 pkcs1, plain": {keyFile(t, "rsa-2048-pkcs1.pem"), testdataPW, ""},
	}
	for name, k := range keys {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			key, pw := k.key, k.pw
			env := map[string]string{"PW": pw}
			var pubPEM []byte
			if k.pub != "" {
				pubPEM = mustRead(t, k.pub)
			} else {
				pubPEM = publicPEM(t, key, pw)
			}
			pubFile := filepath.Join(d, "k.pub")
			os.WriteFile(pubFile, pubPEM, 0o644)
			out := filepath.Join(d, "b.sigstore.json")
			code, stdout, stderr := runWith(t, env, "sign", "key", "--key", key, "--password-env", "PW", snap, "-o", out)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "method     key") || !strings.Contains(stdout, "Wrote "+out) {
				t.Errorf("report:\n%s", stdout)
			}
			if strings.Contains(stdout+stderr, pw) {
				t.Error("the password was printed")
			}
			b, payload := bundlePayload(t, out)
			checkStatementMatchesDigest(t, payload, want, true)
			tm, _ := publicKeyMaterial(t, pubPEM)
			v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
			if err != nil {
				t.Fatal(err)
			}
			first, _ := hex.DecodeString(strings.TrimPrefix(want.Definitions[0].Digest, "sha256:"))
			if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", first), verify.WithKey())); err != nil {
				t.Fatalf("sigstore-go: %v", err)
			}
			// cosign hashes with SHA-256 for any --key unless told: a P-384
			// signature uses SHA-384 (Sigstore's algorithm registry).
			var extra []string
			if strings.Contains(name, "p384") {
				extra = []string{"--signature-digest-algorithm", "sha384"}
			}
			cosignVerifyKey(t, out, pubFile, want.Definitions[0].Digest, true, extra...)
			cosignVerifyKey(t, out, pubFile, "sha256:"+strings.Repeat("0", 64), false, extra...)
		})
	}
}

// publicPEM returns the PEM public key of a private key file.
func publicPEM(t *testing.T, keyPath, pw string) []byte {
	t.Helper()
	k, err := sign.ReadPrivateKey(keyPath, sign.StaticPassword([]byte(pw)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cosign returns the cosign v2.6.5 that scripts/sigstore-local/build.sh
// installs, or skips (fails under MCPSIGN_REQUIRE_SIGSTACK=1).
func cosign(t *testing.T) string {
	t.Helper()
	var cands []string
	if env, err := sigstack.Load(sigstack.DefaultEnvPath()); err == nil && env.Bin != "" {
		cands = append(cands, filepath.Join(env.Bin, "cosign"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		cands = append(cands, filepath.Join(home, ".cache", "mcpsign", "sigstore-local", "bin", "cosign"))
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	if os.Getenv(sigstack.RequireVar) == "1" {
		t.Fatal("cosign not found (scripts/sigstore-local/build.sh installs it)")
	}
	t.Skip("cosign not found: run scripts/sigstore-local/build.sh")
	return ""
}

// runCosign runs cosign with a throw-away HOME and TUF root, never the
// network (every call passes --trusted-root).
func runCosign(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(cosign(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// emptyTrustedRoot is a trusted root that trusts nothing: cosign wants one
// with --new-bundle-format even to verify with a key.
func emptyTrustedRoot(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "empty_trusted_root.json")
	os.WriteFile(p, []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o644)
	return p
}

func cosignVerify(t *testing.T, bundlePath, subjectDigest string, ok bool, extra ...string) {
	t.Helper()
	args := append([]string{"verify-blob-attestation", "--new-bundle-format", "--bundle", bundlePath,
		"--type", attest.PredicateType, "--digest", strings.TrimPrefix(subjectDigest, "sha256:"), "--digestAlg", "sha256"}, extra...)
	out, err := runCosign(t, args...)
	if ok && (err != nil || !strings.Contains(out, "Verified OK")) {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !ok && err == nil {
		t.Fatalf("cosign verified what it must not:\n%s", out)
	}
}

func cosignVerifyKey(t *testing.T, bundlePath, pubFile, subjectDigest string, ok bool, extra ...string) {
	t.Helper()
	cosignVerify(t, bundlePath, subjectDigest, ok, append([]string{"--key", pubFile, "--insecure-ignore-tlog", "--trusted-root", emptyTrustedRoot(t)}, extra...)...)
}

// testCA is an enterprise CA for the certificate method, written as PEM
// files.
type testCA struct {
	*testpki.CA
	dir                string
	root, inter        *x509.Certificate
	chainFile, rootPEM string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	pki := testpki.New(t, testpki.Names{Organization: "Acme", Root: "Acme Root", Intermediate: "Acme Code Signing CA"})
	ca := &testCA{CA: pki, dir: t.TempDir(), root: pki.Root, inter: pki.Intermediate}
	ca.chainFile = filepath.Join(ca.dir, "chain.pem")
	os.WriteFile(ca.chainFile, ca.ChainPEM(), 0o644)
	ca.rootPEM = filepath.Join(ca.dir, "root.pem")
	os.WriteFile(ca.rootPEM, testpki.PEM(ca.root), 0o644)
	return ca
}

// issue writes a key and a leaf certificate for it, shaped by mod, and
// returns their paths.
func (ca *testCA) issue(t *testing.T, name string, mod func(*x509.Certificate)) (keyPath, certPath string) {
	t.Helper()
	return ca.issueFor(t, name, ecKey(t), mod)
}

// issueFor is issue for the key k.
func (ca *testCA) issueFor(t *testing.T, name string, k *ecdsa.PrivateKey, mod func(*x509.Certificate)) (keyPath, certPath string) {
	t.Helper()
	tmpl := testpki.CodeSigningLeaf(t, "release", "Acme", "release@acme.example")
	if mod != nil {
		mod(tmpl)
	}
	c := ca.Issue(t, k.Public(), tmpl)
	keyPath, certPath = filepath.Join(ca.dir, name+".key"), filepath.Join(ca.dir, name+".crt")
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(certPath, testpki.PEM(c), 0o644)
	return keyPath, certPath
}

// trustedRoot writes a Sigstore trusted root holding this CA (and, when
// base is given, the logs and TSAs of base) for cosign.
func (ca *testCA) trustedRoot(t *testing.T, base *root.TrustedRoot) string {
	t.Helper()
	cas := []root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca.root, Intermediates: []*x509.Certificate{ca.inter}, URI: "https://ca.acme.example"}}
	var (
		tsas        []root.TimestampingAuthority
		tlogs, ctls map[string]*root.TransparencyLog
	)
	if base != nil {
		tsas, tlogs, ctls = base.TimestampingAuthorities(), base.RekorLogs(), base.CTLogs()
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, ctls, tsas, tlogs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(ca.dir, "trusted_root.json")
	os.WriteFile(p, b, 0o644)
	return p
}

func ecKey(t *testing.T) *ecdsa.PrivateKey { return testpki.ECKey(t) }

func TestSignCertificateCommand(t *testing.T) {
	dir := t.TempDir()
	snap, want := exampleSnapshot(t, dir)
	ca := newTestCA(t)
	key, cert := ca.issue(t, "good", nil)
	out := filepath.Join(dir, "c.sigstore.json")
	code, stdout, stderr := runWith(t, nil, "sign", "certificate", "--key", key, "--certificate", cert, "--certificate-chain", ca.chainFile, snap, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	for _, w := range []string{`subject      "CN=release,O=Acme"`, `SAN          "release@acme.example"`, `issued by    "CN=Acme Code Signing CA,O=Acme"`} {
		if !strings.Contains(stdout, w) {
			t.Errorf("report lacks %q:\n%s", w, stdout)
		}
	}
	b, payload := bundlePayload(t, out)
	checkStatementMatchesDigest(t, payload, want, true)
	if b.GetVerificationMaterial().GetCertificate() == nil {
		t.Error("the bundle does not hold the leaf only")
	}
	v, _ := verify.NewVerifier(&pkiMaterial{ca: &root.FulcioCertificateAuthority{Root: ca.root, Intermediates: []*x509.Certificate{ca.inter}}}, verify.WithCurrentTime())
	first, _ := hex.DecodeString(strings.TrimPrefix(want.Definitions[0].Digest, "sha256:"))
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", first), verify.WithoutIdentitiesUnsafe())); err != nil {
		t.Fatalf("sigstore-go: %v", err)
	}
	tr := ca.trustedRoot(t, nil)
	cosignArgs := []string{"--trusted-root", tr, "--certificate-identity", "release@acme.example", "--certificate-oidc-issuer-regexp", ".*", "--insecure-ignore-tlog", "--insecure-ignore-sct"}
	cosignVerify(t, out, want.Definitions[0].Digest, true, cosignArgs...)
	wrongID := append(append([]string{}, cosignArgs[:2]...), "--certificate-identity", "mallory@acme.example", "--certificate-oidc-issuer-regexp", ".*", "--insecure-ignore-tlog", "--insecure-ignore-sct")
	cosignVerify(t, out, want.Definitions[0].Digest, false, wrongID...)
}

// pkiMaterial is trusted material with one enterprise CA.
type pkiMaterial struct {
	root.BaseTrustedMaterial
	ca root.CertificateAuthority
}

func (m *pkiMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority {
	return []root.CertificateAuthority{m.ca}
}
