package sign

import (
	"fmt"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	sigsign "github.com/sigstore/sigstore-go/pkg/sign"
)

// Services are the Sigstore services a signing config selects.
type Services struct {
	// FulcioURL is the certificate authority (empty when not asked for).
	FulcioURL string
	// OIDCIssuer is the identity provider for the browser login.
	OIDCIssuer string
	// TransparencyLogs to write to.
	TransparencyLogs []RekorService
	// TimestampAuthorities to ask for a signed timestamp.
	TimestampAuthorities []string
}

// ServiceNeeds say which services to select from a signing config.
type ServiceNeeds struct {
	Fulcio bool
	Rekor  bool
	// TSA selects the timestamp authorities the config lists (none is not
	// an error: a config may list none).
	TSA bool
}

// SelectServices picks, as sigstore-go's root.SelectService(s) do, the
// newest service valid at now of each kind asked for, among the API
// versions sigstore-go speaks (Fulcio v1, Rekor v1 and v2, TSA v1), honoring
// the config's selectors for logs and TSAs (ALL, ANY, EXACT).
func SelectServices(sc *root.SigningConfig, needs ServiceNeeds, now time.Time) (Services, error) {
	var s Services
	if needs.Fulcio {
		f, err := root.SelectService(sc.FulcioCertificateAuthorityURLs(), sigsign.FulcioAPIVersions, now)
		if err != nil {
			return s, fmt.Errorf("%w: signing config: no usable Fulcio: %w", ErrConfig, err)
		}
		s.FulcioURL = f.URL
		if o, err := root.SelectService(sc.OIDCProviderURLs(), []uint32{1}, now); err == nil {
			s.OIDCIssuer = o.URL
		}
	}
	if needs.Rekor {
		logs, err := root.SelectServices(sc.RekorLogURLs(), sc.RekorLogURLsConfig(), sigsign.RekorAPIVersions, now)
		if err != nil {
			return s, fmt.Errorf("%w: signing config: no usable Rekor: %w", ErrConfig, err)
		}
		for _, l := range logs {
			s.TransparencyLogs = append(s.TransparencyLogs, RekorService{URL: l.URL, Version: l.MajorAPIVersion})
		}
	}
	if needs.TSA && len(sc.TimestampAuthorityURLs()) > 0 {
		tsas, err := root.SelectServices(sc.TimestampAuthorityURLs(), sc.TimestampAuthorityURLsConfig(), sigsign.TimestampAuthorityAPIVersions, now)
		if err != nil {
			return s, fmt.Errorf("%w: signing config: no usable timestamp authority: %w", ErrConfig, err)
		}
		for _, t := range tsas {
			s.TimestampAuthorities = append(s.TimestampAuthorities, t.URL)
		}
	}
	return s, nil
}
