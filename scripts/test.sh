#!/usr/bin/env bash
# Run every mcpsign test, from a fresh clone: installs what the tests need
# (Go modules, the official MCP servers from testdata/npm/package-lock.json,
# Debian packages, the local Sigstore stack, built in the background while
# the Go code is checked and compiled), starts the stack on 127.0.0.1 with
# its state in a temporary directory, runs vet, gofmt, a type check for
# windows and darwin, the Sigstore conformance cases of
# testdata/sigstore-conformance and `go test -race ./...` with the
# end-to-end tests required; stops and removes only what it started.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    only `go test ./...` (no stack, no npm: those tests skip)
#
# It ends with the line "N passed, N failed, N skipped", after each skip's
# reason (scripts/testsummary). With CI set (CI=true), a skip that
# scripts/expected-skips.txt does not list for this machine fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpsign-test.XXXXXX")
STATE="" BUILD_PID=""
cleanup() {
	if [[ -n $BUILD_PID ]]; then kill "$BUILD_PID" 2>/dev/null || true; fi
	if [[ -n ${REGSTATE:-} ]]; then scripts/registry-local/stop.sh "$REGSTATE" >/dev/null 2>&1 || true; fi
	if [[ -n $STATE && -e $STATE/pids ]]; then
		scripts/sigstore-local/stop.sh "$STATE" >"$TMP/stop.log" 2>&1 || cat "$TMP/stop.log" >&2
	fi
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
}
trap cleanup EXIT

go build -o "$TMP/testsummary" ./scripts/testsummary
summary=("$TMP/testsummary" -expected scripts/expected-skips.txt)
case ${CI:-} in "" | false | 0) ;; *) summary+=(-ci) ;; esac

if [[ ${1:-} == --quick ]]; then
	go test -json ./... 2>&1 | "${summary[@]}"
	exit
fi

step "Debian packages"
need=()
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
command -v node >/dev/null || need+=(nodejs npm)
if ((${#need[@]})); then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

step "Go modules"
go mod download

step "Official MCP servers (npm ci)"
(cd testdata/npm && npm ci --no-audit --no-fund --loglevel=error)

# The stack's binaries build (cached after the first run) while the Go
# code is vetted and compiled below; the stack starts after both.
step "Local Sigstore stack: build (cached), in the background"
scripts/sigstore-local/build.sh >"$TMP/sigstack-build.log" 2>&1 &
BUILD_PID=$!

step "go vet"
go vet ./... ./testdata/exampleserver ./testdata/badservers

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

# go vet type-checks every package and its tests for the target, without
# linking (a linked cross build of every command costs minutes).
step "type check for windows and darwin (go vet)"
for os in windows darwin; do
	GOOS=$os GOARCH=amd64 go vet ./... ./testdata/exampleserver ./testdata/badservers ||
		{ echo "does not type-check for $os"; exit 1; }
done

step "mcpsign binary"
mkdir -p bin
go build -o bin/ ./cmd/mcpsign ./cmd/mcpsign-proxy # installed as a pair: mcpsign proxy hands over to mcpsign-proxy
export PATH=$PWD/bin:$PATH

step "Sigstore conformance: mcpsign verify bundle (testdata/sigstore-conformance)"
bash testdata/sigstore-conformance/run-cases.sh 'mcpsign verify bundle' both | awk '!/^OK\t/' # the mismatches and the TOTAL line

# Compile (not link) every package and its tests with -race into the build
# cache, so that go test below only links and runs.
step "compile the tests with -race (while the stack builds)"
go list -export -test -race ./... >/dev/null

step "Local Sigstore stack: wait for the build"
if ! wait "$BUILD_PID"; then
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

step "Local MCP registry (scripts/registry-local): build (cached) and start"
REGSTATE=$TMP/registry
scripts/registry-local/start.sh "$REGSTATE" >"$TMP/registry.log" 2>&1 || { cat "$TMP/registry.log"; exit 1; }
source "$REGSTATE/env.sh"
export MCPSIGN_REQUIRE_REGISTRY=1

step "go test -race ./..."
export MCPSIGN_REQUIRE_SIGSTACK=1 MCPSIGN_REQUIRE_E2E=1
go test -race -json -timeout 30m ./... 2>&1 | "${summary[@]}"
