package proctree

import (
	"os"
	"strconv"
)

// Alive reports whether any live (not zombie) process is in the group pgid.
func Alive(pgid int) bool { return len(Members(pgid)) > 0 }

// Members returns the pids of the live (not zombie) processes in the group
// pgid, read from /proc.
func Members(pgid int) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		s, ok := readStat(pid)
		if ok && !s.zombie() && s.pgrp == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readStat reads /proc/<pid>/stat; false when the process is gone (or the
// line does not parse, or names another pid).
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s, err := parseStat(b)
	if err != nil || s.pid != pid {
		return procStat{}, false
	}
	return s, true
}
