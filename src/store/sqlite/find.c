/*
 * find.c - the candidates of keel entities and keel search
 * (src/read/find.c confirms each): distinct subjects found by a skip-scan of
 * one index, one seek per subject however many rows it has.
 *
 *   entities:          entity_mentions_key (tenant, subject, ...)
 *   entities by kind:  entity_mentions_kind (tenant, kind, subject)
 *   search, a string:  fact_rows_value (tenant, predicate, string_value,
 *                      subject), which holds only the facts whose value is
 *                      a string (string_value, a virtual column)
 *   search, any other value (a number, an object, true): every subject of
 *                      the tenant that has facts, through fact_rows_key
 *   search at the present: fact_current_value (tenant, predicate, value,
 *                      subject), the current rows (current.c), for
 *                      a string, an integer, true or false, when the
 *                      search is not as known at a moment and reads at or
 *                      after the predicate's horizon, once this handle
 *                      has folded every row: exactly the subjects that
 *                      hold the value, a plain range of the index
 *   search in the past: fact_spans (spans.c), the same values and
 *                      conditions but a time before the horizon: the
 *                      spans that hold the time, then their rows by seq,
 *                      sorted by subject
 *
 * Each next subject is "min(subject) ... AND subject > previous" under the
 * index's fixed leading columns, which SQLite answers with one seek; the
 * index is named (INDEXED BY): without statistics SQLite would rather
 * range over fact_rows_key's subjects than use a partial index
 * (docs/store-sqlite.md, "Finding"). A search's candidate is kept only
 * when its row at the time holds the value (one more seek, in
 * fact_rows_key), so that a value many subjects once held costs two seeks
 * a subject, not a read.
 */
#include "parts.h"

/* Parameters: ?1 tenant, ?2 kind or predicate, ?3 value, ?4 the lower
 * bound, ?5 the upper bound, ?6 the limit, ?7 at, ?8 known_at. */
static void keel_sqlite_next_subject(struct keel_buf *b, enum keel_sqlite_find what,
				     const char *lower, bool upper)
{
	switch (what) {
	case KEEL_SQLITE_FIND_ENTITIES:
		keel_buf_adds(b, "(SELECT min(subject) FROM entity_mentions INDEXED BY "
				 "entity_mentions_key WHERE tenant = ?1");
		break;
	case KEEL_SQLITE_FIND_KIND:
		keel_buf_adds(b, "(SELECT min(subject) FROM entity_mentions INDEXED BY "
				 "entity_mentions_kind WHERE tenant = ?1 AND kind = ?2");
		break;
	case KEEL_SQLITE_FIND_STRING:
		keel_buf_adds(b, "(SELECT min(subject) FROM fact_rows INDEXED BY "
				 "fact_rows_value WHERE tenant = " KEEL_SQ_ID("?1") " AND predicate = "
				 KEEL_SQ_ID("?2") " AND "
				 "string_value = ?3");
		break;
	case KEEL_SQLITE_FIND_CURRENT: /* not a skip-scan (keel_sqlite_find_sql) */
	case KEEL_SQLITE_FIND_SPANS:
	case KEEL_SQLITE_FIND_VALUE:
		/* every subject that has a fact: fact_rows_key's first column
		 * after the tenant */
		keel_buf_adds(b, "(SELECT min(subject) FROM fact_rows INDEXED BY "
				 "fact_rows_key WHERE tenant = " KEEL_SQ_ID("?1"));
		break;
	}
	if (lower)
		keel_buf_addf(b, " AND subject %s", lower);
	if (upper)
		keel_buf_adds(b, " AND subject < ?5");
	keel_buf_addc(b, ')');
}

/* " AND " the row of the candidate's timeline at ?7 (as known at ?8)
 * holds the value ?3: the last beginning at or before it in (valid_from,
 * arrival) order, one seek backwards in fact_rows_key (the row show --at
 * reads). */
static void keel_sqlite_holds(struct keel_buf *b, bool known_at)
{
	keel_buf_adds(b, " AND (SELECT value FROM fact_rows INDEXED BY fact_rows_key "
			 "WHERE tenant = " KEEL_SQ_ID("?1") " AND subject = c.s AND predicate = "
			 KEEL_SQ_ID("?2") " AND "
			 "valid_from <= ?7");
	if (known_at)
		keel_buf_adds(b, " AND recorded_at <= ?8");
	keel_buf_adds(b, " ORDER BY valid_from DESC, recorded_at DESC, seq DESC "
			 "LIMIT 1) = ?3");
}

static void keel_sqlite_subject_range(struct keel_buf *b, const char *subject, bool lower,
				      bool lower_inclusive, bool upper)
{
	if (lower)
		keel_buf_addf(b, " AND %s %s ?4", subject, lower_inclusive ? ">=" : ">");
	if (upper)
		keel_buf_addf(b, " AND %s < ?5", subject);
}

void keel_sqlite_find_sql(struct keel_buf *b, enum keel_sqlite_find what, bool lower,
			  bool lower_inclusive, bool upper, bool known_at)
{
	if (what == KEEL_SQLITE_FIND_CURRENT) {
		/* one row a subject: a plain range of the index */
		keel_buf_adds(b, "SELECT subject FROM fact_current INDEXED BY "
				 "fact_current_value WHERE tenant = ?1 AND predicate = ?2 "
				 "AND value = ?3");
		keel_sqlite_subject_range(b, "subject", lower, lower_inclusive, upper);
		keel_buf_adds(b, " ORDER BY subject LIMIT ?6");
		return;
	}
	if (what == KEEL_SQLITE_FIND_SPANS) {
		/* The spans under the value's key ?9 that hold ?7 (the R*Tree
		 * first: CROSS JOIN keeps that order) and their rows of the
		 * value, sorted, since a stabbing query has no order. Nearly
		 * every one holds the value at ?7 (spans.c): src/read/find.c's
		 * read of the page's candidates is the only check. valid_to >=
		 * ?7, not >: the R*Tree reads ?7 as a double, which steps by
		 * more than a microsecond beyond 2^53 (spans.c). */
		keel_buf_adds(b, "SELECT DISTINCT r.subject FROM fact_spans AS p CROSS JOIN "
				 "fact_rows AS r WHERE p.key_lo <= ?9 AND p.key_hi >= ?9 AND "
				 "p.valid_from <= ?7 AND p.valid_to >= ?7 AND r.seq = p.seq AND "
				 "r.tenant = " KEEL_SQ_ID("?1") " AND r.predicate = " KEEL_SQ_ID("?2")
				 " AND r.value = ?3");
		keel_sqlite_subject_range(b, "r.subject", lower, lower_inclusive, upper);
		keel_buf_adds(b, " ORDER BY r.subject LIMIT ?6");
		return;
	}
	keel_buf_adds(b, "WITH RECURSIVE c(s) AS (SELECT ");
	keel_sqlite_next_subject(b, what,
				 !lower ? NULL : lower_inclusive ? ">= ?4" : "> ?4", upper);
	keel_buf_adds(b, " UNION ALL SELECT ");
	keel_sqlite_next_subject(b, what, "> c.s", upper);
	keel_buf_adds(b, " FROM c WHERE c.s IS NOT NULL) SELECT s FROM c WHERE s IS NOT NULL");
	if (what == KEEL_SQLITE_FIND_STRING || what == KEEL_SQLITE_FIND_VALUE)
		keel_sqlite_holds(b, known_at);
	keel_buf_adds(b, " LIMIT ?6");
}

/* A search the folded rows answer turns *what into
 * KEEL_SQLITE_FIND_CURRENT or KEEL_SQLITE_FIND_SPANS: a value of the
 * kinds they hold, not as known at a moment, every row folded (folded
 * here if need be: current.c). At or after the predicate's horizon
 * (every timeline's latest row began by then; no horizon: no row) the
 * current rows answer, before it the spans (spans.c) unless more
 * than KEEL_SQLITE_SPANS_MOST subjects held the value then: every page
 * sorts all the spans that hold the time, where the walk stops at a
 * page's worth of holders and many holders make it short. */
static int keel_sqlite_folded(struct keel_sqlite_store *s, const struct keel_candidates *q,
			      enum keel_sqlite_find *what)
{
	if (q->known_at_set || !keel_sqlite_searchable(q->value))
		return 0;
	bool ready, found;
	int64_t horizon = 0;
	int rc = keel_sqlite_fold(s, &ready);
	if (rc || !ready ||
	    (rc = keel_sqlite_horizon(s, q->tenant, q->predicate, &found, &horizon)))
		return rc;
	if (!found || q->at >= horizon) {
		*what = KEEL_SQLITE_FIND_CURRENT;
		return 0;
	}
	int64_t n = 0;
	rc = keel_sqlite_spans_count(s, keel_sqlite_span_key(q->tenant, q->predicate, q->value),
				     q->at, KEEL_SQLITE_SPANS_MOST + 1, &n);
	if (rc == 0 && n <= KEEL_SQLITE_SPANS_MOST)
		*what = KEEL_SQLITE_FIND_SPANS;
	return rc;
}

/* Which statement finds the candidates of q (fact: a search), folding
 * first if the search can use the folded rows. */
static int keel_sqlite_find_what(struct keel_sqlite_store *s, const struct keel_candidates *q,
				 bool fact, enum keel_sqlite_find *what)
{
	*what = !fact ? (q->kind.ptr ? KEEL_SQLITE_FIND_KIND : KEEL_SQLITE_FIND_ENTITIES)
		: q->value.len && q->value.ptr[0] == '"' ? KEEL_SQLITE_FIND_STRING
							  : KEEL_SQLITE_FIND_VALUE;
	return fact ? keel_sqlite_folded(s, q, what) : 0;
}

int keel_store_sqlite_search_source(struct keel_store *bs, const char *tenant,
				    const char *predicate, const char *value, int64_t at,
				    enum keel_sqlite_find *what)
{
	struct keel_candidates q = {.tenant = keel_str_cstr(tenant),
				    .predicate = keel_str_cstr(predicate),
				    .value = keel_str_cstr(value),
				    .at = at};
	return keel_sqlite_find_what(keel_sqlite_downcast(bs), &q, true, what);
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
	enum keel_sqlite_find what;
	int rc = keel_sqlite_find_what(s, q, fact, &what);
	if (rc == 0)
		keel_sqlite_find_sql(&sql, what, lo.ptr != NULL, lo_inclusive, hi.len > 0,
				     fact && q->known_at_set);
	sqlite3_stmt *st = NULL;
	if (rc == 0)
		rc = keel_sqlite_prepare(s, sql.data, sql.len, &st);
	keel_buf_free(&sql);
	if (rc) {
		keel_buf_free(&hi);
		return rc;
	}
	keel_sqlite_bind_str(s, st, 1, q->tenant);
	if (fact) {
		keel_sqlite_bind_str(s, st, 2, q->predicate);
		keel_sqlite_bind_str(s, st, 3, q->value);
	} else if (q->kind.ptr) {
		keel_sqlite_bind_str(s, st, 2, q->kind);
	}
	if (lo.ptr)
		keel_sqlite_bind_str(s, st, 4, lo);
	if (hi.len)
		keel_sqlite_bind_str(s, st, 5, keel_str_make(hi.data, hi.len));
	keel_sqlite_bind_i64(s, st, 6, (int64_t)q->limit);
	if (fact && what != KEEL_SQLITE_FIND_CURRENT) {
		keel_sqlite_bind_i64(s, st, 7, q->at);
		if (q->known_at_set)
			keel_sqlite_bind_i64(s, st, 8, q->known_at);
		if (what == KEEL_SQLITE_FIND_SPANS)
			keel_sqlite_bind_i64(s, st, 9,
					     keel_sqlite_span_key(q->tenant, q->predicate,
								  q->value));
	}
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
