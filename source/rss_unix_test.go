//go:build unix

package source

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peakRSS is the peak resident set of an ended process, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	rss := int64(ps.SysUsage().(*syscall.Rusage).Maxrss) // int32 on some 32-bit systems
	if runtime.GOOS == "darwin" {
		return rss // bytes there, KiB elsewhere
	}
	return rss * 1024
}

// procHWM is the resident-set high-water mark of the memory of process pid
// as it is now (VmHWM in /proc/PID/status, Linux), in bytes; 0 where there
// is none.
func procHWM(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// watchHWM reads procHWM(pid) every 5 ms until stop is closed and then
// sends the highest value read (0: none).
func watchHWM(pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, procHWM(pid))
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// ownPeakRSS is the peak resident set of the ended child of this process
// whose memory watchHWM read as polled. The child's own peak is the
// rusage's, unless that may be this process's: Linux records, at the
// child's exec, the high-water mark of the memory it left, which for Go's
// vfork-style start is this process's (a -race test binary that has run
// the package's other tests: 290 MiB every run under -count=2). Then the
// polled mark of the child's own memory counts.
func ownPeakRSS(ps *os.ProcessState, polled int64) int64 {
	rss := peakRSS(ps)
	if polled > 0 && rss <= procHWM(os.Getpid()) {
		return polled
	}
	return rss
}
