# lib.sh - shared by the tests/cli_*.sh shell tests: a scratch directory,
# running the keel binary with its exit status and output captured, and
# assertions that count failures instead of stopping at the first.
# Plain bash and coreutils only (no jq, no python).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"
data=${KEEL_TEST_DATA:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)}/cli
fails=0
status=0

# fail: counts, where scratch.sh's stops.
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# run CMD...: runs it with stdout in $dir/out, stderr in $dir/err, exit in $status.
run() {
	"$@" >"$dir/out" 2>"$dir/err"
	status=$?
}

# expect CODE CMD...: runs CMD and checks its exit status.
expect() {
	local want=$1
	shift
	run "$@"
	if [ "$status" -ne "$want" ]; then
		fail "$* exited $status, expected $want; stderr: $(head -c 600 "$dir/err")"
	fi
}

# contains FILE TEXT / lacks FILE TEXT: a fixed string in (not in) $dir/FILE.
contains() {
	grep -qF -- "$2" "$dir/$1" || fail "$1 of the last command lacks: $2
--- $1:
$(head -c 1500 "$dir/$1")"
}
lacks() {
	! grep -qF -- "$2" "$dir/$1" || fail "$1 of the last command contains: $2"
}

# is_out TEXT: stdout is exactly TEXT and a newline.
is_out() {
	local got
	got=$(cat "$dir/out")
	[ "$got" = "$1" ] && [ "$(tail -c 1 "$dir/out" | od -An -c | tr -d ' ')" = '\n' ] ||
		fail "stdout is not what was expected:
--- got:
$got
--- expected:
$1"
}

# is_err TEXT: stderr is exactly TEXT and a newline (one message, once).
is_err() {
	[ "$(cat "$dir/err")" = "$1" ] && [ "$(wc -l <"$dir/err")" -eq 1 ] ||
		fail "stderr is not what was expected:
--- got:
$(head -c 1500 "$dir/err")
--- expected:
$1"
}

# empty FILE: $dir/FILE is empty.
empty() {
	[ ! -s "$dir/$1" ] || fail "$1 of the last command is not empty: $(head -c 600 "$dir/$1")"
}

# read_only_keel: sets ro_keel to a keel that a file without write
# permission stops, as it stops a user: as root (who writes any file),
# the same binary run as nobody through setpriv; otherwise keel itself.
read_only_keel() {
	ro_keel=$KEEL
	[ "$(id -u)" = 0 ] || return 0
	command -v setpriv >/dev/null || skip_test "root without setpriv: no read-only file"
	chmod o+x "$dir"
	printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "%s" "$@"\n' \
		"$KEEL" >"$dir/keel-ro"
	chmod a+rx "$dir/keel-ro"
	ro_keel=$dir/keel-ro
}

finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$fails failure(s)"
		exit 1
	fi
	echo ok
}
