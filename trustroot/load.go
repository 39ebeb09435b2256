package trustroot

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpsign/mcpsign/internal/boundedfile"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	prototrustroot "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// Bounds on a trusted_root.json.
const (
	// MaxTrustedRootBytes is the largest trusted_root.json read (the
	// public-good one is about 10 KB).
	MaxTrustedRootBytes = 1 << 20
	// MaxEntries is the most entries of each kind (certificate
	// authorities, transparency logs, CT logs, timestamping authorities).
	MaxEntries = 100
	// MaxChainLength is the most certificates in one authority's chain.
	MaxChainLength = 10
)

// Defaults of Options.
const (
	// DefaultTimeout bounds a whole TUF update.
	DefaultTimeout = 60 * time.Second
	// DefaultCacheValidityDays is how long, online, a TUF update is
	// trusted before the next use checks the repository again (expired
	// metadata is always refreshed).
	DefaultCacheValidityDays = 1
	// TrustedRootTarget and SigningConfigTarget are the TUF target names
	// of the public-good trusted root and signing configuration.
	TrustedRootTarget   = "trusted_root.json"
	SigningConfigTarget = "signing_config.v0.2.json"
)

var (
	// ErrOffline is returned (wrapped) when Options.Offline is set and the
	// TUF cache holds no usable (present, verified, unexpired) metadata or
	// target: nothing is fetched instead.
	ErrOffline = errors.New("offline: no usable cached TUF metadata")
	// ErrNoTUFRoot is returned (wrapped) when a TUF repository has no
	// root to start from: none embedded for its mirror, none cached, none
	// given (Options.TUFRoot).
	ErrNoTUFRoot = errors.New("no TUF root")
	// ErrTooLarge is returned (wrapped) for input over its size bound.
	ErrTooLarge = errors.New("too large")
	// ErrDuplicateLogID is returned (wrapped) for a trusted root that lists
	// two transparency logs, or two CT logs, with one log id: sigstore-go
	// keys logs by id and would keep only the last.
	ErrDuplicateLogID = errors.New("duplicate log id")
	// ErrOtherFile is returned (wrapped) for a file that is plainly
	// another kind of file than a trusted root (an mcpsign lock, policy or
	// snapshot, a Sigstore bundle or signing config), naming what it is.
	ErrOtherFile = errors.New("not a Sigstore trusted root")
)

// Options say where trusted material comes from.
type Options struct {
	// TrustedRootPath is a Sigstore trusted_root.json file. When set,
	// Load reads it and TUF is not used.
	TrustedRootPath string
	// SigningConfigPath is a Sigstore signing_config.json (v0.2) file.
	// When set, LoadSigningConfig reads it and TUF is not used.
	SigningConfigPath string

	// CacheDir is the TUF cache directory; "" means DefaultCacheDir().
	// Metadata of each repository is kept in a subdirectory named after
	// its URL.
	CacheDir string
	// Mirror is the TUF repository URL; "" means the Sigstore public-good
	// repository (tuf.DefaultMirror).
	Mirror string
	// TUFRoot is the TUF root.json trusted to start with. Empty means the
	// root cached for Mirror by an earlier update if any, else the root
	// embedded in sigstore-go for the public-good and staging repositories;
	// another Mirror needs it the first time. A cached root newer than
	// TUFRoot is used instead (it was verified with the older one).
	TUFRoot []byte
	// Offline forbids every network access: only verified, unexpired
	// cached TUF metadata and targets are used, and anything missing is
	// an ErrOffline error, never a fetch.
	Offline bool
	// Refresh updates the TUF metadata even when the cache is recent.
	Refresh bool
	// HTTPClient fetches TUF metadata; nil means a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds one TUF update; 0 means DefaultTimeout.
	Timeout time.Duration
}

// DefaultCacheDir returns mcpsign/tuf under the user cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory for the TUF cache (pass a cache directory): %w", err)
	}
	return filepath.Join(d, "mcpsign", "tuf"), nil
}

// Load returns the trusted material opts name: the trusted_root.json at
// opts.TrustedRootPath, else the trusted root of the TUF repository
// (public-good by default), from the cache when it is recent, else updated
// over the network unless opts.Offline. The result is a *root.TrustedRoot;
// wrap it with WithChainCache to verify many bundles fast.
func Load(ctx context.Context, opts Options) (root.TrustedMaterial, error) {
	tr, err := LoadTrustedRoot(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// LoadTrustedRoot is Load with the concrete type.
func LoadTrustedRoot(ctx context.Context, opts Options) (*root.TrustedRoot, error) {
	if opts.TrustedRootPath != "" {
		return LoadTrustedRootFile(opts.TrustedRootPath)
	}
	data, err := FetchTarget(ctx, opts, TrustedRootTarget)
	if err != nil {
		return nil, err
	}
	tr, err := ParseTrustedRoot(data)
	if err != nil {
		return nil, fmt.Errorf("TUF target %s: %w", TrustedRootTarget, err)
	}
	return tr, nil
}

// LoadSigningConfig returns the signing configuration opts name: the file
// at opts.SigningConfigPath, else the signing_config.v0.2.json target of the
// TUF repository, with the cache and offline rules of Load.
func LoadSigningConfig(ctx context.Context, opts Options) (*root.SigningConfig, error) {
	var data []byte
	var err error
	if opts.SigningConfigPath != "" {
		if data, err = readCapped(opts.SigningConfigPath, MaxTrustedRootBytes); err != nil {
			return nil, err
		}
	} else if data, err = FetchTarget(ctx, opts, SigningConfigTarget); err != nil {
		return nil, err
	}
	sc, err := root.NewSigningConfigFromJSON(data)
	if err != nil {
		name := opts.SigningConfigPath
		if name == "" {
			name = "TUF target " + SigningConfigTarget
		}
		return nil, fmt.Errorf("%s: signing config: %w", name, err)
	}
	return sc, nil
}

// LoadTrustedRootFile reads and parses a trusted_root.json file (see
// ParseTrustedRoot).
func LoadTrustedRootFile(path string) (*root.TrustedRoot, error) {
	data, err := readCapped(path, MaxTrustedRootBytes)
	if err != nil {
		return nil, err
	}
	tr, err := ParseTrustedRoot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// otherFile names the kind of file data plainly is when it is not a
// trusted root: an mcpsign file by its "kind", a Sigstore bundle or
// signing config by its "mediaType"; "" when it says neither.
func otherFile(data []byte) string {
	var v struct {
		Kind      string `json:"kind"`
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	switch {
	case v.Kind == "mcpsign.lock":
		return "an mcpsign lock (kind \"mcpsign.lock\")"
	case strings.HasPrefix(v.Kind, "mcpsign."):
		return "an mcpsign file of kind " + textsafe.RawQuote(textsafe.Cut(v.Kind, 64))
	case strings.Contains(v.MediaType, "sigstore.bundle"):
		return "a Sigstore bundle"
	case strings.Contains(v.MediaType, "signingconfig"):
		return "a Sigstore signing config"
	}
	return ""
}

// ParseTrustedRoot parses a Sigstore trusted_root.json (media type
// application/vnd.dev.sigstore.trustedroot+json;version=0.1) with
// sigstore-go: unknown members are refused, every certificate and key must
// parse, tlogs need a validity start. It also refuses more than
// MaxTrustedRootBytes, more than MaxEntries entries of a kind, a chain of
// more than MaxChainLength certificates, and a root that trusts nothing.
func ParseTrustedRoot(data []byte) (*root.TrustedRoot, error) {
	if len(data) > MaxTrustedRootBytes {
		return nil, fmt.Errorf("trusted root is %d bytes, more than %d: %w", len(data), MaxTrustedRootBytes, ErrTooLarge)
	}
	pb, err := root.NewTrustedRootProtobuf(data)
	if err != nil {
		if what := otherFile(data); what != "" {
			return nil, fmt.Errorf("%w: it is %s; a trusted root is a trusted_root.json (mediaType %s), as 'mcpsign trustroot create' writes or a Sigstore deployment publishes", ErrOtherFile, what, textsafe.RawQuote(root.TrustedRootMediaType01))
		}
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	for _, n := range []struct {
		what string
		n    int
	}{
		{"certificate authorities", len(pb.GetCertificateAuthorities())},
		{"transparency logs", len(pb.GetTlogs())},
		{"CT logs", len(pb.GetCtlogs())},
		{"timestamp authorities", len(pb.GetTimestampAuthorities())},
	} {
		if n.n > MaxEntries {
			return nil, fmt.Errorf("trusted root has %d %s, more than %d: %w", n.n, n.what, MaxEntries, ErrTooLarge)
		}
	}
	for _, cas := range [][]*prototrustroot.CertificateAuthority{pb.GetCertificateAuthorities(), pb.GetTimestampAuthorities()} {
		for _, ca := range cas {
			if n := len(ca.GetCertChain().GetCertificates()); n > MaxChainLength {
				return nil, fmt.Errorf("trusted root: a chain of %d certificates, more than %d: %w", n, MaxChainLength, ErrTooLarge)
			}
		}
	}
	for _, logs := range []struct {
		what string
		logs []*prototrustroot.TransparencyLogInstance
	}{{"tlogs", pb.GetTlogs()}, {"ctlogs", pb.GetCtlogs()}} {
		if err := uniqueLogIDs(logs.what, logs.logs); err != nil {
			return nil, err
		}
	}
	if len(pb.GetCertificateAuthorities())+len(pb.GetTlogs())+len(pb.GetCtlogs())+len(pb.GetTimestampAuthorities()) == 0 {
		return nil, errors.New("trusted root trusts nothing: no certificate authority, log or timestamp authority")
	}
	tr, err := root.NewTrustedRootFromProtobuf(pb)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	return tr, nil
}

// uniqueLogIDs refuses two logs of one list (what: "tlogs" or "ctlogs")
// with one log id, naming both and the id.
func uniqueLogIDs(what string, logs []*prototrustroot.TransparencyLogInstance) error {
	first := make(map[string]int, len(logs))
	for i, l := range logs {
		if len(l.GetLogId().GetKeyId()) == 0 {
			continue // sigstore-go refuses a log without an id
		}
		id := hex.EncodeToString(l.GetLogId().GetKeyId())
		if j, dup := first[id]; dup {
			return fmt.Errorf("trusted root: %s[%d] (%s) and %s[%d] (%s) have one log id %s: %w",
				what, j, logs[j].GetBaseUrl(), what, i, l.GetBaseUrl(), id, ErrDuplicateLogID)
		}
		first[id] = i
	}
	return nil
}

// readCapped reads a file of at most limit bytes; a larger one is
// ErrTooLarge.
func readCapped(path string, limit int64) ([]byte, error) {
	return boundedfile.Read(path, limit, ErrTooLarge)
}

// logsAndTimestamps exposes only the logs and timestamping authorities of
// a material.
type logsAndTimestamps struct {
	root.BaseTrustedMaterial
	tm root.TrustedMaterial
}

// LogsAndTimestamps returns tm without its certificate authorities and
// public keys: its transparency logs, CT logs and timestamping authorities
// only. The certificate method combines it with LoadPKI's material, so that
// a Fulcio certificate cannot pass for an enterprise one.
func LogsAndTimestamps(tm root.TrustedMaterial) root.TrustedMaterial {
	return &logsAndTimestamps{tm: tm}
}

func (l *logsAndTimestamps) RekorLogs() map[string]*root.TransparencyLog { return l.tm.RekorLogs() }
func (l *logsAndTimestamps) CTLogs() map[string]*root.TransparencyLog    { return l.tm.CTLogs() }
func (l *logsAndTimestamps) TimestampingAuthorities() []root.TimestampingAuthority {
	return l.tm.TimestampingAuthorities()
}
