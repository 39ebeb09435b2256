package cputime

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ): 100 on
// every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// Process is the CPU time the process pid has used so far, user and
// system, of every thread, to 10 ms: for a benchmark's peer process (a
// proxy it measures). It is 0 if the process is gone or its stat cannot be
// read.
func Process(pid int) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command (field 2) is in parentheses and may hold spaces: the
	// fields counted from the last ')' on.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * clockTick
}
