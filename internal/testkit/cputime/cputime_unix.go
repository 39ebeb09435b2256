//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time this process has used so far: user and system, of
// every thread (the collector's too).
func Self() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
