package proctree

import (
	"bytes"
	"errors"
	"strconv"
)

// errStat is returned for a /proc/<pid>/stat line that does not parse.
var errStat = errors.New("proctree: malformed /proc stat line")

// procStat is what the tree reads of a process's /proc/<pid>/stat (see
// proc_pid_stat(5)).
type procStat struct {
	pid     int
	state   byte // R, S, D, Z, T, t, X, …
	ppid    int
	pgrp    int
	session int
	start   uint64 // field 22: clock ticks after boot at which it started
}

// zombie reports whether the process has exited and waits to be reaped (or
// is being reaped).
func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// ident is a process as recorded: its pid and its start time, which
// together name one process even after the pid is reused.
func (s procStat) ident() ident { return ident{pid: s.pid, start: s.start} }

// ident names one process: a pid alone may be reused once it is reaped.
type ident struct {
	pid   int
	start uint64
}

// parseStat reads a /proc/<pid>/stat line: "pid (comm) state ppid pgrp
// session … starttime …". The command name may hold spaces and
// parentheses, so the fields are taken after the last ')'. Every field read
// must be a decimal number (the state a single letter); anything else is
// errStat.
func parseStat(b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open || b[open-1] != ' ' {
		return procStat{}, errStat
	}
	var s procStat
	var err error
	if s.pid, err = positive(b[:open-1]); err != nil {
		return procStat{}, err
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 22-3+1 || len(f[0]) != 1 || f[0][0] < 'A' || f[0][0] > 'z' {
		return procStat{}, errStat
	}
	s.state = f[0][0]
	if s.ppid, err = natural(f[4-3]); err != nil {
		return procStat{}, err
	}
	if s.pgrp, err = natural(f[5-3]); err != nil {
		return procStat{}, err
	}
	if s.session, err = natural(f[6-3]); err != nil {
		return procStat{}, err
	}
	if !digits(f[22-3]) {
		return procStat{}, errStat
	}
	if s.start, err = strconv.ParseUint(string(f[22-3]), 10, 64); err != nil {
		return procStat{}, errStat
	}
	return s, nil
}

// parsePids reads a /proc/<pid>/task/<tid>/children file: decimal pids
// separated by spaces. Anything else is errStat.
func parsePids(b []byte) ([]int, error) {
	var pids []int
	for _, f := range bytes.Fields(b) {
		pid, err := positive(f)
		if err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// natural reads a decimal int ≥ 0 that fits a pid (ppid, pgrp and session
// are 0 for processes outside our namespace).
func natural(b []byte) (int, error) {
	if !digits(b) || len(b) > 10 {
		return 0, errStat
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n > 1<<30 {
		return 0, errStat
	}
	return n, nil
}

// positive reads a pid: a decimal int > 0.
func positive(b []byte) (int, error) {
	n, err := natural(b)
	if err != nil || n == 0 {
		return 0, errStat
	}
	return n, nil
}

func digits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
