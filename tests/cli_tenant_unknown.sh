#!/usr/bin/env bash
# cli_tenant_unknown.sh - a tenant the store does not know (a mistyped
# name) gets one answer from every command that names a tenant, `keel
# CMD: tenant "nobody" not found` and exit status 1, and from every read of
# the HTTP API the same message with 404; read as known at a moment before
# a tenant's first recording, the tenant is not found "as known at" it
# (docs/cli.md, "Reading the graph: JSON documents").
. "$(dirname "$0")/cli/lib.sh"

db=sqlite:$dir/a.db
expect 0 "$KEEL" ingest --cartridge fleet "$data/story.ndjson" --store "$db" --quiet
old=2020-01-01T00:00:00Z

# Every command that takes a tenant, with the unknown one.
while read -r cmd; do
	# shellcheck disable=SC2086
	expect 1 "$KEEL" $cmd --store "$db"
	is_err "keel ${cmd%% *}: tenant \"nobody\" not found"
	empty out
done <<'EOF'
show nobody vehicle:V-1
history nobody vehicle:V-1
history nobody vehicle:V-1 --changes
why nobody vehicle:V-1 status
stats --tenant nobody
entities nobody
search nobody status in_service
dump --tenant nobody
export --format ndjson --tenant nobody
replay --tenant nobody
forget nobody vehicle:V-1
EOF

# As known at a moment before acme recorded anything, acme is as unknown:
# every read says so the same way.
while read -r cmd; do
	# shellcheck disable=SC2086
	expect 1 "$KEEL" $cmd --known-at $old --store "$db"
	is_err "keel ${cmd%% *}: tenant \"acme\" not found as known at $old"
done <<'EOF'
show acme vehicle:V-1
history acme vehicle:V-1
why acme vehicle:V-1 status
stats --tenant acme
entities acme
search acme status in_service
dump --tenant acme
export --format ndjson --tenant acme
EOF

# A tenant that is there, with nothing that matches: an empty page, not an
# error; an entity it does not have: the entity is not found.
expect 0 "$KEEL" entities acme --kind nothing --store "$db"
contains out '"entities":[],"next":null}'
expect 0 "$KEEL" search acme status nothing --store "$db"
contains out '"subjects":[],"next":null}'
expect 1 "$KEEL" show acme vehicle:V-9 --store "$db"
is_err 'keel show: entity "vehicle:V-9" not found in tenant "acme"'

# The HTTP API: 404 with the same message from every read.
"$KEEL" serve --listen 127.0.0.1:0 --store "$db" --quiet 2>"$dir/serve.log" &
pid=$!
wait_port "$dir/serve.log"
url=http://127.0.0.1:$port/v1/tenants/nobody
for path in /entities/vehicle:V-1 /entities/vehicle:V-1/history \
	"/entities/vehicle:V-1/why?predicate=status" /stats /entities \
	"/search?predicate=status&value=in_service"; do
	code=$(curl -s -o "$dir/body" -w '%{http_code}' "$url$path")
	[ "$code" = 404 ] && [ "$(cat "$dir/body")" = '{"error":"tenant \"nobody\" not found"}' ] ||
		fail "GET $path: $code $(cat "$dir/body")"
done

finish
