/*
 * store.c - the SQLite store (docs/stores.md, docs/store-sqlite.md).
 *
 * Organisation (parts.h lists the files):
 *  - store.c: open (URL, pragmas: WAL, synchronous=NORMAL, busy timeout),
 *    transactions (a durable handle's commits synced) and savepoints, and
 *    the batch path: seen_ids and append;
 *  - schema.c: the versioned schema kept in the meta table, created
 *    or migrated by a list of steps (keel_sqlite_migrations), and the views
 *    that show the derived rows;
 *  - sql.c: every statement is prepared once, on first use, with
 *    SQLITE_PREPARE_PERSISTENT and reused for the life of the store; the
 *    SQL text is built only then, never per batch. Seen ids run a "padded"
 *    statement that joins a VALUES list of up to 1000 keys against the
 *    log's ids, one statement per size on a ladder of sizes, the unused
 *    tail of the list bound to NULL (a NULL key matches nothing and costs
 *    no seek); rows, mentions and events go in with multi-row INSERTs of
 *    power-of-two sizes;
 *  - read.c: raw scans with ORDER BY in SQL, one cached statement
 *    per record type and combination of filters;
 *  - replay.c: a tenant's rows replaced in one transaction;
 *  - checkpoint.c: a writing handle's background WAL checkpoints.
 *
 * Rows are never updated (docs/semantics.md): append writes each
 * assertion once and reads nothing; valid_to and closed_by are derived
 * when read (store.c), from the next row of the timeline in
 * (valid_from, seq) order, which the key indexes give.
 *
 * Why a join and not row-constructor IN for seen ids: SQLite 3.40 plans
 * "(a, b) IN (VALUES ...)" as a full SCAN of the table (the row-value IN
 * is only used with an index for a single column), while "k CROSS JOIN t
 * ON t.a = k.a AND ..." seeks the index once per key. The join also
 * returns the key's slot, so rows map back to events without hashing.
 *
 * A store handle is used by one thread at a time (its transaction state and
 * message are per handle), so the connection is opened without SQLite's
 * own mutex.
 */
#include "parts.h"

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
	sqlite3_stmt *fixed[] = {s->begin,	   s->commit, s->rollback, s->max_seq,
				 s->last_recorded, s->counts, s->tenants};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(fixed); i++)
		sqlite3_finalize(fixed[i]);
	for (size_t i = 0; i < KEEL_SC_N; i++)
		sqlite3_finalize(s->current[i]);
	for (size_t i = 0; i < KEEL_SCART_N; i++)
		sqlite3_finalize(s->cartridge[i]);
	keel_sqlite_names_free(s);
	sqlite3_close_v2(s->db);
	free(s->keys);
	free(s->rows);
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
		keel_buf_addf(err, "store \"%s\": cannot read it: %s", url,
			      strerror(errno));
		return KEEL_ESTORE;
	}

	struct keel_sqlite_store *s = keel_xcalloc(1, sizeof *s);
	keel_store_base_init(&s->base, &keel_store_sqlite_ops, url);
	/* Another handle on ":memory:" is another database. */
	s->base.state_in_handle = in_memory;
	s->path = keel_xstrdup(path);
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
	atomic_init(&s->commit_syncs, 0);
	sqlite3_busy_timeout(s->db, KEEL_SQLITE_BUSY_MS);
	keel_sqlite_set_max_envelope(s);
	/* A file that is not a store this Keel may write is refused before
	 * anything writes to it: switching a rollback-journal file to WAL
	 * rewrites its header. page_size writes nothing (it only takes effect
	 * when a new file's first page is written). */
	char pragmas[256];
	snprintf(pragmas, sizeof pragmas,
		 "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
		 "PRAGMA cache_size = -%d; PRAGMA temp_store = MEMORY; "
		 "PRAGMA wal_autocheckpoint = %d",
		 KEEL_SQLITE_CACHE_KIB, KEEL_SQLITE_AUTOCHECKPOINT);
	char page_size[64];
	snprintf(page_size, sizeof page_size, "PRAGMA page_size = %d", KEEL_SQLITE_PAGE_SIZE);
	if ((rc = keel_sqlite_exec(s, page_size)) || (rc = keel_sqlite_check_schema(s)) ||
	    (rc = keel_sqlite_exec(s, pragmas)) || (rc = keel_sqlite_migrate(s)) ||
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

/* The last seq of each table, read when a transaction begins, under the
 * write lock: rows, mentions and events get explicit seqs so that ev->seq
 * is known without asking SQLite which rowid it picked. Each is a seek to
 * the end of its table's rowid b-tree. */
static int keel_sqlite_load_seqs(struct keel_sqlite_store *s)
{
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->max_seq,
	    "SELECT (SELECT max(seq) FROM fact_rows), (SELECT max(seq) FROM "
	    "relation_rows), (SELECT max(seq) FROM events), (SELECT max(seq) FROM "
	    "entity_mentions)");
	int64_t last[4] = {0, 0, 0, 0};
	if (rc || (rc = keel_sqlite_ints(s, s->max_seq, NULL, last, 4)))
		return rc;
	s->fact_seq = last[0];
	s->rel_seq = last[1];
	s->event_seq = last[2];
	s->mention_seq = last[3];
	return 0;
}

static int keel_sqlite_begin(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* A handle that writes copies its log back in the background. */
	int rc = keel_sqlite_checkpoint_start(s);
	if (rc || (rc = keel_sqlite_run(s, s->begin)))
		return rc;
	s->sp = (struct keel_sqlite_savepoint){0};
	if ((rc = keel_sqlite_load_seqs(s)))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* A forget's transaction ran with secure_delete on (sqlite_forget.c):
 * once it ends, committed or not, the handle's later transactions run
 * with the connection's own setting again (on, it overwrites every
 * deleted cell, a cost they need not pay where it was off). */
static void keel_sqlite_secure_delete_back(struct keel_sqlite_store *s)
{
	if (!s->secure_delete)
		return;
	/* by name: SQLite reads a number as a boolean (2 would be ON) */
	static const char *const sql[] = {"PRAGMA secure_delete = OFF",
					  "PRAGMA secure_delete = ON",
					  "PRAGMA secure_delete = FAST"};
	int was = s->secure_delete_was;
	if (sqlite3_exec(s->db, sql[was >= 0 && was <= 2 ? was : 0], NULL, NULL, NULL) ==
	    SQLITE_OK)
		s->secure_delete = false;
}

/*
 * Durable commits (keel serve's writer, keel_store_durable_commits). At
 * synchronous=NORMAL a WAL commit is written to the log but not synced:
 * the first sync comes with the next checkpoint, and a power cut before
 * it undoes the commit (the database stays whole). A durable handle syncs
 * the log itself right after each COMMIT, through SQLite's own file
 * object for it, before the commit is reported done: exactly what
 * synchronous=FULL does inside COMMIT, one sync a commit, here counted
 * (keel_sqlite_commit_syncs_total in GET /metrics) so that a test can
 * see it happen before the answer. Without a log (an in-memory database)
 * there is nothing to sync.
 */
static int keel_sqlite_sync_log(struct keel_sqlite_store *s)
{
	sqlite3_file *log = NULL;
	if (!s->ckpt.file) /* in memory */
		return 0;
	if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log) !=
		SQLITE_OK ||
	    !log || !log->pMethods)
		return 0;
	int rc = log->pMethods->xSync(log, SQLITE_SYNC_NORMAL);
	if (rc != SQLITE_OK)
		return keel_store_fail(&s->base, KEEL_EUNCERTAIN,
				       "sqlite \"%s\": committed, but syncing its log "
				       "failed (%s): a power cut may undo the commit",
				       s->path, sqlite3_errstr(rc));
	atomic_fetch_add(&s->commit_syncs, 1);
	return 0;
}

static int keel_sqlite_commit(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_run(s, s->commit);
	if (rc) {
		keel_sqlite_names_forget(s); /* the names it made may be gone */
		return rc;
	}
	keel_sqlite_secure_delete_back(s);
	return s->durable ? keel_sqlite_sync_log(s) : 0;
}

static int keel_sqlite_rollback(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	/* After some errors SQLite has already rolled back; that is fine. */
	int rc = sqlite3_get_autocommit(s->db) ? 0 : keel_sqlite_run(s, s->rollback);
	keel_sqlite_names_forget(s); /* the names it made are gone */
	keel_sqlite_secure_delete_back(s);
	return rc;
}

static void keel_sqlite_durable_commits(struct keel_store *bs)
{
	keel_sqlite_downcast(bs)->durable = true;
}

/*
 * A batch's savepoint is the last seq of each table: append only inserts,
 * each row numbered after those, so undoing a batch is deleting the rows
 * numbered after its savepoint. SQL's SAVEPOINT would do the same at a
 * price every batch pays: while one is open, each page a statement first
 * touches is copied into the sub-journal (measured: 8 % of an ingest's
 * instructions, docs/store-sqlite.md). The inserts are INSERT OR FAIL,
 * which needs no statement journal either: a failing statement leaves
 * its earlier rows, and these deletes take them too. An error after which
 * SQLite has rolled the whole transaction back (a full disk, an I/O
 * error) is reported, and the caller rolls everything back.
 */
static int keel_sqlite_savepoint(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	s->sp = (struct keel_sqlite_savepoint){
	    .open = true,
	    .fact_seq = s->fact_seq,
	    .rel_seq = s->rel_seq,
	    .event_seq = s->event_seq,
	    .mention_seq = s->mention_seq,
	};
	return 0;
}

static int keel_sqlite_release(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	s->sp.open = false;
	return 0;
}

static int keel_sqlite_rollback_to_savepoint(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (!s->sp.open)
		return keel_store_fail(bs, KEEL_EINVAL, "no savepoint open");
	s->sp.open = false;
	if (sqlite3_get_autocommit(s->db))
		return keel_store_fail(bs, KEEL_ESTORE,
				       "sqlite \"%s\": the transaction was rolled back "
				       "whole",
				       s->path);
	if (s->sp.deleted)
		return keel_store_fail(
		    bs, KEEL_ESTORE,
		    "sqlite \"%s\": a replace cannot be rolled back to "
		    "a savepoint",
		    s->path);
	static const char *const undo[] = {
	    "DELETE FROM fact_rows WHERE seq > ?",
	    "DELETE FROM relation_rows WHERE seq > ?",
	    "DELETE FROM entity_mentions WHERE seq > ?",
	    /* event_ids has no index on seq: a scan, on this rare path only */
	    "DELETE FROM event_ids WHERE seq > ?",
	    "DELETE FROM events WHERE seq > ?",
	};
	const int64_t last[] = {s->sp.fact_seq, s->sp.rel_seq, s->sp.mention_seq,
				s->sp.event_seq, s->sp.event_seq};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(undo); i++) {
		sqlite3_stmt *st;
		int rc = keel_sqlite_prepare(s, undo[i], strlen(undo[i]), &st);
		if (rc)
			return rc;
		keel_sqlite_bind_i64(s, st, 1, last[i]);
		rc = keel_sqlite_run(s, st);
		sqlite3_finalize(st);
		if (rc)
			return rc;
	}
	s->fact_seq = s->sp.fact_seq;
	s->rel_seq = s->sp.rel_seq;
	s->event_seq = s->sp.event_seq;
	s->mention_seq = s->sp.mention_seq;
	return 0;
}

/* recorded_at never decreases along the log, so the last event's is the
 * latest: a seek to the end of the rowid b-tree. */
static int keel_sqlite_last_recorded_at(struct keel_store *bs, int64_t *out)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	*out = 0;
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->last_recorded,
	    "SELECT recorded_at FROM events ORDER BY seq DESC LIMIT 1");
	return rc ? rc : keel_sqlite_ints(s, s->last_recorded, NULL, out, 1);
}

/*
 * SQLite has one writer at a time, and a transaction's recorded_at is
 * taken under its write lock, later than the log's last: so a moment at
 * or before the log's last needs no wait, and for a later one the only
 * transaction that may record at or before it is the one open now, which
 * has ended once the log's last recorded_at moves past last, or once no
 * transaction holds the lock. Polled rather than waited for in the lock:
 * a writer that begins its next transaction as soon as it commits would
 * win the lock from a waiting reader again and again.
 */
static int keel_sqlite_settle(struct keel_store *bs, int64_t known_at)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (!sqlite3_get_autocommit(s->db))
		return 0; /* this handle's own transaction: nothing to wait for */
	int64_t last = 0;
	int rc = keel_sqlite_last_recorded_at(bs, &last);
	if (rc || known_at <= last)
		return rc;
	for (int waited_ms = 0;; waited_ms += KEEL_SQLITE_SETTLE_POLL_MS) {
		bool locked = false;
		rc = keel_sqlite_try_lock(s, &locked);
		if (rc)
			return rc;
		if (locked)
			return keel_sqlite_run(s, s->rollback);
		if (sqlite3_db_readonly(s->db, "main") == 1)
			return 0; /* cannot tell: docs/semantics.md says so */
		int64_t now_last = 0;
		if ((rc = keel_sqlite_last_recorded_at(bs, &now_last)) || now_last > last)
			return rc;
		if (waited_ms >= KEEL_SQLITE_BUSY_MS)
			return keel_store_fail(bs, KEEL_ESTORE,
					       "store \"%s\": a write transaction has been open "
					       "%d s; a read known at a moment it may record at "
					       "waits for it",
					       bs->url, KEEL_SQLITE_BUSY_MS / 1000);
		struct timespec ts = {0, KEEL_SQLITE_SETTLE_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
}

static int keel_sqlite_schema_versions(struct keel_store *bs, int *was, int *now)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	*was = s->schema_was;
	*now = s->schema_now;
	return 0;
}

/* ------------------------------------------------------------ seen ids */

static void keel_sqlite_bind_event_key(struct keel_sqlite_store *s, sqlite3_stmt *st,
				       int p, const struct keel_sqlite_key *k)
{
	const struct keel_batch_event *ev = k->ptr;
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->source);
	keel_sqlite_bind_str(s, st, p + 2, ev->id);
}

static void keel_sqlite_seen_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				 const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)ud;
	struct keel_batch_event *ev = k->ptr;
	ev->status = KEEL_EV_DUPLICATE;
	ev->stored_hash = (uint64_t)sqlite3_column_int64(st, 1);
	ev->stored_seq = sqlite3_column_int64(st, 2);
}

static int keel_sqlite_seen_ids(struct keel_store *bs, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < n; i++)
		keel_sqlite_keys_push(s, ev[i]);
	return keel_sqlite_run_padded(s, KEEL_SQ_SEEN, keel_sqlite_bind_event_key,
				      keel_sqlite_seen_row, NULL);
}

/* -------------------------------------------------------------- append */

/* Binds item i of an array at parameter p onwards. */
typedef void (*keel_sqlite_bind_item_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st,
					 int p, const void *items, size_t i);

/* Inserts items [0, n) with multi-row INSERTs: full statements of
 * KEEL_SQLITE_INSERT_MAX rows, then the remainder by its binary digits. */
static int keel_sqlite_insert_items(struct keel_sqlite_store *s,
				    enum keel_sqlite_insert t, const void *items,
				    size_t n, keel_sqlite_bind_item_fn bind)
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
			bind(s, st, p, items, i + k);
		if ((rc = keel_sqlite_run(s, st)))
			return rc;
		i += 1u << log2;
	}
	return 0;
}

/* Rows of one kind are numbered as they are bound: the array holds both
 * kinds in arrival order, and insert_items is handed each kind's. */
struct keel_sqlite_rows {
	const struct keel_assertion **items;
	int64_t first_seq;
	const struct keel_assertion *all; /* the batch's rows: s->row_ids' order */
};

static void keel_sqlite_bind_fact(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				  const void *items, size_t i)
{
	const struct keel_sqlite_rows *rows = items;
	const struct keel_assertion *r = rows->items[i];
	const int64_t *ids = &s->row_ids[3 * (size_t)(r - rows->all)];
	keel_sqlite_bind_i64(s, st, p, rows->first_seq + (int64_t)i);
	keel_sqlite_bind_i64(s, st, p + 1, ids[0]);
	keel_sqlite_bind_str(s, st, p + 2, r->subject);
	keel_sqlite_bind_i64(s, st, p + 3, ids[1]);
	keel_sqlite_bind_str(s, st, p + 4, r->value);
	keel_sqlite_bind_i64(s, st, p + 5, r->valid_from);
	keel_sqlite_bind_str(s, st, p + 6, r->asserted_by.id);
	keel_sqlite_bind_i64(s, st, p + 7, r->recorded_at);
	keel_sqlite_bind_i64(s, st, p + 8, ids[2]);
}

static void keel_sqlite_bind_relation(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const void *items, size_t i)
{
	const struct keel_sqlite_rows *rows = items;
	const struct keel_assertion *r = rows->items[i];
	const int64_t *ids = &s->row_ids[3 * (size_t)(r - rows->all)];
	keel_sqlite_bind_i64(s, st, p, rows->first_seq + (int64_t)i);
	keel_sqlite_bind_i64(s, st, p + 1, ids[0]);
	keel_sqlite_bind_str(s, st, p + 2, r->subject);
	keel_sqlite_bind_i64(s, st, p + 3, ids[1]);
	keel_sqlite_bind_str(s, st, p + 4, r->object);
	keel_sqlite_bind_i64(s, st, p + 5, r->linked);
	keel_sqlite_bind_i64(s, st, p + 6, r->valid_from);
	keel_sqlite_bind_str(s, st, p + 7, r->asserted_by.id);
	keel_sqlite_bind_i64(s, st, p + 8, r->recorded_at);
	keel_sqlite_bind_i64(s, st, p + 9, ids[2]);
}

static void keel_sqlite_bind_event(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				   const void *items, size_t i)
{
	const struct keel_batch_event *ev = ((struct keel_batch_event *const *)items)[i];
	keel_sqlite_bind_i64(s, st, p, ev->seq);
	keel_sqlite_bind_str(s, st, p + 1, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 2, ev->id);
	keel_sqlite_bind_str(s, st, p + 3, ev->type);
	keel_sqlite_bind_i64(s, st, p + 4, ev->time);
	keel_sqlite_bind_i64(s, st, p + 5, (int64_t)ev->hash);
	keel_sqlite_bind_str(s, st, p + 6, ev->envelope);
	keel_sqlite_bind_i64(s, st, p + 7, ev->recorded_at);
	keel_sqlite_bind_str(s, st, p + 8, ev->source);
}

static void keel_sqlite_bind_event_id(struct keel_sqlite_store *s, sqlite3_stmt *st,
				      int p, const void *items, size_t i)
{
	const struct keel_batch_event *ev = ((struct keel_batch_event *const *)items)[i];
	keel_sqlite_bind_str(s, st, p, ev->tenant);
	keel_sqlite_bind_str(s, st, p + 1, ev->source);
	keel_sqlite_bind_str(s, st, p + 2, ev->id);
	keel_sqlite_bind_i64(s, st, p + 3, (int64_t)ev->hash);
	keel_sqlite_bind_i64(s, st, p + 4, ev->seq);
	keel_sqlite_bind_i64(s, st, p + 5, ev->recorded_at);
}

static void keel_sqlite_bind_mention(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				     const void *items, size_t i)
{
	const struct keel_mention *m = &((const struct keel_mention *)items)[i];
	keel_sqlite_bind_i64(s, st, p, s->mention_seq + 1 + (int64_t)i);
	keel_sqlite_bind_str(s, st, p + 1, m->tenant);
	keel_sqlite_bind_str(s, st, p + 2, m->subject);
	keel_sqlite_bind_str(s, st, p + 3, m->kind);
	keel_sqlite_bind_i64(s, st, p + 4, m->kind_time);
	keel_sqlite_bind_i64(s, st, p + 5, m->first_seen);
	keel_sqlite_bind_i64(s, st, p + 6, m->last_seen);
	keel_sqlite_bind_i64(s, st, p + 7, m->recorded_at);
}

/* The rows of one kind, in arrival order, numbered after the table's last
 * seq. */
static int keel_sqlite_append_rows(struct keel_sqlite_store *s,
				   const struct keel_append *a, enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	int64_t *seq = fact ? &s->fact_seq : &s->rel_seq;
	size_t n = 0;
	for (size_t i = 0; i < a->nrows; i++)
		n += a->rows[i].kind == kind;
	if (!n)
		return 0;
	if (n > s->rows_cap) {
		s->rows_cap = n;
		s->rows = keel_xrealloc(s->rows, n * sizeof *s->rows);
	}
	n = 0;
	for (size_t i = 0; i < a->nrows; i++)
		if (a->rows[i].kind == kind)
			s->rows[n++] = &a->rows[i];
	struct keel_sqlite_rows rows = {s->rows, *seq + 1, a->rows};
	int rc = keel_sqlite_insert_items(s, fact ? KEEL_SI_FACT : KEEL_SI_REL, &rows, n,
					  fact ? keel_sqlite_bind_fact
					       : keel_sqlite_bind_relation);
	if (rc == 0)
		*seq += (int64_t)n;
	return rc;
}

/* Writes everything once and reads nothing (docs/store-sqlite.md, "One
 * batch"). On failure the caller rolls back to the batch's savepoint;
 * the seqs this batch took are then skipped, never reused. */
int keel_sqlite_append(struct keel_store *bs, const struct keel_append *a)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	for (size_t i = 0; i < a->nevents; i++)
		a->events[i]->seq = s->event_seq + 1 + (int64_t)i;
	int rc;
	if ((rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT, a->events, a->nevents,
					   keel_sqlite_bind_event)) ||
	    (rc = keel_sqlite_insert_items(s, KEEL_SI_EVENT_ID, a->events, a->nevents,
					   keel_sqlite_bind_event_id)))
		return rc;
	s->event_seq += (int64_t)a->nevents;
	if ((rc = keel_sqlite_names_ids(s, a->rows, a->nrows)) ||
	    (rc = keel_sqlite_append_rows(s, a, KEEL_ROW_FACT)) ||
	    (rc = keel_sqlite_append_rows(s, a, KEEL_ROW_RELATION)) ||
	    (rc = keel_sqlite_insert_items(s, KEEL_SI_MENTION, a->mentions, a->nmentions,
					   keel_sqlite_bind_mention)))
		return rc;
	s->mention_seq += (int64_t)a->nmentions;
	return 0;
}

/* A connection keeps reading and writing a database file that was
 * deleted or replaced by another (its open descriptor still works), and
 * whatever it writes is lost with it: no read would notice. */
static int keel_sqlite_check(struct keel_store *bs)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int moved = 0;
	if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) ==
		SQLITE_OK &&
	    moved) {
		const char *path = sqlite3_db_filename(s->db, "main");
		return keel_store_fail(
		    bs, KEEL_EIO,
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
    .savepoint = keel_sqlite_savepoint,
    .release = keel_sqlite_release,
    .rollback_to_savepoint = keel_sqlite_rollback_to_savepoint,
    .last_recorded_at = keel_sqlite_last_recorded_at,
    .settle = keel_sqlite_settle,
    .seen_ids = keel_sqlite_seen_ids,
    .append = keel_sqlite_append,
    .tenants = keel_sqlite_tenants,
    .scan = keel_sqlite_scan,
    .counts = keel_sqlite_counts,
    .entity_subjects = keel_sqlite_entity_subjects,
    .fact_subjects = keel_sqlite_fact_subjects,
    .fold = keel_sqlite_fold_some,
    .replace_tenant = keel_sqlite_replace_tenant,
    .forget = keel_sqlite_forget,
    .forget_find = keel_sqlite_forget_find,
    .forget_rows = keel_sqlite_forget_rows,
    .tombstone = keel_sqlite_tombstone,
    .scrub = keel_sqlite_scrub,
    .cartridge_get = keel_sqlite_cartridge_get,
    .cartridge_put = keel_sqlite_cartridge_put,
    .metrics = keel_sqlite_metrics,
    .durable_commits = keel_sqlite_durable_commits,
    .check = keel_sqlite_check,
    .schema_versions = keel_sqlite_schema_versions,
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
