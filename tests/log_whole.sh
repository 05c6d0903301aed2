#!/usr/bin/env bash
# A consumer's transaction is all or nothing (docs/log.md, "Fencing"):
# when one of its batches fails, the batches before it in the same
# transaction are not committed on their own, without their log
# positions (so without the fencing check a position's write makes).
#
# A private MariaDB server whose lock waits end after 2 s; a log of one
# partition holding 30 events of one tenant. A client session holds an
# uncommitted row with the key of the 25th event for 8 s. keel consume,
# batches of 10, writes batches 1 and 2 into its transaction; batch 3
# waits for the held key and fails. Then, while the key is still held,
# the store must hold none of the events (the Keel before this one
# committed batches 1 and 2 here, and the partition's position stayed
# behind them). Once the session lets go, the consumer catches up and the
# store's dump is that of one keel ingest of the events.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
. "$(dirname "$0")/cli/log_lib.sh"
needs_mysql
needs_nats
: "${KEEL_MYSQL_SCRIPT:?the MariaDB test server script}"
client=$(command -v mariadb || command -v mysql) || skip_test "no mariadb client"

dbdir=$dir/mariadb
holder=
db_cleanup() {
	local rc=$?
	set +e
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	[ -d "$dbdir" ] && "$KEEL_MYSQL_SCRIPT" stop "$dbdir" >"$dir/mariadb.log" 2>&1
	(exit "$rc")
	log_cleanup
}
trap db_cleanup EXIT
url=$("$KEEL_MYSQL_SCRIPT" start "$dbdir")
sock=$dbdir/sock
[ -e "$dbdir/sockdir" ] && sock=$(readlink "$dbdir/sockdir")/sock
db=${url##*/}
db=${db%%\?*}
sql() { # sql QUERY [CLIENT OPTION...]
	local q=$1
	shift
	"$client" --no-defaults --protocol=socket --socket="$sock" -uroot -N -B "$@" -e "$q" "$db"
}
sql "SET GLOBAL innodb_lock_wait_timeout = 2"
"$KEEL" stats --store "$url" >/dev/null # the schema, before anyone holds a row

nats_start 1
"$KEEL" stream create "$servers" --stream ev --partitions 1 >/dev/null
in=$dir/in.ndjson
"$KEEL" generate fleet --events 30 --tenants 1 --seed 3 --output "$in"
[ "$(wc -l <"$in")" -eq 30 ] || fail "the generator gave $(wc -l <"$in") events, not 30"
"$KEEL" publish "$in" --to "$servers" --stream ev --quiet
reference "$in"

# the 25th event's key, held by a session of its own for 8 s
key=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])][24]
q = lambda s: "'"'"'" + s.replace("\\", "\\\\").replace("'"'"'", "\\'"'"'") + "'"'"'"
print(", ".join(q(ev[k]) for k in ("tenant", "source", "id")))' "$in")
# (--unbuffered: "held" is written once the row is, not at the end)
sql "BEGIN; INSERT INTO keel_events (tenant, source, id, type, time, hash, envelope)
	VALUES ($key, 'held', 0, 0, '{}'); SELECT 'held'; SELECT SLEEP(8); ROLLBACK" \
	--unbuffered >"$dir/holder.out" 2>&1 &
holder=$!
held() { grep -qx held "$dir/holder.out"; }
wait_until 20 held || fail "the session holding the 25th event's key did not start: $(cat "$dir/holder.out")"

consumer_start c1 "$servers" --stream ev --store "$url" --cartridge fleet --batch 10 \
	--commit-interval 60000
failed() { grep -q "commit refused or failed: batch of seqs 21-30" "$dir/c1.log"; }
wait_until 20 failed || fail "batch 3 did not fail on the held key: $(cat "$dir/c1.log")"
kill -0 "$holder" 2>/dev/null || fail "the session let go before the store was looked at"
n=$(sql "SELECT count(*) FROM keel_events")
[ "$n" -eq 0 ] ||
	fail "batch 3 failed, yet $n events of its transaction's earlier batches were committed (positions: $(sql "SELECT part, seq, token FROM keel_log_positions" | tr '\t\n' ' ;'))"
grep -q "the transaction carries log positions, so it goes whole: nothing of seqs 1-30 was written" "$dir/c1.log" ||
	fail "the failure does not say the whole transaction went: $(cat "$dir/c1.log")"

wait "$holder" || true
holder=
wait_until 60 caught_up ev --store "$url" || fail "not caught up: $(cat "$dir/status")"
consumer_stop c1
same_dump "$url" "after the held key was let go"
echo "ok: batch 3 failed with nothing committed; then caught up ($SECONDS s)"
