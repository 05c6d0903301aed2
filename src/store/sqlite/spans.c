/*
 * spans.c - the spans keel search reads at a time in the past
 * (docs/store-sqlite.md, "Spans"): derived data folded with the current
 * rows (current.c), in the same transactions, by the same readers.
 *
 *   fact_spans   an R*Tree: one entry a fact row whose value the current
 *                rows would keep (a string, an integer, true or false),
 *                keyed by the row's seq, with two dimensions: the key
 *                (tenant, predicate, value) hashed to 24 bits, a point,
 *                and the span [valid_from, valid_to) of the row, which
 *                ends where the next row of its timeline begins, in
 *                (valid_from, recorded_at, seq) order, among the rows the
 *                spans know (those with such a value, and unsets); the
 *                timeline's last row's span is open (KEEL_TIME_INF).
 *
 * A search for a value at a time T is then a stabbing query: the entries
 * with the value's key whose span holds T. The R*Tree stores 32-bit
 * floats, rounding each lower bound down and each upper bound up, and
 * distinct keys may share a hash: the entries are a superset of the
 * answer, never less, and src/read/find.c's ordinary read of each candidate
 * at T keeps only the holders. The R*Tree also reads T as a double,
 * and beyond 2^53 microseconds from 1970 (after 2255, before 1685) a
 * double steps by 2 or more: T and the end of the span that holds it,
 * a microsecond later, can be one double, and a bound stored exactly.
 * So the query asks valid_to >= T, not > T: a span ending at T itself is
 * one more candidate, never a holder lost. A row with a value the spans
 * leave out (a fraction, an object) does not end the span before it: that
 * span is too long, which again only adds a candidate the read rejects.
 *
 * Folding a range of new rows, one timeline at a time (the new rows
 * sorted by timeline and order): when its first new row comes after the
 * timeline's current row (the latest it knew, from fact_current before
 * this fold updates it), the current row's span ends at that row and
 * each new row's at the next; the common case, a feed in order, touches
 * two entries a new row at most. A late row (one before the current row)
 * splits a span: then the timeline's spans are written again from the
 * row before the first new one, read through fact_rows_key. Either way
 * an entry is written whole (INSERT OR REPLACE by seq), so folding a
 * range twice, or in pieces, gives the same spans.
 */
#include "parts.h"

/* 24 bits: every key is a float exactly, so the key dimension never
 * rounds; a collision only adds candidates. keel_hash64 never changes:
 * the keys are stored. */
#define KEEL_SPAN_KEY_BITS 24

int64_t keel_sqlite_span_key(struct keel_str tenant, struct keel_str predicate,
			     struct keel_str value)
{
	uint64_t h = keel_hash64(tenant.ptr, tenant.len, 0x6b65656c);
	h = keel_hash64(predicate.ptr, predicate.len, h);
	h = keel_hash64(value.ptr, value.len, h);
	return (int64_t)(h & ((UINT64_C(1) << KEEL_SPAN_KEY_BITS) - 1));
}

int64_t keel_store_sqlite_span_key(const char *tenant, const char *predicate,
				   const char *value)
{
	return keel_sqlite_span_key(keel_str_cstr(tenant), keel_str_cstr(predicate),
				    keel_str_cstr(value));
}

/* One row of a timeline as the spans see it. */
struct keel_span_row {
	int64_t seq, valid_from;
	int64_t key;	/* -1: an unset, which ends a span and has none */
};

/* Walks one timeline's rows in order, writing each row's span once the
 * row after it is known. */
struct keel_span_walk {
	struct keel_sqlite_store *s;
	struct keel_str tenant, predicate;
	bool have_prev;
	struct keel_span_row prev;
};

static int keel_span_put(struct keel_sqlite_store *s, const struct keel_span_row *r,
			 int64_t valid_to)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_SPAN_PUT, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_i64(s, st, 1, r->seq);
	keel_sqlite_bind_i64(s, st, 2, r->key);
	keel_sqlite_bind_i64(s, st, 3, r->valid_from);
	keel_sqlite_bind_i64(s, st, 4, valid_to);
	return keel_sqlite_run(s, st);
}

static int keel_span_next(struct keel_span_walk *w, int64_t seq, struct keel_str value,
			  int64_t valid_from)
{
	int rc = 0;
	if (w->have_prev && w->prev.key >= 0)
		rc = keel_span_put(w->s, &w->prev, valid_from);
	w->prev = (struct keel_span_row){
	    .seq = seq,
	    .valid_from = valid_from,
	    .key = value.ptr ? keel_sqlite_span_key(w->tenant, w->predicate, value) : -1};
	w->have_prev = true;
	return rc;
}

static int keel_span_end(struct keel_span_walk *w)
{
	int rc = 0;
	if (w->have_prev && w->prev.key >= 0)
		rc = keel_span_put(w->s, &w->prev, KEEL_TIME_INF);
	w->have_prev = false;
	return rc;
}

/* ?1-?3: the walk's timeline, of subject. */
static void keel_span_bind_timeline(struct keel_span_walk *w, sqlite3_stmt *st,
				    struct keel_str subject)
{
	keel_sqlite_bind_str(w->s, st, 1, w->tenant);
	keel_sqlite_bind_str(w->s, st, 2, subject);
	keel_sqlite_bind_str(w->s, st, 3, w->predicate);
}

/* The timeline's current row (before this fold), if any, in cur
 * (valid_from, recorded_at, seq); the walk starts at it: its span ends at
 * the first new row. */
static int keel_span_current(struct keel_span_walk *w, struct keel_str subject, bool *found,
			     int64_t cur[3])
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(w->s, KEEL_SC_SPAN_CURRENT, &st);
	if (rc)
		return rc;
	keel_span_bind_timeline(w, st, subject);
	if ((rc = keel_sqlite_start(w->s, st)))
		return rc;
	int step = sqlite3_step(st);
	*found = step == SQLITE_ROW;
	if (*found) {
		for (int i = 0; i < 3; i++)
			cur[i] = sqlite3_column_int64(st, i);
		/* nothing is written yet: no row before it */
		(void)keel_span_next(w, cur[2], keel_sqlite_col_str(st, 3), cur[0]);
	}
	return keel_sqlite_finish(w->s, st, step);
}

/* A late row: the timeline's spans written again from the row before
 * first (its valid_from, recorded_at, seq) to the last row of
 * seq <= upto. */
static int keel_span_rewrite(struct keel_span_walk *w, struct keel_str subject,
			     const int64_t first[3], int64_t upto)
{
	sqlite3_stmt *st;
	int64_t from[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
	enum keel_sqlite_current steps[2] = {KEEL_SC_SPAN_BEFORE, KEEL_SC_SPAN_FROM};
	int rc = 0;
	for (int i = 0; rc == 0 && i < 2; i++) {
		if ((rc = keel_sqlite_current_stmt(w->s, steps[i], &st)))
			break;
		keel_span_bind_timeline(w, st, subject);
		keel_sqlite_bind_i64(w->s, st, 4, upto);
		for (int k = 0; k < 3; k++)
			keel_sqlite_bind_i64(w->s, st, 5 + k, i == 0 ? first[k] : from[k]);
		if (i == 0)
			rc = keel_sqlite_ints(w->s, st, NULL, from, 3);
	}
	if (rc || (rc = keel_sqlite_start(w->s, st)))
		return rc;
	w->have_prev = false;
	int step;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
		rc = keel_span_next(w, sqlite3_column_int64(st, 0), keel_sqlite_col_str(st, 1),
				    sqlite3_column_int64(st, 2));
	if (rc) {
		sqlite3_reset(st);
		return rc;
	}
	return keel_sqlite_finish(w->s, st, step);
}

/* The timeline a row of the new range belongs to, kept across steps. */
struct keel_span_timeline {
	struct keel_buf tenant, subject, predicate;
	bool late; /* rewritten from the index: skip its other new rows */
};

static bool keel_span_same(const struct keel_span_timeline *t, sqlite3_stmt *st)
{
	return keel_str_eq(keel_str_make(t->tenant.data, t->tenant.len),
			   keel_sqlite_col_str(st, 1)) &&
	       keel_str_eq(keel_str_make(t->subject.data, t->subject.len),
			   keel_sqlite_col_str(st, 2)) &&
	       keel_str_eq(keel_str_make(t->predicate.data, t->predicate.len),
			   keel_sqlite_col_str(st, 3));
}

static void keel_span_copy(struct keel_buf *b, struct keel_str v)
{
	keel_buf_reset(b);
	keel_buf_add(b, v.ptr, v.len);
}

/* (valid_from, recorded_at, seq) a before b */
static bool keel_span_before(const int64_t a[3], const int64_t b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i];
	return false;
}

/* A new timeline begins at the row st is on (columns: seq, tenant,
 * subject, predicate, value, valid_from, recorded_at). */
static int keel_span_begin(sqlite3_stmt *st, int64_t upto,
			   struct keel_span_timeline *t, struct keel_span_walk *w)
{
	keel_span_copy(&t->tenant, keel_sqlite_col_str(st, 1));
	keel_span_copy(&t->subject, keel_sqlite_col_str(st, 2));
	keel_span_copy(&t->predicate, keel_sqlite_col_str(st, 3));
	w->tenant = keel_str_make(t->tenant.data, t->tenant.len);
	w->predicate = keel_str_make(t->predicate.data, t->predicate.len);
	struct keel_str subject = keel_str_make(t->subject.data, t->subject.len);
	int64_t first[3] = {sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6),
			    sqlite3_column_int64(st, 0)};
	int64_t cur[3];
	bool found = false;
	int rc = keel_span_current(w, subject, &found, cur);
	t->late = found && keel_span_before(first, cur);
	if (rc || !t->late)
		return rc;
	return keel_span_rewrite(w, subject, first, upto);
}

int keel_sqlite_spans_fold(struct keel_sqlite_store *s, int64_t mark, int64_t upto)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_SPAN_NEW, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_i64(s, st, 1, mark);
	keel_sqlite_bind_i64(s, st, 2, upto);
	if ((rc = keel_sqlite_start(s, st)))
		return rc;
	struct keel_span_timeline t = {.late = false};
	keel_buf_init(&t.tenant);
	keel_buf_init(&t.subject);
	keel_buf_init(&t.predicate);
	struct keel_span_walk w = {.s = s};
	bool any = false;
	int step;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		if (!any || !keel_span_same(&t, st)) {
			if (any && (rc = keel_span_end(&w)))
				break;
			any = true;
			if ((rc = keel_span_begin(st, upto, &t, &w)))
				break;
		}
		if (!t.late)
			rc = keel_span_next(&w, sqlite3_column_int64(st, 0),
					    keel_sqlite_col_str(st, 4),
					    sqlite3_column_int64(st, 5));
	}
	if (rc == 0)
		rc = keel_span_end(&w);
	if (rc)
		sqlite3_reset(st);
	else
		rc = keel_sqlite_finish(s, st, step);
	keel_buf_free(&t.tenant);
	keel_buf_free(&t.subject);
	keel_buf_free(&t.predicate);
	return rc;
}

int keel_sqlite_spans_count(struct keel_sqlite_store *s, int64_t key, int64_t at,
			    int64_t most, int64_t *n)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_SPAN_COUNT, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_i64(s, st, 1, key);
	keel_sqlite_bind_i64(s, st, 2, at);
	keel_sqlite_bind_i64(s, st, 3, most);
	return keel_sqlite_ints(s, st, NULL, n, 1);
}

int keel_sqlite_spans_drop(struct keel_sqlite_store *s, struct keel_str tenant,
			   const struct keel_replace_scope *scope)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_SPAN_DROP, &st);
	return rc ? rc : keel_sqlite_per_predicate(s, st, tenant, scope);
}

int keel_sqlite_spans_redo(struct keel_sqlite_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str predicate, int64_t upto)
{
	struct keel_span_walk w = {.s = s, .tenant = tenant, .predicate = predicate};
	const int64_t first[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
	int rc = keel_span_rewrite(&w, subject, first, upto);
	return rc ? rc : keel_span_end(&w);
}
