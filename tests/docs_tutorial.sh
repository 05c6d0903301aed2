#!/usr/bin/env bash
# docs_tutorial.sh - docs/tutorial.md runs: every file it has the reader
# save is saved, every excerpt of a file is in it, every command runs (in
# order, in one shell, on a terminal 120 columns wide) and prints what the
# page says it prints; the page it points a browser at is served
# (tests/cli/tutorial_run.py).
. "$(dirname "$0")/cli/lib.sh"
command -v python3 >/dev/null || skip_test "no python3 (scripts/deps --test installs it)"
command -v script >/dev/null || fail "script(1) not found (bsdutils)"
command -v curl >/dev/null || skip_test "no curl (scripts/deps --test installs it)"
mkdir "$dir/work"
python3 "$(dirname "$0")/cli/tutorial_run.py" "${KEEL_SOURCE_DIR:?}/docs/tutorial.md" "$dir/work" ||
	fail "docs/tutorial.md does not run as it reads (above)"
finish
