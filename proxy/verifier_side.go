package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
)

// MaxVerifierInput bounds what ServeVerifier reads: the definitions on its
// stdin, and the advertised capabilities.
const MaxVerifierInput = 256 << 20

// VerificationError is a verification that ServeVerifier's VerifyFunc
// refused: the command exits 1 saying Err, where an input error exits 2.
type VerificationError struct{ Err error }

func (e *VerificationError) Error() string { return e.Err.Error() }
func (e *VerificationError) Unwrap() error { return e.Err }

// ServeVerifier is the verifier command's side of CommandVerifier: it
// reads the observed definitions, a snapshot file (docs/SNAPSHOT.md), from
// in, and, when advertised is not "", what the server advertised beside
// them from that file (bounded as its hello was), verifies them with vf,
// and writes the pin.Verified as JSON to out. A refusal of vf is a
// *VerificationError.
func ServeVerifier(ctx context.Context, in io.Reader, advertised string, vf VerifyFunc, out io.Writer) error {
	data, err := boundedfile.ReadAll(in, "the definitions on stdin", MaxVerifierInput, nil)
	if err != nil {
		return err
	}
	snap, err := digest.ParseSnapshot(data)
	if err != nil {
		return fmt.Errorf("the definitions: %w", err)
	}
	if advertised != "" {
		if snap.Advertised, err = boundedfile.Read(advertised, MaxVerifierInput, nil); err != nil {
			return fmt.Errorf("the advertised attestation: %w", err)
		}
	}
	v, err := vf(ctx, snap)
	if err != nil {
		return &VerificationError{Err: err}
	}
	return json.NewEncoder(out).Encode(v)
}
