package proxycmd

import (
	"fmt"
	"net/url"
	"os"
	"strings"

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
	if err := proxy.CheckURL(u); err != nil {
		return err
	}
	c.Command, c.URL = nil, args[0]
	return nil
}

// HandOver replaces the process with mcpsign-proxy (Executable, Exec) to
// run c, when it is installed beside the running executable. verifyArgs,
// when not nil, are the arguments after the running executable of the
// command that verifies definitions (Config.VerifyCommand), and
// advertisedArg the one of them that names the server's advertised
// capabilities (Config.VerifyAdvertisedArg). It reports false when there
// is no mcpsign-proxy to hand over to, and returns only on that or on a
// failed exec.
func HandOver(c *Config, verifyArgs []string, advertisedArg string) (bool, error) {
	lean, ok := Executable()
	if !ok {
		return false, nil
	}
	if verifyArgs != nil {
		self, err := os.Executable()
		if err != nil {
			return false, nil
		}
		c.VerifyCommand = append([]string{self}, verifyArgs...)
		c.VerifyAdvertisedArg = advertisedArg
	}
	return true, Exec(lean, c)
}
