//go:build !unix

package registry_test

import "time"

// cpuTime is 0 where the process's CPU time is not read: the CPU-time
// figures of the benchmarks are then 0.
func cpuTime() time.Duration { return 0 }
