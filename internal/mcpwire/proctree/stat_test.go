package proctree

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// statLine is a /proc/<pid>/stat line with the given command name.
func statLine(pid int, comm, state string, ppid, pgrp, session int, start string) string {
	return fmt.Sprintf("%d (%s) %s %d %d %d 34816 %d 4194560 1402 0 0 0 3 1 0 0 20 0 1 0 %s 9027584 896 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0",
		pid, comm, state, ppid, pgrp, session, pgrp, start)
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want procStat // zero: refused
	}{
		{"plain", statLine(42, "sleep", "S", 7, 42, 7, "123456"), procStat{pid: 42, state: 'S', ppid: 7, pgrp: 42, session: 7, start: 123456}},
		{"zombie", statLine(42, "sh", "Z", 1, 1, 1, "9"), procStat{pid: 42, state: 'Z', ppid: 1, pgrp: 1, session: 1, start: 9}},
		{"comm with spaces and parens", statLine(42, "a) S 1 1 1 (b", "R", 3, 4, 5, "6"), procStat{pid: 42, state: 'R', ppid: 3, pgrp: 4, session: 5, start: 6}},
		{"outside our namespace", statLine(42, "x", "S", 0, 0, 0, "6"), procStat{pid: 42, state: 'S', start: 6}},
		{"no comm", "42 S 1 1 1", procStat{}},
		{"pid zero", statLine(0, "x", "S", 1, 1, 1, "6"), procStat{}},
		{"negative ppid", statLine(42, "x", "S", -1, 1, 1, "6"), procStat{}},
		{"start not a number", statLine(42, "x", "S", 1, 1, 1, "6x"), procStat{}},
		{"start beyond 64 bits", statLine(42, "x", "S", 1, 1, 1, "18446744073709551616"), procStat{}},
		{"state of two letters", statLine(42, "x", "SS", 1, 1, 1, "6"), procStat{}},
		{"truncated before the start time", "42 (x) S 1 1 1 0 1 0 0 0 0 0 0 0 0 0 20 0", procStat{}},
		{"pid with a sign", "+42 " + statLine(42, "x", "S", 1, 1, 1, "6")[3:], procStat{}},
		// The fields end at the start time (field 22): nothing after it
		// is read, so the line is whole; one field fewer is cut.
		{"ends at the start time", "42 (x) S 7 42 7" + strings.Repeat(" 0", 22-7) + " 123", procStat{pid: 42, state: 'S', ppid: 7, pgrp: 42, session: 7, start: 123}},
		{"ends one field before the start time", "42 (x) S 7 42 7" + strings.Repeat(" 0", 22-7), procStat{}},
		{"ends two fields before the start time", "42 (x) S 7 42 7" + strings.Repeat(" 0", 22-8), procStat{}},
		// The state is one byte from 'A' to 'z', both included.
		{"state A", statLine(42, "x", "A", 1, 1, 1, "6"), procStat{pid: 42, state: 'A', ppid: 1, pgrp: 1, session: 1, start: 6}},
		{"state z", statLine(42, "x", "z", 1, 1, 1, "6"), procStat{pid: 42, state: 'z', ppid: 1, pgrp: 1, session: 1, start: 6}},
		{"state below A", statLine(42, "x", "@", 1, 1, 1, "6"), procStat{}},
		{"state above z", statLine(42, "x", "{", 1, 1, 1, "6"), procStat{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.line))
			if tc.want == (procStat{}) {
				if err != errStat {
					t.Fatalf("parseStat(%q) = %+v, %v; want errStat", tc.line, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStat(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
			}
		})
	}
}

func TestParsePids(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"12 345 6789 ", []int{12, 345, 6789}, true},
		{"12 x", nil, false},
		{"12 0", nil, false},
		{"-3", nil, false},
		// A number of at most 10 digits, at most 1<<30.
		{"1073741824 0000000007", []int{1 << 30, 7}, true},
		{"1073741825", nil, false},
		{"00000000007", nil, false},
	} {
		got, err := parsePids([]byte(tc.in))
		if (err == nil) != tc.ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parsePids(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(statLine(42, "a) S 1 1 1 (b", "R", 3, 4, 5, "6")))
	f.Add([]byte(statLine(42, "", "Z", 0, 0, 0, "0")))
	f.Add([]byte("1 ("))
	f.Add([]byte(") ("))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err != nil {
			if err != errStat || s != (procStat{}) {
				t.Fatalf("refusal %+v, %v", s, err)
			}
			return
		}
		if s.pid <= 0 || s.ppid < 0 || s.pgrp < 0 || s.session < 0 || s.state < 'A' || s.state > 'z' {
			t.Fatalf("accepted %q as %+v", b, s)
		}
	})
}

func FuzzParsePids(f *testing.F) {
	f.Add([]byte("12 345 6789 "))
	f.Add([]byte("1\n"))
	f.Add([]byte("99999999999"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, err := parsePids(b)
		if err != nil {
			if err != errStat || pids != nil {
				t.Fatalf("refusal %v, %v", pids, err)
			}
			return
		}
		for _, pid := range pids {
			if pid <= 0 {
				t.Fatalf("accepted %q as %v", b, pids)
			}
		}
	})
}
