//go:build unix

package source

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSS is the peak resident set of an ended process, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	rss := ps.SysUsage().(*syscall.Rusage).Maxrss
	if runtime.GOOS == "darwin" {
		return rss // bytes there, KiB elsewhere
	}
	return rss * 1024
}
