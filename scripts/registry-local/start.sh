#!/usr/bin/env bash
# Start the official MCP registry on 127.0.0.1 for tests, with a PostgreSQL
# cluster of its own (Debian's postgresql), anonymous publishing on and
# registry validation off (it would reach npm, PyPI and other hosts).
#
#   scripts/registry-local/start.sh STATE_DIR
#
# Writes STATE_DIR/env.sh (source it): MCPSIGN_REGISTRY_URL,
# MCPSIGN_REGISTRY_PUBLISHER; and, for a test that starts a registry of its
# own on the same cluster (registrylocal.StartSeeded), MCPSIGN_REGISTRY_BIN,
# MCPSIGN_REGISTRY_DATABASE_URL and MCPSIGN_REGISTRY_PGBIN. Stop with stop.sh STATE_DIR. Builds the
# binaries first (build.sh). Installs postgresql with apt-get when absent and
# running as root (CI).
set -euo pipefail
STATE=${1:?usage: start.sh STATE_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${MCPSIGN_REGISTRY_CACHE:-$HOME/.cache/mcpsign/registry-local}
BIN=$CACHE/bin

"$HERE/build.sh"
# Ports: the first free ones from 55432 and 58080 (several stacks may run),
# chosen under the test services' ports lock (scripts/sigstore-local/ports.sh).
# shellcheck source=../sigstore-local/ports.sh
source "$HERE/../sigstore-local/ports.sh"
ports_lock
if [[ -n ${MCPSIGN_REGISTRY_PGPORT:-} ]]; then PGPORT=$MCPSIGN_REGISTRY_PGPORT; else take_port PGPORT 55432; fi
if [[ -n ${MCPSIGN_REGISTRY_PORT:-} ]]; then PORT=$MCPSIGN_REGISTRY_PORT; else take_port PORT 58080; fi
pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [[ -z $(pgbin) ]]; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null ||
			{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }
	fi
fi
PG=$(pgbin)
[[ -n $PG ]] || { echo "start.sh: PostgreSQL not installed (apt-get install postgresql)" >&2; exit 1; }

rm -rf "$STATE"
mkdir -p "$STATE/run" "$STATE/logs"
# PostgreSQL refuses to run as root: as root, the cluster belongs to the
# postgres user, in a directory of its own under /tmp (STATE may be inside a
# directory only root can enter); stop.sh removes it.
as_pg() { "$@"; }
PGDIR=$STATE/pg
if [[ $(id -u) == 0 ]]; then
	PGDIR=$(mktemp -d /tmp/mcpsign-registry-pg.XXXXXX)
	chown postgres "$PGDIR"
	as_pg() { runuser -u postgres -- "$@"; }
fi
mkdir -p "$PGDIR"
echo "$PGDIR" >"$STATE/run/pgdir"
as_pg "$PG/initdb" -D "$PGDIR/data" -A trust -U registry >"$STATE/logs/initdb.log" 2>&1
if ! as_pg "$PG/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/postgres.log" -w -t 60 \
	-o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDIR -c fsync=off" start >"$STATE/logs/pg_ctl.log" 8>&-; then
	echo "start.sh: PostgreSQL did not start on 127.0.0.1:$PGPORT; its log:" >&2
	cat "$PGDIR/postgres.log" "$STATE/logs/pg_ctl.log" >&2
	exit 1
fi
as_pg "$PG/createdb" -h 127.0.0.1 -p "$PGPORT" -U registry registry

KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
(
	export MCP_REGISTRY_SERVER_ADDRESS=127.0.0.1:$PORT
	export MCP_REGISTRY_DATABASE_URL="postgres://registry@127.0.0.1:$PGPORT/registry?sslmode=disable"
	export MCP_REGISTRY_ENABLE_ANONYMOUS_AUTH=true MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false
	export MCP_REGISTRY_JWT_PRIVATE_KEY=$KEY MCP_REGISTRY_SEED_FROM=
	cd "$STATE/run" && exec "$BIN/registry"
) >"$STATE/logs/registry.log" 2>&1 8>&- &
echo $! >"$STATE/run/registry.pid"
for _ in $(seq 1 300); do
	if curl -sf "http://127.0.0.1:$PORT/v0.1/health" >/dev/null 2>&1; then
		break
	fi
	kill -0 "$(cat "$STATE/run/registry.pid")" 2>/dev/null || { cat "$STATE/logs/registry.log" >&2; exit 1; }
	sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/v0.1/health" >/dev/null || { echo "start.sh: the registry did not answer" >&2; exit 1; }
if command -v ss >/dev/null; then
	loopback_only "$(cat "$STATE/run/registry.pid")" $(head -n 1 "$PGDIR/data/postmaster.pid" 2>/dev/null) || exit 1
fi
cat >"$STATE/env.sh" <<ENV
# Written by scripts/registry-local/start.sh. Source it.
export MCPSIGN_REGISTRY_URL='http://127.0.0.1:$PORT'
export MCPSIGN_REGISTRY_PUBLISHER='$BIN/mcp-publisher'
export MCPSIGN_REGISTRY_STATE='$STATE'
export MCPSIGN_REGISTRY_BIN='$BIN/registry'
export MCPSIGN_REGISTRY_DATABASE_URL='postgres://registry@127.0.0.1:$PGPORT/registry?sslmode=disable'
export MCPSIGN_REGISTRY_PGBIN='$PG'
ENV
echo "registry on http://127.0.0.1:$PORT ($STATE/env.sh)"
