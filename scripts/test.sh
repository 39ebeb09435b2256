#!/usr/bin/env bash
# Run every mcpsign test, from a fresh machine: installs what the tests need
# (Go modules, the official MCP servers from testdata/npm/package-lock.json,
# Debian packages, the local Sigstore stack), starts the stack on 127.0.0.1,
# runs vet, gofmt, `go test -race ./...` with the end-to-end tests required,
# and the Sigstore conformance cases; stops only what it started.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    only `go test ./...` (no stack, no npm: those tests skip)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

if [[ ${1:-} == --quick ]]; then
	exec go test ./...
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

step "Local Sigstore stack: build (cached)"
scripts/sigstore-local/build.sh

step "Local Sigstore stack: start"
STATE=${MCPSIGN_SIGSTORE_STATE:-/tmp/mcpsign-sigstore-test}
scripts/sigstore-local/start.sh "$STATE"
trap 'scripts/sigstore-local/stop.sh "$STATE" || true' EXIT
export SIGSTACK_ENV=$STATE/env.sh

step "go vet"
go vet ./... ./testdata/exampleserver ./testdata/badservers

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "cross-compile (windows, darwin)"
for os in windows darwin; do
	GOOS=$os GOARCH=amd64 go build -o /dev/null ./... || { echo "does not build for $os"; exit 1; }
done

step "mcpsign binary"
mkdir -p bin
go build -o bin/ ./cmd/mcpsign ./cmd/mcpsign-proxy   # installed as a pair: mcpsign proxy hands over to mcpsign-proxy
export PATH=$PWD/bin:$PATH

step "go test -race ./..."
export MCPSIGN_REQUIRE_SIGSTACK=1 MCPSIGN_REQUIRE_E2E=1
go test -race -timeout 30m ./...
# Each test binary removes the links to itself that it ran fixtures through
# (fixtures.Main), and a reaper removes what was built once for the whole run
# (mcpsign-fixtures-PID-run-*, PID the go command's) when the go command
# exits; this removes what processes that ended without cleaning left
# (killed, or a package without that TestMain), never what a live one uses.
for d in "${TMPDIR:-/tmp}"/mcpsign-fixtures-*; do
	[[ -d $d ]] || continue
	pid=${d##*/mcpsign-fixtures-}; pid=${pid%%-*}
	kill -0 "$pid" 2>/dev/null || rm -rf "$d"
done

step "Sigstore conformance: mcpsign verify bundle"
bash testdata/sigstore-conformance/run-cases.sh 'mcpsign verify bundle' both | awk '!/^OK\t/' # the mismatches and the TOTAL line
step "all tests passed"
