#!/usr/bin/env bash
# Start a throw-away Sigstore stack on 127.0.0.1:
#   OIDC issuer -> Fulcio (ephemeral CA) -> TesseraCT CT log -> Rekor v2 -> TSA
#
#   scripts/sigstore-local/start.sh [STATE_DIR]
#
# STATE_DIR defaults to ${MCPSIGN_SIGSTORE_STATE:-/tmp/mcpsign-sigstore}; it is
# wiped first (only if it is empty or was made by this script). Binaries come
# from build.sh (${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}/bin).
# On success STATE_DIR/env.sh exports the SIGSTACK_* variables; every start is
# a new trust domain (new CA, TSA and log keys). Stop with stop.sh STATE_DIR.
#
# Knobs: SIGSTACK_EMAIL (identity of the token in id_token, default
# signer@example.com), SIGSTACK_START_TIMEOUT (seconds per service, default 60).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}
BIN=${MCPSIGN_SIGSTORE_BIN:-$CACHE/bin}
S=${1:-${MCPSIGN_SIGSTORE_STATE:-/tmp/mcpsign-sigstore}}
EMAIL=${SIGSTACK_EMAIL:-signer@example.com}
TIMEOUT=${SIGSTACK_START_TIMEOUT:-60}
MARKER=.mcpsign-sigstack

H=127.0.0.1

die() {
	echo "start.sh: $*" >&2
	exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2fs", b - a }'; }

# --- preflight -------------------------------------------------------------
for tool in openssl curl awk ss setsid flock; do
	command -v "$tool" >/dev/null || die "$tool not found in PATH (needed to start the stack)"
done
for b in oidc-issuer fulcio tesseract-posix rekor-server-posix timestamp-server cosign; do
	[[ -x $BIN/$b ]] || die "$BIN/$b missing: run $HERE/build.sh first"
done

case $S in
"" | / | /tmp | /tmp/ | "$HOME" | "$HOME/") die "refusing to use $S as the state directory" ;;
esac
S=$(mkdir -p "$S" && cd "$S" && pwd)
if [[ -n $(ls -A "$S") && ! -e $S/$MARKER ]]; then
	die "$S is not empty and was not made by start.sh; refusing to wipe it"
fi
# A stack still running from this state dir: stop it (its recorded PIDs only).
if [[ -s $S/pids ]]; then
	echo "start.sh: stopping the previous stack in $S"
	"$HERE/stop.sh" "$S"
fi

# Ports: the first free one from each usual port up (ports.sh), chosen and
# bound under the machine-wide ports lock. Metrics: the TSA's and Fulcio's
# listeners are built to bind 127.0.0.1 (service-build.sh); they and Rekor's
# take a port the kernel picks (0): nothing here reads them.
# shellcheck source=ports.sh
source "$HERE/ports.sh"
ports_lock
take_port OIDC_PORT 5556
take_port FULCIO_PORT 5555
take_port FULCIO_GRPC_PORT 5554
take_port CT_PORT 6962
take_port REKOR_PORT 3003
take_port REKOR_GRPC_PORT 3002
take_port TSA_PORT 3004
METRICS_PORT=0

OIDC_URL=http://$H:$OIDC_PORT
FULCIO_URL=http://$H:$FULCIO_PORT
CT_URL=http://$H:$CT_PORT
REKOR_URL=http://$H:$REKOR_PORT
TSA_BASE=http://$H:$TSA_PORT
TSA_URL=$TSA_BASE/api/v1/timestamp

# --- fresh state -----------------------------------------------------------
T0=$(now)
find "$S" -mindepth 1 -delete
touch "$S/$MARKER"
mkdir -p "$S/keys" "$S/logs" "$S/data/ct" "$S/data/rekor" "$S/cosign-home"
chmod 700 "$S/keys"
: >"$S/pids"

CURRENT=""
STARTED=0
on_exit() {
	local rc=$?
	((rc == 0)) && return
	echo "start.sh: FAILED${CURRENT:+ while starting $CURRENT} (exit $rc)" >&2
	if [[ -n $CURRENT && -s $S/logs/$CURRENT.log ]]; then
		echo "---- last lines of $S/logs/$CURRENT.log ----" >&2
		tail -n 40 "$S/logs/$CURRENT.log" >&2
		echo "----" >&2
	fi
	if ((STARTED)); then
		echo "start.sh: stopping what was started" >&2
		"$HERE/stop.sh" "$S" >&2 || true
	fi
	rm -f "$S/env.sh"
}
trap on_exit EXIT

# launch NAME BINARY ARGS...: detached (own session, stdio to a log file).
launch() {
	local name=$1 pid start
	shift
	CURRENT=$name
	setsid "$@" </dev/null >"$S/logs/$name.log" 2>&1 8>&- &
	pid=$!
	STARTED=1
	# Record the start time too, so stop.sh never signals a recycled PID.
	start=$(cat "/proc/$pid/stat" 2>/dev/null) && start=$(awk '{ print $20 }' <<<"${start##*) }") || start=-
	echo "$name $pid $start $1" >>"$S/pids"
}

# wait_health NAME URL: poll until URL answers 2xx or the process dies.
wait_health() {
	local name=$1 url=$2 pid t0 deadline
	pid=$(awk -v n="$name" '$1 == n { print $2 }' "$S/pids")
	t0=$(now)
	deadline=$((SECONDS + TIMEOUT))
	until curl -sf -o /dev/null --max-time 1 "$url"; do
		kill -0 "$pid" 2>/dev/null || die "$name (pid $pid) exited during start-up"
		((SECONDS < deadline)) || die "$name not healthy at $url after ${TIMEOUT}s"
		sleep 0.1
	done
	printf '  %-8s up in %s (pid %s)\n' "$name" "$(since "$t0")" "$pid"
}

echo "start.sh: state $S"

# --- keys ------------------------------------------------------------------
CURRENT=keys
(
	umask 077
	openssl genpkey -algorithm ed25519 -out "$S/keys/rekor-priv.pem" 2>/dev/null
	openssl pkey -in "$S/keys/rekor-priv.pem" -pubout -out "$S/keys/rekor-pub.pem"
	# TesseraCT wants SEC1 "EC PRIVATE KEY", not PKCS#8.
	openssl ecparam -genkey -name prime256v1 -noout -out "$S/keys/ct-priv.pem"
	openssl ec -in "$S/keys/ct-priv.pem" -pubout -out "$S/keys/ct-pub.pem" 2>/dev/null
) || die "key generation with openssl failed"

# --- 1. OIDC issuer (before Fulcio: Fulcio reads its discovery at start) ---
# It also serves a second issuer, $OIDC_URL/github, whose tokens carry GitHub
# Actions claims: Fulcio's github-workflow type turns them into the GitHub
# extensions (1.3.6.1.4.1.57264.1.2-.6, .8-.22), as for the real
# token.actions.githubusercontent.com.
launch oidc "$BIN/oidc-issuer" -addr "$H:$OIDC_PORT" -issuer "$OIDC_URL" -key "$S/keys/oidc-key.pem" -github-path /github
wait_health oidc "$OIDC_URL/healthz"
curl -sf -o /dev/null --max-time 5 "$OIDC_URL/github/.well-known/openid-configuration" ||
	die "oidc-issuer does not serve $OIDC_URL/github: rebuild it ($HERE/build.sh)"

# --- 2. Fulcio -------------------------------------------------------------
cat >"$S/fulcio-config.json" <<EOF
{"OIDCIssuers":{"$OIDC_URL":{"IssuerURL":"$OIDC_URL","ClientID":"sigstore","Type":"email"},
 "$OIDC_URL/github":{"IssuerURL":"$OIDC_URL/github","ClientID":"sigstore","Type":"github-workflow"}}}
EOF
launch fulcio "$BIN/fulcio" serve --ca ephemeralca --config-path "$S/fulcio-config.json" \
	--host "$H" --port "$FULCIO_PORT" --grpc-host "$H" --grpc-port "$FULCIO_GRPC_PORT" \
	--metrics-port "$METRICS_PORT" --legacy-unix-domain-socket "$S/fulcio-legacy.sock" \
	--log_type prod --ct-log-url "$CT_URL" --ct-log-public-key-path "$S/keys/ct-pub.pem"
wait_health fulcio "$FULCIO_URL/healthz"
curl -sf --max-time 5 "$FULCIO_URL/api/v1/rootCert" >"$S/fulcio-chain.pem" || die "could not fetch the Fulcio root"
grep -q 'BEGIN CERTIFICATE' "$S/fulcio-chain.pem" || die "Fulcio root is not PEM"

# --- 3. CT log (needs the Fulcio root) ---------------------------------------
# It always pushes OTLP metrics: aim them at loopback, once a day. Short batch
# and checkpoint intervals: Fulcio waits for the SCT's entry to be published
# (about 0.1-0.2 s per certificate here instead of 0.4 s with 500ms).
OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://127.0.0.1:4318/v1/metrics \
	OTEL_METRIC_EXPORT_INTERVAL=86400000 OTEL_METRIC_EXPORT_TIMEOUT=1000 \
	launch ct "$BIN/tesseract-posix" --http_endpoint "$H:$CT_PORT" --origin "$H" --storage_dir "$S/data/ct" \
	--private_key "$S/keys/ct-priv.pem" --roots_pem_file "$S/fulcio-chain.pem" \
	--ext_key_usages CodeSigning --checkpoint_interval 100ms --batch_max_age 20ms
wait_health ct "$CT_URL/healthz"

# --- 4. Rekor v2 (--hostname = host of REKOR_URL: it is the checkpoint origin)
# An add returns once a checkpoint covers the entry; rekor-tiles polls for that
# every 1 s (hard-coded), so a short checkpoint interval keeps a sign at
# 0.1-0.9 s instead of up to 11 s with the default 10s.
launch rekor "$BIN/rekor-server-posix" serve --hostname "$H" --http-address "$H" --http-port "$REKOR_PORT" \
	--grpc-address "$H" --grpc-port "$REKOR_GRPC_PORT" --http-metrics-port "$METRICS_PORT" \
	--storage-dir "$S/data/rekor" --signer-filepath "$S/keys/rekor-priv.pem" \
	--checkpoint-interval 100ms --batch-max-age 20ms
wait_health rekor "$REKOR_URL/healthz"

# --- 5. TSA ------------------------------------------------------------------
launch tsa "$BIN/timestamp-server" serve --host "$H" --port "$TSA_PORT" --timestamp-signer memory \
	--disable-ntp-monitoring --log-type prod
wait_health tsa "$TSA_BASE/ping"
curl -sf --max-time 5 "$TSA_URL/certchain" >"$S/tsa-chain.pem" || die "could not fetch the TSA chain"

# --- 6. trust material (cosign; never let it reach for TUF) ------------------
CURRENT=cosign
T1=$(now)
export HOME=$S/cosign-home TUF_ROOT=$S/cosign-home/tuf
ST=2020-01-01T00:00:00Z
"$BIN/cosign" trusted-root create \
	--fulcio="url=$FULCIO_URL,certificate-chain=$S/fulcio-chain.pem" \
	--ctfe="url=$CT_URL,public-key=$S/keys/ct-pub.pem,start-time=$ST" \
	--rekor="url=$REKOR_URL,public-key=$S/keys/rekor-pub.pem,start-time=$ST,origin=$H" \
	--tsa="url=$TSA_URL,certificate-chain=$S/tsa-chain.pem" \
	--out "$S/trusted_root.json" >"$S/logs/cosign.log" 2>&1
"$BIN/cosign" signing-config create \
	--fulcio="url=$FULCIO_URL,api-version=1,start-time=$ST,operator=local.test" \
	--rekor="url=$REKOR_URL,api-version=2,start-time=$ST,operator=local.test" --rekor-config=ANY \
	--oidc-provider="url=$OIDC_URL,api-version=1,start-time=$ST,operator=local.test" \
	--tsa="url=$TSA_URL,api-version=1,start-time=$ST,operator=local.test" --tsa-config=ANY \
	--out "$S/signing_config.json" >>"$S/logs/cosign.log" 2>&1
chmod 644 "$S/trusted_root.json" "$S/signing_config.json" # public material
printf '  %-8s trusted_root.json, signing_config.json in %s\n' cosign "$(since "$T1")"

# --- 7. every service on 127.0.0.1 only -------------------------------------
CURRENT=""
if command -v ss >/dev/null; then
	loopback_only $(awk '{ print $2 }' "$S/pids") || exit 1
fi

# --- 8. an ID token and env.sh ------------------------------------------------
CURRENT=oidc
(umask 077 && curl -sf --max-time 5 -G "$OIDC_URL/token" --data-urlencode "email=$EMAIL" \
	--data-urlencode "ttl=1h" -o "$S/id_token") || die "could not mint an ID token"

q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
	echo "# Written by scripts/sigstore-local/start.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ). Source it."
	echo "export SIGSTACK_STATE=$(q "$S")"
	echo "export SIGSTACK_TRUSTED_ROOT=$(q "$S/trusted_root.json")"
	echo "export SIGSTACK_SIGNING_CONFIG=$(q "$S/signing_config.json")"
	echo "export SIGSTACK_ID_TOKEN_FILE=$(q "$S/id_token")"
	echo "export SIGSTACK_IDENTITY=$(q "$EMAIL")"
	echo "export SIGSTACK_OIDC_ISSUER=$(q "$OIDC_URL")"
	echo "export SIGSTACK_OIDC_TOKEN_URL=$(q "$OIDC_URL/token")"
	echo "export SIGSTACK_FULCIO_URL=$(q "$FULCIO_URL")"
	echo "export SIGSTACK_REKOR_URL=$(q "$REKOR_URL")"
	echo "export SIGSTACK_TSA_URL=$(q "$TSA_URL")"
	echo "export SIGSTACK_CT_URL=$(q "$CT_URL")"
	echo "export SIGSTACK_HEALTH_URLS=$(q "$OIDC_URL/healthz $FULCIO_URL/healthz $CT_URL/healthz $REKOR_URL/healthz $TSA_BASE/ping")"
	echo "export SIGSTACK_BIN=$(q "$BIN")"
	echo "export SIGSTACK_ENV=$(q "$S/env.sh")"
} >"$S/env.sh.tmp"
mv "$S/env.sh.tmp" "$S/env.sh"
CURRENT=""

echo "start.sh: stack up in $(since "$T0"); identity $EMAIL, issuer $OIDC_URL"
echo "start.sh: source $S/env.sh   # stop: $HERE/stop.sh $S"
