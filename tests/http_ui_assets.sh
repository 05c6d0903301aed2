#!/usr/bin/env bash
# The page at /ui/ as keel serve serves it, through curl (docs/ui.md): its
# headers (the Content-Security-Policy, nosniff, no-referrer) on every /ui
# answer, the one index.html at every view's address, the assets and
# nothing else under /ui/assets/, the methods, no token needed for the
# page while /v1 still needs one, the page's own rules (no inline script,
# style or handler; nothing from elsewhere; under 100 KiB), the bytes
# served being the files in ui/ (compiled in), with the binary alone in a
# directory of its own, and the request log and metrics counting /ui.
set -euo pipefail
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/scratch.sh"
ui=${KEEL_SOURCE_DIR:?the source tree}/ui
csp="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

# The binary alone in an empty directory, started from another: the page
# can only come from inside it.
mkdir "$dir/bin" "$dir/cwd"
cp "$KEEL" "$dir/bin/keel"
"$KEEL" token new --all >"$dir/all" 2>/dev/null
sed -n 2p "$dir/all" >"$dir/tokens"
tok=$(sed -n 1p "$dir/all")
(cd "$dir/cwd" && exec "$dir/bin/keel" serve --cartridge fleet --listen 127.0.0.1:0 --store memory: \
	--tokens "$dir/tokens" --threads 2) 2>"$dir/log" &
pid=$!
wait_port "$dir/log"
url=http://127.0.0.1:$port

# get PATH [curl args]: the body into $dir/body, the headers into
# $dir/head (names lowercased), the status printed.
get() {
	local path=$1
	shift
	curl -s -D "$dir/head.raw" -o "$dir/body" -w '%{http_code}' "$@" "$url$path"
	tr -d '\r' <"$dir/head.raw" | sed 's/^\([^:]*\):/\L\1:/' >"$dir/head"
}
header() { # NAME: its value in $dir/head
	sed -n "s/^$1: //p" "$dir/head"
}
ui_headers() { # WHAT: the headers every /ui answer carries
	[ "$(header content-security-policy)" = "$csp" ] ||
		fail "$1: Content-Security-Policy: '$(header content-security-policy)'"
	[ "$(header x-content-type-options)" = nosniff ] || fail "$1: no X-Content-Type-Options: nosniff"
	[ "$(header referrer-policy)" = no-referrer ] || fail "$1: no Referrer-Policy: no-referrer"
}

# The page and its assets, without a token, each the file in the tree.
total=0
for path in /ui/ /ui/assets/keel.js /ui/assets/keel.css /ui/assets/keel.svg; do
	[ "$(get "$path")" = 200 ] || fail "GET $path: $(cat "$dir/body")"
	ui_headers "GET $path"
	case $path in
	/ui/) file=$ui/index.html type="text/html; charset=utf-8" ;;
	*.js) file=$ui/keel.js type="text/javascript; charset=utf-8" ;;
	*.css) file=$ui/keel.css type="text/css; charset=utf-8" ;;
	*.svg) file=$ui/keel.svg type="image/svg+xml" ;;
	esac
	[ "$(header content-type)" = "$type" ] || fail "$path: Content-Type '$(header content-type)'"
	cmp -s "$dir/body" "$file" || fail "$path: the bytes served are not $file"
	cp "$dir/body" "$dir/served.$(basename "$file")"
	total=$((total + $(wc -c <"$dir/body")))
done
[ "$total" -lt 102400 ] || fail "the page and its assets: $total bytes, not under 100 KiB"

# Every view's address is the same page; the page routes itself.
for path in /ui/tenants/tenant-00 "/ui/tenants/x/entities/vehicle%3AV-1?at=2026-01-01T00%3A00%3A00Z" \
	/ui/tenants/x/entities/a%2Fb /ui/anything/else /ui/assets; do
	[ "$(get "$path")" = 200 ] || fail "GET $path"
	ui_headers "GET $path"
	cmp -s "$dir/body" "$ui/index.html" || fail "$path: not index.html"
done
[ "$(get /ui)" = 301 ] || fail "GET /ui: not 301"
[ "$(header location)" = /ui/ ] || fail "/ui: Location '$(header location)'"
ui_headers "GET /ui"

# HEAD as GET (libmicrohttpd leaves the body out); nothing else but 405.
[ "$(get /ui/assets/keel.js -I)" = 200 ] || fail "HEAD /ui/assets/keel.js"
ui_headers "HEAD /ui/assets/keel.js"
[ "$(header content-length)" = "$(wc -c <"$ui/keel.js")" ] || fail "HEAD: Content-Length $(header content-length)"
for m in POST PUT DELETE; do
	for path in /ui/ /ui/assets/keel.css /ui/tenants/x; do
		[ "$(get "$path" -X "$m")" = 405 ] || fail "$m $path: not 405"
		[ "$(header allow)" = "GET, HEAD" ] || fail "$m $path: Allow '$(header allow)'"
		ui_headers "$m $path"
	done
done

# Only the three assets exist.
for path in /ui/assets/ /ui/assets/index.html /ui/assets/keel.js.map /ui/assets/x/keel.js; do
	[ "$(get "$path")" = 404 ] || fail "GET $path: not 404"
	ui_headers "GET $path"
	grep -q '"error":' "$dir/body" || fail "$path: $(cat "$dir/body")"
done

# The page needs no token; the data still does.
[ "$(get /v1/tenants)" = 401 ] || fail "GET /v1/tenants without a token: not 401"
[ "$(get /v1/tenants -H "Authorization: Bearer $tok")" = 200 ] || fail "GET /v1/tenants with the token"
[ "$(get /uix)" = 401 ] || fail "/uix is not the page: it needs a token like any other path"

# The page's own rules: scripts and styles from files only (the CSP would
# refuse anything inline), nothing from another origin.
html=$dir/served.index.html
inline=$(grep -Ei '<script' "$html" | grep -Ev '^<script src="/ui/assets/[a-z]+\.js" defer></script>$' || true)
[ -z "$inline" ] || fail "index.html: a script that is not a /ui/assets/ file: $inline"
grep -Eqi '<style|[[:space:]]style=' "$html" && fail "index.html: inline style: $(grep -Ei '<style|[[:space:]]style=' "$html")"
grep -Eqi '[[:space:]]on[a-z]+=' "$html" && fail "index.html: an inline event handler: $(grep -Ei '[[:space:]]on[a-z]+=' "$html")"
refs=$(grep -Eo '(src|href)="[^"]*"' "$html" | sed 's/^[a-z]*="\(.*\)"$/\1/' | sort -u)
for ref in $refs; do
	case $ref in
	/ui/assets/keel.js | /ui/assets/keel.css | /ui/assets/keel.svg | /ui/) ;;
	*) fail "index.html refers to $ref" ;;
	esac
done
grep -q '/ui/assets/keel.js' <<<"$refs" && grep -q '/ui/assets/keel.css' <<<"$refs" ||
	fail "index.html does not load both assets: $refs"
# The icon is named, so a browser does not ask for /favicon.ico (which a
# token file guards like any path but /healthz and /ui/).
grep -q '<link rel="icon" href="/ui/assets/keel.svg"' "$html" || fail "index.html names no icon"
rm "$dir/served.keel.svg" # an SVG names its XML namespace by an http: URI
for f in "$dir"/served.*; do
	grep -Eqi 'https?:|["'"'"'(]//[a-z]|url\(|@import|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(' "$f" &&
		fail "$(basename "$f"): reaches elsewhere or writes markup: $(grep -Eoi 'https?:[^ ]*|["'"'"'(]//[a-z]+|url\(|@import|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(' "$f" | head -n 3)"
done
grep -q "sessionStorage" "$dir/served.keel.js" || fail "keel.js does not keep the token in sessionStorage"
grep -Eq "localStorage\.setItem|document\.cookie *=" "$dir/served.keel.js" &&
	fail "keel.js stores something in localStorage or a cookie"

# The request log and the metrics see the page like any other request.
grep -q '"method":"GET","path":"/ui/assets/keel.css","status":200' "$dir/log" ||
	fail "no request log line for /ui/assets/keel.css: $(tail -n 3 "$dir/log")"
[ "$(get /metrics -H "Authorization: Bearer $tok")" = 200 ] || fail "GET /metrics"
grep -q '^keel_http_responses_total{code="301"} 1$' "$dir/body" ||
	fail "301 not counted: $(grep responses_total "$dir/body")"
grep -q '^keel_http_responses_total{code="405"} 9$' "$dir/body" ||
	fail "405s not counted: $(grep responses_total "$dir/body")"
# It stops cleanly (under ASan: nothing the /ui answers allocated leaks).
kill -TERM "$pid"
wait "$pid" || fail "keel serve exited with $? after SIGTERM: $(tail -n 5 "$dir/log")"
pid=
echo ok
