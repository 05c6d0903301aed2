# tenants_migrated.sh - tenants_migrated URL: the store at URL was made by
# the Keel that kept each tenant's cartridge text in the tenant's own row
# (tests/data/migrate/make-tenants.sh: 40 tenants, tenant-00 to tenant-19
# with the built-in fleet, the others with tenants-fleet-2.json) and has
# just been migrated by the caller, which checks its tables. Here, through
# the CLI alone: its dump is the old Keel's byte for byte; keel tenants
# lists the forty; without --cartridge each tenant's new events run its
# remembered cartridge, so the store then dumps as a store this Keel made
# from the same inputs; another cartridge is refused naming the recorded
# one; a replay with the recorded cartridge changes nothing, and one that
# changes the cartridge is remembered. Needs $KEEL, $dir and fail (from
# scratch.sh or lib.sh), and $data, the directory tests/data/migrate.
tenants_migrated() {
	local url=$1 out
	"$KEEL" dump --store "$url" --output "$dir/tm.dump" || fail "keel dump of the migrated store"
	cmp -s "$dir/tm.dump" "$data/tenants.dump" ||
		fail "the migrated many-tenant store does not dump as the old Keel's tenants.dump"
	out=$("$KEEL" tenants --store "$url" --json --limit 100) || fail "keel tenants"
	[ "$out" = "{\"tenants\":[$(printf '"tenant-%02d",' $(seq 0 38))\"tenant-39\"],\"next\":null}" ] ||
		fail "keel tenants of the migrated store: $out"

	# The next 400 events of the same stream (the generator's first lines
	# are the shorter stream's), every tenant's cartridge remembered.
	"$KEEL" generate fleet --events 800 --tenants 40 --seed 7 --output "$dir/tm-all.ndjson"
	head -n 400 "$dir/tm-all.ndjson" >"$dir/tm-first.ndjson"
	tail -n 400 "$dir/tm-all.ndjson" >"$dir/tm-more.ndjson"
	"$KEEL" ingest --store "$url" "$dir/tm-more.ndjson" 2>"$dir/tm.err" ||
		fail "the remembered cartridges: $(cat "$dir/tm.err")"
	grep -qF "accepted 400, duplicates 0 (conflicting 0), unhandled 0, rejected 0" "$dir/tm.err" ||
		fail "the remembered cartridges: $(cat "$dir/tm.err")"
	# the same inputs into a store this Keel makes
	local fresh=sqlite:$dir/tm-fresh.db
	grep -E '"tenant":"tenant-[01][0-9]"' "$dir/tm-first.ndjson" >"$dir/tm-a.ndjson"
	grep -vE '"tenant":"tenant-[01][0-9]"' "$dir/tm-first.ndjson" >"$dir/tm-b.ndjson"
	"$KEEL" ingest --quiet --cartridge fleet --store "$fresh" "$dir/tm-a.ndjson"
	"$KEEL" ingest --quiet --cartridge "$data/tenants-fleet-2.json" --store "$fresh" "$dir/tm-b.ndjson"
	"$KEEL" ingest --quiet --store "$fresh" "$dir/tm-more.ndjson"
	"$KEEL" dump --store "$fresh" --output "$dir/tm-fresh.dump"
	"$KEEL" dump --store "$url" --output "$dir/tm2.dump"
	cmp -s "$dir/tm2.dump" "$dir/tm-fresh.dump" ||
		fail "the migrated store and new events differ from a new store of the same inputs"
	cmp -s "$dir/tm2.dump" "$dir/tm.dump" && fail "the new events changed nothing"

	# Another cartridge is refused, naming the recorded one.
	grep '"tenant":"tenant-25"' "$dir/tm-more.ndjson" | sed 's/"id":"ev-/"id":"tm-/' >"$dir/tm-25.ndjson"
	if "$KEEL" ingest --store "$url" --cartridge fleet "$dir/tm-25.ndjson" 2>"$dir/tm.err"; then
		fail "tenant-25 took the fleet cartridge"
	fi
	grep -qF 'tenant "tenant-25" is recorded with cartridge fleet 2 (sha256:' "$dir/tm.err" ||
		fail "the refusal does not name the recorded cartridge: $(cat "$dir/tm.err")"

	# Replays: with the recorded cartridge, nothing changes; with another
	# (--change-cartridge), it is remembered from then on.
	"$KEEL" replay --tenant tenant-25 --store "$url" >/dev/null 2>"$dir/tm.err" ||
		fail "keel replay with the remembered cartridge: $(cat "$dir/tm.err")"
	"$KEEL" replay --tenant tenant-25 --store "$url" --cartridge fleet --change-cartridge \
		>/dev/null 2>"$dir/tm.err" || fail "keel replay --change-cartridge: $(cat "$dir/tm.err")"
	"$KEEL" dump --store "$url" --output "$dir/tm3.dump"
	cmp -s "$dir/tm3.dump" "$dir/tm2.dump" || fail "the replays of tenant-25 changed its rows"
	"$KEEL" ingest --store "$url" --cartridge fleet "$dir/tm-25.ndjson" 2>"$dir/tm.err" ||
		fail "tenant-25 after --change-cartridge: $(cat "$dir/tm.err")"
	if "$KEEL" ingest --store "$url" --cartridge "$data/tenants-fleet-2.json" "$dir/tm-25.ndjson" \
		2>"$dir/tm.err"; then
		fail "tenant-25 still took its old cartridge"
	fi
	grep -qF 'tenant "tenant-25" is recorded with cartridge fleet 1 (sha256:' "$dir/tm.err" ||
		fail "the changed cartridge is not the recorded one: $(cat "$dir/tm.err")"
}
