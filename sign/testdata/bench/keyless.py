#!/usr/bin/env python3
"""N keyless signs against the local stack: process wall and the -v per-service split."""
import os, re, subprocess, sys, time, statistics, urllib.request
n = int(sys.argv[1]); env = {}
for line in open("/tmp/mcpsign-sigstore/env.sh"):
    m = re.match(r"export (\w+)='(.*)'", line.strip())
    if m: env[m[1]] = m[2]
tok = urllib.request.urlopen(env["SIGSTACK_OIDC_TOKEN_URL"] + "?email=bench@example.com&aud=sigstore&ttl=1h").read().decode().strip()
open("tok", "w").write(tok)
rows = []
for i in range(n + 1):
    t = time.perf_counter()
    p = subprocess.run(["./mcpsign", "sign", "ex.snap.json", "-v", "--signing-config", env["SIGSTACK_SIGNING_CONFIG"],
        "--trusted-root", env["SIGSTACK_TRUSTED_ROOT"], "--identity-token", "tok", "-o", "kl.json", "--force"], capture_output=True, text=True)
    w = time.perf_counter() - t
    if p.returncode: raise SystemExit(p.stderr)
    m = re.search(r"Fulcio (\S+), Rekor (\S+), timestamp authority (\S+), verify (\S+), sign total (\S+)", p.stderr)
    def ms(s):
        v = float(re.match(r"[\d.]+", s)[0]); return v / 1000 if s.endswith("µs") else v if s.endswith("ms") else v * 1000
    if i: rows.append([w * 1000] + [ms(x) for x in m.groups()])  # first run is a warm-up
cols = ["process wall", "Fulcio", "Rekor v2", "TSA", "verify", "sign total"]
def pct(v, q): v = sorted(v); return v[min(len(v) - 1, round(q * (len(v) - 1)))]
for j, c in enumerate(cols):
    v = [r[j] for r in rows]
    print(f"{c:13s} p50 {pct(v,.5):7.1f} ms  p95 {pct(v,.95):7.1f} ms  mean {statistics.mean(v):7.1f} ms")
tot = statistics.mean(r[5] for r in rows)
print("share of sign total (means):", ", ".join(f"{cols[j]} {100*statistics.mean(r[j] for r in rows)/tot:.0f}%" for j in (1, 2, 3, 4)))
