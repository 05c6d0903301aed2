#!/usr/bin/env bash
# cli_terminal.sh - show, history, why and stats print aligned text on a
# terminal and their JSON documents when piped or with --json
# (docs/cli.md, "On a terminal"). The terminal is a pseudo-terminal made
# by script(1) (util-linux, in Debian's essential bsdutils).
. "$(dirname "$0")/cli/lib.sh"

command -v script >/dev/null || fail "script(1) not found (bsdutils)"

# on_tty CMD...: runs CMD with stdout and stderr on a pseudo-terminal; what
# it printed goes to $dir/out (the terminal's CRs dropped), its exit status
# to $status.
on_tty() {
	local cmd
	printf -v cmd '%q ' "$@"
	# A terminal 200 columns wide (script's has no size of its own; keel
	# then takes $COLUMNS): the tables here are shown whole.
	COLUMNS=200 script -qec "$cmd" /dev/null </dev/null >"$dir/tty" 2>"$dir/err"
	status=$?
	tr -d '\r' <"$dir/tty" >"$dir/out"
}

# same_text TEXT: $dir/out is exactly TEXT.
same_text() {
	[ "$(cat "$dir/out")" = "$1" ] || fail "the terminal showed:
$(cat "$dir/out")
--- expected:
$1"
}

db=sqlite:$dir/a.db
expect 0 "$KEEL" ingest --cartridge fleet "$data/story.ndjson" --store "$db" --quiet
T=2026-01-05T

on_tty "$KEEL" show acme vehicle:V-1 --at ${T}08:30:00Z --store "$db"
[ "$status" -eq 0 ] || fail "show on a terminal exited $status"
same_text "tenant:       acme
subject:      vehicle:V-1
kind:         vehicle
at:           ${T}08:30:00Z
first seen:   ${T}06:10:00Z
last seen:    ${T}10:00:00Z

facts:
  PREDICATE      VALUE         VALID FROM                   VALID TO              ASSERTED BY
  make           \"DAF\"         ${T}06:10:00Z         -                     e2
  model          \"LF\"          ${T}06:10:00Z         -                     e2
  status         \"in_service\"  ${T}08:00:00.250000Z  ${T}10:00:00Z  e5
  status_reason  \"trip\"        ${T}08:00:00.250000Z  -                     e5
  year           2019          ${T}06:10:00Z         -                     e2

outgoing:
  RELATION  OBJECT     VALID FROM            VALID TO              ASSERTED BY
  based_at  depot:D-1  ${T}06:10:00Z  ${T}10:00:00Z  e2

incoming:
  SUBJECT      RELATION  VALID FROM            VALID TO              ASSERTED BY
  driver:DR-1  drives    ${T}07:00:00Z  ${T}09:00:00Z  e4"

# Piped (here: into a file), the same command prints the JSON document,
# and --json prints it on a terminal too, byte for byte.
expect 0 "$KEEL" show acme vehicle:V-1 --at ${T}08:30:00Z --store "$db"
cp "$dir/out" "$dir/show.json"
contains out '{"tenant":"acme","subject":"vehicle:V-1","at":"'$T'08:30:00Z","kind":"vehicle",'
[ "$(wc -l <"$dir/show.json")" -eq 1 ] || fail "piped show is not one line"
on_tty "$KEEL" show acme vehicle:V-1 --at ${T}08:30:00Z --json --store "$db"
cmp -s "$dir/out" "$dir/show.json" || fail "show --json on a terminal differs from piped show"
"$KEEL" show acme vehicle:V-1 --at ${T}08:30:00Z --store "$db" | cat >"$dir/piped"
cmp -s "$dir/piped" "$dir/show.json" || fail "show into a pipe is not the JSON document"

# Nothing at all: the lists say so.
on_tty "$KEEL" show acme vehicle:V-1 --store "$db"
contains out 'outgoing: none'
contains out 'incoming: none'
contains out '  retired_reason  "old"   '$T'10:00:00Z         -         e7'

# history: every row of the document is a row of a table (closed and
# emptied rows too), nulls as "-" and values as JSON text.
expect 0 "$KEEL" history acme vehicle:V-1 --store "$db"
rows=$(grep -o '"valid_from"' "$dir/out" | wc -l)
on_tty "$KEEL" history acme vehicle:V-1 --store "$db"
[ "$status" -eq 0 ] || fail "history on a terminal exited $status"
[ "$(grep -cE '^  [^ ].*  '$T'' "$dir/out")" -eq "$rows" ] ||
	fail "history shows $(grep -cE '^  [^ ].*  '$T'' "$dir/out") rows of $rows:
$(cat "$dir/out")"
contains out '  PREDICATE       VALUE         VALID FROM                   VALID TO                     ASSERTED BY  CLOSED BY'
contains out '  status          "available"   '$T'06:10:00Z         '$T'08:00:00.250000Z  e2           e5'
contains out '  status          null          '$T'10:00:00Z         -                            e7           -'
contains out '  based_at  depot:D-1  no      '$T'10:00:00Z  -                     e7           -'
lacks out 'predicate:'
on_tty "$KEEL" history acme driver:DR-1 drives --store "$db"
contains out 'predicate:    drives'
contains out 'facts: none'
contains out '  drives    vehicle:V-1  yes     '$T'07:00:00Z  '$T'09:00:00Z  e4           e6'

on_tty "$KEEL" why acme vehicle:V-1 status --at ${T}09:00:00Z --store "$db"
[ "$status" -eq 0 ] || fail "why on a terminal exited $status"
same_text "tenant:       acme
subject:      vehicle:V-1
predicate:    status
at:           ${T}09:00:00Z
value:        \"in_service\"
valid from:   ${T}08:00:00.250000Z
valid to:     ${T}10:00:00Z
asserted by:  e5
closed by:    e7

event:        e5
type:         fleet.vehicle.status_changed
time:         ${T}08:00:00.250000Z
envelope:     $(sed -n 5p "$data/story.ndjson")"

# stats: counts right-aligned under their headings, then the totals.
expect 0 "$KEEL" generate fleet --events 300 --tenants 2 --output "$dir/gen.ndjson"
expect 0 "$KEEL" ingest --cartridge fleet "$dir/gen.ndjson" --store "$db" --quiet
expect 0 "$KEEL" stats --store "$db"
cp "$dir/out" "$dir/stats.json"
on_tty "$KEEL" stats --store "$db"
[ "$status" -eq 0 ] || fail "stats on a terminal exited $status"
[ "$(head -n 1 "$dir/out")" = "TENANT     ENTITIES  FACTS  RELATIONS  EVENTS" ] ||
	fail "stats heading: $(head -n 1 "$dir/out")"
contains out "acme              3     14          5       7"
[ "$(wc -l <"$dir/out")" -eq 5 ] || fail "stats: not a heading, 3 tenants and a total:
$(cat "$dir/out")"
# Each row's counts are those of the JSON document.
for t in acme tenant-00 tenant-01; do
	want=$(grep -o '{"tenant":"'$t'","entities":[0-9]*,"facts":[0-9]*,"relations":[0-9]*,"events":[0-9]*}' \
		"$dir/stats.json" | tr -dc '0-9,' | cut -d, -f2- | tr , ' ')
	got=$(grep "^$t " "$dir/out" | tr -s ' ' | cut -d' ' -f2-)
	[ -n "$want" ] && [ "$got" = "$want" ] || fail "stats row of $t: \"$got\", JSON says \"$want\""
done
want=$(grep -o '"total":{[^}]*}' "$dir/stats.json" | tr -dc '0-9,' | tr , ' ')
got=$(grep '^(total) ' "$dir/out" | tr -s ' ' | cut -d' ' -f2-)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "stats total: \"$got\", JSON says \"$want\""
on_tty "$KEEL" stats --json --store "$db"
cmp -s "$dir/out" "$dir/stats.json" || fail "stats --json on a terminal differs from piped stats"

# Errors go to stderr as ever, on a terminal too.
on_tty "$KEEL" show acme vehicle:V-9 --store "$db"
[ "$status" -eq 1 ] || fail "show of an unknown entity on a terminal exited $status"
contains out 'keel show: entity "vehicle:V-9" not found in tenant "acme"'

finish
