#!/usr/bin/env python3
"""Alternate commands round-robin N times; print median/p90 wall and median CPU per command, ratios vs the last."""
import os, subprocess, sys, time, statistics, json
n = int(sys.argv[1]); cmds = json.loads(sys.argv[2])
wall = {k: [] for k in cmds}; cpu = {k: [] for k in cmds}
def run(c):
    t = time.perf_counter()
    p = subprocess.Popen(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0: raise SystemExit(f"{c}: exit {p.returncode}")
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime
for name, c in cmds.items(): run(c)  # warm-up
for i in range(n):
    for name, c in cmds.items():
        w, u = run(c); wall[name].append(w); cpu[name].append(u)
base = list(cmds)[-1]
bw, bc = statistics.median(wall[base]), statistics.median(cpu[base])
for name in cmds:
    ws = sorted(wall[name]); med = statistics.median(ws); p90 = ws[int(0.9 * (len(ws) - 1))]; cm = statistics.median(cpu[name])
    print(f"{name:34s} wall median {med*1000:7.1f} ms p90 {p90*1000:7.1f} ms min {ws[0]*1000:6.1f} ms | cpu median {cm*1000:6.1f} ms | ratio vs last: wall {med/bw:.2f} cpu {cm/bc:.2f}")
