package oidcissuer

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is an Issuer listening on a TCP address, for tests that want an
// in-process issuer on a random port.
type Server struct {
	*Issuer
	srv  *http.Server
	done chan error
}

// Listen starts an Issuer on addr (for example "127.0.0.1:0") whose issuer
// URL is "http://" plus the address actually bound. Call Close when done.
func Listen(addr string, key *rsa.PrivateKey) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: listen: %w", err)
	}
	is, err := New("http://"+ln.Addr().String(), key)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s := &Server{
		Issuer: is,
		srv:    &http.Server{Handler: is, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server, waiting up to five seconds for open requests.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("oidcissuer: close: %w", err)
	}
	return nil
}
