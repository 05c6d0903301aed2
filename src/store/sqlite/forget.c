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
 *
 * Forgetting without a rebuild (src/write/forget.c): the events that may
 * name the subject are found through the rows' indexes and one scan of
 * the tenant's envelopes by memmem() (keel_holds), in SQLite; the rows
 * naming it are deleted, and what current.c and spans.c derived from
 * them mended for the timelines touched.
 */
#include "parts.h"

#include <time.h>

/* The connection's secure_delete on for the rest of the transaction. */
static int keel_sqlite_secure(struct keel_sqlite_store *s)
{
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
	return 0;
}

int keel_sqlite_forget(struct keel_store *bs, struct keel_str tenant,
		       const struct keel_redaction *r, size_t n,
		       const struct keel_tombstone *t)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_secure(s);
	if (rc)
		return rc;
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

/* ----------------------------------------- forgetting without a rebuild */

/* The tenant's predicates that have string values, one seek each through
 * fact_rows_value (a skip-scan), as p(x): a fact naming the subject as its
 * value is then one seek per predicate, not a scan of the tenant's rows. */
#define KEEL_SQ_PREDICATES                                                              \
	"WITH RECURSIVE p(x) AS (SELECT (SELECT min(predicate) FROM fact_rows WHERE "   \
	"tenant = " KEEL_SQ_ID("?1") " AND string_value IS NOT NULL) UNION ALL SELECT " \
	"(SELECT min(predicate) FROM fact_rows WHERE tenant = " KEEL_SQ_ID("?1")        \
	" AND string_value IS NOT NULL "                                                \
	"AND predicate > p.x) FROM p WHERE p.x IS NOT NULL) "

/* The fact rows whose value is the subject (?3: as a JSON string). */
#define KEEL_SQ_VALUE_ROWS                                                              \
	"SELECT r.seq FROM p JOIN fact_rows AS r ON r.tenant = " KEEL_SQ_ID("?1")       \
	" AND r.predicate = "                                                           \
	"p.x AND r.string_value = ?3"

/* The event that asserted a row of table (alias r) of the tenant ?1. */
#define KEEL_SQ_ASSERTER(table, where)                                                  \
	"SELECT k.seq FROM " table " AS r JOIN event_ids AS k ON k.tenant = ?1 "        \
	"AND k.source = " KEEL_SQ_NAME("r.asserted_by_source") " AND k.id = "          \
	"r.asserted_by WHERE " where

/* keel_holds(text, needle): whether text holds needle's bytes, by
 * memmem (SQLite's instr() compares byte by byte, and counts characters
 * for its answer): the scan of a tenant's envelopes costs the reading of
 * them, not the search. Registered on Keel's own connection only. */
static void keel_sqlite_holds(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const void *text = sqlite3_value_blob(argv[0]);
	int n = sqlite3_value_bytes(argv[0]);
	const void *needle = sqlite3_value_blob(argv[1]);
	int k = sqlite3_value_bytes(argv[1]);
	sqlite3_result_int(ctx, text && needle && k > 0 && n >= k &&
				    memmem(text, (size_t)n, needle, (size_t)k) != NULL);
}

/* " type IN (?N, ...)": n parameters from *next on. */
static void keel_sqlite_types_in(struct keel_buf *b, size_t n, int *next)
{
	keel_buf_adds(b, "type IN (");
	for (size_t i = 0; i < n; i++)
		keel_buf_addf(b, "%s?%d", i ? ", " : "", (*next)++);
	keel_buf_addc(b, ')');
}

int keel_sqlite_forget_find(struct keel_store *bs, struct keel_str tenant,
			    const struct keel_forget_find *f, keel_scan_fn fn, void *ud)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* The envelopes are read once, by keel_holds() in SQLite: a hit holds
	 * the subject's bytes or a backslash (an escape may spell them), or
	 * is of a type f names within the subject's span; the caller parses
	 * only those. */
	static const char head[] =
	    KEEL_SQ_PREDICATES ", hits(seq) AS ("
	    KEEL_SQ_ASSERTER("fact_rows", "r.tenant = " KEEL_SQ_ID("?1") " AND r.subject = ?2")
	    " UNION " KEEL_SQ_ASSERTER("fact_rows", "r.seq IN (" KEEL_SQ_VALUE_ROWS ")")
	    " UNION " KEEL_SQ_ASSERTER("relation_rows", "r.tenant = " KEEL_SQ_ID("?1") " AND r.subject = ?2")
	    " UNION " KEEL_SQ_ASSERTER("relation_rows", "r.tenant = " KEEL_SQ_ID("?1") " AND r.object = ?2")
	    " UNION SELECT seq FROM events WHERE tenant = ?1 AND (keel_holds(envelope, ?2) "
	    "OR keel_holds(envelope, '\\')";
	static const char tail[] =
	    ")) SELECT tenant, id, type, time, envelope, hash, seq, recorded_at, source FROM "
	    "events WHERE seq IN hits ORDER BY seq";
	if (sqlite3_create_function_v2(s->db, "keel_holds", 2,
				       SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
				       NULL, keel_sqlite_holds, NULL, NULL, NULL) != SQLITE_OK)
		return keel_sqlite_fail(s);
	struct keel_buf q;
	keel_buf_init(&q);
	keel_buf_adds(&q, head);
	int next = 6;
	if (f->nalways || f->nredacted) {
		keel_buf_adds(&q, " OR (time BETWEEN ?4 AND ?5 AND (");
		if (f->nalways)
			keel_sqlite_types_in(&q, f->nalways, &next);
		if (f->nalways && f->nredacted)
			keel_buf_adds(&q, " OR ");
		if (f->nredacted) {
			keel_buf_addc(&q, '(');
			keel_sqlite_types_in(&q, f->nredacted, &next);
			keel_buf_adds(&q, " AND keel_holds(envelope, 'keelredacted'))");
		}
		keel_buf_adds(&q, "))");
	}
	keel_buf_adds(&q, tail);
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, q.data, q.len, &st);
	keel_buf_free(&q);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, f->subject);
	keel_sqlite_bind_str(s, st, 3, f->quoted);
	if (f->nalways || f->nredacted) {
		keel_sqlite_bind_i64(s, st, 4, f->from);
		keel_sqlite_bind_i64(s, st, 5, f->to);
		next = 6;
		for (size_t i = 0; i < f->nalways; i++)
			keel_sqlite_bind_str(s, st, next++, f->always[i]);
		for (size_t i = 0; i < f->nredacted; i++)
			keel_sqlite_bind_str(s, st, next++, f->redacted[i]);
	}
	if ((rc = keel_sqlite_start(s, st))) {
		sqlite3_finalize(st);
		return rc;
	}
	int step, stop = 0;
	while (!stop && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct keel_record r = {.type = KEEL_REC_EVENT,
					.tenant = keel_sqlite_col_str(st, 0),
					.id = keel_sqlite_col_str(st, 1),
					.event_type = keel_sqlite_col_str(st, 2),
					.time = sqlite3_column_int64(st, 3),
					.envelope = keel_sqlite_col_str(st, 4),
					.hash = (uint64_t)sqlite3_column_int64(st, 5),
					.seq = sqlite3_column_int64(st, 6),
					.recorded_at = sqlite3_column_int64(st, 7),
					.source = keel_sqlite_col_str(st, 8),
					.valid_to = KEEL_TIME_INF};
		stop = fn(ud, &r);
	}
	rc = stop ? 0 : keel_sqlite_finish(s, st, step);
	sqlite3_finalize(st);
	return rc ? rc : stop;
}

/* Runs sql with ?1 tenant, ?2 subject, ?3 quoted and, when given, ?4 and
 * ?5; adds the rows it changed to *changed (if not NULL). */
static int keel_sqlite_forget_run(struct keel_sqlite_store *s, const char *sql,
				  struct keel_str tenant, struct keel_str subject,
				  struct keel_str quoted, const int64_t *more, int nmore,
				  uint64_t *changed)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, sql, strlen(sql), &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, subject);
	if (sqlite3_bind_parameter_count(st) >= 3)
		keel_sqlite_bind_str(s, st, 3, quoted);
	for (int i = 0; i < nmore; i++)
		keel_sqlite_bind_i64(s, st, 4 + i, more[i]);
	rc = keel_sqlite_run(s, st);
	if (rc == 0 && changed)
		*changed += (uint64_t)sqlite3_changes(s->db);
	sqlite3_finalize(st);
	return rc;
}

/* Another subject's fact timeline that lost a row (its value was the
 * subject): its current row and spans are folded again. */
struct keel_sqlite_touched {
	struct keel_buf subject, predicate;
};

/* INDEXED BY: left to itself, SQLite's planner reads every fact row of
 * the tenant through fact_rows_key here (11 s on a million events) rather
 * than seek each predicate's value. */
static int keel_sqlite_touched(struct keel_sqlite_store *s, struct keel_str tenant,
			       struct keel_str subject, struct keel_str quoted,
			       struct keel_sqlite_touched **out, size_t *n)
{
	static const char q[] = KEEL_SQ_PREDICATES
	    "SELECT DISTINCT r.subject, " KEEL_SQ_NAME("r.predicate") " FROM p JOIN "
	    "fact_rows AS r INDEXED BY fact_rows_value ON r.tenant = " KEEL_SQ_ID("?1")
	    " AND r.predicate = p.x AND r.string_value = ?3 WHERE "
	    "r.subject <> ?2";
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, q, sizeof q - 1, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, st, 1, tenant);
	keel_sqlite_bind_str(s, st, 2, subject);
	keel_sqlite_bind_str(s, st, 3, quoted);
	size_t cap = 0;
	int step;
	if ((rc = keel_sqlite_start(s, st)) == 0) {
		while ((step = sqlite3_step(st)) == SQLITE_ROW) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*out = keel_xrealloc(*out, cap * sizeof **out);
			}
			struct keel_sqlite_touched *t = &(*out)[(*n)++];
			keel_buf_init(&t->subject);
			keel_buf_init(&t->predicate);
			struct keel_str a = keel_sqlite_col_str(st, 0), b = keel_sqlite_col_str(st, 1);
			keel_buf_add(&t->subject, a.ptr, a.len);
			keel_buf_add(&t->predicate, b.ptr, b.len);
		}
		rc = keel_sqlite_finish(s, st, step);
	}
	sqlite3_finalize(st);
	return rc;
}

/* A touched timeline's current row: the latest of its rows folded
 * (seq <= the watermark) that current.c keeps, as a fold would leave it. */
static int keel_sqlite_current_redo(struct keel_sqlite_store *s, struct keel_str tenant,
				    struct keel_str subject, struct keel_str predicate,
				    int64_t mark)
{
	static const char *const sql[] = {
	    "DELETE FROM fact_current WHERE tenant = ?1 AND subject = ?2 AND predicate = ?3",
	    "INSERT INTO fact_current (tenant, subject, predicate, value, valid_from, "
	    "recorded_at, seq) SELECT ?1, subject, ?3, value, valid_from, "
	    "recorded_at, seq FROM fact_rows INDEXED BY fact_rows_key WHERE tenant = "
	    KEEL_SQ_ID("?1") " AND subject = ?2 AND predicate = " KEEL_SQ_ID("?3")
	    " AND seq <= ?4 AND (value IS NULL OR "
	    "substr(value, 1, 1) = '\"' OR value IN ('true', 'false') OR value NOT GLOB "
	    "'*[^0-9-]*') ORDER BY valid_from DESC, recorded_at DESC, seq DESC LIMIT 1"};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(sql); i++)
		rc = keel_sqlite_forget_run(s, sql[i], tenant, subject, predicate, &mark, (int)i,
					    NULL);
	return rc;
}

int keel_sqlite_forget_rows(struct keel_store *bs, struct keel_str tenant,
			    struct keel_str subject, struct keel_str quoted,
			    const struct keel_mention_fix *fix, size_t n, uint64_t *removed)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_secure(s);
	if (rc)
		return rc;
	s->sp.deleted = true;
	struct keel_sqlite_touched *touched = NULL;
	size_t ntouched = 0;
	int64_t mark = 0;
	sqlite3_stmt *st;
	if ((rc = keel_sqlite_touched(s, tenant, subject, quoted, &touched, &ntouched)))
		goto done;
	static const char get_mark[] =
	    "SELECT value FROM meta WHERE key = 'fact_current_seq'";
	if ((rc = keel_sqlite_prepare(s, get_mark, sizeof get_mark - 1, &st)))
		goto done;
	rc = keel_sqlite_ints(s, st, NULL, &mark, 1);
	sqlite3_finalize(st);
	/* The spans first (found through the rows), then the rows, the
	 * subject's current rows and mentions. */
	static const char *const drops[] = {
	    KEEL_SQ_PREDICATES "DELETE FROM fact_spans WHERE seq IN (SELECT seq FROM "
	    "fact_rows WHERE tenant = " KEEL_SQ_ID("?1") " AND subject = ?2 UNION "
	    KEEL_SQ_VALUE_ROWS ")",
	    "DELETE FROM fact_rows WHERE tenant = " KEEL_SQ_ID("?1") " AND subject = ?2",
	    KEEL_SQ_PREDICATES "DELETE FROM fact_rows WHERE seq IN (" KEEL_SQ_VALUE_ROWS ")",
	    "DELETE FROM relation_rows WHERE tenant = " KEEL_SQ_ID("?1") " AND subject = ?2",
	    "DELETE FROM relation_rows WHERE tenant = " KEEL_SQ_ID("?1") " AND object = ?2",
	};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(drops); i++)
		rc = keel_sqlite_forget_run(s, drops[i], tenant, subject, quoted, NULL, 0,
					    i ? removed : NULL);
	static const char *const gone[] = {
	    "DELETE FROM entity_mentions WHERE tenant = ?1 AND subject = ?2",
	    "DELETE FROM fact_current WHERE tenant = ?1 AND subject = ?2",
	};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(gone); i++)
		rc = keel_sqlite_forget_run(s, gone[i], tenant, subject, quoted, NULL, 0, NULL);
	/* The other timelines that lost a row: what a fold of their rows
	 * gives. Their horizons stay: a horizon above a predicate's latest
	 * row only sends a search at a time below it to the history. */
	for (size_t i = 0; rc == 0 && i < ntouched; i++) {
		struct keel_str t = keel_str_make(touched[i].subject.data, touched[i].subject.len);
		struct keel_str p =
		    keel_str_make(touched[i].predicate.data, touched[i].predicate.len);
		rc = keel_sqlite_current_redo(s, tenant, t, p, mark);
		if (rc == 0)
			rc = keel_sqlite_spans_redo(s, tenant, t, p, mark);
	}
	if (rc == 0 && (rc = keel_sqlite_current_stmt(s, KEEL_SC_LOWER, &st)) == 0)
		rc = keel_sqlite_run(s, st);
	/* The other entities' mentions the forgotten operations made. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int64_t v[3] = {fix[i].recorded_at, fix[i].first_seen, fix[i].last_seen};
		rc = keel_sqlite_forget_run(
		    s,
		    fix[i].gone ? "DELETE FROM entity_mentions WHERE tenant = ?1 AND subject = "
				  "?2 AND recorded_at = ?4"
				: "UPDATE entity_mentions SET first_seen = ?5, last_seen = ?6 "
				  "WHERE tenant = ?1 AND subject = ?2 AND recorded_at = ?4",
		    tenant, fix[i].subject, KEEL_STR_NULL, v, fix[i].gone ? 1 : 3, NULL);
	}
done:
	for (size_t i = 0; i < ntouched; i++) {
		keel_buf_free(&touched[i].subject);
		keel_buf_free(&touched[i].predicate);
	}
	free(touched);
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
	 * may still hold old pages; say so rather than claim the bytes gone.
	 * The handle's own background checkpointer (checkpoint.c) holds the
	 * checkpoint for a moment every 10 ms, which SQLite answers with
	 * busy at once: asked again for a second before giving up. */
	sqlite3_stmt *st;
	static const char ck[] = "PRAGMA wal_checkpoint(TRUNCATE)";
	int rc = keel_sqlite_prepare(s, ck, sizeof ck - 1, &st);
	if (rc)
		return rc;
	int busy = 1;
	for (int tries = 0; rc == 0 && busy && tries < 100; tries++) {
		if (tries) {
			struct timespec pause = {0, 10 * 1000 * 1000};
			nanosleep(&pause, NULL);
		}
		s->base.statements++;
		int step = sqlite3_step(st);
		busy = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
		if (step != SQLITE_ROW && step != SQLITE_DONE)
			rc = keel_sqlite_fail(s);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc == 0 && busy)
		rc = keel_store_fail(bs, KEEL_ESTORE,
				     "sqlite \"%s\": the WAL checkpoint after forgetting "
				     "was blocked by a reader; run keel forget again or "
				     "close the readers",
				     s->path);
	return rc;
}
