/*
 * cartridge.c - each tenant's recorded cartridge, the table
 * tenant_cartridges (docs/cartridges.md, "The recorded cartridge"). Read
 * once per tenant an ingester meets and written once per tenant, so the
 * statements are prepared on use rather than kept.
 */
#include "parts.h"

int keel_sqlite_cartridge_get(struct keel_store *bs, struct keel_str tenant,
			      struct keel_cartridge_record *out, struct keel_arena *hold)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	static const char sql[] = "SELECT name, version, hash, text, recorded_at FROM "
				  "tenant_cartridges WHERE tenant = ?";
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, sql, sizeof sql - 1, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	if ((rc = keel_sqlite_start(s, st))) {
		sqlite3_finalize(st);
		return rc;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		out->name = keel_arena_str(hold, keel_sqlite_col_str(st, 0));
		out->version = keel_arena_str(hold, keel_sqlite_col_str(st, 1));
		out->hash = keel_arena_str(hold, keel_sqlite_col_str(st, 2));
		out->text = keel_arena_str(hold, keel_sqlite_col_str(st, 3));
		out->recorded_at = sqlite3_column_int64(st, 4);
	}
	rc = keel_sqlite_finish(s, st, step);
	sqlite3_finalize(st);
	if (rc == 0 && step != SQLITE_ROW)
		rc = KEEL_ENOTFOUND;
	return rc;
}

int keel_sqlite_cartridge_put(struct keel_store *bs, struct keel_str tenant,
			      const struct keel_cartridge_record *r, bool replace)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* Without replace a plain INSERT: a record another writer made since
	 * this one looked fails the batch, whose retry then sees it. */
	static const char insert[] =
	    "INSERT INTO tenant_cartridges (tenant, name, version, hash, text, "
	    "recorded_at) VALUES (?, ?, ?, ?, ?, ?)";
	static const char upsert[] =
	    "INSERT OR REPLACE INTO tenant_cartridges (tenant, name, version, hash, "
	    "text, recorded_at) VALUES (?, ?, ?, ?, ?, ?)";
	const char *sql = replace ? upsert : insert;
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, sql, strlen(sql), &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, r->name);
	keel_sqlite_bind_str(s, st, 3, r->version);
	keel_sqlite_bind_str(s, st, 4, r->hash);
	keel_sqlite_bind_str(s, st, 5, r->text);
	keel_sqlite_bind_i64(s, st, 6, r->recorded_at);
	rc = keel_sqlite_run(s, st);
	sqlite3_finalize(st);
	return rc;
}
