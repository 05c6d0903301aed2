/*
 * fold.c - the fold transaction: rows not folded yet (seq above the
 * watermark) folded into the current rows (current.c) and the spans
 * (spans.c) together, a bounded number of seqs a transaction, by readers
 * and by keel serve's idle writer, never by an ingest
 * (docs/store-sqlite.md, "Current rows").
 */
#include "parts.h"

/* The watermark and the last seq of fact_rows (0 when it is empty). */
static int keel_sqlite_fold_check(struct keel_sqlite_store *s, int64_t *mark,
				  int64_t *last)
{
	sqlite3_stmt *st;
	int64_t v[2] = {0, 0};
	int rc = keel_sqlite_current_stmt(s, KEEL_SC_CHECK, &st);
	if (rc == 0)
		rc = keel_sqlite_ints(s, st, NULL, v, 2);
	*mark = v[0];
	*last = v[1];
	return rc;
}

/* Runs statement c with ?1 = a and ?2 = b. */
static int keel_sqlite_current_run(struct keel_sqlite_store *s, enum keel_sqlite_current c,
				   int64_t a, int64_t b)
{
	sqlite3_stmt *st;
	int rc = keel_sqlite_current_stmt(s, c, &st);
	if (rc)
		return rc;
	keel_sqlite_bind_i64(s, st, 1, a);
	if (sqlite3_bind_parameter_count(st) > 1)
		keel_sqlite_bind_i64(s, st, 2, b);
	return keel_sqlite_run(s, st);
}

/* Seqs folded a transaction at most: a first fold of a large store holds
 * the write lock a fraction of a second at a time, so a writer waiting
 * behind it (within its busy timeout) gets in between, and the window's
 * sort stays small. */
#define KEEL_SQLITE_FOLD_SEQS 65536

/* One fold transaction of at most most seqs: *done when nothing is left
 * to fold (before or after it), *cannot when this handle cannot fold
 * now. */
static int keel_sqlite_fold_once(struct keel_sqlite_store *s, int64_t most, bool *done,
				 bool *cannot)
{
	int64_t mark = 0, last = 0;
	*done = *cannot = false;
	int rc = keel_sqlite_fold_check(s, &mark, &last);
	if (rc || (*done = last <= mark))
		return rc;
	/* Folding writes: not inside the handle's own transaction (its
	 * rows may still be rolled back), not on a read-only file, and
	 * without waiting for another writer. */
	bool locked = false;
	if (!sqlite3_get_autocommit(s->db) || sqlite3_db_readonly(s->db, "main") ||
	    (rc = keel_sqlite_try_lock(s, &locked)) || !locked) {
		*cannot = rc == 0;
		return rc;
	}
	if ((rc = keel_sqlite_fold_check(s, &mark, &last)) == 0 && last > mark) {
		int64_t upto = last - mark > most ? mark + most : last;
		if ((rc = keel_sqlite_spans_fold(s, mark, upto)) == 0 &&
		    (rc = keel_sqlite_current_run(s, KEEL_SC_FOLD, mark, upto)) == 0 &&
		    (rc = keel_sqlite_current_run(s, KEEL_SC_HORIZONS, mark, upto)) == 0)
			rc = keel_sqlite_current_run(s, KEEL_SC_MARK, upto, 0);
		*done = rc == 0 && upto == last;
	} else {
		*done = rc == 0;
	}
	if (rc == 0)
		rc = keel_sqlite_run(s, s->commit);
	if (rc && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* The pause between two fold transactions: a writer waiting for the lock
 * sleeps in SQLite's busy handler, up to 100 ms at a time, and would
 * never see the lock free if the next transaction began at once (an
 * ingest beside the first search of a large store timed out after its 5 s
 * busy timeout). */
#define KEEL_SQLITE_FOLD_PAUSE_MS 120

int keel_sqlite_fold(struct keel_sqlite_store *s, bool *ready)
{
	bool done = false, cannot = false;
	int rc = 0;
	for (bool first = true; rc == 0 && !done && !cannot; first = false) {
		if (!first)
			sqlite3_sleep(KEEL_SQLITE_FOLD_PAUSE_MS);
		rc = keel_sqlite_fold_once(s, KEEL_SQLITE_FOLD_SEQS, &done, &cannot);
	}
	*ready = rc == 0 && done;
	return rc;
}

int keel_sqlite_fold_some(struct keel_store *bs, int64_t most, bool *left)
{
	bool done = false, cannot = false;
	int rc = keel_sqlite_fold_once(keel_sqlite_downcast(bs), most, &done, &cannot);
	*left = rc == 0 && !done && !cannot;
	return rc;
}
