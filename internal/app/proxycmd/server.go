package proxycmd

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpsign/mcpsign/internal/netguard"
	"github.com/mcpsign/mcpsign/proxy"
)

// SetServer sets the server of c from the words after -- of a proxy's
// command line: one http or https URL is a remote server's, which must be
// https or http to a loopback address (proxy.CheckURL); anything else is
// the command of a stdio server.
func (c *Config) SetServer(args []string) error {
	c.Command, c.URL = args, ""
	if len(args) != 1 {
		return nil
	}
	if scheme, _, ok := strings.Cut(args[0], "://"); !ok || !(strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		return nil
	}
	u, err := url.Parse(args[0])
	if err != nil {
		return fmt.Errorf("the server URL: %w", err)
	}
	if err := proxy.CheckURL(u, netguard.URLRule{AllowInsecureHTTP: c.AllowInsecureHTTP, Credentials: len(c.Headers) > 0 || c.OAuth != nil}); err != nil {
		return err
	}
	c.Command, c.URL = nil, args[0]
	return nil
}
