#!/usr/bin/env bash
# Whole-process comparison of one offline verification of a keyless Sigstore
# bundle (docs/PERFORMANCE.md, "Verification"):
#
#   mcpsign   mcpsign verify bundle (this checkout)
#   minimal   scripts/bench/minimal-verifier: the smallest sigstore-go program
#   cosign    cosign verify-blob-attestation v2.6.5 (scripts/sigstore-local)
#
# on the same bundle and trusted root, in the same run. Targets: mcpsign <=
# 0.5 x cosign and <= 1.1 x minimal.
#
# Usage: scripts/bench/verify-compare.sh [-r RUNS] [-w WARMUP] [-n ROUNDS] [-o OUTDIR] [-H] [CASE...]
#   CASE: v1.1.0 (model-transparency, RFC 3161 + Rekor v1, by digest; default),
#         v1.0.0 (Rekor v1 only, by digest), conformance (happy-path DSSE over a.txt, by file)
# Env: COSIGN (default ~/.cache/mcpsign/sigstore-local/bin/cosign-peer, the
#      optimized build of `scripts/sigstore-local/build.sh cosign-peer`),
#      (bundles from testdata/real-bundles).
# Each round runs the three commands round-robin, RUNS times each after
# WARMUP, and prints the median wall-clock time and the median CPU time (user
# + system, from wait4: steadier on a loaded machine) of each and their
# ratios; then the median ratios over the rounds. Alternating the commands
# gives all three the same load on a shared machine. -H runs hyperfine
# instead (Debian: apt-get install -y hyperfine; one command after the other,
# so less fair under changing load). Every command is first checked to accept
# the bundle and to reject a wrong identity.
set -euo pipefail

RUNS=30 WARMUP=3 ROUNDS=3 OUT='' HYPERFINE=0
while getopts r:w:n:o:H opt; do
	case $opt in
	r) RUNS=$OPTARG ;; w) WARMUP=$OPTARG ;; n) ROUNDS=$OPTARG ;; o) OUT=$OPTARG ;; H) HYPERFINE=1 ;;
	*) sed -n '2,24p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
CASES=("${@:-v1.1.0}")

REPO=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=$REPO/testdata
COSIGN=${COSIGN:-$HOME/.cache/mcpsign/sigstore-local/bin/cosign-peer}
[ -x "$COSIGN" ] || { echo "cosign not found at $COSIGN: run scripts/sigstore-local/build.sh cosign-peer or set COSIGN" >&2; exit 2; }
# The stack's own cosign is built without optimizations for the tests
# (scripts/sigstore-local/service-build.sh): not a peer to measure.
if go version -m "$COSIGN" | grep -q -- '-gcflags='; then
	echo "$COSIGN is built with -gcflags (the tests' build): measure an optimized cosign (scripts/sigstore-local/build.sh cosign-peer)" >&2
	exit 2
fi
[ -d "$SHARED/real-bundles" ] || { echo "test data not found at $SHARED" >&2; exit 2; }
if [ "$HYPERFINE" = 1 ] && ! command -v hyperfine >/dev/null; then
	echo "hyperfine not found: apt-get install -y hyperfine" >&2
	exit 2
fi

OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/bin" "$OUT/home"
(cd "$REPO" && GOTOOLCHAIN=local go build -o "$OUT/bin/mcpsign" ./cmd/mcpsign &&
	GOTOOLCHAIN=local go build -o "$OUT/bin/minimal-verifier" ./scripts/bench/minimal-verifier)
GOVERSION=$(go version | cut -d' ' -f3)
# After the build (go keys its caches on HOME): keep cosign away from
# ~/.sigstore and the public TUF repository.
export HOME=$OUT/home TUF_ROOT=$OUT/home/tuf
M=$OUT/bin/mcpsign V=$OUT/bin/minimal-verifier
RB=$SHARED/real-bundles
ROOT=$RB/trusted-roots/production_trusted_root.sigstore-python.json

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $GOVERSION; cosign $("$COSIGN" version 2>/dev/null | awk '/GitVersion/ {print $2}')"
echo "# runs=$RUNS warmup=$WARMUP rounds=$ROUNDS out=$OUT"

for c in "${CASES[@]}"; do
	case $c in
	v1.1.0 | v1.0.0)
		B=$RB/model-transparency-$c-sigstore.model.sig.json
		ID=stefanb@us.ibm.com ISS=https://sigstore.verify.ibm.com/oauth2 TYPE=https://model_signing/signature/v1.0
		HEX=61d4849d9d90076d6215f4d525f13d6574af8e3f67aef3e6f36fc40a14fdd226
		IN=sha256:$HEX COSIGN_IN=(--digest "$HEX" --digestAlg sha256)
		;;
	conformance)
		B=$RB/conformance-happy-path-intoto-in-dsse-v3.sigstore.json
		ID=https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main
		ISS=https://token.actions.githubusercontent.com TYPE=https://slsa.dev/provenance/v1
		IN=$RB/artifacts/a.txt COSIGN_IN=("$IN")
		;;
	*) echo "unknown case $c" >&2; exit 2 ;;
	esac
	mcpsign_cmd() { echo "$M verify bundle --bundle $B --trusted-root $ROOT --certificate-identity $1 --certificate-oidc-issuer $ISS $IN"; }
	minimal_cmd() { echo "$V $B $ROOT $1 $ISS $IN"; }
	cosign_cmd() {
		echo "$COSIGN verify-blob-attestation --bundle $B --new-bundle-format --offline --trusted-root $ROOT --certificate-identity $1 --certificate-oidc-issuer $ISS --type $TYPE ${COSIGN_IN[*]}"
	}
	for tool in mcpsign minimal cosign; do
		read -r -a good <<<"$("${tool}_cmd" "$ID")"
		read -r -a bad <<<"$("${tool}_cmd" someone@example.com)"
		"${good[@]}" >/dev/null 2>&1 || { echo "$tool does not verify $c: ${good[*]}" >&2; exit 1; }
		if "${bad[@]}" >/dev/null 2>&1; then echo "$tool accepts a wrong identity on $c" >&2; exit 1; fi
	done

	if [ "$HYPERFINE" = 1 ]; then
		for round in $(seq "$ROUNDS"); do
			hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$OUT/$c-round$round.json" \
				-n mcpsign "$(mcpsign_cmd "$ID")" -n minimal "$(minimal_cmd "$ID")" -n cosign "$(cosign_cmd "$ID")"
		done
		continue
	fi
	python3 "$(dirname "$0")/alternate.py" "$c" "$ROUNDS" "$RUNS" "$WARMUP" \
		"$(mcpsign_cmd "$ID")" "$(minimal_cmd "$ID")" "$(cosign_cmd "$ID")"
done
