/*
 * sqlite_find.c - the candidates of keel entities and keel search
 * (src/find.c confirms each): distinct subjects found by a skip-scan of
 * one index, one seek per subject however many rows it has.
 *
 *   entities:          entity_mentions_key (tenant, subject, ...)
 *   entities by kind:  entity_mentions_kind (tenant, kind, subject)
 *   search:            fact_rows_value (tenant, predicate, value, subject)
 *
 * Each next subject is "min(subject) ... AND subject > previous" under the
 * index's fixed leading columns, which SQLite answers with one seek
 * (docs/store-sqlite.md, "Finding").
 */
#include "sqlite_store.h"

/* Parameters: ?1 tenant, ?2 kind or predicate, ?3 value, ?4 the lower
 * bound, ?5 the upper bound, ?6 the limit. */
static void keel_sqlite_next_subject(struct keel_buf *b, bool fact, bool kind,
				     const char *lower, bool upper)
{
	keel_buf_addf(b, "(SELECT min(subject) FROM %s WHERE tenant = ?1",
		      fact ? "fact_rows" : "entity_mentions");
	if (fact)
		keel_buf_adds(b, " AND predicate = ?2 AND value = ?3");
	else if (kind)
		keel_buf_adds(b, " AND kind = ?2");
	if (lower)
		keel_buf_addf(b, " AND subject %s", lower);
	if (upper)
		keel_buf_adds(b, " AND subject < ?5");
	keel_buf_addc(b, ')');
}

/* The statement of q's candidates (for the benchmark's EXPLAIN too). */
void keel_sqlite_find_sql(struct keel_buf *b, bool fact, bool kind, bool lower,
			  bool lower_inclusive, bool upper)
{
	keel_buf_adds(b, "WITH RECURSIVE c(s) AS (SELECT ");
	keel_sqlite_next_subject(b, fact, kind,
				 !lower ? NULL : lower_inclusive ? ">= ?4" : "> ?4", upper);
	keel_buf_adds(b, " UNION ALL SELECT ");
	keel_sqlite_next_subject(b, fact, kind, "> c.s", upper);
	keel_buf_adds(b, " FROM c WHERE c.s IS NOT NULL LIMIT ?6) "
			 "SELECT s FROM c WHERE s IS NOT NULL");
}

static int keel_sqlite_candidates(struct keel_store *bs, const struct keel_candidates *q,
				  bool fact, struct keel_ptrvec *out)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	struct keel_str lo;
	bool lo_inclusive;
	struct keel_buf hi, sql;
	keel_buf_init(&hi);
	keel_buf_init(&sql);
	keel_candidates_range(q, &lo, &lo_inclusive, &hi);
	bool kind = !fact && q->kind.ptr;
	keel_sqlite_find_sql(&sql, fact, kind, lo.ptr != NULL, lo_inclusive, hi.len > 0);
	sqlite3_stmt *st;
	int rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	keel_buf_free(&sql);
	if (rc) {
		keel_buf_free(&hi);
		return rc;
	}
	keel_sqlite_bind_str(s, st, 1, q->tenant);
	if (fact) {
		keel_sqlite_bind_str(s, st, 2, q->predicate);
		keel_sqlite_bind_str(s, st, 3, q->value);
	} else if (kind) {
		keel_sqlite_bind_str(s, st, 2, q->kind);
	}
	if (lo.ptr)
		keel_sqlite_bind_str(s, st, 4, lo);
	if (hi.len)
		keel_sqlite_bind_str(s, st, 5, keel_str_make(hi.data, hi.len));
	/* One more than the subjects wanted: the terminating NULL row. */
	keel_sqlite_bind_i64(s, st, 6, (int64_t)q->limit + 1);
	if ((rc = keel_sqlite_start(s, st)) == 0) {
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct keel_str subject = keel_sqlite_col_str(st, 0);
			keel_ptrvec_push(out, keel_xstrndup(subject.ptr, subject.len));
		}
		rc = keel_sqlite_finish(s, st, rc);
	}
	sqlite3_finalize(st);
	keel_buf_free(&hi);
	return rc;
}

int keel_sqlite_entity_subjects(struct keel_store *bs, const struct keel_candidates *q,
				struct keel_ptrvec *out)
{
	return keel_sqlite_candidates(bs, q, false, out);
}

int keel_sqlite_fact_subjects(struct keel_store *bs, const struct keel_candidates *q,
			      struct keel_ptrvec *out)
{
	return keel_sqlite_candidates(bs, q, true, out);
}
