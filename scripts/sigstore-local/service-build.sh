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
#
# Three services bind their Prometheus metrics listener to every interface
# with no flag for the address: the TSA (":2112", hard-coded), Rekor v1
# (":2112", hard-coded) and Fulcio (":" and --metrics-port). The test stack
# listens on 127.0.0.1 only, so they are built with a one-line change each
# (service_patches): that listener's address, 127.0.0.1 and a port the
# kernel picks (Fulcio: --metrics-port). The changed module is a copy of
# the one in the module cache (which is never written, and which go build
# -overlay may not replace) in SERVICES_PATCHED/MODULE@VERSION-HASH, HASH
# that of the changed file, and the build uses a copy of go.mod that
# replaces the module with it (-modfile): `go version -m` shows the
# replacement, so a binary built before, or with another change, is
# rebuilt. A patch that no longer matches its file (a new upstream version)
# fails the build: review the new file and update the patch.
SERVICE_BUILD_FLAGS=(-gcflags=all=-N\ -l -ldflags=-s\ -w)
SERVICES_PATCHED=${MCPSIGN_SIGSTORE_CACHE:-$HOME/.cache/mcpsign/sigstore-local}/patched
SERVICES_MODULE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../services" && pwd)

# service_patches PKG: "MODULE FILE SED-SCRIPT" for each change the build
# of PKG makes (none for most).
service_patches() {
	case $1 in
	github.com/sigstore/timestamp-authority/cmd/timestamp-server)
		echo 'github.com/sigstore/timestamp-authority pkg/server/prometheus.go s/Addr:\([[:space:]]*\)":2112",/Addr:\1"127.0.0.1:0",/' ;;
	github.com/sigstore/rekor/cmd/rekor-server)
		echo 'github.com/sigstore/rekor cmd/rekor-server/app/serve.go s/Addr:\([[:space:]]*\)":2112",/Addr:\1"127.0.0.1:0",/' ;;
	github.com/sigstore/fulcio)
		echo 'github.com/sigstore/fulcio cmd/app/serve.go s/fmt\.Sprintf(":%v",[[:space:]]*viper\.GetString("metrics-port"))/fmt.Sprintf("127.0.0.1:%v", viper.GetString("metrics-port"))/' ;;
	esac
}

# service_patch PKG [prepare]: "MODULE DIR" for PKG's patched module, DIR
# its copy (written first with "prepare"); nothing when PKG has no patch.
# Fails when the patch changes nothing.
service_patch() {
	local pkg=$1 mod file script ver src tmp id dir
	read -r mod file script < <(service_patches "$pkg") || true
	[[ -n ${mod:-} ]] || return 0
	ver=$(service_version "$mod") || return 1
	src=$(cd "$SERVICES_MODULE" && GOFLAGS=-mod=readonly go mod download -json "$mod@$ver" | awk -F'"' '$2 == "Dir" { print $4 }')
	[[ -n $src && -f $src/$file ]] || {
		echo "service-build: $mod@$ver/$file not found (go mod download)" >&2
		return 1
	}
	tmp=$(mktemp)
	sed -e "$script" "$src/$file" >"$tmp"
	if cmp -s "$src/$file" "$tmp"; then
		rm -f "$tmp"
		echo "service-build: the loopback patch of $mod@$ver/$file ($script) changes nothing: the file is not the one it was written for; review it and update service_patches" >&2
		return 1
	fi
	id=$(sha256sum <"$tmp" | cut -c1-16)
	dir=$SERVICES_PATCHED/$mod@$ver-$id
	if [[ ${2:-} == prepare && ! -e $dir/.mcpsign-patched ]]; then
		rm -rf "$dir" "$dir.partial"
		mkdir -p "$(dirname "$dir")"
		cp -R "$src" "$dir.partial"
		chmod -R u+w "$dir.partial"
		cp "$tmp" "$dir.partial/$file"
		touch "$dir.partial/.mcpsign-patched"
		mv "$dir.partial" "$dir"
	fi
	rm -f "$tmp"
	echo "$mod $dir"
}

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
# the flags service_build uses (go version -m reports all of it).
service_built() {
	[[ -x $1 ]] || return 1
	local info patch
	info=$(go version -m "$1" 2>/dev/null) || return 1
	patch=$(service_patch "$2") || return 1
	awk -v p="$2" -v patched="${patch#* }" '
		NR == FNR { want[$1] = $2; next }
		$1 == "path" && $2 == p { path = 1 }
		($1 == "mod" || $1 == "dep") { n++; if (want[$2] != $3) bad = 1 }
		# A replaced module (a "=>" line after its dep line) may have
		# changed where it points to: such a build is never reused, but
		# for the patched copy of service_patch.
		$1 == "=>" { if (patched != "" && $2 == patched) rep = 1; else bad = 1 }
		$0 ~ /^[ \t]*build[ \t]+-gcflags="all=-N -l"$/ { gc = 1 }
		$0 ~ /^[ \t]*build[ \t]+-ldflags="-s -w"$/ { ld = 1 }
		END { exit !(path && n && !bad && gc && ld && rep == (patched != "")) }' <(services_buildlist) <(printf '%s\n' "$info")
}

# service_build PKG OUT: build PKG from scripts/services into OUT (written
# whole or not at all: built as OUT.partial, which a build that was
# interrupted leaves for the next one to replace), without optimizations,
# with its loopback patch (service_patches).
service_build() {
	local tmp=$2.partial patch mf
	rm -f "$tmp"
	patch=$(service_patch "$1" prepare) || return 1
	mf=()
	if [[ -n $patch ]]; then
		# A copy of go.mod (and go.sum beside it) that replaces the module.
		mkdir -p "$2.modfile"
		cp "$SERVICES_MODULE/go.mod" "$SERVICES_MODULE/go.sum" "$2.modfile/"
		(cd "$SERVICES_MODULE" && go mod edit -modfile="$2.modfile/go.mod" -replace="${patch%% *}=${patch#* }") || return 1
		mf=("-modfile=$2.modfile/go.mod")
	fi
	if ! (cd "$SERVICES_MODULE" && GOFLAGS="-buildvcs=false -mod=readonly" go build ${mf[@]+"${mf[@]}"} "${SERVICE_BUILD_FLAGS[@]}" -o "$tmp" "$1"); then
		rm -rf "$tmp" "$2.modfile"
		return 1
	fi
	rm -rf "$2.modfile"
	chmod 755 "$tmp"
	mv -f "$tmp" "$2"
}
