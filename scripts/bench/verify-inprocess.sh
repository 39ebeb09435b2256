#!/usr/bin/env bash
# In-process verification benchmark (docs/PERFORMANCE.md, "Verification"):
# trustroot's BenchmarkVerify (sigstore-go's own Verify on the plain
# production trusted root, and on trustroot.WithChainCache of it, one verifier
# reused) and BenchmarkFloor (only the per-bundle signature checks), on the
# public-good model-transparency v1.0.0 (Rekor v1) and v1.1.0 (+ RFC 3161)
# bundles of testdata/real-bundles.
#
# Usage: scripts/bench/verify-inprocess.sh [-n ROUNDS] [-t BENCHTIME]
# The test binary is built once and run ROUNDS times (default 5). The primary
# figures come from BenchmarkVerifyInterleaved, which times the three
# variants within every iteration (same load for all on a shared machine);
# the separate benchmarks' medians and ratios follow. Target: chaincache <=
# 2 x floor.
set -euo pipefail

ROUNDS=5 BENCHTIME=1s
while getopts n:t: opt; do
	case $opt in
	n) ROUNDS=$OPTARG ;; t) BENCHTIME=$OPTARG ;;
	*) sed -n '2,13p' "$0"; exit 2 ;;
	esac
done
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
(cd "$REPO" && GOTOOLCHAIN=local go test -c -o "$OUT/trustroot.test" ./trustroot)

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for r in $(seq "$ROUNDS"); do
	(cd "$REPO/trustroot" && "$OUT/trustroot.test" -test.run '^$' -test.bench '^Benchmark(Verify|Floor|VerifyInterleaved)$' \
		-test.benchtime "$BENCHTIME" -test.benchmem) | grep -E '^Benchmark' | tee -a "$OUT/all.txt" >/dev/null
	echo "round $r done, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
python3 - "$OUT/all.txt" <<'EOF'
import re, statistics, sys
runs, inter = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'^Benchmark(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)', line)
    if not m:
        continue
    if m.group(1).startswith("VerifyInterleaved/"):
        case = m.group(1).split("/", 1)[1]
        for val, unit in re.findall(r'([\d.]+) (\S+)', m.group(4)):
            inter.setdefault(case, {}).setdefault(unit, []).append(float(val))
        continue
    runs.setdefault(m.group(1), []).append(float(m.group(3)) / 1e6)
print("interleaved (each iteration: sigstore-go, chaincache, floor; per-round medians of the iterations, median over rounds):")
for case, u in sorted(inter.items()):
    md = {k: statistics.median(v) for k, v in u.items()}
    print("  %s: sigstore-go %.3f ms, chaincache %.3f ms, floor %.3f ms; chaincache/floor %.2f (range %.2f-%.2f, target <= 2.00), chaincache/sigstore-go %.2f (range %.2f-%.2f)" % (
        case, md["sigstore-go-ms"], md["chaincache-ms"], md["floor-ms"],
        md["cache/floor"], min(u["cache/floor"]), max(u["cache/floor"]),
        md["cache/plain"], min(u["cache/plain"]), max(u["cache/plain"])))
print("separate benchmarks:")
med = {k: statistics.median(v) for k, v in runs.items()}
for k in sorted(med):
    v = runs[k]
    print("%-40s median %7.3f ms  (min %.3f, max %.3f, n=%d)" % (k, med[k], min(v), max(v), len(v)))
for case in ("v1.0.0-tlog", "v1.1.0-tsa"):
    plain, cached, floor = med.get("Verify/%s/sigstore-go" % case), med.get("Verify/%s/chaincache" % case), med.get("Floor/%s" % case)
    if plain and cached and floor:
        print("%s: chaincache/sigstore-go %.2f  chaincache/floor %.2f (target <= 2.00)  sigstore-go/floor %.2f" %
              (case, cached / plain, cached / floor, plain / floor))
EOF
