#!/usr/bin/env python3
"""Round-robin process timing for verify-compare.sh.

alternate.py CASE ROUNDS RUNS WARMUP MCPSIGN_CMD MINIMAL_CMD COSIGN_CMD

Each command line is split on spaces (no shell). Per round: WARMUP + RUNS
passes, each pass running the three commands in turn; for each command the
median wall-clock time and the median CPU time (user + system of the child,
from wait4) of the RUNS measured passes, and the ratios mcpsign/cosign and
mcpsign/minimal. Finally the median ratios over the rounds. A command that
exits non-zero aborts the run.
"""
import os
import statistics
import subprocess
import sys
import time


def once(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit("command failed: " + " ".join(argv))
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3


def main():
    case, rounds, runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    cmds = dict(zip(("mcpsign", "minimal", "cosign"), (a.split() for a in sys.argv[5:8])))
    ratios = []
    for r in range(1, rounds + 1):
        res = {k: ([], []) for k in cmds}
        for i in range(warmup + runs):
            for k, argv in cmds.items():
                w, c = once(argv)
                if i >= warmup:
                    res[k][0].append(w)
                    res[k][1].append(c)
        med = {k: (statistics.median(w), statistics.median(c)) for k, (w, c) in res.items()}
        m, v, c = med["mcpsign"], med["minimal"], med["cosign"]
        ratios.append((m[0] / c[0], m[1] / c[1], m[0] / v[0], m[1] / v[1]))
        print("%s round %d, median wall / CPU ms: mcpsign %.1f / %.1f, minimal %.1f / %.1f, cosign %.1f / %.1f;"
              " mcpsign/cosign %.2f / %.2f, mcpsign/minimal %.2f / %.2f, load %s"
              % ((case, r) + m + v + c + ratios[-1] + (os.getloadavg()[0],)), flush=True)
    md = [statistics.median(x[i] for x in ratios) for i in range(4)]
    print("%s: median over %d rounds of %d alternated runs: mcpsign/cosign wall %.2f CPU %.2f (target <= 0.50);"
          " mcpsign/minimal wall %.2f CPU %.2f (target <= 1.10)" % ((case, rounds, runs) + tuple(md)))


if __name__ == "__main__":
    main()
