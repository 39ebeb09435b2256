//go:build unix && !linux

package proctree

import "syscall"

// Alive reports whether any process is in the process group pgid (zombies
// included: there is no portable way to tell them apart).
func Alive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// Members returns the group leader's pid while the group has members.
func Members(pgid int) []int {
	if Alive(pgid) {
		return []int{pgid}
	}
	return nil
}
