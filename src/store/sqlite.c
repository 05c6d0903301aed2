/*
 * sqlite.c - the SQLite store (docs/stores.md, docs/store-sqlite.md).
 *
 * Organisation (sqlite_store.h lists the files):
 *  - sqlite.c: open (URL, pragmas: WAL, synchronous=NORMAL, busy timeout),
 *    transactions, and the batch path: seen_ids, prefetch and write-back;
 *  - sqlite_schema.c: the versioned schema kept in the meta table, created
 *    or migrated by a list of steps (keel_sqlite_migrations);
 *  - sqlite_sql.c: every statement is prepared once, on first use, with
 *    SQLITE_PREPARE_PERSISTENT and reused for the life of the store; the
 *    SQL text is built only then, never per batch. Seen ids, prefetch and
 *    closures run "padded" statements that join a VALUES list of up to
 *    1000 keys against a table, one statement per size on a ladder of
 *    sizes, the unused tail of the list bound to NULL (a NULL key matches
 *    nothing and costs no seek); new rows, events and entities go in with
 *    multi-row INSERTs of power-of-two sizes;
 *  - sqlite_read.c: scans with ORDER BY in SQL, one cached statement per
 *    record type and combination of filters;
 *  - sqlite_replay.c: a tenant's rows replaced in one transaction;
 *  - sqlite_checkpoint.c: a writing handle's background WAL checkpoints.
 *
 * Why joins and not row-constructor IN: SQLite 3.40 plans
 * "(a, b, c) IN (VALUES ...)" as a full SCAN of the table (the row-value IN
 * is only used with an index for a single column), while "k CROSS JOIN t ON
 * t.a = k.a AND ..." seeks the index once per key. The join also returns
 * the key's slot, so rows map back to overlay objects without hashing.
 *
 * Why the key index ends in valid_from and not valid_to: closing a row then
 * rewrites only the table row, not an index entry, which measured 10-30%
 * faster write-back (docs/store-sqlite.md). Placement keeps a timeline's
 * non-empty rows tiling time from its first row on, so the open row is the
 * last non-empty row by valid_from and the row containing t is the last
 * non-empty row starting at or before t.
 *
 * A store handle is used by one thread at a time (its transaction state and
 * message are per handle), so the connection is opened without SQLite's
 * own mutex.
 */
#include "sqlite_store.h"

#include <errno.h>
#include <unistd.h>

/* ---------------------------------------------------------- open/close */

static void keel_sqlite_close(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_checkpoint_stop(s);
	/* Finalize every statement, then close: sqlite3_close_v2 would defer
	 * the close while any statement lives. */
	for (size_t q = 0; q < KEEL_SQ_NPADDED; q++)
		for (size_t r = 0; r < KEEL_SQLITE_NLADDER; r++)
			sqlite3_finalize(s->padded[q][r]);
	for (size_t t = 0; t < KEEL_SI_N; t++)
		for (size_t r = 0; r <= KEEL_SQLITE_INSERT_LOG2; r++)
			sqlite3_finalize(s->insert[t][r]);
	for (size_t t = 0; t < 4; t++)
		for (size_t m = 0; m < KEEL_SF_N; m++)
			sqlite3_finalize(s->scan[t][m]);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	sqlite3_finalize(s->max_seq);
	sqlite3_finalize(s->counts);
	sqlite3_finalize(s->tenants);
	keel_open_rows_free(&s->open_rows);
	sqlite3_close_v2(s->db);
	free(s->keys);
	free(s->times);
	keel_ptrvec_free(&s->rows);
	free(s->path);
	keel_store_base_free(&s->base);
	free(s);
}


/* The longest envelope the store takes: SQLite refuses any value or row
 * longer than its length limit (SQLITE_TOOBIG), which would fail the
 * whole batch; the event's other columns are at most a few hundred bytes. */
static void keel_sqlite_set_max_envelope(struct keel_sqlite_store *s)
{
	int limit = sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, -1);
	s->base.max_envelope = limit > 8192 ? (size_t)limit - 4096 : (size_t)limit / 2;
	s->base.max_envelope_why = "SQLite's length limit, less room for the rest of "
				   "its row";
}

/* existing: the file must be there already (a read of a mistyped path
 * must not leave an empty database behind and answer "nothing"). */
static int keel_sqlite_open(const char *url, bool existing, struct keel_store **out,
			    struct keel_buf *err)
{
	static const char scheme[] = "sqlite:";
	*out = NULL;
	if (strncmp(url, scheme, sizeof scheme - 1) != 0) {
		keel_buf_addf(err, "store \"%s\": not a sqlite: url", url);
		return KEEL_EURL;
	}
	const char *path = url + sizeof scheme - 1;
	if (!*path) {
		keel_buf_addf(err,
			      "store \"%s\": missing database path (use sqlite:PATH, "
			      "e.g. sqlite:keel.db)",
			      url);
		return KEEL_EURL;
	}

	bool in_memory = strcmp(path, ":memory:") == 0;
	if (existing && !in_memory && access(path, F_OK) != 0) {
		if (errno == ENOENT) {
			keel_buf_addf(err, "store \"%s\": no such file", url);
			return KEEL_ENOTFOUND;
		}
		keel_buf_addf(err, "store \"%s\": cannot read it: %s", url, strerror(errno));
		return KEEL_ESTORE;
	}

	struct keel_sqlite_store *s = keel_xcalloc(1, sizeof *s);
	keel_store_base_init(&s->base, &keel_store_sqlite_ops, url);
	/* Another handle on ":memory:" is another database. */
	s->base.state_in_handle = in_memory;
	s->path = keel_xstrdup(path);
	keel_open_rows_init(&s->open_rows, KEEL_SQLITE_OPEN_ROWS,
			    KEEL_SQLITE_OPEN_ROWS_AGE, false);
	int rc;
	if (sqlite3_open_v2(path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = s->db ? keel_sqlite_fail(s)
			   : keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s",
					     s->path, sqlite3_errstr(SQLITE_NOMEM));
		goto fail;
	}
	keel_sqlite_checkpoint_init(s);
	sqlite3_busy_timeout(s->db, KEEL_SQLITE_BUSY_MS);
	keel_sqlite_set_max_envelope(s);
	char pragmas[256];
	snprintf(pragmas, sizeof pragmas,
		 "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
		 "PRAGMA cache_size = -%d; PRAGMA temp_store = MEMORY; "
		 "PRAGMA wal_autocheckpoint = %d",
		 KEEL_SQLITE_CACHE_KIB, KEEL_SQLITE_AUTOCHECKPOINT);
	if ((rc = keel_sqlite_exec(s, pragmas)) || (rc = keel_sqlite_migrate(s)) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->begin, "BEGIN IMMEDIATE")) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->commit, "COMMIT")) ||
	    (rc = keel_sqlite_fixed_stmt(s, &s->rollback, "ROLLBACK")))
		goto fail;
	*out = &s->base;
	return 0;
fail:
	keel_buf_adds(err, keel_store_errmsg(&s->base));
	keel_sqlite_close(&s->base);
	return rc;
}

/* --------------------------------------------------------- transactions */

/* The pager's data version: it moves with every change to the file, this
 * connection's commits and other connections' alike (no statement needed:
 * SQLITE_FCNTL_DATA_VERSION). 0 if it cannot be read, which never matches. */
static unsigned keel_sqlite_data_version(struct keel_sqlite_store *s)
{
	unsigned v = 0;
	if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_DATA_VERSION, &v) !=
	    SQLITE_OK)
		return 0;
	return v;
}

static int keel_sqlite_begin(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* A handle that writes copies its log back in the background. */
	int rc = keel_sqlite_checkpoint_start(s);
	if (rc)
		return rc;
	rc = keel_sqlite_run(s, s->begin);
	/* Under the write lock: a version other than the one this
	 * connection's last commit left means someone else wrote since, and
	 * the remembered last rows may be stale. */
	if (rc == 0 &&
	    (s->data_version == 0 || keel_sqlite_data_version(s) != s->data_version))
		keel_open_rows_clear(&s->open_rows);
	return rc;
}

static int keel_sqlite_commit(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_run(s, s->commit);
	s->data_version = rc ? 0 : keel_sqlite_data_version(s);
	if (rc)
		keel_open_rows_clear(&s->open_rows);
	return rc;
}

static int keel_sqlite_rollback(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* What the batch taught the cache may not have been committed. */
	keel_open_rows_clear(&s->open_rows);
	/* After some errors SQLite has already rolled back; that is fine. */
	if (sqlite3_get_autocommit(s->db))
		return 0;
	return keel_sqlite_run(s, s->rollback);
}

/* ------------------------------------------------------------ seen ids */

static void keel_sqlite_bind_event_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				       int p, const struct keel_sqlite_key *k)
{
	const struct keel_batch_event *ev = k->ptr;
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->id);
}

static void keel_sqlite_seen_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				 const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)ud;
	struct keel_batch_event *ev = k->ptr;
	ev->status = KEEL_EV_DUPLICATE;
	ev->stored_hash = (uint64_t)sqlite3_column_int64(st, 1);
}

static int keel_sqlite_seen_ids(struct keel_store *bs, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < n; i++)
		keel_sqlite_keys_push(s, ev[i], 0);
	return keel_sqlite_run_padded(s, KEEL_SQ_SEEN, keel_sqlite_bind_event_key,
				      keel_sqlite_seen_row, NULL);
}

/* ------------------------------------------------------------ prefetch */

static void keel_sqlite_bind_entity_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
					int p, const struct keel_sqlite_key *k)
{
	const struct keel_entity *e = k->ptr;
	keel_sqlite_bind_str(s, st, p, e->tenant);
	keel_sqlite_bind_str(s, st, p + 1, e->subject);
}

static void keel_sqlite_entity_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				   const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	keel_overlay_found_entity(
	    ud, k->ptr, keel_sqlite_col_str(st, 1), sqlite3_column_int64(st, 2),
	    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
}

/* Binds a timeline's key (tenant, subject, name[, object]) and, for late
 * lookups, the time. */
static void keel_sqlite_bind_timeline_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
					  int p, const struct keel_sqlite_key *k, bool at)
{
	const struct keel_timeline *tl = k->ptr;
	keel_sqlite_bind_str(s, st, p++, tl->tenant);
	keel_sqlite_bind_str(s, st, p++, tl->subject);
	keel_sqlite_bind_str(s, st, p++, tl->name);
	if (tl->kind == KEEL_ROW_RELATION)
		keel_sqlite_bind_str(s, st, p++, tl->object);
	if (at)
		keel_sqlite_bind_i64(s, st, p, k->at);
}

static void keel_sqlite_bind_open_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const struct keel_sqlite_key *k)
{
	keel_sqlite_bind_timeline_key(s, st, p, k, false);
}

static void keel_sqlite_bind_late_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const struct keel_sqlite_key *k)
{
	keel_sqlite_bind_timeline_key(s, st, p, k, true);
}

/* Columns: slot, seq, value|linked, valid_from, valid_to, asserted_by,
 * closed_by. The overlay copies the strings. */
static void keel_sqlite_timeline_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				     const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	struct keel_timeline *tl = k->ptr;
	struct keel_row r;
	memset(&r, 0, sizeof r);
	r.seq = sqlite3_column_int64(st, 1);
	if (tl->kind == KEEL_ROW_FACT)
		r.value = keel_sqlite_col_str(st, 2);
	else
		r.linked = sqlite3_column_int64(st, 2) != 0;
	r.valid_from = sqlite3_column_int64(st, 3);
	r.valid_to = sqlite3_column_int64(st, 4);
	r.asserted_by = keel_sqlite_col_str(st, 5);
	r.closed_by = keel_sqlite_col_str(st, 6);
	keel_overlay_add_fetched_row(ud, tl, &r);
}

static int keel_sqlite_prefetch_timelines(struct keel_sqlite_store *s,
					  struct keel_overlay *o, enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		if (tl->kind != kind)
			continue;
		/* A timeline a recent batch touched: its last row is known. */
		const struct keel_row *last = keel_open_rows_get(&s->open_rows, tl);
		if (last)
			keel_overlay_add_fetched_row(o, tl, last);
		else
			keel_sqlite_keys_push(s, tl, 0);
	}
	int rc = s->nkeys ? keel_sqlite_run_padded(
				s, fact ? KEEL_SQ_FACT_OPEN : KEEL_SQ_REL_OPEN,
				keel_sqlite_bind_open_key, keel_sqlite_timeline_row, o)
			  : 0;
	if (rc)
		return rc;

	/* Times before the open row that no fetched row covers: late events. */
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		if (tl->kind != kind || !tl->nrows)
			continue;
		if (tl->ntimes > s->times_cap) {
			s->times_cap = tl->ntimes;
			s->times =
			    keel_xrealloc(s->times, s->times_cap * sizeof *s->times);
		}
		size_t n = keel_overlay_uncovered_times(tl, s->times, tl->ntimes);
		for (size_t k = 0; k < n; k++)
			keel_sqlite_keys_push(s, tl, s->times[k]);
	}
	return keel_sqlite_run_padded(s, fact ? KEEL_SQ_FACT_LATE : KEEL_SQ_REL_LATE,
				      keel_sqlite_bind_late_key, keel_sqlite_timeline_row,
				      o);
}

static int keel_sqlite_prefetch(struct keel_store *bs, struct keel_overlay *o)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		if (!(e->flags & (KEEL_ENTITY_FOUND | KEEL_ENTITY_NEW)))
			keel_sqlite_keys_push(s, e, 0);
	}
	int rc = keel_sqlite_run_padded(s, KEEL_SQ_ENTITY, keel_sqlite_bind_entity_key,
					keel_sqlite_entity_row, o);
	if (rc || (rc = keel_sqlite_prefetch_timelines(s, o, KEEL_ROW_FACT)) ||
	    (rc = keel_sqlite_prefetch_timelines(s, o, KEEL_ROW_RELATION)))
		return rc;
	return 0;
}

/* ---------------------------------------------------------- write-back */

typedef void (*keel_sqlite_bind_item_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st,
					 int p, void *item);

/* Inserts n items with multi-row INSERTs: full statements of
 * KEEL_SQLITE_INSERT_MAX rows, then the remainder by its binary digits. */
static int keel_sqlite_insert_items(struct keel_sqlite_store *s,
				    enum keel_sqlite_insert t, void **items, size_t n,
				    keel_sqlite_bind_item_fn bind)
{
	const int np = (int)keel_sqlite_insert_defs[t].nparams;
	size_t i = 0;
	while (i < n) {
		size_t left = n - i;
		unsigned log2 = KEEL_SQLITE_INSERT_LOG2;
		while ((1u << log2) > left)
			log2--;
		sqlite3_stmt *st;
		int rc = keel_sqlite_insert_stmt(s, t, log2, &st);
		if (rc)
			return rc;
		int p = 1;
		for (size_t k = 0; k < (1u << log2); k++, p += np)
			bind(s, st, p, items[i + k]);
		if ((rc = keel_sqlite_run(s, st)))
			return rc;
		i += 1u << log2;
	}
	return 0;
}

static void keel_sqlite_bind_fact(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				  void *item)
{
	const struct keel_row *r = item;
	const struct keel_timeline *tl = r->timeline;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_str(s, st, p + 1, tl->tenant);
	keel_sqlite_bind_str(s, st, p + 2, tl->subject);
	keel_sqlite_bind_str(s, st, p + 3, tl->name);
	keel_sqlite_bind_str(s, st, p + 4, r->value);
	keel_sqlite_bind_i64(s, st, p + 5, r->valid_from);
	keel_sqlite_bind_i64(s, st, p + 6, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 7, r->asserted_by);
	keel_sqlite_bind_str(s, st, p + 8, r->closed_by);
}

static void keel_sqlite_bind_relation(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, void *item)
{
	const struct keel_row *r = item;
	const struct keel_timeline *tl = r->timeline;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_str(s, st, p + 1, tl->tenant);
	keel_sqlite_bind_str(s, st, p + 2, tl->subject);
	keel_sqlite_bind_str(s, st, p + 3, tl->name);
	keel_sqlite_bind_str(s, st, p + 4, tl->object);
	keel_sqlite_bind_i64(s, st, p + 5, r->linked);
	keel_sqlite_bind_i64(s, st, p + 6, r->valid_from);
	keel_sqlite_bind_i64(s, st, p + 7, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 8, r->asserted_by);
	keel_sqlite_bind_str(s, st, p + 9, r->closed_by);
}

static void keel_sqlite_bind_event(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				   void *item)
{
	const struct keel_batch_event *ev = item;
	keel_sqlite_bind_i64(s, st, p, ev->seq);
	keel_sqlite_bind_str(s, st, p + 1, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 2, ev->id);
	keel_sqlite_bind_str(s, st, p + 3, ev->type);
	keel_sqlite_bind_i64(s, st, p + 4, ev->time);
	keel_sqlite_bind_i64(s, st, p + 5, (int64_t)ev->hash);
	keel_sqlite_bind_str(s, st, p + 6, ev->envelope);
}

static void keel_sqlite_bind_event_id(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, void *item)
{
	const struct keel_batch_event *ev = item;
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->id);
	keel_sqlite_bind_i64(s, st, p + 2, (int64_t)ev->hash);
	keel_sqlite_bind_i64(s, st, p + 3, ev->seq);
}

static void keel_sqlite_bind_entity(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				    void *item)
{
	const struct keel_entity *e = item;
	keel_sqlite_bind_str(s, st, p, e->tenant);
	keel_sqlite_bind_str(s, st, p + 1, e->subject);
	keel_sqlite_bind_str(s, st, p + 2, e->kind);
	keel_sqlite_bind_i64(s, st, p + 3, e->kind_time);
	keel_sqlite_bind_i64(s, st, p + 4, e->first_seen);
	keel_sqlite_bind_i64(s, st, p + 5, e->last_seen);
}

static void keel_sqlite_bind_closure(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				     const struct keel_sqlite_key *k)
{
	const struct keel_row *r = k->ptr;
	keel_sqlite_bind_i64(s, st, p, r->seq);
	keel_sqlite_bind_i64(s, st, p + 1, r->valid_to);
	keel_sqlite_bind_str(s, st, p + 2, r->closed_by);
}

static void keel_sqlite_no_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
			       const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)st;
	(void)k;
	(void)ud;
}

/* The last seq of each table, read once per batch under the write lock:
 * rows and events get explicit seqs so that row->seq and ev->seq are known
 * without relying on how SQLite picks rowids. */
static int keel_sqlite_load_seqs(struct keel_sqlite_store *s)
{
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->max_seq,
	    "SELECT (SELECT max(seq) FROM facts), (SELECT max(seq) FROM relations), "
	    "(SELECT max(seq) FROM events)");
	if (rc || (rc = keel_sqlite_start(s, s->max_seq)))
		return rc;
	rc = sqlite3_step(s->max_seq);
	if (rc == SQLITE_ROW) {
		s->fact_seq = sqlite3_column_int64(s->max_seq, 0);
		s->rel_seq = sqlite3_column_int64(s->max_seq, 1);
		s->event_seq = sqlite3_column_int64(s->max_seq, 2);
	}
	return keel_sqlite_finish(s, s->max_seq, rc);
}

static int keel_sqlite_write_rows(struct keel_sqlite_store *s, struct keel_overlay *o,
				  enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	int64_t *seq = fact ? &s->fact_seq : &s->rel_seq;
	s->rows.len = 0;
	for (size_t i = 0; i < o->new_rows.len; i++) {
		struct keel_row *r = o->new_rows.items[i];
		if (r->timeline->kind != kind)
			continue;
		r->seq = ++*seq;
		keel_ptrvec_push(&s->rows, r);
	}
	int rc = keel_sqlite_insert_items(
	    s, fact ? KEEL_SI_FACT : KEEL_SI_REL, s->rows.items, s->rows.len,
	    fact ? keel_sqlite_bind_fact : keel_sqlite_bind_relation);
	if (rc)
		return rc;

	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < o->dirty_rows.len; i++) {
		struct keel_row *r = o->dirty_rows.items[i];
		if (r->timeline->kind == kind)
			keel_sqlite_keys_push(s, r, 0);
	}
	return keel_sqlite_run_padded(s, fact ? KEEL_SQ_FACT_CLOSE : KEEL_SQ_REL_CLOSE,
				      keel_sqlite_bind_closure, keel_sqlite_no_row, NULL);
}

int keel_sqlite_write_back(struct keel_store *bs, struct keel_overlay *o,
			   struct keel_batch_event **ev, size_t n)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_load_seqs(s);
	if (rc)
		return rc;

	s->rows.len = 0;
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		if (e->flags & (KEEL_ENTITY_NEW | KEEL_ENTITY_DIRTY))
			keel_ptrvec_push(&s->rows, e);
	}
	if ((rc = keel_sqlite_insert_items(s, KEEL_SI_ENTITY, s->rows.items, s->rows.len,
					   keel_sqlite_bind_entity)) ||
	    (rc = keel_sqlite_write_rows(s, o, KEEL_ROW_FACT)) ||
	    (rc = keel_sqlite_write_rows(s, o, KEEL_ROW_RELATION)))
		return rc;

	for (size_t i = 0; i < n; i++)
		ev[i]->seq = ++s->event_seq;
	if ((rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT, (void **)ev, n,
					   keel_sqlite_bind_event)) ||
	    (rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT_ID, (void **)ev, n,
					   keel_sqlite_bind_event_id)))
		return rc;
	/* Every row now has its seq: the last row of each timeline is known
	 * (a rollback forgets it all again). */
	keel_open_rows_learn(&s->open_rows, &o->timelines);
	return 0;
}

/* A connection keeps reading and writing a database file that was
 * deleted or replaced by another (its open descriptor still works), and
 * whatever it writes is lost with it: no read would notice. */
static int keel_sqlite_check(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int moved = 0;
	if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK &&
	    moved) {
		const char *path = sqlite3_db_filename(s->db, "main");
		return keel_store_fail(bs, KEEL_EIO,
				       "sqlite: database file \"%s\" was deleted or replaced "
				       "since it was opened",
				       path ? path : "");
	}
	return 0;
}

const struct keel_store_ops keel_store_sqlite_ops = {
    .scheme = "sqlite",
    .url_form = "sqlite:PATH",
    .open = keel_sqlite_open,
    .close = keel_sqlite_close,
    .begin = keel_sqlite_begin,
    .commit = keel_sqlite_commit,
    .rollback = keel_sqlite_rollback,
    .seen_ids = keel_sqlite_seen_ids,
    .prefetch = keel_sqlite_prefetch,
    .write_back = keel_sqlite_write_back,
    .tenants = keel_sqlite_tenants,
    .scan = keel_sqlite_scan,
    .counts = keel_sqlite_counts,
    .replace_tenant = keel_sqlite_replace_tenant,
    .metrics = keel_sqlite_metrics,
    .check = keel_sqlite_check,
};

/* ------------------------------------------------- for tests (internal) */

sqlite3 *keel_store_sqlite_db(struct keel_store *bs)
{
	return keel_sqlite_downcast(bs)->db;
}

void keel_store_sqlite_set_length_limit(struct keel_store *bs, int bytes)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, bytes);
	keel_sqlite_set_max_envelope(s);
}

void keel_store_sqlite_open_rows(struct keel_store *bs, bool forget, uint64_t *hits,
				 uint64_t *misses)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (forget)
		keel_open_rows_clear(&s->open_rows);
	if (hits)
		*hits = s->open_rows.hits;
	if (misses)
		*misses = s->open_rows.misses;
}
