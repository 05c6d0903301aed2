#!/usr/bin/env bash
# cli_terminal_fit.sh - the reads on a real terminal (tmux) 80 and 200
# columns wide: show, history, why, stats, tenants, entities and search fit
# the width (no row wraps; a long cell, a 64-byte tenant name in stats
# among them, is cut with "…" and is a prefix of what the JSON document
# says; every element is still one row; why's labelled lines likewise);
# -j prints on the terminal the JSON that --json prints; and text longer
# than the screen goes through the pager: $KEEL_PAGER, else $PAGER, else
# less -FRX (the less found on $PATH, given -FRX), for each read, never
# with --no-pager, never for a short answer, never into a pipe (docs/cli.md,
# "On a terminal").
. "$(dirname "$0")/cli/lib.sh"
. "$(dirname "$0")/cli/tmux.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
check=$(dirname "$0")/cli/table_check.py

db=sqlite:$dir/fleet.db
expect 0 "$KEEL" generate fleet --events 2000 --output "$dir/fleet.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/fleet.ndjson" --store "$db" --quiet
T=tenant-00
V=vehicle:V-0001
AT=2026-01-05T07:03:30Z
# A second tenant whose name is as long as a name may be (64 bytes): at
# 80 columns stats must cut it.
long=a-tenant-name-as-long-as-keel-takes-sixty-four-bytes-0123456789x
expect 0 "$KEEL" generate fleet --events 40 --seed 7 --output "$dir/small.ndjson"
sed "s/tenant-00/$long/g" "$dir/small.ndjson" >"$dir/long.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/long.ndjson" --store "$db" --quiet
unset PAGER KEEL_PAGER LESS

# The reads, each as NAME, the table it is checked by, and its command.
# Piped, each prints its JSON document; on a terminal, all run one after
# the other in one window (a marker line before each), every line kept.
reads=(
	"show|facts:|facts|PREDICATE=predicate VALUE=value VALID_FROM=valid_from VALID_TO=valid_to ASSERTED_BY=asserted_by|show $T $V --at $AT"
	"history|facts:|facts|PREDICATE=predicate VALUE=value VALID_FROM=valid_from VALID_TO=valid_to ASSERTED_BY=asserted_by CLOSED_BY=closed_by|history $T $V"
	"changes|fact changes:|facts|PREDICATE=predicate RECORDED_AT=recorded_at VALUE=value VALID_FROM=valid_from|history $T $V status --changes"
	"entities|entities:|entities|SUBJECT=subject KIND=kind FIRST_SEEN=first_seen LAST_SEEN=last_seen|entities $T --limit 30 --at $AT"
	"search|subjects:|subjects|SUBJECT=subject VALID_FROM=valid_from ASSERTED_BY=asserted_by|search $T make Iveco --at $AT"
	"tenants|tenants:|tenants||tenants"
	"why|--labels|tenant=tenant|subject=subject predicate=predicate at=at value=value valid_from=valid_from valid_to=valid_to asserted_by=asserted_by closed_by=closed_by event=event type=event.event_type time=event.time envelope=event.envelope|why $T $V location --at $AT"
	"stats|-|tenants|TENANT=tenant ENTITIES=entities FACTS=facts RELATIONS=relations EVENTS=events|stats"
)
: >"$dir/reads.sh"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ args <<<"$r"
	# shellcheck disable=SC2086
	"$KEEL" $args --json --store "$db" >"$dir/$name.json" 2>"$dir/err" || fail "$name piped: $(cat "$dir/err")"
	printf 'echo @@%s; %q %s --store %q --no-pager || echo "@@failed $?"\n' \
		"$name" "$KEEL" "$args" "$db" >>"$dir/reads.sh"
done

for cols in 80 200; do
	tty_run $cols 50 sh "$dir/reads.sh"
	[ "$status" = 0 ] || fail "the reads at $cols columns exited $status"
	grep '^@@failed' "$dir/lines" && fail "a read failed on the terminal: $(cat "$dir/lines")"
	# No row wrapped: the screen's rows are the lines the reads printed.
	cmp -s "$dir/screen" "$dir/lines" ||
		fail "a line wrapped at $cols columns:
$(diff "$dir/lines" "$dir/screen" | head -20)"
	awk -v d="$dir" -v c=$cols '/^@@/ { f = d "/" substr($0, 3) "." c; next } f { print > f }' \
		"$dir/lines"
	for r in "${reads[@]}"; do
		IFS='|' read -r name table list wants _ <<<"$r"
		[ -n "$table" ] || continue
		# shellcheck disable=SC2086
		python3 "$check" "$dir/$name.$cols" "$dir/$name.json" "$table" "$list" \
			$wants --width $cols >"$dir/check" ||
			fail "$name at $cols columns: $(cat "$dir/check")
$(cat "$dir/$name.$cols")"
	done
done

# stats at 80 columns cuts the long tenant's name; 200 columns hold it.
grep -q "^a-tenant-name-as-long.*… " "$dir/stats.80" ||
	fail "stats at 80 columns did not cut the long tenant: $(cat "$dir/stats.80")"
grep -q "^$long  " "$dir/stats.200" ||
	fail "stats at 200 columns cut the long tenant: $(cat "$dir/stats.200")"

# -j is --json: on a terminal, where it matters, each read with -j prints
# the one line of JSON it prints with --json (a 200-column window; the
# rows a long document wrapped into are joined back).
: >"$dir/json.sh"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ args <<<"$r"
	printf 'echo @@%s; %q %s -j --store %q || echo "@@failed $?"\n' \
		"$name" "$KEEL" "$args" "$db" >>"$dir/json.sh"
done
tty_run 200 50 sh "$dir/json.sh"
[ "$status" = 0 ] || fail "the reads with -j exited $status"
grep '^@@failed' "$dir/lines" && fail "a read with -j failed: $(cat "$dir/lines")"
awk -v d="$dir" '/^@@/ { f = d "/" substr($0, 3) ".j"; next } f { print > f }' "$dir/lines"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ _ <<<"$r"
	cmp -s "$dir/$name.j" "$dir/$name.json" ||
		fail "keel $name -j on a terminal is not what --json prints:
$(head -c 300 "$dir/$name.j")
--- --json:
$(head -c 300 "$dir/$name.json")"
done

# 200 columns hold show whole; 80 cut its long cells, and say so.
grep -q '…' "$dir/show.200" && fail "show at 200 columns cut something: $(cat "$dir/show.200")"
grep -q '…' "$dir/show.80" || fail "show at 80 columns cut nothing: $(cat "$dir/show.80")"
grep -q '^  location .*{"lat":51\.35' "$dir/show.80" ||
	fail "show at 80 columns lost the start of the location: $(cat "$dir/show.80")"
# why: its envelope line is cut to the width, its other lines whole.
grep -q '^envelope:     {"specversion":"1.0",.*…$' "$dir/why.80" ||
	fail "why at 80 columns: the envelope is not cut with …: $(cat "$dir/why.80")"
grep -qF 'asserted by:  ev-000001863 (from /fleet/tenant-00/telematics)' "$dir/why.80" ||
	fail "why at 80 columns: $(cat "$dir/why.80")"
grep -q '…' "$dir/why.200" || fail "why at 200 columns: the envelope should still be cut"

# The pager. A long answer (history: every row of V-0001) on a 24-row
# terminal goes through less -FRX when neither variable is set: the first
# screen, less's prompt, and keel waits until q.
tty_start 80 24 "$KEEL" history $T $V --store "$db"
wait_until 10 tty_prompt || fail "no pager's prompt on the last row: $(tmux_t capture-pane -p -t t)"
tty_shows 'tenant:       tenant-00' || fail "less did not show the top: $(tmux_t capture-pane -p -t t)"
tty_dead && fail "keel ended while its pager should still be showing the text"
tty_keys q
tty_wait_exit
[ "$status" = 0 ] || fail "keel history through less exited $status"

# Every read goes through the pager when longer than the screen (a window
# of 4 rows: stats's 4 lines fill it), and the default pager is "less -FRX":
# a less of our own first on $PATH records the arguments it was given,
# $LESS, and the text, which is what --no-pager prints at that width.
mkdir "$dir/bin"
cat >"$dir/bin/less" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$dir/less.\$KEEL_TEST_READ.argv"
printf '%s\n' "\$LESS" >"$dir/less.\$KEEL_TEST_READ.env"
cat >"$dir/less.\$KEEL_TEST_READ.text"
EOF
chmod +x "$dir/bin/less"
: >"$dir/paged.sh"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ args <<<"$r"
	printf 'KEEL_TEST_READ=%s %q %s --store %q || echo "@@failed $?"\n' \
		"$name" "$KEEL" "$args" "$db" >>"$dir/paged.sh"
done
PATH=$dir/bin:$PATH tty_run 80 4 sh "$dir/paged.sh"
[ "$status" = 0 ] || fail "the paged reads exited $status"
grep '^@@failed' "$dir/lines" && fail "a paged read failed: $(cat "$dir/lines")"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ _ <<<"$r"
	[ -e "$dir/less.$name.argv" ] || { fail "keel $name did not start less"; continue; }
	[ "$(cat "$dir/less.$name.argv")" = -FRX ] ||
		fail "keel $name ran less with: $(cat "$dir/less.$name.argv")"
	[ "$(cat "$dir/less.$name.env")" = FRX ] ||
		fail "keel $name: LESS=$(cat "$dir/less.$name.env"), not FRX"
	sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$dir/less.$name.text" >"$dir/less.$name.trimmed"
	cmp -s "$dir/less.$name.trimmed" "$dir/$name.80" ||
		fail "keel $name gave less other text than --no-pager prints at 80 columns:
$(diff "$dir/less.$name.trimmed" "$dir/$name.80" | head)"
done

# $KEEL_PAGER first, then $PAGER (each a shell command).
export KEEL_PAGER="cat >'$dir/by-keel-pager'" PAGER="cat >'$dir/by-pager'"
tty_run 80 24 "$KEEL" history $T $V --store "$db"
[ "$status" = 0 ] || fail "history through KEEL_PAGER exited $status"
[ -s "$dir/by-keel-pager" ] && [ ! -e "$dir/by-pager" ] ||
	fail "KEEL_PAGER was not the pager: $(ls "$dir")"
tty_run 80 24 "$KEEL" history $T $V --store "$db" --no-pager
cp "$dir/lines" "$dir/unpaged"
diff -q "$dir/by-keel-pager" "$dir/unpaged" >/dev/null ||
	fail "the pager was given other text than --no-pager prints:
$(diff "$dir/by-keel-pager" "$dir/unpaged" | head)"
unset KEEL_PAGER
tty_run 80 24 "$KEEL" history $T $V --store "$db"
[ -s "$dir/by-pager" ] || fail "PAGER was not the pager when KEEL_PAGER is unset"

# Never: --no-pager (to the command, or before it as git takes it), a
# short answer, a pipe; and "cat" or "" mean no pager.
rm -f "$dir/by-pager"
for args in "history $T $V --no-pager" "--no-pager history $T $V" "show $T $V"; do
	# shellcheck disable=SC2086
	tty_run 80 24 "$KEEL" $args --store "$db"
	[ -e "$dir/by-pager" ] && fail "keel $args went through the pager"
	grep -q '^tenant: *tenant-00' "$dir/lines" || fail "keel $args printed: $(head "$dir/lines")"
done
tty_run 80 24 sh -c "'$KEEL' history $T $V --store '$db' | cat"
[ -e "$dir/by-pager" ] && fail "history into a pipe went through the pager"
grep -q '^{"tenant":"tenant-00"' "$dir/lines" || fail "history into a pipe: $(head -c 300 "$dir/lines")"
for p in cat ""; do
	PAGER=$p tty_run 80 24 "$KEEL" history $T $V --store "$db"
	[ "$status" = 0 ] && grep -q '^tenant: *tenant-00' "$dir/lines" ||
		fail "PAGER=\"$p\": $(head "$dir/lines")"
done

finish
