#!/usr/bin/env bash
# cli_terminal_fit.sh - the reads on a real terminal (tmux) 80 and 200
# columns wide: show, history, why, stats, tenants, entities and search fit
# the width (no row wraps; a long cell is cut with "…" and is a prefix of
# what the JSON document says; every element is still one row), and text
# longer than the screen goes through the pager: $KEEL_PAGER, else $PAGER,
# else less -FRX, never with --no-pager, never for a short answer, never
# into a pipe (docs/cli.md, "On a terminal").
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
unset PAGER KEEL_PAGER LESS

# The reads, each as NAME, the table it is checked by, and its command.
# Piped, each prints its JSON document; on a terminal, all run one after
# the other in one window (a marker line before each), every line kept.
reads=(
	"show|facts:|facts|PREDICATE=predicate VALUE=value VALID_FROM=valid_from VALID_TO=valid_to ASSERTED_BY=asserted_by|show $T $V --at $AT"
	"history|facts:|facts|PREDICATE=predicate VALUE=value VALID_FROM=valid_from VALID_TO=valid_to ASSERTED_BY=asserted_by CLOSED_BY=closed_by|history $T $V"
	"changes|fact changes:|facts|PREDICATE=predicate RECORDED_AT=recorded_at VALUE=value VALID_FROM=valid_from|history $T $V status --changes"
	"entities|entities:|entities|SUBJECT=subject KIND=kind FIRST_SEEN=first_seen LAST_SEEN=last_seen|entities $T --limit 30"
	"search|subjects:|subjects|SUBJECT=subject VALID_FROM=valid_from ASSERTED_BY=asserted_by|search $T make Iveco --at $AT"
	"tenants|tenants:|tenants||tenants"
	"why||||why $T $V location --at $AT"
	"stats||||stats"
)
: >"$dir/reads.sh"
for r in "${reads[@]}"; do
	IFS='|' read -r name _ _ _ args <<<"$r"
	# shellcheck disable=SC2086
	"$KEEL" $args --store "$db" >"$dir/$name.json" 2>"$dir/err" || fail "$name piped: $(cat "$dir/err")"
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
