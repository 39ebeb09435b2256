#!/usr/bin/env python3
"""Alternate commands round-robin and report wall and CPU time per process.

procbench.py CONFIG.json [N]: CONFIG maps a name to {"cmd": [argv...], "env": {...}}.
Each command runs once to warm up, then N rounds of all commands in turn; per
command the median and minimum wall time and CPU time (user+sys, from the
children's rusage), and ratios to the first command. Any failing run aborts.
"""
import os, resource, subprocess, sys, time, statistics, json
def run(cmd, env=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (cmd, p.stderr.decode()))
    return t1 - t0, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
cfg = json.load(open(sys.argv[1]))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
res = {k: ([], []) for k in cfg}
for k, c in cfg.items():  # warm up
    run(c["cmd"], {**os.environ, **c.get("env", {})})
for i in range(n):
    for k, c in cfg.items():
        w, cpu = run(c["cmd"], {**os.environ, **c.get("env", {})})
        res[k][0].append(w); res[k][1].append(cpu)
base = cfg and list(cfg)[0]
print("load avg", os.getloadavg())
for k, (w, cpu) in res.items():
    print("%-22s wall median %6.1f ms  min %6.1f ms   cpu median %6.1f ms  min %6.1f ms" % (k, 1000*statistics.median(w), 1000*min(w), 1000*statistics.median(cpu), 1000*min(cpu)))
bw = statistics.median(res[base][0]); bc = statistics.median(res[base][1])
for k, (w, cpu) in res.items():
    print("%-22s ratio to %s: wall %.2f  cpu %.2f   (min-wall ratio %.2f)" % (k, base, statistics.median(w)/bw, statistics.median(cpu)/bc, min(w)/min(res[base][0])))
