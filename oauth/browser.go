package oauth

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"runtime"
)

// OpenBrowser is an opener for [Options.Open]: it hands an http(s) URL to
// the desktop's URL handler (open on macOS, rundll32's FileProtocolHandler
// on Windows, xdg-open elsewhere) and returns once that started. The
// handler's own output is discarded: nothing of it reaches mcpsign's stdout.
func OpenBrowser(_ context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("not an http(s) URL")
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u.String())
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u.String())
	default:
		cmd = exec.Command("xdg-open", u.String())
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the browser outlives the handler
	return nil
}
