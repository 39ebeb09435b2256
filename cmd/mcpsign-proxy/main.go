// Command mcpsign-proxy is the small executable that runs 'mcpsign proxy'.
//
// mcpsign parses and checks the proxy's command line, then replaces itself
// with mcpsign-proxy (exec: same process, same streams), handing it the
// parsed configuration in the environment. mcpsign-proxy links the proxy,
// the lock and the digests, and not the signing, TUF and verification code,
// so that a proxy that lives as long as its host's session stays small.
// When definitions need approving (signed first use, a signed update), it
// runs 'mcpsign proxy-verify' with the same flags. Install it beside
// mcpsign (go install github.com/mcpsign/mcpsign/cmd/...); without it,
// mcpsign runs the proxy itself.
package main

import (
	"os"

	"github.com/mcpsign/mcpsign/cmd/internal/proxyhint"
	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
)

func main() {
	os.Exit(proxycmd.LeanProcess(proxyhint.Hint))
}
