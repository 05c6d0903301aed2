# scratch.sh - the set-up every shell test shares: the keel binary's path
# checked, a scratch directory $dir removed at exit (with a server the test
# left running in $pid, killed first), fail(), which stops the test,
# skip_test, for a test that cannot run here, wait_until, the one way a
# test waits for something, and wait_port, for a keel serve started in the
# background. On a failure, what the database fixture's server logged
# meanwhile is printed (its cause may be there and nowhere else).
# lib.sh builds on it for the tests that count failures instead.
: "${KEEL:?path of the keel binary}"

# skip_test WHY: this test cannot run here (WHY says what is missing): exit
# 77, which ctest reports as skipped, never as passed. Under CI=true, where
# everything the suite needs is installed, it fails instead.
skip_test() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: cannot run: $*; under CI=true nothing may be skipped" >&2
		exit 1
	fi
	echo "skipped: $*"
	exit 77
}

# needs_mysql: skips the test unless the mysql_server ctest fixture gave it
# a server.
needs_mysql() {
	if [ -z "${KEEL_TEST_MYSQL_FRESH:-}" ] || [ -z "${KEEL_TEST_MYSQL_DIR:-}" ]; then
		skip_test "no MySQL server: KEEL_TEST_MYSQL_FRESH/KEEL_TEST_MYSQL_DIR unset (the mysql_server ctest fixture sets them)"
	fi
}

# needs_postgres: skips the test unless the postgres_server ctest fixture
# gave it a server.
needs_postgres() {
	if [ -z "${KEEL_TEST_PG_FRESH:-}" ] || [ -z "${KEEL_TEST_PG_DIR:-}" ]; then
		skip_test "no PostgreSQL server: KEEL_TEST_PG_FRESH/KEEL_TEST_PG_DIR unset (the postgres_server ctest fixture sets them)"
	fi
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-XXXXXX")
pid=
fixture_log=${KEEL_TEST_MYSQL_DIR:+$KEEL_TEST_MYSQL_DIR/err.log}
[ -n "${KEEL_TEST_PG_DIR:-}" ] && fixture_log=$KEEL_TEST_PG_DIR/cluster/server.log
fixture_log_from=$(stat -c %s "$fixture_log" 2>/dev/null || echo 0)
scratch_cleanup() {
	local rc=$?
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] &&
		[ "$(stat -c %s "$fixture_log" 2>/dev/null || echo 0)" -gt "$fixture_log_from" ]; then
		echo "--- the database fixture's log meanwhile ($fixture_log):"
		tail -c +"$((fixture_log_from + 1))" "$fixture_log"
		echo "--- end of the fixture's log"
	fi
}
trap scratch_cleanup EXIT
unset KEEL_STORE

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# wait_until SECONDS CMD...: runs CMD until it succeeds, every 50 ms;
# false when it has not within SECONDS. Tests wait for the condition they
# need this way, never for a fixed time.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# wait_port LOG: waits up to 10 s for keel serve's "(port N)" line in LOG
# and sets $port; fails the test if the server never says it. LOG may not
# exist yet: the shell that opens it for the server may not have run.
port_in() {
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$1" 2>/dev/null || true)
	[ -n "$port" ]
}
wait_port() {
	wait_until 10 port_in "$1" || fail "server did not start: $(cat "$1")"
}
