#!/usr/bin/env bash
# tiny.sh BENCH REGEX [ARGS...] - runs one benchmark at its tiny size, as CI
# does (ctest -L bench, bench/CMakeLists.txt), so that none can rot unseen:
# it must exit 0 and print its table down to the line REGEX matches. No
# figure is judged: a tiny run on a shared machine measures nothing.
#
# In ARGS, @MYSQL_URL and @MYSQL_DIR stand for the suite's private MariaDB
# (the ctest fixture's KEEL_TEST_MYSQL_DIR): its URL, and its directory;
# @PG_DIR for the suite's private PostgreSQL (KEEL_TEST_PG_DIR);
# @FLEET_STORE for a SQLite store of 2000 fleet events made with $KEEL;
# @KEEL for $KEEL itself.
#
# tiny.sh --missing WHY - the case of a benchmark that was not built (WHY
# says what is missing): skipped (status 77), but under CI=true, where
# everything the suite needs is installed, it fails, so that no benchmark
# drops out of CI unseen.
set -euo pipefail
if [ "${1:-}" = --missing ]; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $2; under CI=true every benchmark must run"
		exit 1
	fi
	echo "skipped: $2"
	exit 77
fi
bin=$1
want=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-tiny-XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/out
args=()
for a in "$@"; do
	case "$a" in
	@MYSQL_URL) args+=("$(cat "${KEEL_TEST_MYSQL_DIR:?the directory of the suite MariaDB}/url")") ;;
	@MYSQL_DIR) args+=("${KEEL_TEST_MYSQL_DIR:?the directory of the suite MariaDB}") ;;
	@PG_DIR) args+=("${KEEL_TEST_PG_DIR:?the directory of the suite PostgreSQL}") ;;
	@FLEET_STORE)
		"${KEEL:?the keel tool}" generate fleet --events 2000 --seed 1 --output "$work/in.ndjson"
		"$KEEL" ingest --cartridge fleet --quiet --store "sqlite:$work/fleet.db" "$work/in.ndjson"
		args+=("$work/fleet.db")
		;;
	@KEEL) args+=("${KEEL:?the keel tool}") ;;
	*) args+=("$a") ;;
	esac
done
rc=0
"$bin" "${args[@]}" >"$out" || rc=$?
cat "$out"
name=$(basename "$bin")
[ "$rc" -eq 0 ] || {
	echo "FAIL: $name ${args[*]} exited with $rc"
	exit 1
}
grep -qE "$want" "$out" || {
	echo "FAIL: $name ${args[*]} did not print its table to its end (no line matching '$want')"
	exit 1
}
echo "ok: $name ran to its end"
