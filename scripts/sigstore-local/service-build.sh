# Sourced by scripts/sigstore-local/build.sh, scripts/rekor-v1/rekor-v1.sh
# and scripts/registry-local/build.sh: how the services the tests run are
# built.
#
# Every service is built from one module, scripts/services (its go.mod
# says why and pins each service's version), so that the dependencies they
# share compile once.
#
# The services (Fulcio, the logs, the timestamp authority, Trillian, the MCP
# registry, cosign for the interoperability checks) are built without the
# compiler's optimizations and inlining and without symbol tables: a cold
# build of the whole stack takes about two thirds of the CPU time of an
# optimized one (timestamp-server: 91 s against 134 s), and the tests use
# them for correctness, not speed. A binary built otherwise (an earlier
# optimized build, a plain `go install`, other dependency versions) is
# rebuilt once. Benchmarks that measure a peer use an optimized build of
# their own (build.sh cosign-peer).
SERVICE_BUILD_FLAGS=(-gcflags=all=-N\ -l -ldflags=-s\ -w)
SERVICES_MODULE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../services" && pwd)

# services_buildlist: "MODULE VERSION" for every module that builds the
# services, one a line. Read from scripts/services/go.mod, which lists
# every module a build of its tools uses (Go's pruned module graph: go
# build -mod=readonly refuses a go.mod that misses one), so no module is
# fetched to answer. (go list -m all would look up the whole graph, some of
# which the module proxy here does not serve.)
services_buildlist() {
	awk '
		/^require[ \t]*\(/ { block = 1; next }
		block && /^\)/ { block = 0; next }
		block && NF >= 2 && $1 !~ /^\/\// { print $1, $2; next }
		/^require[ \t]+[^ \t(]/ { print $2, $3 }' "$SERVICES_MODULE/go.mod"
}

# service_version PKG: the version scripts/services pins for the module
# that holds PKG.
service_version() {
	services_buildlist | awk -v p="$1" '
		index(p, $1) == 1 && (length(p) == length($1) || substr(p, length($1) + 1, 1) == "/") && length($1) > best {
			best = length($1); v = $2
		}
		END { if (v == "") exit 1; print v }'
}

# service_built FILE PKG: FILE is PKG built from scripts/services as it is
# now (the module and every dependency at the build list's version) with
# SERVICE_BUILD_FLAGS (go version -m reports all of it).
service_built() {
	[[ -x $1 ]] || return 1
	local info
	info=$(go version -m "$1" 2>/dev/null) || return 1
	awk -v p="$2" '
		NR == FNR { want[$1] = $2; next }
		$1 == "path" && $2 == p { path = 1 }
		($1 == "mod" || $1 == "dep") { n++; if (want[$2] != $3) bad = 1 }
		# A replaced module (a "=>" line after its dep line) may have
		# changed where it points to: such a build is never reused.
		$1 == "=>" { bad = 1 }
		$0 ~ /^[ \t]*build[ \t]+-gcflags="all=-N -l"$/ { gc = 1 }
		$0 ~ /^[ \t]*build[ \t]+-ldflags="-s -w"$/ { ld = 1 }
		END { exit !(path && n && !bad && gc && ld) }' <(services_buildlist) <(printf '%s\n' "$info")
}

# service_build PKG OUT: build PKG from scripts/services into OUT (written
# whole or not at all: built as OUT.partial, which a build that was
# interrupted leaves for the next one to replace), with SERVICE_BUILD_FLAGS.
service_build() {
	local tmp=$2.partial
	rm -f "$tmp"
	if ! (cd "$SERVICES_MODULE" && GOFLAGS="-buildvcs=false -mod=readonly" go build "${SERVICE_BUILD_FLAGS[@]}" -o "$tmp" "$1"); then
		rm -f "$tmp"
		return 1
	fi
	chmod 755 "$tmp"
	mv -f "$tmp" "$2"
}
