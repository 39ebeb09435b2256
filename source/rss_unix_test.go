//go:build unix

package source

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSS is the peak resident set of an ended process, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	rss := int64(ps.SysUsage().(*syscall.Rusage).Maxrss) // int32 on some 32-bit systems
	if runtime.GOOS == "darwin" {
		return rss // bytes there, KiB elsewhere
	}
	return rss * 1024
}
