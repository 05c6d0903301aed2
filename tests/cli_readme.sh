#!/usr/bin/env bash
# cli_readme.sh - what README.md's "One event, start to finish" shows
# works: its example event is taken from the README and ingested, the
# terminal form printed is the README's (but for the moment asked about),
# the field its jq line reads is there, and the early --at exits 1.
. "$(dirname "$0")/cli/lib.sh"

readme=${KEEL_SOURCE_DIR:?}/README.md
command -v script >/dev/null || fail "script(1) not found (bsdutils)"

# The one complete envelope in the README.
grep '^{"specversion"' "$readme" >"$dir/event.ndjson"
[ "$(wc -l <"$dir/event.ndjson")" -eq 1 ] ||
	fail "README.md should show exactly one example event, has $(wc -l <"$dir/event.ndjson")"
# The README's terminal output (its one text block).
sed -n '/^```text$/,/^```$/p' "$readme" | sed '1d;$d' >"$dir/readme.txt"
[ -s "$dir/readme.txt" ] || fail "README.md has no text block"

db=sqlite:$dir/first.db
expect 0 "$KEEL" ingest --cartridge fleet "$dir/event.ndjson" --store "$db"
contains err "accepted 1, duplicates 0 (conflicting 0), unhandled 0, rejected 0"

# On a terminal: the README's text, the "at:" line (now) aside.
script -qec "$(printf '%q ' "$KEEL" show acme vehicle:V-1 --store "$db")" /dev/null \
	</dev/null | tr -d '\r' >"$dir/tty"
grep -q '^at:           20' "$dir/tty" || fail "no at: line on the terminal: $(cat "$dir/tty")"
grep -v '^at:' "$dir/tty" >"$dir/got.txt"
grep -v '^at:' "$dir/readme.txt" >"$dir/want.txt"
diff "$dir/want.txt" "$dir/got.txt" >"$dir/diff" ||
	fail "keel show on a terminal differs from README.md:
$(cat "$dir/diff")"

# Piped: JSON with the field the README's jq line reads.
grep -qF '| jq .facts.status.value    # "in_service"' "$readme" ||
	fail "README.md lacks the jq line this test checks"
expect 0 "$KEEL" show acme vehicle:V-1 --store "$db"
contains out '"facts":{"status":{"value":"in_service",'

# Before its first event the vehicle did not exist.
grep -qF 'keel show acme vehicle:V-1 --at 2026-01-05T07:00:00Z --store sqlite:first.db   # exit 1' "$readme" ||
	fail "README.md lacks the --at line this test checks"
expect 1 "$KEEL" show acme vehicle:V-1 --at 2026-01-05T07:00:00Z --store "$db"
contains err 'did not exist in tenant "acme" at 2026-01-05T07:00:00Z (first seen 2026-01-05T08:00:00Z)'

# Known at a moment before it was recorded, it was not there at all.
grep -qF 'keel show acme vehicle:V-1 --known-at 2026-01-01T00:00:00Z --store sqlite:first.db   # exit 1' "$readme" ||
	fail "README.md lacks the --known-at line this test checks"
expect 1 "$KEEL" show acme vehicle:V-1 --known-at 2026-01-01T00:00:00Z --store "$db"
contains err 'not found in tenant "acme" as known at 2026-01-01T00:00:00Z'

finish
