//go:build !linux

package proctree

import (
	"errors"
	"os/exec"
	"time"
)

// ErrSubreaper is never returned here: outside Linux there is no child
// subreaper to become, and only the server's process group is stopped.
var ErrSubreaper = errors.New("proctree: cannot become the child subreaper of the servers' orphans")

// prepare has nothing to do outside Linux.
func prepare() error { return nil }

// tree tracks nothing outside Linux: the group signals are all there is.
type tree struct{}

// startTree starts cmd.
func startTree(cmd *exec.Cmd) (*tree, error) { return &tree{}, cmd.Start() }
func (*tree) stop(time.Duration)             {}
