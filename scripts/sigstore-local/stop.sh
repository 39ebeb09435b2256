#!/usr/bin/env bash
# Stop the local Sigstore stack started by start.sh.
#
#   scripts/sigstore-local/stop.sh [STATE_DIR]
#
# Signals only the PIDs recorded in STATE_DIR/pids (and only while each is
# still the process start.sh launched: same start time): SIGTERM, up to 10 s grace, then SIGKILL. Logs and
# data stay in STATE_DIR; env.sh is removed so tests see the stack as down.
set -euo pipefail

S=${1:-${MCPSIGN_SIGSTORE_STATE:-/tmp/mcpsign-sigstore}}
GRACE=${SIGSTACK_STOP_GRACE:-10}

if [[ ! -s $S/pids ]]; then
	echo "stop.sh: no running stack recorded in $S"
	rm -f "$S/env.sh"
	exit 0
fi

# ours PID START EXE: is PID alive and still the process start.sh launched?
# START is its start time (field 22 of /proc/PID/stat), which a recycled PID
# cannot share; without it, compare the executable.
ours() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	if [[ $2 =~ ^[0-9]+$ ]]; then
		stat=${stat##*) } # fields after "pid (comm) ", comm may contain spaces
		[[ $(awk '{ print $20 }' <<<"$stat") == "$2" ]]
		return
	fi
	local exe
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	[[ ${exe% (deleted)} == "$(readlink -f "$3")" ]]
}

declare -A NAME=()
PIDS=()
while read -r name pid start exe; do
	[[ $pid =~ ^[0-9]+$ ]] || continue
	if ours "$pid" "$start" "$exe"; then
		NAME[$pid]=$name
		PIDS+=("$pid")
	fi
done <"$S/pids"

if ((${#PIDS[@]})); then
	kill -TERM "${PIDS[@]}" 2>/dev/null || true
	deadline=$((SECONDS + GRACE))
	while ((SECONDS < deadline)); do
		alive=()
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
		((${#alive[@]})) || break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			echo "stop.sh: ${NAME[$p]} (pid $p) ignored SIGTERM for ${GRACE}s; killing"
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
fi
echo "stop.sh: stopped ${#PIDS[@]} process(es) from $S${PIDS[*]:+ (${PIDS[*]})}"
rm -f "$S/pids" "$S/env.sh" "$S/fulcio-legacy.sock"
