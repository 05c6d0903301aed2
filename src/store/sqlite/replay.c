/*
 * replay.c - replacing a tenant's rows in one transaction (keel
 * replay, keel ingest --replay) with prepared multi-row inserts.
 */
#include "parts.h"

/* ------------------------------------------- replay (docs/replay.md) */

/* Deletes the tenant's rows of one table. When no other tenant has rows
 * there, a DELETE without WHERE takes SQLite's truncate optimization
 * (pages dropped whole instead of row by row); both forms are one
 * statement inside the open transaction, so a rollback restores either. */
static int keel_sqlite_delete_tenant(struct keel_sqlite_store *s, const char *table,
				     struct keel_str tenant)
{
	/* the fact and relation rows name the tenant by id (0 when the
	 * store has no such name: then no row is the tenant's, and the
	 * others are every row) */
	const char *key = strcmp(table, "entity_mentions") ? KEEL_SQ_ID("?1") : "?1";
	struct keel_buf sql;
	keel_buf_init(&sql);
	keel_buf_addf(&sql,
		      "SELECT EXISTS (SELECT 1 FROM %s WHERE tenant < %s) OR "
		      "EXISTS (SELECT 1 FROM %s WHERE tenant > %s)",
		      table, key, table, key);
	sqlite3_stmt *st = NULL;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	bool others = true;
	if (rc == 0) {
		keel_sqlite_bind_str(s, st, 1, tenant);
		if ((rc = keel_sqlite_start(s, st)) == 0) {
			int step = sqlite3_step(st);
			if (step == SQLITE_ROW)
				others = sqlite3_column_int(st, 0) != 0;
			rc = keel_sqlite_finish(s, st, step);
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	keel_buf_reset(&sql);
	if (others)
		keel_buf_addf(&sql, "DELETE FROM %s WHERE tenant = %s", table, key);
	else
		keel_buf_addf(&sql, "DELETE FROM %s", table);
	if (rc == 0)
		rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	if (rc == 0) {
		if (others)
			keel_sqlite_bind_str(s, st, 1, tenant);
		rc = keel_sqlite_run(s, st);
		sqlite3_finalize(st);
	}
	keel_buf_free(&sql);
	return rc;
}

/* Deletes the tenant's rows of one predicate or relation (a replay that
 * changed only some of them). */
static int keel_sqlite_delete_named(struct keel_sqlite_store *s, const char *table,
				    const char *column, struct keel_str tenant,
				    struct keel_str name)
{
	struct keel_buf sql;
	keel_buf_init(&sql);
	keel_buf_addf(&sql,
		      "DELETE FROM %s WHERE tenant = " KEEL_SQ_ID("?1") " AND %s = " KEEL_SQ_ID(
			  "?2"),
		      table, column);
	sqlite3_stmt *st = NULL;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	if (rc == 0) {
		keel_sqlite_bind_str(s, st, 1, tenant);
		keel_sqlite_bind_str(s, st, 2, name);
		rc = keel_sqlite_run(s, st);
		sqlite3_finalize(st);
	}
	keel_buf_free(&sql);
	return rc;
}

/* The tenant's rows that scope covers (NULL: all of them). */
static int keel_sqlite_delete_rows(struct keel_sqlite_store *s, struct keel_str tenant,
				   const struct keel_replace_scope *scope)
{
	if (!scope) {
		int rc;
		if ((rc = keel_sqlite_delete_tenant(s, "entity_mentions", tenant)) ||
		    (rc = keel_sqlite_delete_tenant(s, "fact_rows", tenant)))
			return rc;
		return keel_sqlite_delete_tenant(s, "relation_rows", tenant);
	}
	int rc =
	    scope->entities ? keel_sqlite_delete_tenant(s, "entity_mentions", tenant) : 0;
	for (size_t i = 0; rc == 0 && i < scope->nnames[KEEL_ROW_FACT]; i++)
		rc = keel_sqlite_delete_named(s, "fact_rows", "predicate", tenant,
					      scope->names[KEEL_ROW_FACT][i]);
	for (size_t i = 0; rc == 0 && i < scope->nnames[KEEL_ROW_RELATION]; i++)
		rc = keel_sqlite_delete_named(s, "relation_rows", "relation", tenant,
					      scope->names[KEEL_ROW_RELATION][i]);
	return rc;
}

/* The spans folded from the rows (found through the rows), the rows,
 * then the current rows folded from them and the watermark below the
 * seqs the next rows may take (current.c, spans.c). */
static int keel_sqlite_delete_scope(struct keel_sqlite_store *s, struct keel_str tenant,
				    const struct keel_replace_scope *scope)
{
	int rc = keel_sqlite_spans_drop(s, tenant, scope);
	if (rc == 0)
		rc = keel_sqlite_delete_rows(s, tenant, scope);
	return rc ? rc : keel_sqlite_current_drop(s, tenant, scope);
}

/* BEGIN IMMEDIATE has held the write lock since the replay read the log,
 * so log_events cannot have changed. The rows arrive in arrival order
 * with the recorded_at they had, and are numbered after every row the
 * store holds, so each timeline keeps its (valid_from, arrival) order and
 * what it was known at any moment. */
int keel_sqlite_replace_tenant(struct keel_store *bs, struct keel_str tenant,
			       const struct keel_replace_scope *scope,
			       const struct keel_append *a, uint64_t log_events,
			       struct keel_buf *note)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	(void)log_events;
	int rc = 0;
	if (!scope || !scope->more) {
		s->sp.deleted = true;
		rc = keel_sqlite_delete_scope(s, tenant, scope);
	}
	if (rc)
		return rc;
	rc = keel_sqlite_append(bs, a);
	if (rc == 0)
		keel_buf_adds(note,
			      "sqlite: prepared multi-row INSERTs in one transaction");
	return rc;
}
