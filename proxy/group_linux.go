package proxy

import (
	"bytes"
	"os"
	"strconv"
)

// groupAlive reports whether a live (not zombie) process is in the process
// group pgid. It reads /proc rather than probing with kill(-pgid, 0), which
// also counts zombies: orphans reparented to a PID 1 that does not reap them
// (common in containers) would keep the group "alive" forever.
func groupAlive(pgid int) bool {
	dir, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		f := bytes.Fields(stat[end+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if bytes.Equal(f[2], want) {
			return true
		}
	}
	return false
}
