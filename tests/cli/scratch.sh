# scratch.sh - the set-up every shell test shares: the keel binary's path
# checked, a scratch directory $dir removed at exit (with a server the test
# left running in $pid, killed first), and fail(), which stops the test.
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
