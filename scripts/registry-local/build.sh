#!/usr/bin/env bash
# Build (or reuse) the official MCP registry server and mcp-publisher at a
# pinned version, through the Go module proxy.
#
#   scripts/registry-local/build.sh [--force]
#
# Installs into ${MCPSIGN_REGISTRY_CACHE:-$HOME/.cache/mcpsign/registry-local}/bin
# (registry, mcp-publisher). A binary already there at the pinned version
# (checked with `go version -m`) is not rebuilt. Idempotent.
#
# v1.5.0 is pinned: v1.6.0 and later need github.com/danielgtaylor/huma/v2
# v2.37.3 or newer, which the module proxy here does not serve.
set -euo pipefail

VERSION=v1.5.0
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
	if [[ $FORCE == 0 ]] && service_built "$BIN/$name" "$pkg" "$VERSION"; then
		continue
	fi
	tmp=$(mktemp -d)
	GOBIN=$tmp go install "${SERVICE_BUILD_FLAGS[@]}" "$pkg@$VERSION"
	mv "$tmp/$(basename "$pkg")" "$BIN/$name"
	rmdir "$tmp"
	echo "built $name $VERSION"
done
