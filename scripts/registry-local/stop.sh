#!/usr/bin/env bash
# Stop what start.sh STATE_DIR started: the registry, then its PostgreSQL.
#
#   scripts/registry-local/stop.sh STATE_DIR
set -uo pipefail
STATE=${1:?usage: stop.sh STATE_DIR}
if [[ -f $STATE/run/registry.pid ]]; then
	pid=$(cat "$STATE/run/registry.pid")
	kill "$pid" 2>/dev/null
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null
	rm -f "$STATE/run/registry.pid"
fi
PG=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
PGDIR=$(cat "$STATE/run/pgdir" 2>/dev/null)
if [[ -n $PG && -n $PGDIR && -f $PGDIR/data/postmaster.pid ]]; then
	if [[ $(id -u) == 0 ]]; then
		runuser -u postgres -- "$PG/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null
	else
		"$PG/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null
	fi
fi
# The cluster's own directory under /tmp (as root), not inside STATE.
case $PGDIR in /tmp/mcpsign-registry-pg.*) rm -rf "$PGDIR" ;; esac
exit 0
