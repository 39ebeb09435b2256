#!/usr/bin/env bash
# Mutation-test the security packages with go-gremlins/gremlins (the
# version this directory's go.mod pins as a tool; it is not a dependency of
# mcpsign's own go.mod) and write the kill rate of each package
# (docs/TESTING.md, "Mutation testing").
#
#   scripts/mutation/mutation.sh                  every security package
#   scripts/mutation/mutation.sh digest pin       only these directories
#   WORKERS=2 COEFFICIENT=5 scripts/mutation/mutation.sh proxy
#   RUN='^TestHTTP' EXCLUDE='^(gate|relay)\.go$' scripts/mutation/mutation.sh proxy
#
# For each directory it runs `gremlins unleash ./DIR` from the module root:
# gremlins measures the coverage of `go test ./DIR/...`, then applies each
# covered mutant in a copy of the module and runs the tests of the mutant's
# own package; a mutant is KILLED when they fail, LIVED when they pass,
# TIMED OUT when they run longer than COEFFICIENT times the coverage run.
# The kill rate is killed / (killed + lived); timed-out, not-covered and
# not-viable mutants are counted apart.
#
# Results go to OUT (default: a new directory under ${TMPDIR:-/tmp}): one
# gremlins JSON report and one log per directory, and results.txt with the
# table it prints at the end and every LIVED mutant (file:line:column and
# mutator), which is what docs/TESTING.md must account for.
#
# Environment:
#   WORKERS      mutants tested at once (default 1: the machine is shared)
#   COEFFICIENT  timeout of one mutant's test run, in coverage runs (default 8:
#                lower, a loaded machine turns slow kills into timeouts)
#   TAGS         build tags passed to gremlins (-tags)
#   SKIP         a `go test -skip` regexp for tests too slow to run once per
#                mutant (passed through GOFLAGS to every go test run)
#   RUN          a `go test -run` regexp: only these tests, for the coverage
#                run and every mutant (passed through GOFLAGS, like SKIP; no
#                spaces). With EXCLUDE it narrows a slow package to the tests
#                of the files that run; they must cover every line of those
#                files the whole suite covers (check it with -coverprofile),
#                or a mutant only another test kills counts as not covered
#                or lived (docs/TESTING.md, "Running it")
#   EXCLUDE      a regexp of file paths whose mutants are not run (gremlins'
#                --exclude-files), to split a slow package into runs:
#                EXCLUDE='capability/' for pin without pin/capability
#   OUT          the results directory
#
# Tests that need the local Sigstore stack or npm's MCP servers skip in the
# copies gremlins tests in (the copies hold no testdata/npm/node_modules
# symlink and no stack is required), so a mutant only they would kill
# lives here: such survivors are listed in docs/TESTING.md with the test
# that kills them.
#
# Needs: go, jq. Not run in CI: a full run takes hours on two cores
# (docs/TESTING.md gives the measured time per mutant).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS=${GOFLAGS:-"-buildvcs=false -trimpath"}
# -count=1: gremlins times each mutant's tests against its coverage run; a
# coverage run answered from the test cache takes no time, and every
# mutant then "times out".
GOFLAGS="$GOFLAGS -count=1"
if [[ -n ${SKIP:-} ]]; then
	GOFLAGS="$GOFLAGS -skip=$SKIP"
fi
if [[ -n ${RUN:-} ]]; then
	if [[ $RUN == *[[:space:]]* ]]; then
		echo "mutation.sh: RUN must hold no spaces (it is passed in GOFLAGS)" >&2
		exit 2
	fi
	GOFLAGS="$GOFLAGS -run=$RUN"
fi

workers=${WORKERS:-1}
coefficient=${COEFFICIENT:-8}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcpsign-mutation.XXXXXX")}
mkdir -p "$out"

pkgs=("$@")
if ((${#pkgs[@]} == 0)); then
	# Small and fast first, so a run cut short still has figures.
	pkgs=(internal/netguard audit digest pin internal/mcpwire policy registry monitor verify proxy)
fi

command -v jq >/dev/null || {
	echo "mutation.sh: jq is needed to read gremlins' reports (apt-get install jq)" >&2
	exit 2
}

version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/go-gremlins/gremlins)
bin="$out/gremlins"
(cd "$here" && go build -o "$bin" github.com/go-gremlins/gremlins/cmd/gremlins)
echo "gremlins $version, $workers worker(s), timeout coefficient $coefficient, results in $out"

results="$out/results.txt"
{
	echo "# mcpsign mutation run $(date -u +%Y-%m-%dT%H:%MZ), gremlins $version, $(nproc) CPUs, workers $workers, coefficient $coefficient"
	echo "# commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)${SKIP:+, skip $SKIP}${RUN:+, run $RUN}${EXCLUDE:+, exclude $EXCLUDE}"
} >"$results"

row() { printf '%-18s %6s %6s %6s %8s %8s %6s %8s %8s\n' "$@"; }
table="$out/table.txt"
row package killed lived timeout notcover noviable kill% seconds s/mutant >"$table"
lived="$out/lived.txt"
: >"$lived"

cd "$root"
for pkg in "${pkgs[@]}"; do
	pkg=${pkg#./}
	pkg=${pkg%/}
	name=${pkg//\//_}
	echo "== $pkg ($(date -u +%H:%M:%S))"
	start=$SECONDS
	status=0
	"$bin" unleash --workers "$workers" --timeout-coefficient "$coefficient" \
		${TAGS:+--tags "$TAGS"} ${EXCLUDE:+--exclude-files "$EXCLUDE"} --output "$out/$name.json" "./$pkg" >"$out/$name.log" 2>&1 || status=$?
	secs=$((SECONDS - start))
	if [[ ! -s $out/$name.json ]]; then
		echo "   gremlins failed (exit $status), see $out/$name.log" >&2
		row "$pkg" - - - - - - "$secs" - >>"$table"
		continue
	fi
	# shellcheck disable=SC2016
	read -r killed lived_n timedout notcov notviable < <(jq -r '
		[.files[].mutations[].status] as $s
		| [($s | map(select(. == "KILLED")) | length),
		   ($s | map(select(. == "LIVED")) | length),
		   ($s | map(select(. == "TIMED OUT")) | length),
		   ($s | map(select(. == "NOT COVERED")) | length),
		   ($s | map(select(. == "NOT VIABLE")) | length)] | @tsv' "$out/$name.json")
	tested=$((killed + lived_n))
	rate=-
	if ((tested > 0)); then
		rate=$(awk -v k="$killed" -v t="$tested" 'BEGIN { printf "%.1f", 100 * k / t }')
	fi
	run=$((killed + lived_n + timedout + notviable))
	per=-
	if ((run > 0)); then
		per=$(awk -v s="$secs" -v n="$run" 'BEGIN { printf "%.1f", s / n }')
	fi
	row "$pkg" "$killed" "$lived_n" "$timedout" "$notcov" "$notviable" "$rate" "$secs" "$per" >>"$table"
	jq -r --arg p "$pkg" '.files[] | .file_name as $f | .mutations[]
		| select(.status == "LIVED" or .status == "TIMED OUT")
		| "\($p)/\($f):\(.line):\(.column) \(.type) \(.status)"' "$out/$name.json" >>"$lived"
	tail -n 1 "$table"
done

{
	cat "$table"
	echo
	echo "# lived and timed-out mutants"
	cat "$lived"
} >>"$results"
echo
cat "$table"
echo
echo "$(wc -l <"$lived") lived or timed-out mutants listed in $results"
