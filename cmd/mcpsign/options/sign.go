package options

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/attest/pkgfile"
	"github.com/mcpsign/mcpsign/sign"
)

// StatementOptions are the optional parts of the signed statement: the
// released packages and the source revision the definitions belong to, and
// whether the definitions themselves are embedded. Shared by attest and
// sign.
type StatementOptions struct {
	PackageFiles       []string
	PackagePURLs       []string
	PackageDigests     []string
	SourceRepository   string
	SourceCommit       string
	SourceRef          string
	NoEmbedDefinitions bool
}

// AddFlags adds the statement flags to fs.
func (o *StatementOptions) AddFlags(fs *pflag.FlagSet) {
	StringArrayVar(fs, &o.PackageFiles, "package", "released artifact file that serves these definitions: an npm tarball (npm pack's .tgz), a Python wheel (.whl) or sdist (.tar.gz), or an MCP Bundle (.mcpb); its package URL and digest are read from it (repeatable)")
	StringArrayVar(fs, &o.PackagePURLs, "package-purl", "package URL of the released artifact that serves these definitions, e.g. pkg:npm/%40acme/mcp-notes@1.2.0 (repeatable)")
	StringArrayVar(fs, &o.PackageDigests, "package-digest", "digest of the package named by the --package-purl in the same position, ALG:HEX, e.g. sha512:ab12… (repeatable)")
	fs.StringVar(&o.SourceRepository, "source-repository", "", "source repository URL (default in GitHub Actions: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY)")
	fs.StringVar(&o.SourceCommit, "source-commit", "", "source commit (default in GitHub Actions: $GITHUB_SHA)")
	fs.StringVar(&o.SourceRef, "source-ref", "", "source ref, e.g. refs/tags/v1.2.0 (default in GitHub Actions: $GITHUB_REF)")
	fs.BoolVar(&o.NoEmbedDefinitions, "no-embed-definitions", false, "leave the definitions out of the statement (only their digests are signed; verifiers then cannot show a diff)")
}

// MaxPackages bounds --package-purl.
const MaxPackages = attest.MaxPackages

// AttestOptions returns the attest options (attest.Inputs.Options). The
// source revision flags default, each one, to the GitHub Actions
// environment read with getenv.
func (o *StatementOptions) AttestOptions(getenv func(string) string) (attest.Options, error) {
	opts, err := attest.Inputs{
		PackageFiles: o.PackageFiles, ReadPackage: pkgfile.ReadPackage, PURLs: o.PackagePURLs, Digests: o.PackageDigests,
		Source:          attest.Source{Repository: o.SourceRepository, Commit: o.SourceCommit, Ref: o.SourceRef},
		OmitDefinitions: o.NoEmbedDefinitions,
	}.Options(getenv)
	var ce *attest.CountError
	var fe *attest.PackageFileError
	var ie *attest.InputError
	switch {
	case errors.As(err, &ce) && ce.Part == attest.CountPURLs:
		return opts, fmt.Errorf("--package-purl: at most %d packages", MaxPackages)
	case errors.As(err, &ce) && ce.Part == attest.CountDigests:
		return opts, fmt.Errorf("--package-digest: %d digests for %d --package-purl; give one digest per package, in the same order, or none", ce.Got, ce.Want)
	case errors.As(err, &ce):
		return opts, fmt.Errorf("--package and --package-purl: at most %d packages", MaxPackages)
	case errors.As(err, &fe):
		return opts, fmt.Errorf("--package: %w", fe.Err)
	case errors.As(err, &ie) && strings.HasPrefix(ie.Part, "source."):
		return opts, fmt.Errorf("--%s: %w", strings.ReplaceAll(ie.Part, ".", "-"), err)
	case errors.As(err, &ie):
		return opts, fmt.Errorf("--package-%s %w", ie.Part, err)
	}
	return opts, err
}

// BundleOutputOptions say where the bundle goes.
type BundleOutputOptions struct {
	Bundle string
	Force  bool
}

// DefaultBundle is the bundle file name when none is given.
const DefaultBundle = "mcp-definitions.sigstore.json"

// AddFlags adds -o/--bundle and --force to fs.
func (o *BundleOutputOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Bundle, "bundle", "o", DefaultBundle, "Sigstore bundle file to write")
	fs.BoolVar(&o.Force, "force", false, "replace an existing bundle file")
}

// KeyOptions name a private key and where its password comes from.
type KeyOptions struct {
	Key         string
	PasswordEnv string
}

// AddFlags adds --key and --password-env to fs.
func (o *KeyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Key, "key", "", "PEM private key file (ECDSA P-256/P-384, Ed25519, RSA ≥ 2048; plain or encrypted PKCS#8, SEC 1, PKCS#1, or a cosign key)")
	fs.StringVar(&o.PasswordEnv, "password-env", "", "name of the environment variable holding the key's password (default: prompt, when stdin is a terminal)")
}

// KeySignOptions are the flags of the key and certificate methods.
type KeySignOptions struct {
	KeyOptions
	Log LogOptions
	// Certificate, Chain and EmbedChain are the certificate method's
	// (AddCertificateFlags).
	Certificate string
	Chain       string
	EmbedChain  bool
}

// AddFlags adds the key and log flags to fs.
func (o *KeySignOptions) AddFlags(fs *pflag.FlagSet) {
	o.KeyOptions.AddFlags(fs)
	o.Log.AddFlags(fs)
}

// AddCertificateFlags adds --certificate, --certificate-chain and
// --embed-chain to fs.
func (o *KeySignOptions) AddCertificateFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Certificate, "certificate", "", "PEM certificate of the signing key (the leaf)")
	fs.StringVar(&o.Chain, "certificate-chain", "", "PEM file of the issuing intermediates in order, then the root")
	fs.BoolVar(&o.EmbedChain, "embed-chain", false, "put the intermediates into the bundle (x509CertificateChain) instead of the leaf only")
}

// LogOptions are the optional transparency log and timestamp of the key and
// certificate methods.
type LogOptions struct {
	TlogUpload    bool
	SigningConfig string
	RekorURL      string
	RekorVersion  uint32
	TSAURL        string
}

// AddFlags adds the log and timestamp flags to fs.
func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.TlogUpload, "tlog-upload", false, "log the signature in a Rekor transparency log (public: anyone can see the entry)")
	fs.StringVar(&o.SigningConfig, "signing-config", "", "Sigstore signing_config.json (v0.2): its Rekor (with --tlog-upload) and its timestamp authorities are used")
	fs.StringVar(&o.RekorURL, "rekor-url", "", "Rekor URL for --tlog-upload (instead of --signing-config)")
	fs.Uint32Var(&o.RekorVersion, "rekor-version", 1, "API version of --rekor-url: 1 (rekor) or 2 (rekor-tiles)")
	fs.StringVar(&o.TSAURL, "tsa-url", "", "RFC 3161 timestamp authority endpoint URL, e.g. https://timestamp.sigstore.dev/api/v1/timestamp (instead of --signing-config)")
}

// Validate refuses contradictory log options.
func (o *LogOptions) Validate() error {
	switch {
	case o.SigningConfig != "" && (o.RekorURL != "" || o.TSAURL != ""):
		return errors.New("--signing-config names the services: do not combine it with --rekor-url or --tsa-url")
	case o.RekorURL != "" && !o.TlogUpload:
		return errors.New("--rekor-url without --tlog-upload: add --tlog-upload to log the signature")
	case o.TlogUpload && o.SigningConfig == "" && o.RekorURL == "":
		return errors.New("--tlog-upload needs a log: pass --rekor-url URL or --signing-config FILE")
	}
	return nil
}

// KeylessOptions are the flags of the sigstore method.
type KeylessOptions struct {
	IdentityToken string
	OIDCClientID  string
	SigningConfig string
}

// AddFlags adds the keyless flags to fs.
func (o *KeylessOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.IdentityToken, "identity-token", "", "OIDC identity token, or a file holding one (default: $SIGSTORE_ID_TOKEN, the GitHub Actions token, or a browser login at a terminal); prefer a file: a value shows in the process list")
	fs.StringVar(&o.OIDCClientID, "oidc-client-id", "sigstore", "OIDC client ID: the audience Fulcio expects in the token")
	fs.StringVar(&o.SigningConfig, "signing-config", "", "Sigstore signing_config.json (v0.2) naming Fulcio, Rekor, the timestamp authorities and the OIDC provider (default: the public-good one through TUF)")
}

// KeygenOptions are the flags of keygen: the key pair's sign.KeygenOptions
// (its Password from PasswordEnv).
type KeygenOptions struct {
	sign.KeygenOptions
	PasswordEnv string
}

// AddFlags adds the keygen flags to fs.
func (o *KeygenOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&o.Algorithm), "algorithm", "ecdsa-p256", "key algorithm: ecdsa-p256, ecdsa-p384, ed25519 or rsa-3072")
	fs.StringVarP(&o.Prefix, "output", "o", "mcpsign", "file name prefix: writes PREFIX.key (encrypted, mode 0600) and PREFIX.pub")
	fs.StringVar(&o.PasswordEnv, "password-env", "", "name of the environment variable holding the new key's password (default: prompt twice, when stdin is a terminal)")
	fs.BoolVar(&o.Overwrite, "force", false, "replace existing key files")
}

// AddSigstoreFlags adds the Sigstore trust flags of o (--trusted-root,
// --tuf-cache, --tuf-mirror, --offline), as AddFlags defines them, to fs;
// with caRoots also --ca-roots.
func (o *TrustOptions) AddSigstoreFlags(fs *pflag.FlagSet, caRoots bool) {
	all := pflag.NewFlagSet("trust", pflag.ContinueOnError)
	o.AddFlags(all)
	names := []string{"trusted-root", "tuf-cache", "tuf-mirror", "offline"}
	if caRoots {
		names = append(names, "ca-roots")
	}
	for _, n := range names {
		fs.AddFlag(all.Lookup(n))
	}
}
