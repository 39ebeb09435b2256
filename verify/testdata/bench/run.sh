#!/usr/bin/env bash
# Whole-process comparison of one offline verification (docs/PERFORMANCE.md,
# "Verification"): mcpsign vs a minimal sigstore-go verifier (minverify) vs
# cosign verify-blob-attestation, alternated round-robin, N rounds.
#   verify/testdata/bench/run.sh [N]     from the repository root
# Needs an optimized cosign (COSIGN, default the cosign-peer of
# scripts/sigstore-local/build.sh cosign-peer, else PATH) and, for the last
# set, the local Sigstore stack (SIGSTACK_ENV, default
# /tmp/mcpsign-sigstore/env.sh). MCPSIGN_BASE=path/to/another/mcpsign adds it
# as "mcpsign-base", alternated with the others in the same rounds (before and
# after a change: build the base from the other tree); several paths, separated
# by colons, add mcpsign-base, mcpsign-base2, … in that order.
set -euo pipefail
N=${1:-30}
cd "$(dirname "$0")/../../.."
export GOTOOLCHAIN=local
B=$(mktemp -d); trap 'rm -rf "$B"' EXIT
go build -o "$B/mcpsign" ./cmd/mcpsign
go build -o "$B/minverify" ./scripts/bench/minimal-verifier
COSIGN=${COSIGN:-${SIGSTACK_BIN:-$HOME/.cache/mcpsign/sigstore-local/bin}/cosign-peer}
command -v "$COSIGN" >/dev/null || COSIGN=$(command -v cosign)
if go version -m "$COSIGN" | grep -q -- '-gcflags='; then # the tests' build (scripts/sigstore-local/service-build.sh)
	echo "$COSIGN is built without optimizations: build an optimized one (scripts/sigstore-local/build.sh cosign-peer)" >&2
	exit 2
fi
H=$(mktemp -d) # cosign: no TUF, no home config
SH=testdata
GH=https://token.actions.githubusercontent.com
py() { python3 verify/testdata/bench/procbench.py "$@"; }
# base NAME.json: with MCPSIGN_BASE, adds the mcpsign row again as
# mcpsign-base (mcpsign-base2, … for more paths).
base() {
	[[ -n ${MCPSIGN_BASE:-} ]] || return 0
	python3 - "$1" "$MCPSIGN_BASE" <<'P'
import json, sys
p, bases = sys.argv[1], sys.argv[2].split(":")
c = json.load(open(p))
for i, b in enumerate(bases):
    c["mcpsign-base" + (str(i + 1) if i else "")] = {**c["mcpsign"], "cmd": [b] + c["mcpsign"]["cmd"][1:]}
json.dump(c, open(p, "w"))
P
}

echo "== A: public-good DSSE bundle, Rekor v1, no TSA (sigstore-conformance happy-path-intoto-in-dsse-v3), artifact file"
C=$SH/sigstore-conformance/happy-path-intoto-in-dsse-v3
TR=$SH/sigstore-conformance/_shared/production_trusted_root.json
ID=https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main
cat > "$B/a.json" <<J
{"minverify": {"cmd": ["$B/minverify", "$C/bundle.sigstore.json", "$TR", "$ID", "$GH", "$C/artifact"]},
 "mcpsign": {"cmd": ["$B/mcpsign", "verify", "bundle", "--bundle", "$C/bundle.sigstore.json", "--certificate-identity", "$ID", "--certificate-oidc-issuer", "$GH", "--trusted-root", "$TR", "$C/artifact"]},
 "cosign": {"cmd": ["$COSIGN", "verify-blob-attestation", "--bundle", "$C/bundle.sigstore.json", "--new-bundle-format", "--trusted-root", "$TR", "--certificate-identity", "$ID", "--certificate-oidc-issuer", "$GH", "--type", "https://slsa.dev/provenance/v1", "$C/artifact"], "env": {"HOME": "$H", "TUF_ROOT": "$H"}}}
J
base "$B/a.json"
py "$B/a.json" "$N"

echo "== B: public-good DSSE bundle, Rekor v1 + RFC 3161 timestamp (model-transparency v1.1.0), by digest"
M=$SH/real-bundles/model-transparency-v1.1.0-sigstore.model.sig.json
TR2=$SH/real-bundles/trusted-roots/production_trusted_root.sigstore-python.json
D=61d4849d9d90076d6215f4d525f13d6574af8e3f67aef3e6f36fc40a14fdd226
cat > "$B/b.json" <<J
{"minverify": {"cmd": ["$B/minverify", "$M", "$TR2", "stefanb@us.ibm.com", "https://sigstore.verify.ibm.com/oauth2", "sha256:$D"]},
 "mcpsign": {"cmd": ["$B/mcpsign", "verify", "bundle", "--bundle", "$M", "--certificate-identity", "stefanb@us.ibm.com", "--certificate-oidc-issuer", "https://sigstore.verify.ibm.com/oauth2", "--trusted-root", "$TR2", "sha256:$D"]},
 "cosign": {"cmd": ["$COSIGN", "verify-blob-attestation", "--bundle", "$M", "--new-bundle-format", "--trusted-root", "$TR2", "--certificate-identity", "stefanb@us.ibm.com", "--certificate-oidc-issuer", "https://sigstore.verify.ibm.com/oauth2", "--type", "https://model_signing/signature/v1.0", "--digest", "$D", "--digestAlg", "sha256"], "env": {"HOME": "$H", "TUF_ROOT": "$H"}}}
J
base "$B/b.json"
py "$B/b.json" "$N"

ENV=${SIGSTACK_ENV:-/tmp/mcpsign-sigstore/env.sh}
if [[ -f $ENV ]]; then
	# shellcheck disable=SC1090
	source "$ENV"
	echo "== C: an mcpsign bundle from the local stack (Fulcio, Rekor v2, TSA); mcpsign verifies the statement against the snapshot"
	cat > "$B/snap.json" <<'J'
{"kind":"mcpsign.snapshot","snapshotVersion":1,"server":{"name":"example","version":"1.0.0"},"protocolVersion":"2025-11-25","instructions":"Use search_notes before write_note.","tools":[{"name":"write_note","description":"Write a note.","inputSchema":{"type":"object"}},{"name":"search_notes","description":"Search the notes.","inputSchema":{"type":"object","properties":{"query":{"type":"string"}}}}],"prompts":[{"name":"summarize"}],"resourceTemplates":[{"uriTemplate":"notes://{id}","name":"note"}],"capturedAt":"2026-01-01T00:00:00Z"}
J
	printf '%s' "Use search_notes before write_note." > "$B/instructions.txt"
	curl -sf "$SIGSTACK_OIDC_TOKEN_URL?email=bench@example.com&aud=sigstore&ttl=1h" > "$B/token"
	"$B/mcpsign" sign sigstore "$B/snap.json" -o "$B/b.sigstore.json" --signing-config "$SIGSTACK_SIGNING_CONFIG" \
		--trusted-root "$SIGSTACK_TRUSTED_ROOT" --identity-token "$B/token" >/dev/null
	cat > "$B/c.json" <<J
{"minverify": {"cmd": ["$B/minverify", "$B/b.sigstore.json", "$SIGSTACK_TRUSTED_ROOT", "bench@example.com", "$SIGSTACK_OIDC_ISSUER", "$B/instructions.txt"]},
 "mcpsign": {"cmd": ["$B/mcpsign", "verify", "$B/snap.json", "--bundle", "$B/b.sigstore.json", "--certificate-identity", "bench@example.com", "--certificate-oidc-issuer", "$SIGSTACK_OIDC_ISSUER", "--trusted-root", "$SIGSTACK_TRUSTED_ROOT"]},
 "cosign": {"cmd": ["$COSIGN", "verify-blob-attestation", "--bundle", "$B/b.sigstore.json", "--new-bundle-format", "--trusted-root", "$SIGSTACK_TRUSTED_ROOT", "--certificate-identity", "bench@example.com", "--certificate-oidc-issuer", "$SIGSTACK_OIDC_ISSUER", "--type", "https://mcpsign.dev/definitions/v1", "--use-signed-timestamps", "$B/instructions.txt"], "env": {"HOME": "$H", "TUF_ROOT": "$H"}}}
J
	base "$B/c.json"
	py "$B/c.json" "$N"
fi
