/*
 * cartridge.c - each tenant's recorded cartridge (docs/cartridges.md, "The
 * recorded cartridge"): the table tenant_cartridges maps a tenant to the
 * hash of its cartridge, and cartridges holds each distinct cartridge once
 * under that hash (docs/store-sqlite.md, "Recorded cartridges"). Read once
 * per tenant an ingester meets and written once per new tenant: with many
 * tenants that is a statement per tenant, so they are kept prepared.
 */
#include "parts.h"

int keel_sqlite_cartridge_get(struct keel_store *bs, struct keel_str tenant,
			      struct keel_cartridge_record *out, struct keel_arena *hold)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->cartridge[KEEL_SCART_GET],
	    "SELECT c.name, c.version, t.hash, c.text, t.recorded_at FROM "
	    "tenant_cartridges AS t JOIN cartridges AS c ON c.hash = t.hash WHERE "
	    "t.tenant = ?");
	if (rc)
		return rc;
	sqlite3_stmt *st = s->cartridge[KEEL_SCART_GET];
	keel_sqlite_bind_str(s, st, 1, tenant);
	if ((rc = keel_sqlite_start(s, st)))
		return rc;
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		out->name = keel_arena_str(hold, keel_sqlite_col_str(st, 0));
		out->version = keel_arena_str(hold, keel_sqlite_col_str(st, 1));
		out->hash = keel_arena_str(hold, keel_sqlite_col_str(st, 2));
		out->text = keel_arena_str(hold, keel_sqlite_col_str(st, 3));
		out->recorded_at = sqlite3_column_int64(st, 4);
	}
	rc = keel_sqlite_finish(s, st, step);
	if (rc == 0 && step != SQLITE_ROW)
		rc = KEEL_ENOTFOUND;
	return rc;
}

int keel_sqlite_cartridge_put(struct keel_store *bs, const struct keel_str *tenants,
			      size_t n, const struct keel_cartridge_record *r, bool replace)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* The cartridge once: its hash determines the rest, so a row under
	 * the same hash is this cartridge already. */
	int rc = keel_sqlite_fixed_stmt(s, &s->cartridge[KEEL_SCART_PUT],
					"INSERT OR IGNORE INTO cartridges (hash, name, "
					"version, text) VALUES (?, ?, ?, ?)");
	if (rc)
		return rc;
	sqlite3_stmt *st = s->cartridge[KEEL_SCART_PUT];
	keel_sqlite_bind_str(s, st, 1, r->hash);
	keel_sqlite_bind_str(s, st, 2, r->name);
	keel_sqlite_bind_str(s, st, 3, r->version);
	keel_sqlite_bind_str(s, st, 4, r->text);
	if ((rc = keel_sqlite_run(s, st)))
		return rc;
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch, whose retry then sees it. */
	enum keel_sqlite_cartridge_stmt q = replace ? KEEL_SCART_REPLACE : KEEL_SCART_TENANT;
	rc = keel_sqlite_fixed_stmt(s, &s->cartridge[q],
				    replace ? "INSERT OR REPLACE INTO tenant_cartridges "
					      "(tenant, hash, recorded_at) VALUES (?, ?, ?)"
					    : "INSERT INTO tenant_cartridges (tenant, hash, "
					      "recorded_at) VALUES (?, ?, ?)");
	if (rc)
		return rc;
	/* A row a tenant: a statement's run costs SQLite a few
	 * microseconds, no round trip. */
	st = s->cartridge[q];
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_sqlite_bind_str(s, st, 1, tenants[i]);
		keel_sqlite_bind_str(s, st, 2, r->hash);
		keel_sqlite_bind_i64(s, st, 3, r->recorded_at);
		rc = keel_sqlite_run(s, st);
	}
	return rc;
}
