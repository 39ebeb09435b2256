package main

import (
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/policy"
	"github.com/mcpsign/mcpsign/proxy"
)

// listsResources says whether a command that reads the server lists its
// static resources: when its resources mode (docs/POLICY.md, "resources")
// is pin. The mode is --resources (flag), or, under --policy (pr not
// nil), the policy's, which the flag may not override; the default
// (proxy.ResourceModeFor) follows the lock held (nil: none yet). hide is
// the proxy's alone unless it comes from a policy: such a command then
// lists no resources, as the client behind the proxy sees none.
func listsResources(flag string, pr *policy.Resolved, held *pin.Lock) (bool, error) {
	s := flag
	if pr != nil {
		if flag != "" {
			return false, errors.New("--resources: the policy decides (its \"resources\" member): give one or the other")
		}
		s = string(pr.Resources)
	}
	m, err := proxy.ResourceModeFor(s, held)
	if err != nil {
		return false, fmt.Errorf("--resources: %w", err)
	}
	if m == proxy.ResourcesHide && pr == nil {
		return false, errors.New("--resources hide is the proxy's (it answers the client): here, pin or pass")
	}
	return m == proxy.ResourcesPin, nil
}

// pinResources sets the source to list the static resources when pin's
// resources mode (--resources, or the policy's pr) is pin: they are then
// recorded in the lock. With --force the default follows the lock being
// replaced (when it reads), so that a re-pin keeps pinning the resources
// the old lock pinned; without it there is no lock to replace.
func pinResources(f *verifyFlags, po *options.PinOptions, pr *policy.Resolved) error {
	var held *pin.Lock
	if po.Force && po.Lock != "" {
		if l, err := pin.Read(po.Lock); err == nil {
			held = l
		}
	}
	var err error
	f.src.Listing.Resources, err = listsResources(po.Resources, pr, held)
	return err
}
