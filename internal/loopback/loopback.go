// Package loopback is mcpsign's one loopback rule: which host names this
// machine's loopback interface. netguard (which addresses a fetch may
// reach) and service (which addresses may be served without TLS, which
// Host a request to a loopback address may name) both ask it.
package loopback

import (
	"net/netip"
	"strings"
)

// IsHost reports whether host, a URL's host name without its port
// (url.URL.Hostname), names this machine's loopback interface: "localhost"
// in any case (not "localhost.", which a resolver may send to DNS), or a
// loopback IP address (127.0.0.0/8, ::1, an IPv4-mapped loopback address).
// It resolves nothing: another name is not loopback, whatever it resolves
// to.
func IsHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
