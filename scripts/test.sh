#!/usr/bin/env bash
# Run every mcpsign test, from a fresh clone: installs what the tests need
# (Go modules, the official MCP servers from testdata/npm/package-lock.json,
# Debian packages, the local Sigstore stack, built in the background while
# the Go code is checked and compiled), starts the stack on 127.0.0.1 with
# its state in a temporary directory, runs vet, gofmt, a type check for
# windows and darwin (scripts/typecheck), the Sigstore conformance cases of
# testdata/sigstore-conformance and `go test -race ./...` with the
# end-to-end tests required (the packages that need no service while the
# stack builds and starts, the others once it runs); stops and removes
# only what it started.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    only `go test ./...` (no stack, no npm: those tests skip)
#
# It ends with the line "N passed, N failed, N skipped", after each skip's
# reason and the ten slowest packages and tests (scripts/testsummary). With CI set (CI=true), a skip that
# scripts/expected-skips.txt does not list for this machine fails the run.
# It runs every test once: nothing is retried, and a failure is never
# hidden (a test that fails once fails the run). As go test does, a
# package whose test binary and inputs are those of a run that passed is
# not run again: its result is replayed from go test's cache (a second run
# in the same clone replays most of the small packages).
#
# Every step says when it starts and how long the one before took; a step
# that runs longer than 15 s says every 15 s what it waits for and for how
# long. Ctrl-C (or SIGTERM) stops the tests, prints what ran so far under
# "INTERRUPTED" (a stopped test did not fail) and cleans up, saying so.
#
# Needs: about 6 GB of disk (Go module and build caches; in
# ~/.cache/mcpsign the stack's binaries, a copy of the npm packages and the
# type check's stamps), and root, or the Debian packages below
# already installed (it runs apt-get install when one is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
# -trimpath: the build cache's entries for this module do not depend on the
# directory of the checkout, so a fresh clone (CI's) reuses what an earlier
# run compiled from the same sources.
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -trimpath"

T_RUN=$SECONDS T_STEP=$SECONDS
# dur SECONDS: "1m05s", "42s".
dur() { if (($1 >= 60)); then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }
step() {
	printf '\n=== %s (%s, %s since the start; the step before took %s)\n' "$*" "$(date +%T)" "$(dur $((SECONDS - T_RUN)))" "$(dur $((SECONDS - T_STEP)))"
	T_STEP=$SECONDS
}
# watch PID WHAT [STATUS...]: waits for PID (a child) and returns its exit
# status; every 15 s (MCPSIGN_TEST_PROGRESS_EVERY) while it runs, says that
# it still waits for WHAT, for how long, and what the command STATUS prints
# (one line).
EVERY=${MCPSIGN_TEST_PROGRESS_EVERY:-15}
watch() {
	local pid=$1 what=$2 t0=$SECONDS next=$((SECONDS + EVERY)) extra
	shift 2
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= next)); then
			extra=""
			(($#)) && extra=$("$@" 2>/dev/null | tail -n 1)
			printf '  ... %s: %s%s\n' "$what" "$(dur $((SECONDS - t0)))" "${extra:+ ($extra)}"
			next=$((SECONDS + EVERY))
		fi
		sleep 1
	done
	wait "$pid"
}
# run WHAT COMMAND...: runs COMMAND, watched (watch).
run() {
	local what=$1
	shift
	"$@" &
	watch $! "$what"
}
# tests_done FILE TOTAL: how far the go test -json stream in FILE is.
tests_done() {
	local pkgs failed
	pkgs=$(grep -cE '"Action":"(pass|fail|skip)","Package":"[^"]*","Elapsed"' "$1") || true
	failed=$(grep -cE '"Action":"fail","Package":"[^"]*","Test"' "$1") || true
	echo "$pkgs of $2 packages done, $failed failed tests"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpsign-test.XXXXXX")
# What outlives a run: the npm packages and the type check's stamps (the
# stack's binaries are in $CACHE/sigstore-local and beside them).
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/mcpsign
STATE="" BUILD_PID="" FIRST_PID="" SECOND_PID="" CONTAINER_PID="" INTERRUPTED=0
# stop_tests PGID...: stops the go test process groups (go test, its test
# binaries and their fixtures): SIGTERM (a background job ignores SIGINT),
# then SIGKILL after 3 s.
stop_tests() {
	local g alive
	for g in "$@"; do kill -TERM -- "-$g" 2>/dev/null || true; done
	for _ in $(seq 1 30); do
		alive=0
		for g in "$@"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
		((alive)) || return 0
		sleep 0.1
	done
	for g in "$@"; do kill -KILL -- "-$g" 2>/dev/null || true; done
}
on_signal() {
	trap '' INT TERM # a second Ctrl-C does not cut the clean-up short
	INTERRUPTED=1
	printf '\n=== interrupted (%s, after %s): stopping the tests\n' "$(date +%T)" "$(dur $((SECONDS - T_RUN)))"
	exit 130
}
trap on_signal INT TERM
cleanup() {
	local rc=$? t0=$SECONDS groups=() j
	trap '' INT TERM
	# The go test runs are process groups of their own (setsid): stop them
	# with their test binaries and fixtures.
	for j in "$FIRST_PID" "$SECOND_PID"; do [[ -n $j ]] && groups+=("$j"); done
	((${#groups[@]} == 0)) || stop_tests "${groups[@]}"
	# What run started in the background (a background job ignores the
	# terminal's SIGINT).
	for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
	if ((INTERRUPTED)); then
		if [[ -x $TMP/testsummary ]] && compgen -G "$TMP/*.json" >/dev/null; then
			cat "$TMP"/*.json | "${summary[@]}" -interrupted || true
		fi
	fi
	if [[ -n $BUILD_PID ]]; then kill "$BUILD_PID" 2>/dev/null || true; fi
	local what=""
	[[ -n $STATE && -e $STATE/pids ]] && what+=", the Sigstore stack"
	[[ -e $TMP/rekor-v1/env.sh ]] && what+=", Rekor v1"
	[[ -n ${REGSTATE:-} ]] && what+=", the MCP registry"
	printf '\n=== cleaning up: %sremoving %s\n' "${what:+stopping ${what#, }; }" "$TMP"
	# The three stop in parallel; their state is thrown away, so the stack
	# gets 3 s to stop before it is killed.
	if [[ -n ${REGSTATE:-} ]]; then scripts/registry-local/stop.sh "$REGSTATE" >/dev/null 2>&1 & fi
	if [[ -n $STATE && -e $STATE/pids ]]; then
		{ SIGSTACK_STOP_GRACE=3 scripts/sigstore-local/stop.sh "$STATE" >"$TMP/stop.log" 2>&1 || cat "$TMP/stop.log" >&2; } &
	fi
	MCPSIGN_REKOR_V1_STATE=$TMP/rekor-v1 scripts/rekor-v1/rekor-v1.sh stop >/dev/null 2>&1 || true
	wait
	# Each test binary removes the links to itself that it ran fixtures
	# through (fixtures.Main), and a reaper removes what was built once for
	# the whole run (mcpsign-fixtures-PID-run-*, PID the go command's) when
	# the go command exits; this removes what processes that ended without
	# cleaning left (killed, or a package without that TestMain), never what
	# a live one uses.
	for d in "${TMPDIR:-/tmp}"/mcpsign-fixtures-*; do
		[[ -d $d ]] || continue
		pid=${d##*/mcpsign-fixtures-}
		pid=${pid%%-*}
		kill -0 "$pid" 2>/dev/null || rm -rf "$d"
	done
	rm -rf "$TMP" # the stack's state too, unless MCPSIGN_SIGSTORE_STATE put it elsewhere
	echo "cleaned up in $(dur $((SECONDS - t0)))$( ((INTERRUPTED)) && echo '; the run was interrupted: no result')"
	exit "$rc"
}
trap cleanup EXIT

summary=("$TMP/testsummary" -expected scripts/expected-skips.txt -slowest 10)
case ${CI:-} in "" | false | 0) ;; *) summary+=(-ci) ;; esac
go build -o "$TMP/testsummary" ./scripts/testsummary

if [[ ${1:-} == --quick ]]; then
	go test -json ./... 2>&1 | "${summary[@]}"
	exit
fi

step "Debian packages"
need=()
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
command -v node >/dev/null || need+=(nodejs npm)
command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]] || need+=(mariadb-server) # the Rekor v1 log's database
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql) # the MCP registry's database
command -v dockerd >/dev/null || need+=(docker.io) # the container image's test (scripts/container)
if ((${#need[@]})) && [[ $(id -u) != 0 ]]; then
	echo "missing Debian packages: ${need[*]}; install them as root (apt-get install ${need[*]}) or run this script as root"
	exit 1
fi
# A cold run fills about 6 GB (Go module and build caches, the services'
# binaries); say so before it fails half-way for want of space.
cache_dir=$(go env GOMODCACHE)
while [[ ! -d $cache_dir ]]; do cache_dir=$(dirname "$cache_dir"); done
free_kb=$(df -Pk "$cache_dir" 2>/dev/null | awk 'NR == 2 { print $4 }') || true
if [[ -n ${free_kb:-} ]] && ((free_kb < 6 * 1024 * 1024)); then
	echo "warning: $((free_kb / 1024 / 1024)) GB free where Go keeps its caches; a run with cold caches needs about 6 GB"
fi
if ((${#need[@]})); then
	echo "installing ${need[*]} (apt-get)"
	run "apt-get update" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null &
	watch $! "apt-get install ${need[*]}"
fi

# The stack's binaries build (cached after the first run) while the
# modules and npm packages download and the Go code is vetted and
# compiled below; the stack starts after both.
step "Local Sigstore stack: build (cached), in the background"
{ scripts/sigstore-local/build.sh && scripts/rekor-v1/rekor-v1.sh build && scripts/registry-local/build.sh; } >"$TMP/sigstack-build.log" 2>&1 &
BUILD_PID=$!

step "Go modules"
run "go mod download" go mod download

# What `npm ci` installs from testdata/npm/package-lock.json is kept in the
# cache, named by the lock's hash and the Node.js and npm versions, and
# copied from there when they are the same (less than a second, where npm
# ci takes 10 s and 13 s of CPU).
step "Official MCP servers (npm ci, or its copy in $CACHE/npm)"
npm_key=$(cat testdata/npm/package-lock.json <(node --version) <(npm --version) | sha256sum | cut -c1-32)
npm_saved=$CACHE/npm/$npm_key
rm -rf testdata/npm/node_modules
if [[ -d $npm_saved/node_modules ]]; then
	cp -a "$npm_saved/node_modules" testdata/npm/
	echo "copied from $npm_saved (npm ci of the same package-lock.json)"
else
	run "npm ci" env -C testdata/npm npm ci --no-audit --no-fund --loglevel=error
	mkdir -p "$CACHE/npm"
	rm -rf "$CACHE"/npm/tmp.* "$CACHE"/npm/*/ 2>/dev/null || true # an older lock's copy
	npm_tmp=$(mktemp -d "$CACHE/npm/tmp.XXXXXX")
	cp -a testdata/npm/node_modules "$npm_tmp/" && mv "$npm_tmp" "$npm_saved"
fi

# Every build without -race has cgo off: vet, the binaries, the container
# image's static binary and the tests' own builds (fixtures.BuildEnv), so
# that a cold build cache compiles the dependencies once for them all
# rather than once with cgo and once without. (The race detector needs cgo:
# the race build is the other configuration.)
step "go vet"
run "go vet (compiles every package; minutes when the build cache is cold)" env CGO_ENABLED=0 go vet ./... ./testdata/exampleserver ./testdata/badservers ./testdata/scriptserver

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

# scripts/typecheck type-checks every package and its tests for the
# target from source, compiling nothing (a linked cross build of every
# command, or go vet, which compiles every dependency for the target,
# costs minutes).
step "type check for windows and darwin (scripts/typecheck)"
go build -o "$TMP/typecheck" ./scripts/typecheck
for os in windows darwin; do
	run "type check for $os" env GOOS=$os GOARCH=amd64 "$TMP/typecheck" -cache "$CACHE/typecheck" ./... ./testdata/exampleserver ./testdata/badservers ./testdata/scriptserver ||
		{ echo "does not type-check for $os"; exit 1; }
done

step "mcpsign binary"
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./cmd/mcpsign ./cmd/mcpsign-proxy # installed as a pair: mcpsign proxy hands over to mcpsign-proxy
export PATH=$PWD/bin:$PATH

step "Sigstore conformance: mcpsign verify bundle (testdata/sigstore-conformance)"
bash testdata/sigstore-conformance/run-cases.sh 'mcpsign verify bundle' both | awk '!/^OK\t/' # the mismatches and the TOTAL line

# The image (Dockerfile) is built FROM scratch with no registry pull and
# run: a session through `mcpsign serve` in it, then SIGTERM, drained
# (scripts/container starts a dockerd of its own when none runs, and stops
# it). About 20 s once the binary's build is cached.
step "container image (scripts/container test), in the background"
scripts/container test >"$TMP/container.log" 2>&1 &
CONTAINER_PID=$!

# The tests of the packages that need no service run while the stack
# builds and starts; those that need one (every test package that imports
# a package of SERVICE_KITS, directly or not) are compiled meanwhile and
# run once the services are up. Both runs require every end-to-end
# dependency. A service this script starts has its test kit listed here.
SERVICE_KITS=(internal/testkit/sigstack internal/testkit/rekorv1 internal/testkit/registrylocal)
export MCPSIGN_REQUIRE_SIGSTACK=1 MCPSIGN_REQUIRE_E2E=1
kits=$(printf ' github.com/mcpsign/mcpsign/%s( |$)|' "${SERVICE_KITS[@]}")
mapfile -t stack_pkgs < <(go list -test -f '{{if .ForTest}}{{.ForTest}} {{join .Deps " "}}{{end}}' ./... |
	awk -v re="${kits%|}" '$0 ~ re { print $1 }' | sort -u)
mapfile -t first_pkgs < <(go list ./... | grep -vxF -f <(printf '%s\n' "${stack_pkgs[@]}"))
if ((${#stack_pkgs[@]} == 0 || ${#first_pkgs[@]} == 0)); then
	echo "no package needs a service, or every package does: the package lists are wrong"
	exit 1
fi
# -ldflags=-w: the test binaries are linked without DWARF, which nothing
# reads (a failure's stack trace and a race report come from the runtime's
# own tables): linking the 72 race-built test binaries took 48 s of CPU
# with it, 44 s without (docs/PERFORMANCE.md).
TEST_FLAGS=(-race -json -timeout 30m -ldflags=-w)
# Both go test runs share what the tests build without -race (mcpsign, the
# example server, the scripted server: internal/testkit/fixtures), made once
# for this script's lifetime instead of once per go test run.
export MCPSIGN_FIXTURES_RUN=$$
step "go test -race: ${#first_pkgs[@]} packages that need no service, in the background"
setsid go test "${TEST_FLAGS[@]}" "${first_pkgs[@]}" >"$TMP/first.json" 2>&1 &
FIRST_PID=$!

# Compile (not link) the other packages and their tests with -race into
# the build cache, so that their go test below only links and runs.
step "compile the tests of ${#stack_pkgs[@]} packages that need a service, with -race"
go list -export -test -race "${stack_pkgs[@]}" >/dev/null &
watch $! "compiling the tests of ${#stack_pkgs[@]} packages (minutes when the build cache is cold)"

step "Local Sigstore stack: wait for the build"
# build.sh prints a line per binary ("building...", "built in", "up to
# date"): the last one says what is being built.
if ! watch "$BUILD_PID" "waiting for the build of the stack's binaries (minutes when ~/.cache/mcpsign is empty)" \
	grep -E 'building|built|ready|done' "$TMP/sigstack-build.log"; then
	BUILD_PID=""
	cat "$TMP/sigstack-build.log"
	echo "building the local Sigstore stack failed"
	exit 1
fi
BUILD_PID=""
cat "$TMP/sigstack-build.log"

step "Local Sigstore stack: start"
STATE=${MCPSIGN_SIGSTORE_STATE:-$TMP/sigstore}
scripts/sigstore-local/start.sh "$STATE"
export SIGSTACK_ENV=$STATE/env.sh
step "Rekor v1 (Trillian, MariaDB): start"
MCPSIGN_REKOR_V1_STATE=$TMP/rekor-v1 scripts/rekor-v1/rekor-v1.sh start
export REKOR_V1_ENV=$TMP/rekor-v1/env.sh MCPSIGN_REQUIRE_REKOR_V1=1

step "Local MCP registry (scripts/registry-local): start"
REGSTATE=$TMP/registry
scripts/registry-local/start.sh "$REGSTATE" >"$TMP/registry.log" 2>&1 || { cat "$TMP/registry.log"; exit 1; }
source "$REGSTATE/env.sh"
export MCPSIGN_REQUIRE_REGISTRY=1

step "go test -race: ${#stack_pkgs[@]} packages that need a service"
second=0
setsid go test "${TEST_FLAGS[@]}" "${stack_pkgs[@]}" >"$TMP/second.json" 2>&1 &
SECOND_PID=$!
watch "$SECOND_PID" "go test of the packages that need a service" tests_done "$TMP/second.json" "${#stack_pkgs[@]}" || second=$?
SECOND_PID=""

step "go test -race: wait for the packages that need no service"
first=0
watch "$FIRST_PID" "go test of the packages that need no service" tests_done "$TMP/first.json" "${#first_pkgs[@]}" || first=$?
FIRST_PID=""
step "container image: wait for scripts/container test"
container=0
watch "$CONTAINER_PID" "scripts/container test" tail -n 1 "$TMP/container.log" || container=$?
CONTAINER_PID=""
cat "$TMP/container.log"
step "go test -race ./...: summary"
cat "$TMP/first.json" "$TMP/second.json" | "${summary[@]}"
if ((first != 0 || second != 0)); then
	echo "go test exited $first (packages that need no service) and $second (the others)"
	exit 1
fi
if ((container != 0)); then
	echo "scripts/container test failed (exit $container): its output is above"
	exit 1
fi
