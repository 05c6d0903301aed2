/*
 * forget.c - keel forget on SQLite (docs/store-sqlite.md,
 * "Forgetting"): redacted envelopes written over the logged ones, the
 * tombstone, and no copy of the old bytes left in the files.
 *
 * The forget transaction runs with secure_delete on (the connection's own
 * setting back when it ends, committed or rolled back: store.c), so every
 * cell it
 * deletes or rewrites (the envelopes, the rebuilt rows, their index
 * entries) is overwritten with zeros in its page; after the commit a
 * TRUNCATE checkpoint copies the WAL into the database file and empties
 * it, so neither file holds the old pages.
 */
#include "parts.h"

int keel_sqlite_forget(struct keel_store *bs, struct keel_str tenant,
		       const struct keel_redaction *r, size_t n,
		       const struct keel_tombstone *t)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (!s->secure_delete) {
		/* the connection's own setting (Debian's SQLite has it on by
		 * default), restored when the transaction ends (store.c) */
		sqlite3_stmt *st;
		int rc = keel_sqlite_prepare(s, "PRAGMA secure_delete", 20, &st);
		if (rc)
			return rc;
		s->secure_delete_was =
		    sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
		sqlite3_finalize(st);
		if ((rc = keel_sqlite_exec(s, "PRAGMA secure_delete = ON")))
			return rc;
		s->secure_delete = true;
	}
	int rc;
	/* The hash columns (events, event_ids) keep the received envelope's
	 * hash: a redelivery is a plain duplicate. */
	static const char upd[] =
	    "UPDATE events SET envelope = ? WHERE seq = ? AND tenant = ?";
	sqlite3_stmt *st;
	if ((rc = keel_sqlite_prepare(s, upd, sizeof upd - 1, &st)))
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		keel_sqlite_bind_str(s, st, 1, r[i].envelope);
		keel_sqlite_bind_i64(s, st, 2, r[i].seq);
		keel_sqlite_bind_str(s, st, 3, tenant);
		rc = keel_sqlite_run(s, st);
		if (rc == 0 && sqlite3_changes(s->db) != 1)
			rc = keel_store_fail(bs, KEEL_ESTORE,
					     "sqlite \"%s\": no event %lld in the tenant",
					     s->path, (long long)r[i].seq);
	}
	sqlite3_finalize(st);
	if (rc || !t)
		return rc;
	static const char ins[] =
	    "INSERT INTO tombstones (tenant, subject_sha256, forgotten_at, "
	    "forgotten_by, events_redacted, rows_removed) VALUES (?, ?, ?, ?, ?, ?) "
	    "ON CONFLICT (tenant, subject_sha256) DO UPDATE SET "
	    "forgotten_at = excluded.forgotten_at, forgotten_by = excluded.forgotten_by, "
	    "events_redacted = excluded.events_redacted, "
	    "rows_removed = excluded.rows_removed";
	if ((rc = keel_sqlite_prepare(s, ins, sizeof ins - 1, &st)))
		return rc;
	keel_sqlite_bind_str(s, st, 1, t->tenant);
	keel_sqlite_bind_str(s, st, 2, keel_str_cstr(t->subject_hash));
	keel_sqlite_bind_i64(s, st, 3, t->forgotten_at);
	keel_sqlite_bind_str(s, st, 4, t->forgotten_by);
	keel_sqlite_bind_i64(s, st, 5, (int64_t)t->events);
	keel_sqlite_bind_i64(s, st, 6, (int64_t)t->rows);
	rc = keel_sqlite_run(s, st);
	sqlite3_finalize(st);
	return rc;
}

int keel_sqlite_tombstone(struct keel_store *bs, struct keel_str tenant,
			  const char *subject_hash, struct keel_tombstone *out,
			  struct keel_buf *buf)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	static const char q[] =
	    "SELECT forgotten_at, forgotten_by, events_redacted, rows_removed "
	    "FROM tombstones WHERE tenant = ? AND subject_sha256 = ?";
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, q, sizeof q - 1, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, keel_str_cstr(subject_hash));
	if ((rc = keel_sqlite_start(s, st))) {
		sqlite3_finalize(st);
		return rc;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		memset(out, 0, sizeof *out);
		out->tenant = tenant;
		snprintf(out->subject_hash, sizeof out->subject_hash, "%s", subject_hash);
		out->forgotten_at = sqlite3_column_int64(st, 0);
		keel_buf_reset(buf);
		struct keel_str by = keel_sqlite_col_str(st, 1);
		keel_buf_add(buf, by.ptr ? by.ptr : "", by.len);
		keel_buf_reserve(buf, 0);
		out->forgotten_by = keel_str_make(buf->data ? buf->data : "", by.len);
		out->events = (uint64_t)sqlite3_column_int64(st, 2);
		out->rows = (uint64_t)sqlite3_column_int64(st, 3);
		rc = 0;
	} else if (step == SQLITE_DONE) {
		rc = KEEL_ENOTFOUND;
	} else {
		rc = keel_sqlite_fail(s);
	}
	sqlite3_finalize(st);
	return rc;
}

int keel_sqlite_scrub(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* busy = 1: a reader kept the checkpoint from finishing, and the WAL
	 * may still hold old pages; say so rather than claim the bytes gone. */
	sqlite3_stmt *st;
	static const char ck[] = "PRAGMA wal_checkpoint(TRUNCATE)";
	int rc = keel_sqlite_prepare(s, ck, sizeof ck - 1, &st);
	if (rc)
		return rc;
	s->base.statements++;
	int step = sqlite3_step(st);
	int busy = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = keel_sqlite_fail(s);
	sqlite3_finalize(st);
	if (rc == 0 && busy)
		rc = keel_store_fail(bs, KEEL_ESTORE,
				     "sqlite \"%s\": the WAL checkpoint after forgetting "
				     "was blocked by a reader; run keel forget again or "
				     "close the readers",
				     s->path);
	return rc;
}
