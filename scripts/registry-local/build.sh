#!/usr/bin/env bash
# Build (or reuse) the official MCP registry server and mcp-publisher at the
# version scripts/services/go.mod pins, through the Go module proxy.
#
#   scripts/registry-local/build.sh [--force]
#
# Installs into ${MCPSIGN_REGISTRY_CACHE:-$HOME/.cache/mcpsign/registry-local}/bin
# (registry, mcp-publisher). A binary already there, built from
# scripts/services as it is now (checked with `go version -m`), is not
# rebuilt. Idempotent.
set -euo pipefail

MODULE=github.com/modelcontextprotocol/registry
CACHE=${MCPSIGN_REGISTRY_CACHE:-$HOME/.cache/mcpsign/registry-local}
BIN=$CACHE/bin
FORCE=0
[[ ${1:-} == --force ]] && FORCE=1
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
mkdir -p "$BIN"

# shellcheck source=../sigstore-local/service-build.sh
source "$(dirname "${BASH_SOURCE[0]}")/../sigstore-local/service-build.sh"
for c in "registry|$MODULE/cmd/registry" "mcp-publisher|$MODULE/cmd/publisher"; do
	name=${c%%|*} pkg=${c#*|}
	if [[ $FORCE == 0 ]] && service_built "$BIN/$name" "$pkg"; then
		continue
	fi
	echo "registry-local: $name: building..."
	service_build "$pkg" "$BIN/$name"
	echo "built $name $(service_version "$pkg")"
done
