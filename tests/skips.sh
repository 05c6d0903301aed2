#!/usr/bin/env bash
# skips.sh - tests that tell the truth (docs/architecture.md, "Testing"):
# a case that cannot run here exits 77, which ctest reports as skipped
# (every case is registered with SKIP_RETURN_CODE 77), and under CI=true it
# fails instead; a case filter that matches nothing fails; --list gives
# every contract case once per store. Runs the built test binaries and a
# shell test with the MySQL fixture's variables removed.
. "$(dirname "$0")/cli/lib.sh"
: "${KEEL_BUILD_DIR:?build directory}"
bin=$KEEL_BUILD_DIR/tests
no_mysql=(env -u KEEL_TEST_MYSQL_DIR -u KEEL_TEST_MYSQL_URL -u KEEL_TEST_MYSQL_FRESH -u CI)
no_pg=(env -u KEEL_TEST_PG_DIR -u KEEL_TEST_PG_FRESH -u CI)

# A cmocka case without its server: skipped (77), then failed under CI=true.
expect 77 "${no_mysql[@]}" "$bin/test_conformance" ingesting_twice_changes_nothing.mysql
contains out "skipped: no MySQL server"
contains out "[  SKIPPED ] ingesting_twice_changes_nothing.mysql"
expect 77 "${no_mysql[@]}" "$bin/test_store_mysql" strings_compare_bytewise
expect 1 "${no_mysql[@]}" CI=true "$bin/test_conformance" ingesting_twice_changes_nothing.mysql
contains err "under CI=true nothing may be skipped"
# Only CI=true means CI.
expect 77 "${no_mysql[@]}" CI=false "$bin/test_conformance" ingesting_twice_changes_nothing.mysql
# A case that runs passes with 0, so 77 is not what every run says.
expect 0 "${no_mysql[@]}" CI=true "$bin/test_conformance" conflicting_duplicate_is_skipped_and_counted.memory

# A filter that matches no case fails, naming the filter.
expect 1 "$bin/test_conformance" no_such_case
contains err 'no case matches "no_such_case"'
expect 1 "$bin/test_util" 'batch_sizes*'
# A pattern runs what it matches.
expect 0 "${no_mysql[@]}" "$bin/test_conformance" 'conflicting_duplicate_*.[ms][eq]*'
contains out "conflicting_duplicate_is_skipped_and_counted.memory"
contains out "conflicting_duplicate_is_skipped_and_counted.sqlite"
lacks out ".mysql"

# --list: every contract case on every store, the same cases on each.
expect 0 "$bin/test_conformance" --list
for store in memory sqlite mysql postgres; do
	sed -n "s/\\.$store\$//p" "$dir/out" >"$dir/cases.$store"
done
[ "$(wc -l <"$dir/cases.memory")" -ge 8 ] || fail "--list: too few memory cases: $(cat "$dir/out")"
cmp -s "$dir/cases.memory" "$dir/cases.sqlite" || fail "--list: sqlite's cases differ from memory's"
cmp -s "$dir/cases.memory" "$dir/cases.mysql" || fail "--list: mysql's cases differ from memory's"
cmp -s "$dir/cases.memory" "$dir/cases.postgres" || fail "--list: postgres's cases differ from memory's"
# PostgreSQL's cases and shell tests without their server: skipped, and
# failed under CI=true.
expect 77 "${no_pg[@]}" "$bin/test_conformance" ingesting_twice_changes_nothing.postgres
contains out "skipped: no PostgreSQL server"
expect 1 "${no_pg[@]}" CI=true "$bin/test_store_postgres" a_failed_batch_rolls_back_alone
contains err "under CI=true nothing may be skipped"
expect 77 "${no_pg[@]}" bash "$KEEL_SOURCE_DIR/tests/postgres_cli.sh"
contains out "skipped: no PostgreSQL server"

# A shell test without its server: skipped (77), then failed under CI=true.
expect 77 "${no_mysql[@]}" bash "$KEEL_SOURCE_DIR/tests/mysql_cli.sh"
contains out "skipped: no MySQL server"
expect 1 "${no_mysql[@]}" CI=true bash "$KEEL_SOURCE_DIR/tests/mysql_cli.sh"
contains err "under CI=true nothing may be skipped"

# ctest knows 77 means skipped: every registered case says so.
expect 0 ctest --test-dir "$KEEL_BUILD_DIR" --show-only=json-v1
tr -d ' \n' <"$dir/out" >"$dir/json"
tests=$(grep -o '"name":"\(test_[a-z0-9_]*\|sh\)\.[A-Za-z0-9_.]*"' "$dir/json" | wc -l)
skips=$(grep -o '"name":"SKIP_RETURN_CODE","value":77' "$dir/json" | wc -l)
[ "$tests" -gt 100 ] || fail "ctest lists only $tests cases"
[ "$skips" -eq "$tests" ] || fail "$skips of $tests cases have SKIP_RETURN_CODE 77"
grep -q '"name":"test_conformance.batch_sizes_give_identical_dumps.mysql"' "$dir/json" ||
	fail "ctest does not list the contract's mysql cases"

finish
