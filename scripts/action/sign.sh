#!/usr/bin/env bash
# The steps of the mcpsign GitHub Action (action.yml), one subcommand each:
#
#   sign.sh preflight   fail early without an ID token; say whether Go is installed
#   sign.sh install     go install ./cmd/... from the action's own source
#   sign.sh sign        snapshot, digest, sign keyless; outputs and step summary
#   sign.sh summary WORK BUNDLE IDENTITY ISSUER STMT KIND
#                       the step summary of a signed run (sign calls it; the
#                       tests call it directly, with hostile values)
#
# Inputs arrive in INPUT_* environment variables (set by action.yml's env:,
# never interpolated into this text). The ID token is fetched by mcpsign
# itself from ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN; this script never reads,
# prints or stores it. See docs/PUBLISHING.md.
set -euo pipefail

die() {
	# One line, as a workflow error annotation.
	printf '::error title=mcpsign::%s\n' "$*" >&2
	exit 1
}

# out NAME VALUE: append a step output, with a random heredoc delimiter so
# that no value can end it early and inject another output.
out() {
	local delim
	delim="mcpsign_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	[[ $2 != *"$delim"* ]] || die "internal: output delimiter collision"
	printf '%s<<%s\n%s\n%s\n' "$1" "$delim" "$2" "$delim" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a step of a GitHub Actions job}"
}

preflight() {
	if [[ -z ${ACTIONS_ID_TOKEN_REQUEST_URL:-} || -z ${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-} ]]; then
		die "no OIDC identity token in this job: add 'permissions: id-token: write' to the job (or the workflow) that uses the mcpsign action"
	fi
	command -v jq >/dev/null 2>&1 || die "jq is not installed on this runner (GitHub-hosted runners have it)"
	[[ -n ${INPUT_SERVER:-} ]] || die "input 'server' is empty: give a server command line, a Streamable HTTP URL or a snapshot file"
	# A value starting with '-' would be read as a flag of mcpsign.
	[[ $INPUT_SERVER != -* ]] || die "input 'server' starts with '-': give a command line, a URL or a file (./-name for a file)"
	case ${INPUT_EMBED_DEFINITIONS:-true} in
	true | false) ;;
	*) die "input 'embed-definitions' must be true or false" ;;
	esac
	if command -v go >/dev/null 2>&1; then
		out go-present true
	else
		out go-present false
	fi
}

install() {
	local bin=${RUNNER_TEMP:?RUNNER_TEMP is not set}/mcpsign-action/bin
	mkdir -p "$bin"
	(cd "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}" && GOBIN=$bin GOFLAGS=-mod=readonly go install -trimpath ./cmd/...) ||
		die "go install ./cmd/... failed in the action's source"
	[[ -x $bin/mcpsign ]] || die "go install did not produce mcpsign"
	out mcpsign "$bin/mcpsign"
}

# The jq filters that make a server- or certificate-provided string safe
# as one string: md for a Markdown code span or fenced block (control,
# format (bidi, invisible) and line separator characters, newlines
# included, and backticks become '?', so that nothing ends the span or the
# block, and Markdown, links and HTML inside stay text); cell for a code
# span in a table cell (md, and '|' written '\|', which GFM reads as a '|'
# of the cell, not as its end).
JQ_MD='def md: gsub("[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}`]"; "?"); def cell: md | gsub("\\|"; "\\|");'

# md, cell: the filters above, on one whole argument (read as one string:
# jq -R alone would split it at its newlines).
md() { printf '%s' "$1" | jq -Rsr "$JQ_MD md"; }
cell() { printf '%s' "$1" | jq -Rsr "$JQ_MD cell"; }

# sha256: sha256sum on Linux runners, shasum on macOS ones.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi
}

# shq: one shell word for the command lines shown to hosts.
shq() { printf '%s' "$1" | jq -Rsr '@sh'; }

sign() {
	local mcpsign=${MCPSIGN:?MCPSIGN is not set (the install step did not run)}
	local server=${INPUT_SERVER:?} output=${INPUT_OUTPUT:-mcp-definitions.sigstore.json}
	local work
	work=$(mktemp -d "${RUNNER_TEMP:?RUNNER_TEMP is not set}/mcpsign-action.XXXXXX")

	# What is signed is a snapshot: the same bytes are digested, signed and
	# can be attached to the release.
	local snap kind
	if [[ -f $server ]]; then
		snap=$server kind=snapshot
	else
		snap=$work/server.snapshot.json
		case $server in
		https://* | http://*) kind=url ;;
		*) kind=command ;;
		esac
		"$mcpsign" snapshot -q "--output=$snap" "$server" || die "mcpsign snapshot failed (see above)"
	fi
	"$mcpsign" digest --format json "$snap" >"$work/digest.json" || die "mcpsign digest failed: a definition cannot be digested (see above)"

	local args=(sign sigstore "$snap" "--bundle=$output" --format json -q)
	# --flag=VALUE: a value starting with '-' stays a value.
	[[ -z ${INPUT_PACKAGE:-} ]] || args+=("--package=$INPUT_PACKAGE")
	[[ -z ${INPUT_SIGNING_CONFIG:-} ]] || args+=("--signing-config=$INPUT_SIGNING_CONFIG")
	[[ -z ${INPUT_TRUSTED_ROOT:-} ]] || args+=("--trusted-root=$INPUT_TRUSTED_ROOT")
	[[ ${INPUT_EMBED_DEFINITIONS:-true} == true ]] || args+=(--no-embed-definitions)
	"$mcpsign" "${args[@]}" >"$work/sign.json" || die "mcpsign sign failed (see above)"

	local bundle identity issuer stmt
	bundle=$(cd "$(dirname -- "$output")" && pwd)/$(basename -- "$output")
	identity=$(jq -r '.identity.san // empty' "$work/sign.json")
	issuer=$(jq -r '.identity.issuer // empty' "$work/sign.json")
	[[ -n $identity && -n $issuer ]] || die "mcpsign sign reported no signer identity"
	stmt=sha256:$(jq -r '.dsseEnvelope.payload' "$bundle" | base64 -d | sha256 | cut -d' ' -f1)

	out bundle-path "$bundle"
	out statement-digest "$stmt"
	out certificate-identity "$identity"
	out certificate-oidc-issuer "$issuer"
	local bdigest
	bdigest=sha256:$(sha256 <"$bundle" | cut -d' ' -f1)
	out bundle-digest "$bdigest"
	if [[ -n ${INPUT_REGISTRY_HINT:-} ]]; then
		[[ -n ${INPUT_REGISTRY_BUNDLE_URL:-} ]] || die "input 'registry-hint' needs 'registry-bundle-url': the https URL hosts will download the bundle from"
		"$mcpsign" registry hint "--bundle-url=$INPUT_REGISTRY_BUNDLE_URL" "--bundle-digest=$bdigest" -- "$INPUT_REGISTRY_HINT" ||
			die "mcpsign registry hint failed (see above)"
	fi

	[[ -n ${GITHUB_STEP_SUMMARY:-} ]] || return 0
	summary "$work" "$bundle" "$identity" "$issuer" "$stmt" "$kind" >>"$GITHUB_STEP_SUMMARY"
}

summary() {
	local work=$1 bundle=$2 identity=$3 issuer=$4 stmt=$5 kind=$6
	local d=$work/digest.json s=$work/sign.json name
	name=$(jq -r '"\(.server.name) \(.server.version)"' "$s")
	printf '### mcpsign: signed `%s`\n\n' "$(md "$name")"
	printf '| | |\n|---|---|\n'
	printf '| bundle | `%s` |\n' "$(cell "$(basename -- "$bundle")")"
	printf '| statement | `%s` |\n' "$stmt"
	printf '| subjects | %s |\n' "$(jq -r '.subjects' "$s")"
	local k
	for k in tools prompts resourceTemplates; do
		printf '| %s | %s, set `%s` |\n' "$k" "$(jq -r ".counts.$k" "$d")" "$(jq -r ".sets.$k // \"none\"" "$d")"
	done
	printf '| instructions | `%s` |\n' "$(jq -r '.instructions // "none"' "$d")"
	printf '| identity | `%s` |\n' "$(cell "$identity")"
	printf '| issuer | `%s` |\n' "$(cell "$issuer")"
	# The statement's source and package claims, and what the certificate
	# vouches for (sign failed already if the two disagree).
	local f v
	jq -r '.dsseEnvelope.payload' "$bundle" | base64 -d >"$work/statement.json"
	for f in repository commit ref; do
		v=$(jq -r ".identity.source.$f // empty" "$s")
		if [[ -n $v ]]; then
			printf '| source %s | `%s` (certificate) |\n' "$f" "$(cell "$v")"
			continue
		fi
		v=$(jq -r ".predicate.source.$f // empty" "$work/statement.json")
		[[ -z $v ]] || printf '| source %s | `%s` (statement only: the certificate has no such extension) |\n' "$f" "$(cell "$v")"
	done
	# Escaped in jq, one line per purl: a purl holding a newline is one row.
	jq -r "$JQ_MD"' .predicate.package[]?.purl | cell' "$work/statement.json" | while IFS= read -r v; do
		printf '| package | `%s` |\n' "$v"
	done

	local flags src
	flags="--bundle $(shq "$(basename -- "$bundle")") --certificate-identity $(shq "$identity") --certificate-oidc-issuer $(shq "$issuer")"
	[[ -z ${INPUT_TRUSTED_ROOT:-} ]] || flags+=" --trusted-root $(shq "$(basename -- "$INPUT_TRUSTED_ROOT")")"
	local pkgflag=
	[[ -z ${INPUT_PACKAGE:-} ]] || pkgflag=" --package-file $(shq "$(basename -- "$INPUT_PACKAGE")")"
	case $kind in
	snapshot) src=SERVER ;;
	*) src=$(shq "$INPUT_SERVER") ;;
	esac
	printf '\nA host verifies these definitions with:\n\n```sh\n'
	md "mcpsign verify sigstore $src $flags$pkgflag"
	if [[ $kind == command ]]; then
		printf '\n# and runs the server pinned (signed first use, then enforced):\n'
		md "mcpsign proxy --lock server.mcpsign.lock $flags -- $INPUT_SERVER"
	elif [[ $kind == snapshot ]]; then
		printf '\n# SERVER: the command line or URL the host runs; pinned through the proxy:\n'
		md "mcpsign proxy --lock server.mcpsign.lock $flags -- SERVER-COMMAND"
	fi
	printf '```\n'
}

case ${1:-} in
preflight | install | sign) "$1" ;;
summary)
	shift
	summary "$@"
	;;
*)
	echo "usage: sign.sh preflight|install|sign (the steps of action.yml)" >&2
	exit 2
	;;
esac
