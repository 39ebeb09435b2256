//go:build unix && !linux

package proxy

import "syscall"

// groupAlive reports whether any process is in the process group pgid
// (zombies included: there is no portable way to tell them apart).
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}
