// Command minverify is the minimal sigstore-go verifier that mcpsign's
// whole-process verification is measured against (docs/PERFORMANCE.md): it
// reads a bundle and a trusted root, verifies the bundle keylessly (SCT, log
// entry, observer timestamp) for an identity and issuer and an artifact
// file or sha256 digest, and prints "ok". No mcpsign code.
//
//	minverify BUNDLE TRUSTED_ROOT IDENTITY ISSUER (FILE | sha256:HEX)
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
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("usage: minverify BUNDLE TRUSTED_ROOT IDENTITY ISSUER (FILE | sha256:HEX)")
	}
	b, err := bundle.LoadJSONFromPath(args[0])
	if err != nil {
		return err
	}
	tr, err := root.NewTrustedRootFromPath(args[1])
	if err != nil {
		return err
	}
	v, err := verify.NewVerifier(tr, verify.WithSignedCertificateTimestamps(1), verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return err
	}
	id, err := verify.NewShortCertificateIdentity(args[3], "", args[2], "")
	if err != nil {
		return err
	}
	var ap verify.ArtifactPolicyOption
	if h, ok := strings.CutPrefix(args[4], "sha256:"); ok {
		d, err := hex.DecodeString(h)
		if err != nil {
			return err
		}
		ap = verify.WithArtifactDigest("sha256", d)
	} else {
		f, err := os.Open(args[4])
		if err != nil {
			return err
		}
		defer f.Close()
		ap = verify.WithArtifact(f)
	}
	_, err = v.Verify(b, verify.NewPolicy(ap, verify.WithCertificateIdentity(id)))
	return err
}
