# Sourced by scripts/sigstore-local/build.sh, scripts/rekor-v1/rekor-v1.sh
# and scripts/registry-local/build.sh: how the services the tests run are
# built.
#
# The services (Fulcio, the logs, the timestamp authority, Trillian, the MCP
# registry, cosign for the interoperability checks) are built without the
# compiler's optimizations and inlining and without symbol tables: a cold
# build of the whole stack takes about two thirds of the CPU time of an
# optimized one (timestamp-server: 91 s against 134 s), and the tests use
# them for correctness, not speed. A binary built otherwise (an earlier
# optimized build, a plain `go install`) is rebuilt once. Benchmarks that
# measure a peer use an optimized build of their own (build.sh cosign-peer).
SERVICE_BUILD_FLAGS=(-gcflags=all=-N\ -l -ldflags=-s\ -w)

# service_built FILE PKG VERSION: FILE is PKG at VERSION, built with
# SERVICE_BUILD_FLAGS (go version -m reports both).
service_built() {
	[[ -x $1 ]] || return 1
	go version -m "$1" 2>/dev/null | awk -v p="$2" -v v="$3" '
		$1 == "path" && $2 == p { path = 1 }
		$1 == "mod" && $3 == v { mod = 1 }
		$0 ~ /^[ \t]*build[ \t]+-gcflags="all=-N -l"$/ { gc = 1 }
		$0 ~ /^[ \t]*build[ \t]+-ldflags="-s -w"$/ { ld = 1 }
		END { exit !(path && mod && gc && ld) }'
}
