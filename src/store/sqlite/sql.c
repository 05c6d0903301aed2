/*
 * sql.c - the SQLite store's statements: the padded VALUES-list
 * queries and multi-row inserts, each prepared once and kept, binding
 * and running them.
 */
#include "parts.h"

/* ------------------------------------------------------ padded queries */

static const struct keel_sqlite_padded_def keel_sqlite_padded_defs[] = {
    [KEEL_SQ_SEEN] = {"WITH k(i, t, s, d) AS (VALUES ", 3, true,
		      ") SELECT k.i, e.hash, e.seq FROM k CROSS JOIN event_ids AS e "
		      "ON e.tenant = k.t AND e.source = k.s AND e.id = k.d"},
    [KEEL_SQ_NAMES] = {"WITH k(i, n) AS (VALUES ", 1, true,
		       ") SELECT k.i, m.id FROM k CROSS JOIN names AS m ON m.name = k.n"},
};

/* ------------------------------------------------------ multi-row inserts */

/* OR FAIL: a statement that fails keeps the rows it inserted before, so
 * SQLite needs no statement journal (a copy of each page the statement
 * first touches) to undo it; the batch's savepoint undoes them
 * (keel_sqlite_rollback_to_savepoint). */

const struct keel_sqlite_padded_def keel_sqlite_insert_defs[] = {
    [KEEL_SI_FACT] =
	{"INSERT OR FAIL INTO fact_rows (seq, tenant, subject, predicate, value, "
	 "valid_from, asserted_by, recorded_at, asserted_by_source) VALUES ",
	 9, false, ""},
    [KEEL_SI_REL] = {"INSERT OR FAIL INTO relation_rows (seq, tenant, subject, relation, "
		     "object, linked, valid_from, asserted_by, recorded_at, "
		     "asserted_by_source) VALUES ",
		     10, false, ""},
    [KEEL_SI_EVENT] = {"INSERT OR FAIL INTO events (seq, tenant, id, type, time, hash, "
		       "envelope, recorded_at, source) VALUES ",
		       9, false, ""},
    [KEEL_SI_EVENT_ID] =
	{"INSERT OR FAIL INTO event_ids (tenant, source, id, hash, seq, recorded_at) "
	 "VALUES ",
	 6, false, ""},
    [KEEL_SI_MENTION] =
	{"INSERT OR FAIL INTO entity_mentions (seq, tenant, subject, kind, "
	 "kind_time, first_seen, last_seen, recorded_at) VALUES ",
	 8, false, ""},
};

/* --------------------------------------------------------- statements */

int keel_sqlite_prepare(struct keel_sqlite_store *s, const char *sql, size_t len,
			sqlite3_stmt **out)
{
	if (sqlite3_prepare_v3(s->db, sql, (int)len, SQLITE_PREPARE_PERSISTENT, out,
			       NULL) != SQLITE_OK) {
		*out = NULL;
		return keel_sqlite_fail(s);
	}
	return 0;
}

/* Builds head, n tuples of def->nparams parameters, tail. */
static void keel_sqlite_build(struct keel_buf *b,
			      const struct keel_sqlite_padded_def *def, unsigned n)
{
	keel_buf_adds(b, def->head);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			keel_buf_addc(b, ',');
		keel_buf_addc(b, '(');
		if (def->slot)
			keel_buf_addf(b, "%u,", i);
		for (unsigned k = 0; k < def->nparams; k++)
			keel_buf_adds(b, k ? ",?" : "?");
		keel_buf_addc(b, ')');
	}
	keel_buf_adds(b, def->tail);
}

static int keel_sqlite_prepare_built(struct keel_sqlite_store *s,
				     const struct keel_sqlite_padded_def *def, unsigned n,
				     sqlite3_stmt **out)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_sqlite_build(&b, def, n);
	int rc = keel_sqlite_prepare(s, b.data, b.len, out);
	keel_buf_free(&b);
	return rc;
}

static int keel_sqlite_padded_stmt(struct keel_sqlite_store *s, enum keel_sqlite_padded q,
				   size_t rung, sqlite3_stmt **out)
{
	if (!s->padded[q][rung]) {
		int rc = keel_sqlite_prepare_built(s, &keel_sqlite_padded_defs[q],
						   keel_sqlite_ladder[rung],
						   &s->padded[q][rung]);
		if (rc)
			return rc;
	}
	*out = s->padded[q][rung];
	return 0;
}

int keel_sqlite_insert_stmt(struct keel_sqlite_store *s, enum keel_sqlite_insert t,
			    unsigned log2, sqlite3_stmt **out)
{
	if (!s->insert[t][log2]) {
		int rc = keel_sqlite_prepare_built(s, &keel_sqlite_insert_defs[t],
						   1u << log2, &s->insert[t][log2]);
		if (rc)
			return rc;
	}
	*out = s->insert[t][log2];
	return 0;
}

int keel_sqlite_fixed_stmt(struct keel_sqlite_store *s, sqlite3_stmt **slot,
			   const char *sql)
{
	if (*slot)
		return 0;
	return keel_sqlite_prepare(s, sql, strlen(sql), slot);
}

/* Binding. Values are bound SQLITE_STATIC: they live in the batch until
 * the statement has run. A failure is kept and reported when
 * the statement is about to run. */
void keel_sqlite_bind_failed(struct keel_sqlite_store *s, int rc)
{
	if (!s->bind_rc) {
		s->bind_rc = rc;
		keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s", s->path,
				sqlite3_errstr(rc));
	}
}

static void keel_sqlite_bind_null(struct keel_sqlite_store *s, sqlite3_stmt *st, int i)
{
	int rc = sqlite3_bind_null(st, i);
	if (rc != SQLITE_OK)
		keel_sqlite_bind_failed(s, rc);
}

/* Starts running st: counts it and reports a pending bind failure. */
int keel_sqlite_start(struct keel_sqlite_store *s, sqlite3_stmt *st)
{
	s->base.statements++;
	if (s->bind_rc) {
		s->bind_rc = 0;
		sqlite3_reset(st);
		return KEEL_ESTORE;
	}
	return 0;
}

/* Ends a statement's run: rc is the last sqlite3_step result. */
int keel_sqlite_finish(struct keel_sqlite_store *s, sqlite3_stmt *st, int rc)
{
	int ret = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = keel_sqlite_fail(s);
	sqlite3_reset(st);
	return ret;
}

int keel_sqlite_ints(struct keel_sqlite_store *s, sqlite3_stmt *st, bool *found,
		     int64_t *out, int n)
{
	int rc = keel_sqlite_start(s, st);
	if (rc)
		return rc;
	int step = sqlite3_step(st);
	bool row = step == SQLITE_ROW;
	for (int i = 0; row && i < n; i++)
		out[i] = sqlite3_column_int64(st, i);
	if (found)
		*found = row;
	return keel_sqlite_finish(s, st, step);
}

/* Runs a statement that returns no rows (or whose rows are not needed). */
int keel_sqlite_run(struct keel_sqlite_store *s, sqlite3_stmt *st)
{
	int rc = keel_sqlite_start(s, st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	return keel_sqlite_finish(s, st, rc);
}

/* BEGIN IMMEDIATE without waiting: *locked false when another connection
 * holds the write lock, or the file cannot be written. */
int keel_sqlite_try_lock(struct keel_sqlite_store *s, bool *locked)
{
	sqlite3_busy_timeout(s->db, 0);
	int step = sqlite3_step(s->begin);
	sqlite3_reset(s->begin);
	sqlite3_busy_timeout(s->db, KEEL_SQLITE_BUSY_MS);
	s->base.statements++;
	*locked = step == SQLITE_DONE;
	if (*locked || (step & 0xff) == SQLITE_BUSY || (step & 0xff) == SQLITE_READONLY)
		return 0;
	return keel_sqlite_fail(s);
}

/* ------------------------------------------------------ padded running */

void keel_sqlite_keys_reset(struct keel_sqlite_store *s)
{
	s->nkeys = 0;
}

/* Runs q over s->keys in chunks of at most 1000; the last chunk goes to
 * the smallest ladder size that holds it, padded with NULL keys. */
int keel_sqlite_run_padded(struct keel_sqlite_store *s, enum keel_sqlite_padded q,
			   keel_sqlite_bind_fn bind, keel_sqlite_row_fn row, void *ud)
{
	const unsigned np = keel_sqlite_padded_defs[q].nparams;
	for (size_t base = 0; base < s->nkeys; base += KEEL_SQLITE_CHUNK) {
		size_t m = s->nkeys - base;
		if (m > KEEL_SQLITE_CHUNK)
			m = KEEL_SQLITE_CHUNK;
		size_t rung = 0;
		while (keel_sqlite_ladder[rung] < m)
			rung++;
		sqlite3_stmt *st;
		int rc = keel_sqlite_padded_stmt(s, q, rung, &st);
		if (rc)
			return rc;
		int p = 1;
		for (size_t i = 0; i < m; i++, p += (int)np)
			bind(s, st, p, &s->keys[base + i]);
		for (size_t i = m; i < keel_sqlite_ladder[rung]; i++)
			for (unsigned k = 0; k < np; k++)
				keel_sqlite_bind_null(s, st, p++);
		if ((rc = keel_sqlite_start(s, st)))
			return rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t slot = sqlite3_column_int64(st, 0);
			if (slot >= 0 && (size_t)slot < m)
				row(s, st, &s->keys[base + (size_t)slot], ud);
		}
		if ((rc = keel_sqlite_finish(s, st, rc)))
			return rc;
	}
	return 0;
}
