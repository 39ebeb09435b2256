#!/usr/bin/env bash
# A Rekor v1 log on 127.0.0.1 for the monitor's tests: rekor-server v1.5.4
# on Trillian v1.7.3 (log server and signer; versions pinned in
# scripts/services/go.mod) on MariaDB from Debian.
#
#   scripts/rekor-v1/rekor-v1.sh build   # build the three binaries (cached)
#   scripts/rekor-v1/rekor-v1.sh start   # start them; writes $STATE/env.sh
#   scripts/rekor-v1/rekor-v1.sh stop
#
# Binaries: ${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}/bin
# (rekor-server-v1, trillian_log_server, trillian_log_signer), built once.
# State: ${MCPSIGN_REKOR_V1_STATE:-/tmp/mcpsign-rekor-v1}, wiped on start.
# Ports, all on 127.0.0.1, each the first free one from: MariaDB 3307,
# Trillian gRPC 8090 / HTTP 8091 (server) and 8190 / 8191 (signer), Rekor
# 3010 (its URL is in env.sh); Rekor's metrics listener, which
# rekor-server v1.5.4 binds to *:2112, is built to bind 127.0.0.1 on a port
# the kernel picks (scripts/sigstore-local/service-build.sh). docs/MONITOR.md.
set -euo pipefail

CACHE=${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}
BIN=$CACHE/bin
S=${MCPSIGN_REKOR_V1_STATE:-/tmp/mcpsign-rekor-v1}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

build() {
	mkdir -p "$BIN"
	local t0 c
	t0=$(date +%s)
	# shellcheck source=../sigstore-local/service-build.sh
	source "$(dirname "${BASH_SOURCE[0]}")/../sigstore-local/service-build.sh"
	for c in "rekor-server-v1|github.com/sigstore/rekor/cmd/rekor-server" \
		"trillian_log_server|github.com/google/trillian/cmd/trillian_log_server" \
		"trillian_log_signer|github.com/google/trillian/cmd/trillian_log_signer"; do
		service_built "$BIN/${c%%|*}" "${c#*|}" && continue
		echo "rekor-v1.sh: ${c%%|*}: building..."
		service_build "${c#*|}" "$BIN/${c%%|*}"
	done
	echo "rekor-v1.sh: binaries ready in $(($(date +%s) - t0))s"
}

mariadb_bins() {
	command -v mariadbd >/dev/null || command -v /usr/sbin/mariadbd >/dev/null || {
		echo "rekor-v1.sh: MariaDB not installed (apt-get install -y mariadb-server)" >&2
		exit 1
	}
}

wait_for() { # url|tcp:port, seconds
	local what=$1 n=$(($2 * 10))
	for ((i = 0; i < n; i++)); do
		case $what in
		tcp:*) (exec 3<>"/dev/tcp/127.0.0.1/${what#tcp:}") 2>/dev/null && return 0 ;;
		*) curl -sf -o /dev/null "$what" && return 0 ;;
		esac
		sleep 0.1
	done
	echo "rekor-v1.sh: $what did not come up; logs in $S/logs" >&2
	return 1
}

start() {
	mariadb_bins
	for b in rekor-server-v1 trillian_log_server trillian_log_signer; do
		[[ -x $BIN/$b ]] || {
			echo "rekor-v1.sh: $BIN/$b missing: run $0 build" >&2
			exit 1
		}
	done
	stop >/dev/null 2>&1 || true
	rm -rf "$S"
	mkdir -p "$S/logs" "$S/db"
	local t0
	t0=$(date +%s)
	# shellcheck source=../sigstore-local/ports.sh
	source "$(dirname "${BASH_SOURCE[0]}")/../sigstore-local/ports.sh"
	ports_lock
	local db_port ts_rpc ts_http sg_rpc sg_http rekor_port
	take_port db_port 3307
	take_port ts_rpc 8090
	take_port ts_http 8091
	take_port sg_rpc 8190
	take_port sg_http 8191
	take_port rekor_port 3010
	mariadb-install-db --no-defaults --datadir="$S/db" --user="$(id -un)" --skip-test-db --auth-root-authentication-method=normal >"$S/logs/install-db.log" 2>&1
	/usr/sbin/mariadbd --no-defaults --datadir="$S/db" --socket="$S/mysql.sock" --pid-file="$S/mysql.pid" \
		--bind-address=127.0.0.1 --port="$db_port" --user="$(id -un)" --skip-grant-tables >"$S/logs/mariadb.log" 2>&1 8>&- &
	echo $! >"$S/mariadb.pid"
	wait_for "tcp:$db_port" 60
	for ((i = 0; i < 100; i++)); do mariadb --no-defaults --socket="$S/mysql.sock" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
	mariadb --no-defaults --socket="$S/mysql.sock" -e 'CREATE DATABASE trillian'
	local schema
	# The schema of the Trillian that scripts/services builds.
	schema=$(cd "$(dirname "${BASH_SOURCE[0]}")/../services" &&
		go mod download github.com/google/trillian && go list -m -f '{{.Dir}}' github.com/google/trillian)/storage/mysql/schema/storage.sql
	mariadb --no-defaults --socket="$S/mysql.sock" trillian <"$schema"
	local dsn="root@tcp(127.0.0.1:$db_port)/trillian?parseTime=true&interpolateParams=true"
	"$BIN/trillian_log_server" --quota_system=noop --storage_system=mysql --mysql_uri="$dsn" \
		--rpc_endpoint="127.0.0.1:$ts_rpc" --http_endpoint="127.0.0.1:$ts_http" >"$S/logs/trillian-server.log" 2>&1 8>&- &
	echo $! >"$S/trillian-server.pid"
	"$BIN/trillian_log_signer" --quota_system=noop --storage_system=mysql --mysql_uri="$dsn" --force_master \
		--sequencer_interval=100ms --batch_size=500 \
		--rpc_endpoint="127.0.0.1:$sg_rpc" --http_endpoint="127.0.0.1:$sg_http" >"$S/logs/trillian-signer.log" 2>&1 8>&- &
	echo $! >"$S/trillian-signer.pid"
	wait_for "http://127.0.0.1:$ts_http/healthz" 60
	wait_for "http://127.0.0.1:$sg_http/healthz" 60
	(cd "$S" && exec "$BIN/rekor-server-v1" serve --trillian_log_server.address=127.0.0.1 --trillian_log_server.port="$ts_rpc" \
		--rekor_server.address=127.0.0.1 --port="$rekor_port" --rekor_server.hostname=127.0.0.1 --rekor_server.signer=memory \
		--search_index.storage_provider=mysql --search_index.mysql.dsn="$dsn" \
		--enabled_entry_types=dsse,intoto,hashedrekord >"$S/logs/rekor.log" 2>&1 8>&-) &
	echo $! >"$S/rekor.pid"
	wait_for "http://127.0.0.1:$rekor_port/api/v1/log" 120
	curl -sf -o "$S/rekor-pub.pem" "http://127.0.0.1:$rekor_port/api/v1/log/publicKey"
	if command -v ss >/dev/null; then
		loopback_only $(cat "$S"/*.pid) || exit 1
	fi
	cat >"$S/env.sh" <<EOT
# Written by scripts/rekor-v1/rekor-v1.sh at $(date -u +%FT%TZ). Source it.
export REKOR_V1_URL='http://127.0.0.1:$rekor_port'
export REKOR_V1_PUBLIC_KEY='$S/rekor-pub.pem'
export REKOR_V1_ENV='$S/env.sh'
EOT
	echo "rekor-v1.sh: Rekor v1 at http://127.0.0.1:$rekor_port in $(($(date +%s) - t0))s; source $S/env.sh"
}

stop() {
	local p
	for p in rekor trillian-signer trillian-server mariadb; do
		[[ -f $S/$p.pid ]] || continue
		kill "$(cat "$S/$p.pid")" 2>/dev/null || true
		rm -f "$S/$p.pid"
	done
	rm -f "$S/env.sh"
}

case ${1:-} in
build) build ;;
start) start ;;
stop) stop ;;
*)
	sed -n '2,17p' "$0"
	exit 2
	;;
esac
