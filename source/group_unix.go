//go:build unix && !linux

package source

import "syscall"

// groupAlive reports whether any process is in the process group pgid
// (zombies included: there is no portable way to tell them apart).
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// groupMembers returns the group leader's pid while the group has members.
func groupMembers(pgid int) []int {
	if groupAlive(pgid) {
		return []int{pgid}
	}
	return nil
}
