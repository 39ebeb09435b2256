package verify

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// OpenArtifact reads what a generic bundle is verified over
// (VerifyBundle) as a command line names it: ALG:HEX (sha256, sha384 or
// sha512 and the right number of hex digits, when no file of that name
// exists) is a digest, anything else a file, opened. Call the returned
// function when done with the Artifact.
func OpenArtifact(arg string) (Artifact, func(), error) {
	none := func() {}
	if alg, hx, ok := strings.Cut(arg, ":"); ok {
		want := map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}[alg]
		if want > 0 && len(hx) == want {
			if _, err := os.Stat(arg); errors.Is(err, os.ErrNotExist) {
				d, err := hex.DecodeString(hx)
				if err == nil {
					return Artifact{Digest: d, DigestAlgorithm: alg}, none, nil
				}
			}
		}
	}
	fh, err := os.Open(arg)
	if err != nil {
		return Artifact{}, none, fmt.Errorf("artifact: %w (give a file, or sha256: and 64 hex digits)", err)
	}
	return Artifact{Reader: fh}, func() { fh.Close() }, nil
}
