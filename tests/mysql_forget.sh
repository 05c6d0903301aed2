#!/usr/bin/env bash
# mysql_forget.sh - keel forget and DELETE /v1/tenants/T/entities/S on
# MariaDB (docs/semantics.md, "Forgetting"; docs/store-mysql.md): the same
# checks as cli_forget.sh on SQLite (tests/cli/forget_checks.sh), with the
# store's bytes taken as a mariadb-dump of its database, every table.
# Needs the suite's MariaDB fixture (KEEL_TEST_MYSQL_FRESH); skipped without.
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
. "$(dirname "$0")/cli/forget_checks.sh"
needs_mysql
srv=$KEEL_TEST_MYSQL_DIR
mysqldump_bin=$(command -v mariadb-dump || command -v mysqldump) ||
	skip_test "no mariadb-dump or mysqldump"
sock=$srv/sock
[ -e "$srv/sockdir" ] && sock=$(readlink "$srv/sockdir")/sock

url=$($KEEL_TEST_MYSQL_FRESH)
db_name=${url##*/}
db_name=${db_name%%\?*}

# The whole database as SQL text: every row of every table, strings as
# they are (no --hex-blob), so a string still stored anywhere is found.
store_bytes() {
	"$mysqldump_bin" --no-defaults --protocol=socket --socket="$sock" -uroot \
		--skip-extended-insert "$db_name" >"$1" || fail "mariadb-dump failed"
	grep -q 'INSERT INTO `keel_events`' "$1" || fail "the dump has no events"
}

forget_input
forget_cli "$url"
forget_http "$url"
# The tombstones name the subjects by their SHA-256 only.
store_bytes "$dir/final.sql"
[ "$(grep -c 'INSERT INTO `keel_tombstones`' "$dir/final.sql")" -eq 3 ] ||
	fail "expected 3 tombstones: $(grep 'keel_tombstones' "$dir/final.sql")"
finish
