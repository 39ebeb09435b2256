//go:build unix

package registry_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user and system, every
// thread: the collector's too). Unlike the wall clock it does not count
// the time spent waiting for a core the machine's other work holds.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
