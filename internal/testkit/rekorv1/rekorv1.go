// Package rekorv1 gives tests the Rekor v1 log that
// scripts/rekor-v1/rekor-v1.sh runs on 127.0.0.1 (rekor-server on Trillian
// and MariaDB): its URL, its key, and a trusted root that holds it.
package rekorv1

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Variables: EnvVar names the env.sh that rekor-v1.sh start writes;
// RequireVar, set to 1, turns a missing log into a test failure.
const (
	EnvVar     = "REKOR_V1_ENV"
	RequireVar = "MCPSIGN_REQUIRE_REKOR_V1"
)

// Env is the running log.
type Env struct {
	// URL is the log's base URL (where api/v1/log is).
	URL string
	// PublicKeyPEM is the log's key (PKIX, PEM).
	PublicKeyPEM []byte
}

// Require returns the running log, or skips the test (fails it when
// MCPSIGN_REQUIRE_REKOR_V1=1) when there is none.
func Require(t testing.TB) *Env {
	t.Helper()
	vars := map[string]string{}
	if data, err := os.ReadFile(os.Getenv(EnvVar)); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
				vars[k] = strings.Trim(v, "'")
			}
		}
	}
	e := &Env{URL: vars["REKOR_V1_URL"]}
	var err error = errNoEnv
	if e.URL != "" {
		if e.PublicKeyPEM, err = os.ReadFile(vars["REKOR_V1_PUBLIC_KEY"]); err == nil {
			c := &http.Client{Timeout: 5 * time.Second}
			var resp *http.Response
			if resp, err = c.Get(e.URL + "/api/v1/log"); err == nil {
				resp.Body.Close()
			}
		}
	}
	if err != nil {
		msg := "no Rekor v1 log (scripts/rekor-v1/rekor-v1.sh start, then " + EnvVar + "=/tmp/mcpsign-rekor-v1/env.sh): " + err.Error()
		if os.Getenv(RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return e
}

type envError string

func (e envError) Error() string { return string(e) }

const errNoEnv = envError(EnvVar + " names no env.sh")

// TrustedRoot writes, in dir, the trusted root at base with the log's key
// added as a transparency log, and returns its path.
func (e *Env) TrustedRoot(t testing.TB, base, dir string) string {
	t.Helper()
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var tr map[string]any
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(e.PublicKeyPEM)
	if blk == nil {
		t.Fatal("the Rekor v1 public key is not PEM")
	}
	id := sha256.Sum256(blk.Bytes)
	logs, _ := tr["tlogs"].([]any)
	tr["tlogs"] = append(logs, map[string]any{"baseUrl": e.URL, "hashAlgorithm": "SHA2_256",
		"publicKey": map[string]any{"rawBytes": base64.StdEncoding.EncodeToString(blk.Bytes), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
			"validFor": map[string]any{"start": "2020-01-01T00:00:00Z"}},
		"logId": map[string]any{"keyId": base64.StdEncoding.EncodeToString(id[:])}})
	out, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trusted_root_rekor_v1.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
