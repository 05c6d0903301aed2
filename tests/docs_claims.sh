#!/usr/bin/env bash
# docs_claims.sh - what the docs say of Keel's schema versions and of seq is
# what Keel does: docs/stores.md's table has each store's current version
# with one step per version (SQLite's as `keel migrate` creates a file, the
# others' as their code defines it), its example of a newer version is the
# message a newer SQLite file gets, and the seq that docs/semantics.md and
# docs/cli.md say a conflicting duplicate's message names is in it.
. "$(dirname "$0")/cli/lib.sh"
src=${KEEL_SOURCE_DIR:?}
stores=$src/docs/stores.md
command -v sqlite3 >/dev/null || skip_test "no sqlite3 tool (scripts/deps --test installs it)"

# row STORE: the version column and the steps of STORE's row in the table.
row() { grep "^| $1 | " "$stores" | head -n 1; }
check_row() { # store version
	local r steps
	r=$(row "$1")
	[ -n "$r" ] || { fail "docs/stores.md has no row for $1"; return; }
	[ "$(cut -d'|' -f3 <<<"$r" | tr -d ' ')" = "$2" ] ||
		fail "docs/stores.md says $1 is at version $(cut -d'|' -f3 <<<"$r" | tr -d ' '), Keel's is $2"
	# its steps: "1 ...; 2 ...; ...; N ..." (PostgreSQL's one step is prose)
	[ "$2" = 1 ] && return
	steps=$(cut -d'|' -f4 <<<"$r" | tr ';' '\n' | sed 's/^ *\([0-9]*\) .*/\1/' | tr '\n' ' ')
	[ "$steps" = "$(seq -s ' ' 1 "$2") " ] || fail "docs/stores.md lists $1's steps as $steps, not 1 to $2"
}

touch "$dir/empty.db"
expect 0 "$KEEL" migrate --store "sqlite:$dir/empty.db"
sqlite_now=$(sed -n 's/.*created at schema \([0-9]*\)$/\1/p' "$dir/out")
[ -n "$sqlite_now" ] || fail "keel migrate of an empty file: $(cat "$dir/out")"
check_row SQLite "$sqlite_now"
check_row MySQL/MariaDB "$(sed -n 's/^#define KEEL_MYSQL_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$src/src/store/mysql/parts.h")"
check_row PostgreSQL "$(sed -n 's/^#define KEEL_PG_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$src/src/store/postgres/parts.h")"
grep -qF "\`created at schema $sqlite_now\`" "$stores" || fail "docs/stores.md's keel migrate example is not at schema $sqlite_now"

# A file one version newer: refused as docs/stores.md says.
newer=$((sqlite_now + 1))
sqlite3 "$dir/empty.db" "UPDATE meta SET value = $newer WHERE key = 'schema_version'"
expect 1 "$KEEL" stats --store "sqlite:$dir/empty.db"
contains err "schema version $newer is newer than this keel supports ($sqlite_now): upgrade keel"
grep -qF "(\`schema version $newer is newer than this keel supports ($sqlite_now): upgrade" "$stores" ||
	fail "docs/stores.md's example of a newer version is not what a file at $newer gets"

# seq: no answer shows it, but a conflicting duplicate's message does.
db=sqlite:$dir/seq.db
echo '{"specversion":"1.0","id":"7","source":"/c","type":"t","time":"2026-01-05T06:00:00Z","tenant":"acme","data":{"a":1}}' >"$dir/one.ndjson"
echo '{"specversion":"1.0","id":"7","source":"/c","type":"t","time":"2026-01-05T06:00:00Z","tenant":"acme","data":{"a":2}}' >"$dir/two.ndjson"
printf '{"cartridge":"c","version":"1","events":{"t":[]}}' >"$dir/c.json"
expect 0 "$KEEL" ingest "$dir/one.ndjson" --cartridge "$dir/c.json" --store "$db"
expect 3 "$KEEL" ingest "$dir/two.ndjson" --store "$db"
msg=$(grep -o 'conflicting duplicate: its envelope differs from that of the event already in the store (seq [0-9]*)' "$dir/err")
[ -n "$msg" ] || fail "no seq in the conflict's message: $(cat "$dir/err")"
grep -qF 'keel ingest: line 2: event "7" from "/c": conflicting duplicate: its envelope differs from that of the event already in the store (seq ' \
	"$src/docs/cli.md" || fail "docs/cli.md's conflict message is not keel's"
grep -E '^\| seq \|' "$src/docs/semantics.md" | grep -qF 'the event already in the store (seq ' ||
	fail "docs/semantics.md's seq does not say the conflict's message shows it: $(grep -E '^\| seq \|' "$src/docs/semantics.md")"
expect 0 "$KEEL" dump --store "$db"
lacks out '"seq"'

finish
