#!/usr/bin/env bash
# cli_help.sh - help and usage errors of every subcommand (docs/cli.md):
# --help prints usage on stdout and exits 0, bad usage exits 2 with the
# synopsis on stderr.
. "$(dirname "$0")/cli/lib.sh"

expect 0 "$KEEL" --help
contains out "usage: keel [-h|--help] [-V|--version] [--no-pager] COMMAND [ARGS]"
empty err
cp "$dir/out" "$dir/main-help"
# keel help and keel -h print the same text as keel --help.
for h in help -h; do
	expect 0 "$KEEL" $h
	cmp -s "$dir/out" "$dir/main-help" || fail "keel $h differs from keel --help"
	empty err
done
for c in ingest generate dump load show history why stats version; do
	contains out "  $c "
done
# Every command the table lists has a working --help, -h and help COMMAND.
cmds=$(sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' "$dir/out")
[ "$(echo "$cmds" | wc -w)" -ge 9 ] || fail "keel --help lists too few commands: $cmds"
for c in $cmds; do
	expect 0 "$KEEL" "$c" --help
	contains out "usage: keel $c"
	empty err
	expect 0 "$KEEL" "$c" -h
	contains out "usage: keel $c"
	cp "$dir/out" "$dir/cmd-help"
	expect 0 "$KEEL" help "$c"
	cmp -s "$dir/out" "$dir/cmd-help" || fail "keel help $c differs from keel $c -h"
	expect 2 "$KEEL" "$c" --no-such-option
	contains err "keel $c: unrecognized option '--no-such-option'"
	contains err "usage: keel $c"
	contains err "Try 'keel $c --help'"
	empty out
done

expect 2 "$KEEL"
contains err "usage: keel"
expect 2 "$KEEL" frobnicate
contains err 'keel: unknown command "frobnicate"'
expect 2 "$KEEL" help frobnicate
contains err 'unknown command "frobnicate"'
lacks err 'did you mean'

# A mistyped command or long option: the nearest one (a transposition, a
# letter missing or extra, the start of the name), and still status 2.
for typo in shwo:show histroy:history stat:stats entites:entities serach:search \
	ingset:ingest dupm:dump; do
	expect 2 "$KEEL" "${typo%%:*}"
	is_err "keel: unknown command \"${typo%%:*}\" (did you mean \"${typo##*:}\"?)"
	expect 2 "$KEEL" help "${typo%%:*}"
	contains err "(did you mean \"${typo##*:}\"?)"
done
expect 2 "$KEEL" show acme v --knwon-at now
contains err "keel show: unrecognized option '--knwon-at'"
contains err 'keel show: did you mean "--known-at"?'
expect 2 "$KEEL" history acme v --chagnes
contains err 'keel history: did you mean "--changes"?'
expect 2 "$KEEL" ingest --cartrige fleet
contains err 'keel ingest: did you mean "--cartridge"?'
expect 2 "$KEEL" serve --treads 2
contains err 'keel serve: did you mean "--threads"?'
expect 2 "$KEEL" entities acme --limt=5
contains err 'keel entities: did you mean "--limit"?'
# nothing near: no guess; a prefix of two options: getopt's "ambiguous"
expect 2 "$KEEL" show acme v --frobnicate
lacks err 'did you mean'
expect 2 "$KEEL" entities acme --k x
contains err "is ambiguous"
lacks err 'did you mean'

# -j is --json wherever it is taken, and nothing else anywhere: each
# command's help that names -j names it as --json.
for c in $cmds; do
	"$KEEL" "$c" --help >"$dir/help.$c"
	if grep -q -- '-j,' "$dir/help.$c"; then
		grep -q -- '-j, --json ' "$dir/help.$c" || fail "keel $c: -j is not --json: $(grep -- '-j,' "$dir/help.$c")"
	fi
done
expect 2 "$KEEL" serve -j 4
contains err "invalid option -- 'j'"

expect 0 "$KEEL" version
grep -qE '^keel [0-9]+\.[0-9]+\.[0-9]+$' "$dir/out" || fail "version: $(cat "$dir/out")"
cp "$dir/out" "$dir/version"
for v in --version -V; do
	expect 0 "$KEEL" $v
	cmp -s "$dir/out" "$dir/version" || fail "keel $v differs from keel version"
	empty err
done
expect 2 "$KEEL" version extra

# Operands.
expect 2 "$KEEL" show
contains err "keel show: expected a tenant and a subject"
expect 2 "$KEEL" show acme
expect 2 "$KEEL" show a b c
expect 2 "$KEEL" history acme
contains err "keel history: expected a tenant, a subject and optionally a predicate"
expect 2 "$KEEL" history a b c d
expect 2 "$KEEL" why acme vehicle:V-1
contains err "keel why: expected a tenant, a subject and a predicate"
expect 2 "$KEEL" stats extra
contains err 'keel stats: unexpected argument "extra"'
expect 2 "$KEEL" dump extra
expect 2 "$KEEL" load
contains err "keel load: expected one dump file"
expect 2 "$KEEL" load a b

# Option values.
expect 2 "$KEEL" show acme s --at yesterday
contains err 'keel show: --at "yesterday": '
expect 2 "$KEEL" why acme s p --at 2026-02-30T00:00:00Z
contains err 'keel why: --at "2026-02-30T00:00:00Z": day 30 out of range for 2026-02 (01-28)'
# A bad date names what is wrong with it, before the missing time of day.
expect 2 "$KEEL" show acme s --at 2026-13-01
contains err 'keel show: --at "2026-13-01": month 13 out of range 01-12'
expect 2 "$KEEL" history acme s --known-at 2026-02-29
contains err 'keel history: --known-at "2026-02-29": day 29 out of range for 2026-02 (01-28)'
expect 2 "$KEEL" show acme s --at 2026-01-05
contains err '--at "2026-01-05": missing time of day and zone (midnight UTC: 2026-01-05T00:00:00Z)'
expect 2 "$KEEL" history acme s --from 2026-01-05T25:00:00Z
contains err 'keel history: --from "2026-01-05T25:00:00Z": hour 25 out of range 00-23'
expect 2 "$KEEL" show acme s --at
contains err "requires an argument"
expect 2 "$KEEL" generate fleet
contains err "keel generate: --events is required"
expect 2 "$KEEL" generate --events 5
contains err "expected a profile (fleet)"
expect 2 "$KEEL" generate trucks --events 5
contains err 'unknown profile "trucks"'
expect 2 "$KEEL" generate fleet --events -1
contains err '--events "-1": not a count'
expect 2 "$KEEL" generate fleet --events 5 --late 1.5
contains err '--late "1.5": not a fraction'
expect 2 "$KEEL" generate fleet --events 5 --duplicates x
expect 2 "$KEEL" generate fleet --events 5 --tenants 0
expect 2 "$KEEL" ingest --batch 0
contains err '--batch "0": not a count from 1'
expect 2 "$KEEL" ingest --batch 12x
expect 2 "$KEEL" ingest --linger -5
contains err '--linger "-5"'
expect 2 "$KEEL" ingest --max-line 1Q
contains err '--max-line "1Q"'
expect 2 "$KEEL" ingest --follow
contains err "--follow takes exactly one file"
expect 2 "$KEEL" ingest --follow a b
expect 2 "$KEEL" ingest --follow -
expect 2 "$KEEL" ingest - -
contains err "standard input (-) given more than once"
expect 2 "$KEEL" ingest --quiet --verbose x
contains err "--quiet and --verbose exclude each other"

finish
