package proctree

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Alive reports whether any live (not zombie) process is in the group pgid.
// A group without any process, the usual answer once a server stopped, is
// told by kill(-pgid, 0) failing with ESRCH; only a group that has one,
// which may be a zombie, is looked up in /proc, a read of every process on
// the machine (Stop polls Alive every 20 ms).
func Alive(pgid int) bool {
	if pgid > 0 && unix.Kill(-pgid, 0) == unix.ESRCH {
		return false
	}
	return len(Members(pgid)) > 0
}

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
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s, err := parseStat(b)
	if err != nil || s.pid != pid {
		return procStat{}, false
	}
	return s, true
}

// readProc reads a small /proc file with plain system calls: the walk reads
// a few of them every poll, and os.File's poller set-up would cost more than
// the read.
func readProc(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= 1<<20 {
				return nil, errors.New("proctree: " + path + " is larger than 1 MiB")
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
