# ui_fixture.sh - what the browser tests of the /ui/ page share, sourced
# after scratch.sh: the browser ($chromium, else the test is skipped), a
# two-tenant fleet split in two parts (ui_fleet), the moment between
# recording them (ui_mark_known_at), and keel serve on $db with a token
# for every tenant and one for tenant-01 only (ui_serve).
chromium=${KEEL_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip_test "no $chromium (scripts/deps --test installs chromium)"
command -v python3 >/dev/null || skip_test "no python3"
db="sqlite:$dir/keel.db"

# ui_fleet EVENTS SEED: $dir/first.ndjson and $dir/second.ndjson, the two
# halves of a generated fleet of two tenants with 10 % late events.
ui_fleet() {
	"$KEEL" generate fleet --events "$1" --tenants 2 --seed "$2" --late 0.1 --output "$dir/in.ndjson"
	head -n "$(($1 / 2))" "$dir/in.ndjson" >"$dir/first.ndjson"
	tail -n "+$(($1 / 2 + 1))" "$dir/in.ndjson" >"$dir/second.ndjson"
}

# ui_mark_known_at: sets known_at to the present moment and returns once
# the clock is past it, so that what is recorded next is strictly after,
# whatever the clock's resolution.
ui_mark_known_at() {
	known_at=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	wait_until 5 test "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" ">" "$known_at"
}

# ui_serve [OPTION...]: keel serve on $db in the background ($pid, $port),
# its log in $dir/log; $dir/all and $dir/other hold a token for every
# tenant and one for tenant-01 (first line the token, as keel token new
# prints it).
ui_serve() {
	"$KEEL" token new --all >"$dir/all" 2>/dev/null
	"$KEEL" token new --tenant tenant-01 >"$dir/other" 2>/dev/null
	{ sed -n 2p "$dir/all"; sed -n 2p "$dir/other"; } >"$dir/tokens"
	"$KEEL" serve --cartridge fleet --listen 127.0.0.1:0 --store "$db" --tokens "$dir/tokens" \
		--threads 2 "$@" 2>"$dir/log" &
	pid=$!
	wait_port "$dir/log"
}
