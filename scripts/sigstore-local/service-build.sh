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
# (service_patches): the address of that listener, 127.0.0.1 and a port the
# kernel picks (Fulcio: --metrics-port). The changed file is handed to go
# build with -overlay (the module cache is never written); the change's
# SHA-256 is linked in as -X main.mcpsignPatch=..., which `go version -m`
# shows, so that a binary built before, or with another change, is
# rebuilt. A patch that no longer matches its file (a new upstream version)
# fails the build: review the new file and update the patch.
SERVICE_BUILD_GCFLAGS=-gcflags=all=-N\ -l
SERVICE_BUILD_LDFLAGS="-s -w"
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

# service_overlay PKG DIR: writes PKG's changed files and DIR/overlay.json
# (go build -overlay) and prints the SHA-256 of the changes; prints nothing
# when PKG has none. Fails when a patch changes nothing.
service_overlay() {
	local pkg=$1 dir=$2 mod file script src n=0 json=""
	while read -r mod file script; do
		[[ -n $mod ]] || continue
		src=$(cd "$SERVICES_MODULE" && GOFLAGS=-mod=readonly go mod download -json "$mod" | awk -F'"' '$2 == "Dir" { print $4 }')
		[[ -n $src && -f $src/$file ]] || {
			echo "service-build: $mod/$file not found in the module cache" >&2
			return 1
		}
		mkdir -p "$dir"
		n=$((n + 1))
		sed -e "$script" "$src/$file" >"$dir/$n.go"
		if cmp -s "$src/$file" "$dir/$n.go"; then
			echo "service-build: the loopback patch of $mod/$file ($script) changes nothing: the file is not the one it was written for; review it and update service_patches" >&2
			return 1
		fi
		json+="${json:+,}\"$src/$file\":\"$dir/$n.go\""
	done < <(service_patches "$pkg")
	((n)) || return 0
	printf '{"Replace":{%s}}\n' "$json" >"$dir/overlay.json"
	cat "$dir"/[0-9]*.go | sha256sum | cut -c1-16
}

# service_ldflags PKG DIR: the -ldflags value of PKG's build (DIR as for
# service_overlay).
service_ldflags() {
	local id
	id=$(service_overlay "$1" "$2") || return 1
	echo "$SERVICE_BUILD_LDFLAGS${id:+ -X=main.mcpsignPatch=$id}"
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
	local info ld tmp
	info=$(go version -m "$1" 2>/dev/null) || return 1
	tmp=$(mktemp -d)
	ld=$(service_ldflags "$2" "$tmp") || { rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
	awk -v p="$2" -v ld="-ldflags=\"$ld\"" '
		NR == FNR { want[$1] = $2; next }
		$1 == "path" && $2 == p { path = 1 }
		($1 == "mod" || $1 == "dep") { n++; if (want[$2] != $3) bad = 1 }
		# A replaced module (a "=>" line after its dep line) may have
		# changed where it points to: such a build is never reused.
		$1 == "=>" { bad = 1 }
		$0 ~ /^[ \t]*build[ \t]+-gcflags="all=-N -l"$/ { gc = 1 }
		$1 == "build" && substr($0, index($0, "-ldflags=")) == ld { ldok = 1 }
		END { exit !(path && n && !bad && gc && ldok) }' <(services_buildlist) <(printf '%s\n' "$info")
}

# service_build PKG OUT: build PKG from scripts/services into OUT (written
# whole or not at all: built as OUT.partial, which a build that was
# interrupted leaves for the next one to replace), without optimizations,
# with its loopback patch (service_patches).
service_build() {
	local tmp=$2.partial ovl=$2.overlay ld
	rm -rf "$tmp" "$ovl"
	ld=$(service_ldflags "$1" "$ovl") || return 1
	local overlay=()
	[[ -f $ovl/overlay.json ]] && overlay=("-overlay=$ovl/overlay.json")
	if ! (cd "$SERVICES_MODULE" && GOFLAGS="-buildvcs=false -mod=readonly" go build "$SERVICE_BUILD_GCFLAGS" "-ldflags=$ld" \
		${overlay[@]+"${overlay[@]}"} -o "$tmp" "$1"); then
		rm -rf "$tmp" "$ovl"
		return 1
	fi
	rm -rf "$ovl"
	chmod 755 "$tmp"
	mv -f "$tmp" "$2"
}
