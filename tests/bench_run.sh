#!/usr/bin/env bash
# bench_run.sh - bench/run and the benchmarks' CI cases cannot rot quietly
# (bench/README.md):
#  - every benchmark bench/run calls exists (a binary's bench/NAME.c, or the
#    script itself), and its headings name what is measured, never an issue;
#  - a benchmark that was not built (bench_json without its JSON
#    libraries) keeps a case that says why: bench/tiny.sh --missing skips
#    (77), and fails under CI=true;
#  - in a build configured with the benchmarks, every bench/bench_*.c and
#    every script bench/run calls has its bench.NAME case (ctest -L bench),
#    built or not.
set -euo pipefail
. "$(dirname "$0")/cli/scratch.sh"
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
run=$src/bench/run

# What bench/run calls: "$b/NAME" (a binary of build-bench/bench) and
# bench/NAME (a script).
grep -oE '"\$b"?/bench_[a-z_]+|bench/bench_[a-z_]+\.(sh|py)' "$run" |
	sed -E 's/^"\$b"?\/(.*)$/\1.c/; s/^bench\///' | sort -u >"$dir/called"
[ "$(wc -l <"$dir/called")" -ge 10 ] || fail "bench/run calls too few benchmarks: $(cat "$dir/called")"
while read -r f; do
	[ -e "$src/bench/$f" ] || fail "bench/run calls ${f%.c}, which does not exist (no bench/$f)"
done <"$dir/called"
# Headings name what is measured.
grep -nE '^[^#]*echo "== .*[Ii]ssues? [0-9]' "$run" &&
	fail "bench/run names issues in its headings (above)"
grep -c '^[^#]*echo "== ' "$run" >"$dir/headings"
[ "$(cat "$dir/headings")" -ge 10 ] || fail "bench/run prints $(cat "$dir/headings") headings"

# A benchmark that was not built.
rc=0
env -u CI bash "$src/bench/tiny.sh" --missing "bench_json is not built: x missing" >"$dir/out" || rc=$?
[ "$rc" = 77 ] || fail "tiny.sh --missing without CI: status $rc, not 77 (skipped): $(cat "$dir/out")"
rc=0
CI=true bash "$src/bench/tiny.sh" --missing "bench_json is not built: x missing" >"$dir/out" || rc=$?
[ "$rc" = 1 ] || fail "tiny.sh --missing under CI=true: status $rc, not 1: $(cat "$dir/out")"
grep -q 'FAIL: bench_json is not built: x missing; under CI=true' "$dir/out" ||
	fail "tiny.sh --missing under CI=true says: $(cat "$dir/out")"

# The build's cases, when it has the benchmarks.
build=${KEEL_BUILD_DIR:-}
if [ -n "$build" ] && grep -q '^KEEL_BUILD_BENCH:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	ctest --test-dir "$build" -N -L bench | sed -n 's/^ *Test *#[0-9]*: bench\.//p' | sort >"$dir/cases"
	on() { grep -q "^$1:BOOL=ON" "$build/CMakeCache.txt"; }
	# a benchmark of an engine or of the log has its case when that is built
	built() {
		case $1 in
		bench_mysql) on KEEL_WITH_MYSQL ;;
		bench_postgres) on KEEL_WITH_POSTGRES ;;
		bench_log.sh) on KEEL_WITH_NATS && on KEEL_WITH_MYSQL ;;
		bench_log) false ;; # run by bench_log.sh, its case
		*) true ;;
		esac
	}
	for c in "$src"/bench/bench_*.c; do
		n=$(basename "$c" .c)
		built "$n" || continue
		grep -qx "$n" "$dir/cases" || fail "no ctest case bench.$n: $(tr '\n' ' ' <"$dir/cases")"
	done
	grep -E '\.(sh|py)$' "$dir/called" | while read -r s; do
		built "$s" || continue
		grep -qx "$s" "$dir/cases" || echo "$s"
	done >"$dir/uncased"
	[ -s "$dir/uncased" ] && fail "scripts bench/run calls without a ctest case: $(cat "$dir/uncased")"
else
	echo "($build is not configured with KEEL_BUILD_BENCH: its cases not checked)"
fi
echo "ok: bench/run calls what exists, names no issue; a benchmark not built fails under CI=true"
