package options

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpsign/mcpsign/internal/service"
)

// ServiceOptions are the flags the long-running services ('mcpsign serve',
// 'mcpsign registry serve') share: where and how they listen, and how
// long they drain (docs/DEPLOY.md, "The operational surface"). Set Listen
// and DrainTimeout before AddFlags to choose the defaults.
type ServiceOptions struct {
	Listen          string
	TLSCert, TLSKey string
	AllowPlaintext  bool
	DrainTimeout    time.Duration
}

// AddFlags adds --listen, --tls-cert, --tls-key, --allow-plaintext and
// --drain-timeout to fs, with o's values as the defaults (DrainTimeout
// zero: service.DefaultDrainTimeout).
func (o *ServiceOptions) AddFlags(fs *pflag.FlagSet) {
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = service.DefaultDrainTimeout
	}
	fs.StringVar(&o.Listen, "listen", o.Listen, "the `ADDR` to listen on (host:port); an address that is not loopback needs --tls-cert and --tls-key, or --allow-plaintext")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "serve HTTPS with the certificate chain `FILE` (PEM, with --tls-key; re-read on SIGHUP)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "the private key `FILE` of --tls-cert (PEM)")
	fs.BoolVar(&o.AllowPlaintext, "allow-plaintext", false, "serve plain HTTP on an address that is not loopback (TLS ends at a proxy or mesh in front)")
	PositiveDurationVar(fs, &o.DrainTimeout, "drain-timeout", o.DrainTimeout, "on SIGTERM or SIGINT, how long the requests in flight get to be answered before they are cut (exit 2)")
}

// OpenListener checks the flags (the TLS pair given whole and loading, plain
// HTTP only on loopback or with --allow-plaintext) and listens on
// --listen: everything that would refuse the start is refused before the
// caller says where it listens.
func (o *ServiceOptions) OpenListener() (net.Listener, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	}
	if o.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey); err != nil {
			return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", o.TLSCert, o.TLSKey, err)
		}
	}
	if err := service.CheckPlaintext(o.Listen, o.TLSCert != "", o.AllowPlaintext); err != nil {
		return nil, o.hint(err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	return ln, nil
}

// Service fills the fields of service.Options these flags set; ln is
// OpenListener's.
func (o *ServiceOptions) Service(ln net.Listener, so service.Options) service.Options {
	so.Listener = ln
	so.TLSCert, so.TLSKey = o.TLSCert, o.TLSKey
	so.AllowPlaintext = o.AllowPlaintext
	so.DrainTimeout = o.DrainTimeout
	return so
}

// Err adds the flags' hint to an error of service.Run.
func (o *ServiceOptions) Err(err error) error {
	if err == nil {
		return nil
	}
	return o.hint(err)
}

func (o *ServiceOptions) hint(err error) error {
	var de *service.DrainError
	switch {
	case errors.Is(err, service.ErrPlaintextListen):
		return fmt.Errorf("--listen %s: %w (give --tls-cert and --tls-key, or --allow-plaintext behind a TLS proxy)", o.Listen, err)
	case errors.As(err, &de):
		return fmt.Errorf("%w (a longer --drain-timeout lets them finish)", err)
	}
	return err
}
