#!/usr/bin/env bash
# Build (or reuse) the binaries of the local Sigstore stack.
#
#   scripts/sigstore-local/build.sh [--force] [COMPONENT...]
#
# Installs into ${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}/bin
# and records what was built in bin/versions.txt. The services are built
# from scripts/services, whose go.mod pins their versions, without
# optimizations (service-build.sh); a binary that is already there, built
# from that module as it is now (checked with `go version -m`), is not
# rebuilt. Idempotent. The component cosign-peer, built only when named, is
# cosign v2.6.5 as released (its own go.mod, optimized), for the benchmarks
# that measure it.
#
# MCPSIGN_SIGSTORE_OFFLINE=1 builds from the local module cache only
# (GOPROXY=file://.../cache/download, GOSUMDB=off).
set -euo pipefail

# name | package: built from scripts/services (its go.mod pins the
# versions) and named here, because tesseract and rekor-tiles both build a
# binary `posix`.
COMPONENTS=(
	"fulcio|github.com/sigstore/fulcio"
	"tesseract-posix|github.com/transparency-dev/tesseract/cmd/tesseract/posix"
	"rekor-server-posix|github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix"
	"timestamp-server|github.com/sigstore/timestamp-authority/cmd/timestamp-server"
	"cosign|github.com/sigstore/cosign/v2/cmd/cosign"
)
# name | package | version, built only when named: cosign as released
# (`go install` with its own go.mod) and optimized, the peer the benchmarks
# measure (scripts/bench/verify-compare.sh, verify/testdata/bench/run.sh).
OPTIONAL=(
	"cosign-peer|github.com/sigstore/cosign/v2/cmd/cosign|v2.6.5"
)
# Our own issuer, built from this checkout.
OIDC_PKG=./scripts/sigstore-local/oidc-issuer

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=service-build.sh
source "$HERE/service-build.sh"
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}
BIN=$CACHE/bin
STAMP=$BIN/versions.txt

FORCE=0
WANT=()
for a in "$@"; do
	case $a in
	--force) FORCE=1 ;;
	-h | --help)
		sed -n '2,12p' "$0"
		exit 0
		;;
	-*)
		echo "build.sh: unknown option $a" >&2
		exit 2
		;;
	*) WANT+=("$a") ;;
	esac
done

command -v go >/dev/null || {
	echo "build.sh: go not found in PATH" >&2
	exit 1
}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
if [[ ${MCPSIGN_SIGSTORE_OFFLINE:-0} == 1 ]]; then
	GOPROXY="file://$(go env GOMODCACHE)/cache/download"
	export GOPROXY GOSUMDB=off
fi
GOVERSION=$(go env GOVERSION)

mkdir -p "$BIN"
# One build at a time per cache directory (parallel CI jobs, two shells).
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
	echo "build.sh: another build is running on $CACHE; waiting for it..."
	flock 9
fi
touch "$STAMP"

KNOWN=" oidc-issuer "
for c in "${COMPONENTS[@]}" "${OPTIONAL[@]}"; do KNOWN+="${c%%|*} "; done
for w in ${WANT[@]+"${WANT[@]}"}; do
	[[ $KNOWN == *" $w "* ]] || {
		echo "build.sh: unknown component $w (known:$KNOWN)" >&2
		exit 2
	}
done

wanted() {
	((${#WANT[@]} == 0)) && return 0
	local w
	for w in "${WANT[@]}"; do [[ $w == "$1" ]] && return 0; done
	return 1
}

stamp_get() { awk -v n="$1" '$1 == n { print $2 }' "$STAMP"; }

stamp_set() { # name version
	local tmp
	tmp=$(mktemp "$STAMP.XXXXXX")
	awk -v n="$1" '$1 != n' "$STAMP" >"$tmp"
	printf '%s %s %s %s\n' "$1" "$2" "$GOVERSION" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$tmp"
	sort -o "$tmp" "$tmp"
	chmod 644 "$tmp"
	mv "$tmp" "$STAMP"
}

# embedded FILE -> "PKGPATH VERSION" from the binary's build info.
embedded() {
	go version -m "$1" 2>/dev/null | awk '$1 == "path" { p = $2 } $1 == "mod" { v = $3 } END { print p, v }'
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# ensure_service NAME PKG: BIN/NAME is PKG built from scripts/services.
ensure_service() {
	local name=$1 pkg=$2 out=$BIN/$1 t0 ver
	t0=$(now)
	ver=$(service_version "$pkg") || {
		echo "build.sh: scripts/services does not require the module of $pkg" >&2
		exit 1
	}
	if ((!FORCE)) && service_built "$out" "$pkg"; then
		[[ $(stamp_get "$name") == "$pkg@$ver" ]] || stamp_set "$name" "$pkg@$ver"
		printf '  %-20s %s@%s: up to date\n' "$name" "$pkg" "$ver"
		return
	fi
	printf '  %-20s %s@%s: building...\n' "$name" "$pkg" "$ver"
	mkdir -p "$CACHE/build"
	if ! service_build "$pkg" "$out" >"$CACHE/build/$name.log" 2>&1; then
		echo "build.sh: building $pkg failed; last lines of $CACHE/build/$name.log:" >&2
		tail -n 30 "$CACHE/build/$name.log" >&2
		exit 1
	fi
	stamp_set "$name" "$pkg@$ver"
	printf '  %-20s built in %s\n' "$name" "$(since "$t0")"
}

# ensure_peer NAME PKG VERSION: BIN/NAME is PKG at VERSION as released
# (`go install`, its own go.mod), optimized.
ensure_peer() {
	local name=$1 pkg=$2 ver=$3 out=$BIN/$1 t0 gobin
	t0=$(now)
	if ((!FORCE)) && [[ -x $out && $(embedded "$out") == "$pkg $ver" ]] && ! go version -m "$out" | grep -q -- '-gcflags='; then
		[[ $(stamp_get "$name") == "$pkg@$ver" ]] || stamp_set "$name" "$pkg@$ver"
		printf '  %-20s %s@%s: up to date\n' "$name" "$pkg" "$ver"
		return
	fi
	printf '  %-20s %s@%s: building...\n' "$name" "$pkg" "$ver"
	gobin=$CACHE/build/$name
	rm -rf "$gobin"
	mkdir -p "$gobin"
	if ! GOBIN=$gobin go install "$pkg@$ver" >"$CACHE/build/$name.log" 2>&1; then
		echo "build.sh: go install $pkg@$ver failed; last lines of $CACHE/build/$name.log:" >&2
		tail -n 30 "$CACHE/build/$name.log" >&2
		exit 1
	fi
	mv -f "$gobin/${pkg##*/}" "$out"
	rmdir "$gobin" 2>/dev/null || true
	[[ $(embedded "$out") == "$pkg $ver" ]] || {
		echo "build.sh: $out does not report $pkg $ver" >&2
		exit 1
	}
	stamp_set "$name" "$pkg@$ver"
	printf '  %-20s built in %s\n' "$name" "$(since "$t0")"
}

ensure_oidc() {
	local out=$BIN/oidc-issuer t0 ver f
	t0=$(now)
	# Version = hash of the sources and the toolchain, so edits rebuild it.
	ver=src-$(
		{
			echo "$GOVERSION"
			for f in "$REPO"/scripts/sigstore-local/oidc-issuer/*.go "$REPO"/internal/testkit/oidcissuer/*.go; do
				[[ $f == *_test.go ]] || cat "$f"
			done
		} | sha256sum | cut -c1-16
	)
	if ((!FORCE)) && [[ -x $out && $(stamp_get oidc-issuer) == "$ver" ]]; then
		printf '  %-20s %s: up to date\n' oidc-issuer "$ver"
		return
	fi
	printf '  %-20s %s: building...\n' oidc-issuer "$ver"
	(cd "$REPO" && go build -trimpath -o "$out.tmp" "$OIDC_PKG") || {
		echo "build.sh: building the OIDC issuer failed" >&2
		exit 1
	}
	mv -f "$out.tmp" "$out"
	stamp_set oidc-issuer "$ver"
	printf '  %-20s built in %s\n' oidc-issuer "$(since "$t0")"
}

T0=$(now)
echo "build.sh: $GOVERSION, binaries in $BIN"
for c in "${COMPONENTS[@]}"; do
	IFS='|' read -r name pkg <<<"$c"
	wanted "$name" && ensure_service "$name" "$pkg"
done
for c in "${OPTIONAL[@]}"; do
	IFS='|' read -r name pkg ver <<<"$c"
	((${#WANT[@]})) && wanted "$name" && ensure_peer "$name" "$pkg" "$ver"
done
wanted oidc-issuer && ensure_oidc
echo "build.sh: done in $(since "$T0")"
