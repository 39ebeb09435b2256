package procgroup

import (
	"bytes"
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
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
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
			pids = append(pids, pid)
		}
	}
	return pids
}
