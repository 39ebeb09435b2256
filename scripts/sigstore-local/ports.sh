# Sourced by scripts/sigstore-local/start.sh, scripts/rekor-v1/rekor-v1.sh
# and scripts/registry-local/start.sh: the ports of the test services, and
# the check that they listen on 127.0.0.1 only.
#
# A service listens on the first free port from its usual one up
# (take_port), so that a lone stack keeps the ports its README shows and a
# second run on the same machine (another checkout, another user) takes
# others: every URL a test uses comes from the env.sh the start script
# writes. ports_lock serializes choosing the ports and starting the
# services between start scripts that run at once (it is released when the
# script exits; the services it starts must not inherit its descriptor 8).

# ports_lock: take the machine-wide lock of the test services' ports.
ports_lock() {
	# Readable by every user (flock needs no write access), so that two
	# users' runs share it.
	local f=${TMPDIR:-/tmp}/mcpsign-test-ports.lock
	[[ -e $f ]] || (umask 0 && : >>"$f") 2>/dev/null || true
	exec 8<"$f"
	if ! flock -n 8; then
		echo "${0##*/}: another test stack is choosing its ports; waiting..." >&2
		flock 8
	fi
}

PORTS_TAKEN=" "
# take_port VAR BASE: sets VAR to the first port from BASE up that nothing
# listens on (127.0.0.1) and this script did not take yet.
take_port() {
	local p=$2
	while [[ $PORTS_TAKEN == *" $p "* ]] || (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1))
		((p < 65536)) || {
			echo "${0##*/}: no free port from $2 up" >&2
			return 1
		}
	done
	PORTS_TAKEN+="$p "
	printf -v "$1" %s "$p"
}

# loopback_only PID...: fails, naming each, when one of the processes
# listens (TCP) on an address other than 127.0.0.1 / ::1. Needs ss -p,
# which shows the sockets of the user's own processes.
loopback_only() {
	local bad
	bad=$(ss -Hltnp 2>/dev/null | awk -v pids=" $* " '
		{
			addr = $4; line = $0
			while (match(line, /pid=[0-9]+/)) {
				pid = substr(line, RSTART + 4, RLENGTH - 4); line = substr(line, RSTART + RLENGTH)
				if (index(pids, " " pid " ") && addr !~ /^(127\.0\.0\.1|\[::1\]|\[::ffff:127\.0\.0\.1\]):/) print addr " (pid " pid ")"
			}
		}' | sort -u | tr '\n' ' ')
	[[ -z $bad ]] || {
		echo "${0##*/}: a test service listens beyond 127.0.0.1: ${bad% } (ss -ltnp); the stack must be loopback-only" >&2
		return 1
	}
}
