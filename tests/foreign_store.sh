#!/usr/bin/env bash
# foreign_store.sh - a file that is not a store this Keel may write is
# refused by every command, with a message naming the store and why, and is
# left byte for byte as it was (docs/store-sqlite.md, "Schema and versions"):
# an SQLite database of another application (in rollback-journal mode, as
# SQLite makes files by default; one holding only a view; one with a meta
# table of its own), a Keel store of a newer schema than this one knows or
# of a negative one, a text file, a directory. A refusal must not even
# switch the file's journal mode to WAL, which rewrites its header and
# leaves an application that does not expect WAL with a changed file.
# Last, an empty --store names no store at all (docs/cli.md).
. "$(dirname "$0")/cli/lib.sh"

command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
story="$data/story.ndjson"

# Another application's database: one table, default journal mode.
python3 - "$dir/orders.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
db.execute("INSERT INTO orders VALUES (1, 'a')")
db.commit()
EOF

# A Keel store whose schema is newer than this Keel's, put back into
# rollback-journal mode as a newer Keel might leave it.
expect 0 "$KEEL" ingest --cartridge fleet "$story" --store "sqlite:$dir/newer.db" --quiet
python3 - "$dir/newer.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version + 1,))
db.commit()
db.execute("PRAGMA journal_mode = DELETE")
db.close()
EOF
newer=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key='schema_version'\").fetchone()[0])" "$dir/newer.db")
# Other applications' databases Keel might take for its own: one holding
# only a view (no table), one whose meta table is not Keel's.
python3 - "$dir/view.db" "$dir/meta.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE VIEW answer AS SELECT 42")
db.commit()
db = sqlite3.connect(sys.argv[2])
db.execute("CREATE TABLE meta (name TEXT, val TEXT)")
db.commit()
EOF
# A Keel store whose version is not one any Keel wrote.
cp "$dir/newer.db" "$dir/negative.db"
python3 -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); db.execute(\"UPDATE meta SET value=-1 WHERE key='schema_version'\"); db.commit()" "$dir/negative.db"
printf 'not a database\n' >"$dir/text.db"
mkdir "$dir/dir.db"
expect 0 "$KEEL" ingest --cartridge fleet "$story" --store "sqlite:$dir/good.db" --quiet
expect 0 "$KEEL" dump --store "sqlite:$dir/good.db" --output "$dir/good.dump"

# refused NAME MESSAGE: every command refuses the store with MESSAGE and
# exit 1, and the file (and any side file, -wal, -shm, -journal) is as it
# was.
refused() {
	local name=$1 want=$2 url="sqlite:$dir/$1" before after cmd
	before=$(cd "$dir" && ls -d "$name"* && { [ -d "$name" ] || cksum "$name"; })
	for cmd in stats migrate dump ingest load; do
		case $cmd in
		ingest) expect 1 "$KEEL" ingest --cartridge fleet "$story" --store "$url" --quiet ;;
		load) expect 1 "$KEEL" load "$dir/good.dump" --store "$url" ;;
		*) expect 1 "$KEEL" "$cmd" --store "$url" ;;
		esac
		contains err "keel $cmd: $want"
		after=$(cd "$dir" && ls -d "$name"* && { [ -d "$name" ] || cksum "$name"; })
		[ "$before" = "$after" ] || fail "keel $cmd changed $name:
$before
--- became:
$after"
	done
}

refused orders.db "store \"sqlite:$dir/orders.db\": not a keel database (it has a table \"orders\" and no meta table)"
refused newer.db "store \"sqlite:$dir/newer.db\": schema version $newer is newer than this keel supports ($((newer - 1))): upgrade keel"
refused view.db "store \"sqlite:$dir/view.db\": not a keel database (it has a view \"answer\" and no meta table)"
refused meta.db "store \"sqlite:$dir/meta.db\": not a keel database (its meta table has no key and value columns)"
refused negative.db "store \"sqlite:$dir/negative.db\": the meta table holds an invalid schema version -1"
refused text.db "sqlite \"$dir/text.db\": file is not a database"
refused dir.db "sqlite \"$dir/dir.db\": unable to open database file"

# An empty --store (a script's unset variable) names no store: refused,
# not taken for the default, so no keel.db appears in the directory.
mkdir "$dir/cwd"
for cmd in stats migrate ingest load serve; do
	case $cmd in
	ingest) args=(ingest --cartridge fleet "$story") ;;
	load) args=(load "$dir/good.dump") ;;
	serve) args=(serve --listen 127.0.0.1:0 --insecure-http) ;;
	*) args=("$cmd") ;;
	esac
	# (timeout: a server given the default store would serve until stopped)
	(cd "$dir/cwd" && KEEL_STORE= timeout 20 "$KEEL" "${args[@]}" --store "" >"$dir/out" 2>"$dir/err")
	status=$?
	[ "$status" -eq 1 ] || fail "keel $cmd --store '' exited $status, expected 1"
	is_err "keel $cmd: store \"\": empty URL (leave --store out for \$KEEL_STORE, else sqlite:keel.db)"
done
[ -z "$(ls "$dir/cwd")" ] || fail "an empty --store made files: $(ls "$dir/cwd")"
finish
