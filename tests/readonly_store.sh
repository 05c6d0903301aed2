#!/usr/bin/env bash
# readonly_store.sh - a SQLite store its user cannot write
# (docs/store-sqlite.md, "Schema and versions"; docs/cli.md, "Failures"):
# reads work; a write fails with the file named and nothing written; a
# store of an older schema, which any command migrates first, is refused
# with what it needs rather than SQLite's "attempt to write a readonly
# database" from a command that meant to read. The files stay as they were.
# (root writes any file: keel then runs as nobody, in a directory where
# SQLite may add its -shm and -wal files.)
. "$(dirname "$0")/cli/lib.sh"

old=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/data/migrate
story="$data/story.ndjson"
read_only_keel
mkdir -m 777 "$dir/ro"
expect 0 "$KEEL" ingest --cartridge fleet --quiet "$story" --store "sqlite:$dir/ro/cur.db"
expect 0 "$KEEL" stats --store "sqlite:$dir/ro/cur.db"
cp "$dir/out" "$dir/stats.want"
cp "$old/v1.sqlite" "$dir/ro/old.db"
chmod a-w "$dir/ro/cur.db" "$dir/ro/old.db"
sums() { cksum "$dir/ro/cur.db" "$dir/ro/old.db"; }
before=$(sums)

# A current store: reads answer, writes fail naming the file.
expect 0 "$ro_keel" stats --store "sqlite:$dir/ro/cur.db"
cmp -s "$dir/out" "$dir/stats.want" || fail "stats of the read-only store differ"
sed 's/"tenant":"[^"]*"/"tenant":"elsewhere"/' "$story" >"$dir/new.ndjson"
expect 1 "$ro_keel" ingest --cartridge fleet "$dir/new.ndjson" --store "sqlite:$dir/ro/cur.db"
contains err "sqlite \"$dir/ro/cur.db\": attempt to write a readonly database"
contains err "accepted 0,"

# A store of an older schema: every command says what it needs.
for cmd in stats migrate dump; do
	expect 1 "$ro_keel" "$cmd" --store "sqlite:$dir/ro/old.db"
	is_err "keel $cmd: store \"sqlite:$dir/ro/old.db\": needs migrating from schema 1 to $(sed -n 's/.*at schema \([0-9]*\).*/\1/p' <("$KEEL" migrate --store "sqlite:$dir/ro/cur.db")), but the file is read-only"
done
[ "$(sums)" = "$before" ] || fail "a read-only store changed"

# A store in a directory its user cannot write: SQLite cannot make the
# -shm and -wal files a WAL database is read with, and the message says
# so rather than only "attempt to write a readonly database".
mkdir "$dir/locked"
cp "$dir/ro/cur.db" "$dir/locked/cur.db"
chmod a-w "$dir/locked"
expect 1 "$ro_keel" stats --store "sqlite:$dir/locked/cur.db"
is_err "keel stats: sqlite \"$dir/locked/cur.db\": cannot read it: its directory cannot be written, and SQLite makes the store's -shm and -wal files there (attempt to write a readonly database)"
chmod u+w "$dir/locked"
finish
