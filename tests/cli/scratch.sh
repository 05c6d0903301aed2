# scratch.sh - the set-up every shell test shares: the keel binary's path
# checked, a scratch directory $dir removed at exit (with a server the test
# left running in $pid, killed first), fail(), which stops the test, and
# wait_port, for a keel serve started in the background.
# lib.sh builds on it for the tests that count failures instead.
: "${KEEL:?path of the keel binary}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-test-XXXXXX")
pid=
scratch_cleanup() {
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap scratch_cleanup EXIT
unset KEEL_STORE

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# wait_port LOG: waits up to 10 s for keel serve's "(port N)" line in LOG
# and sets $port; fails the test if the server never says it. LOG may not
# exist yet: the shell that opens it for the server may not have run.
wait_port() {
	port=
	for _ in $(seq 200); do
		port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$1" 2>/dev/null || true)
		[ -n "$port" ] && return 0
		sleep 0.05
	done
	fail "server did not start: $(cat "$1")"
}
