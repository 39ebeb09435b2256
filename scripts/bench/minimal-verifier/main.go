// Command minimal-verifier is the smallest sigstore-go program that verifies
// a keyless Sigstore bundle offline the way cosign does (SCT, log entry,
// observer timestamp, identity and issuer, artifact digest): the peer that
// scripts/bench/verify-compare.sh measures 'mcpsign verify bundle' against.
//
//	minimal-verifier BUNDLE TRUSTED_ROOT IDENTITY ISSUER sha256:HEX|FILE
package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: minimal-verifier BUNDLE TRUSTED_ROOT IDENTITY ISSUER sha256:HEX|FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]); err != nil {
		fmt.Fprintln(os.Stderr, "minimal-verifier:", err)
		os.Exit(1)
	}
	fmt.Println("OK")
}

func run(bundlePath, rootPath, identity, issuer, input string) error {
	b, err := bundle.LoadJSONFromPath(bundlePath)
	if err != nil {
		return err
	}
	tr, err := root.NewTrustedRootFromPath(rootPath)
	if err != nil {
		return err
	}
	v, err := verify.NewVerifier(tr, verify.WithSignedCertificateTimestamps(1),
		verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return err
	}
	id, err := verify.NewShortCertificateIdentity(issuer, "", identity, "")
	if err != nil {
		return err
	}
	var artifact verify.ArtifactPolicyOption
	if hexDigest, ok := strings.CutPrefix(input, "sha256:"); ok {
		d, err := hex.DecodeString(hexDigest)
		if err != nil {
			return err
		}
		artifact = verify.WithArtifactDigest("sha256", d)
	} else {
		f, err := os.Open(input)
		if err != nil {
			return err
		}
		defer f.Close()
		artifact = verify.WithArtifact(f)
	}
	_, err = v.Verify(b, verify.NewPolicy(artifact, verify.WithCertificateIdentity(id)))
	return err
}
