package verify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/boundedfile"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"golang.org/x/mod/semver"
	"google.golang.org/protobuf/encoding/protojson"
)

// MaxBundleBytes bounds the size of a bundle: larger ones are refused
// before parsing. Sigstore bundles of mcpsign statements are tens of
// kilobytes; 1024 embedded definitions at the largest sizes servers send
// stay well below.
const MaxBundleBytes = boundedfile.MaxBundleBytes

// ReadBundleFile reads a bundle file, refusing one larger than
// MaxBundleBytes without reading it all.
func ReadBundleFile(path string) ([]byte, error) {
	return boundedfile.Read(path, MaxBundleBytes, ErrBundleTooLarge)
}

// BundleDigest returns "sha256:" and the hex SHA-256 of a bundle's bytes:
// the bundle digest recorded in a lock.
func BundleDigest(data []byte) string { return evidence.BundleDigest(data) }

// ParseBundle reads a Sigstore bundle strictly (protojson: no unknown or
// repeated fields) and checks it is a supported version, v0.1 to v0.3, as
// sigstore-go validates it. allowChain admits an x509CertificateChain in a
// v0.3 bundle (certificate method). The error is a *StepError at StepBundle.
func ParseBundle(data []byte, allowChain bool) (*bundle.Bundle, error) {
	if len(data) > MaxBundleBytes {
		return nil, &StepError{Step: StepBundle, Err: fmt.Errorf("%w: %d bytes, at most %d", ErrBundleTooLarge, len(data), MaxBundleBytes)}
	}
	if len(data) == 0 {
		return nil, stepErr(StepBundle, "the bundle is empty")
	}
	pb := new(protobundle.Bundle)
	if err := protojson.Unmarshal(data, pb); err != nil {
		// protobuf randomizes a space into U+00A0 to deter matching its
		// messages; show a plain space.
		return nil, stepErr(StepBundle, "not a Sigstore bundle: %s", strings.ReplaceAll(err.Error(), "\u00a0", " "))
	}
	var opts []bundle.Option
	if allowChain {
		if v, err := bundleVersion(pb.GetMediaType()); err == nil && semver.Compare(v, "v0.3") >= 0 {
			opts = append(opts, bundle.AllowCertificateChain())
		}
	}
	b, err := bundle.NewBundle(pb, opts...)
	if err != nil {
		return nil, stepErr(StepBundle, "invalid Sigstore bundle: %w", err)
	}
	return b, nil
}

func bundleVersion(mediaType string) (string, error) {
	b := bundle.Bundle{Bundle: &protobundle.Bundle{MediaType: mediaType}}
	v, err := b.Version()
	if err != nil {
		return "", err
	}
	if !semver.IsValid(v) {
		return "", errors.New("invalid bundle version")
	}
	return v, nil
}
