#!/usr/bin/env bash
# http_openapi.sh - docs/openapi.json describes keel serve as it runs
# (docs/http.md, "The API described"): tests/openapi/check.js, run by node,
# validates it with an OpenAPI 3.1 validator from npm and calls every
# operation, error (405, 413, 414, 415, 431, an unknown path's 404 among
# them) and neighbouring path of a server started here, and holds the query
# parameters src/http reads to the documented ones (the details are in
# check.js); /metrics says the version. The npm packages
# (tests/openapi/package.json, exact versions) are installed once into a
# cache directory ($KEEL_NPM_CACHE, else ~/.cache/keel-tests) and reused.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
src=$(cd "$(dirname "$0")/.." && pwd)
command -v node >/dev/null && command -v npm >/dev/null ||
	skip_test "node and npm are needed (scripts/deps --test: nodejs npm)"

# The validator and ajv, installed once per version of package.json.
cache=${KEEL_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keel-tests}
want=$(sha256sum "$src/tests/openapi/package.json" | cut -c1-16)
modules=$cache/openapi-$want
mkdir -p "$cache"
(
	flock 9
	if [ ! -e "$modules/ok" ]; then
		rm -rf "$modules" && mkdir -p "$modules"
		cp "$src/tests/openapi/package.json" "$modules/"
		npm install --prefix "$modules" --no-audit --no-fund --silent >"$modules/npm.log" 2>&1 ||
			exit 3
		touch "$modules/ok"
	fi
) 9>"$cache/openapi.lock" || skip_test "npm install of tests/openapi/package.json failed: $(tail -n 5 "$modules/npm.log" 2>/dev/null)"

"$KEEL" token new --all >"$dir/all" 2>/dev/null
"$KEEL" token new --tenant tenant-01 >"$dir/other" 2>/dev/null
{ sed -n 2p "$dir/all"; sed -n 2p "$dir/other"; } >"$dir/tokens"
token=$(sed -n 1p "$dir/all")
"$KEEL" generate fleet --events 300 --seed 3 --output "$dir/in.ndjson"
max_body=262144 # 256 KiB: the 300 events fit, a body to provoke 413 is small
"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store memory: --threads 2 --quiet \
	--tokens "$dir/tokens" --max-body $max_body 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port
[ "$(curl -s -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $token" \
	-H 'Content-Type: application/x-ndjson' --data-binary "@$dir/in.ndjson" "$url/v1/events")" = 200 ] ||
	fail "post: $(cat "$dir/out")"

# /metrics names the version the server runs.
version=$("$KEEL" version | sed 's/^keel //')
curl -s -H "Authorization: Bearer $token" "$url/metrics" >"$dir/metrics"
grep -qx "keel_build_info{version=\"$version\"} 1" "$dir/metrics" ||
	fail "no keel_build_info{version=\"$version\"} 1 in /metrics: $(head -n 20 "$dir/metrics")"

NODE_PATH=$modules/node_modules node "$src/tests/openapi/check.js" "$src/docs/openapi.json" "$url" \
	"$token" "$(sed -n 1p "$dir/other")" "$src" $max_body || fail "the document and the server disagree (above)"
kill -TERM "$pid"
wait "$pid" || fail "keel serve: status $? on SIGTERM"
pid=
echo "ok: docs/openapi.json is valid OpenAPI 3.1 and what the server answers"
