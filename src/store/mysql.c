/*
 * mysql.c - the MySQL/MariaDB store: the set-based batch path on a server,
 * through MariaDB Connector/C.
 *
 * A batch costs a handful of statements whatever its size (docs/store-mysql.md):
 *
 *   seen ids      SELECT ... FROM keel_writers WHERE tenant = .. UNION ALL
 *                 SELECT ... FROM keel_events WHERE tenant = .. AND id IN
 *                 (...) UNION ALL the next tenant's; not sent while no
 *                 duplicates come (the events go in first, below the lock)
 *   START TRANSACTION, then SELECT ... FROM keel_writers WHERE tenant IN
 *                 (...) FOR UPDATE: writers of one tenant take turns (and,
 *                 while bulk executions hand back ids, the tables' MAX(seq))
 *   open rows     WITH k(t, s, p) AS (VALUES (...), ...), r(...) AS (...)
 *                 SELECT ... the row whose seq is each key's last on the
 *                 timeline index by (valid_from, seq), if open, UNION ALL
 *                 the same on relations; timelines whose open row the
 *                 open-row cache holds are left out
 *   late rows     (SELECT ... WHERE seq = COALESCE(the last row starting at
 *                 or before t, the first non-empty row after it)) UNION ALL
 *                 ...   -- only when events are late
 *   events, entities, facts, relations:
 *                 one multi-row INSERT each, or on MariaDB one bulk
 *                 execution each (array binding); the entities' ON
 *                 DUPLICATE KEY UPDATE merges the batch into the stored row,
 *                 so entities need no read
 *   closures      one UPDATE ... CASE seq per table, or one bulk upsert
 *   keel_writers  this connection's mark, for tenants it did not write last
 *   COMMIT
 *
 * A batch of nothing but duplicates costs the id lookup alone.
 *
 * The timeline indexes end in valid_from (schema version 3), so closing a
 * row rewrites the row alone and moves no index entry.
 *
 * IN lists are cut into parts of at most KEEL_MYSQL_IN_MAX entries joined
 * by UNION ALL inside one statement, so the range optimizer sees short
 * lists while the round trips stay constant. Any statement is cut only
 * when it would pass the server's max_allowed_packet. Every value goes into
 * the text as an escaped _binary literal or a number, never raw, or is a
 * bound parameter (bulk path).
 *
 * Open rows keep their asserted_by in closed_by as a placeholder, so that
 * closing them rewrites the row in place (keel_mysql_stored_closed_by).
 *
 * Strings are stored in VARBINARY/BLOB columns: they compare bytewise with
 * no trailing-space padding, exactly as keel_str_cmp and SQLite do (the
 * utf8mb4_bin collation is PAD SPACE on MariaDB and would make "a" and "a "
 * the same key). docs/store-mysql.md has the schema and the reasons.
 *
 * Results of the batch's reads are bounded by the batch (mysql_store_result);
 * scans of a whole tenant stream (mysql_use_result).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "mysql_store.h"

/* ---------------------------------------------------------- transactions */

static int keel_mysql_begin(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (m->broken) {
		/* The server rolled the lost batch back; start afresh. */
		keel_mysql_bulk_close_stmts(m);
		keel_mysql_cache_drop(m);
		mysql_close(m->db);
		m->db = NULL;
		m->broken = false;
		struct keel_buf err;
		keel_buf_init(&err);
		int rc = keel_mysql_connect(m, &err);
		if (rc) {
			m->broken = true;
			if (m->db) {
				mysql_close(m->db);
				m->db = mysql_init(NULL);
			}
			keel_store_fail(s, rc, "reconnecting: %s", err.data);
			keel_buf_free(&err);
			return rc;
		}
		keel_buf_free(&err);
		if ((rc = keel_mysql_bulk_prepare(m)) != 0) {
			m->broken = true;
			return rc;
		}
		m->stats.reconnects++;
	}
	m->batch_rows = 0;
	m->tx_open = false;
	m->nmarks = 0;
	m->seen_reads = 0;
	m->seen_differ = false;
	m->pending_known = false;
	m->events_logged = false;
	return 0;
}

static int keel_mysql_lock_tenants(struct keel_mysql_store *m);

/* The transaction starts when the batch is known to write (prefetch, or a
 * write-back without one): a batch of nothing but duplicates costs its one
 * lookup and no transaction at all. It starts by locking the batch's
 * tenants (keel_mysql_lock_tenants), so that the reads after it see what
 * any other writer of them committed. */
int keel_mysql_tx(struct keel_mysql_store *m)
{
	if (m->tx_open)
		return 0;
	int rc = 0;
	/* keel_writers rows first, outside the transaction: a locking read
	 * of a row that is not there would lock a gap, and two writers of
	 * new tenants inserting into the same gap deadlock */
	struct keel_ptrvec *missing = &m->tenants;
	missing->len = 0;
	for (size_t i = 0; i < m->nmarks; i++)
		if (!m->marks[i].present)
			keel_ptrvec_push(missing, &m->marks[i].tenant);
	rc = missing->len ? keel_mysql_put_writers(m, missing, false) : 0;
	missing->len = 0;
	if (rc)
		return rc;
	rc = keel_mysql_runs(m, "START TRANSACTION", "starting the batch");
	if (rc == 0)
		m->tx_open = true;
	if (rc == 0 && m->nmarks)
		rc = keel_mysql_lock_tenants(m);
	return rc;
}

static int keel_mysql_commit(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (!m->tx_open)
		return 0;
	int rc = keel_mysql_runs(m, "COMMIT", "commit");
	if (rc == 0) {
		m->tx_open = false;
		memcpy(m->expect, m->pending, sizeof m->expect);
		m->expect_known = m->pending_known;
	} else {
		keel_mysql_cache_drop(m);
	}
	if (rc && m->broken) {
		unsigned e = m->db ? mysql_errno(m->db) : 0;
		return keel_store_fail(
		    s, rc,
		    "commit: lost the connection to the mysql server (error "
		    "%u); the batch may or may not have been committed: run "
		    "the same input again (events already logged are skipped)",
		    e);
	}
	return rc;
}

static int keel_mysql_rollback(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	bool open = m->tx_open;
	m->tx_open = false;
	keel_mysql_cache_drop(m);
	/* Without a connection the server has rolled back already. */
	if (m->broken || !open)
		return 0;
	return keel_mysql_runs(m, "ROLLBACK", "rollback");
}

/* ---------------------------------------------------- the open-row cache */

/*
 * The open row of each timeline the last few batches on this connection
 * wrote or read, so that the next batch on the same timeline need not read
 * it again (src/store/open_rows.c, shared with the SQLite store).
 *
 * A remembered row is right only if nobody else has written its tenant
 * since. keel_writers says who did last: every write of a tenant, by any
 * connection, sets the tenant's row to the writer's random mark in the
 * batch's transaction. The batch's first statement in its transaction
 * locks and reads the rows of its tenants (keel_mysql_lock_tenants); the
 * cache serves a batch only if all of them carry this connection's mark,
 * and a batch that writes a tenant someone else wrote last first forgets
 * everything. So by induction every remembered row of a tenant whose mark
 * is ours is what this connection's last commit left, and workers (each
 * its own tenants) and servers keep their caches while others write other
 * tenants. While bulk executions hand back ids, the tables' MAX(seq) are
 * checked too (keel_mysql_others_inserted).
 *
 * A lost connection or a rolled-back batch drops the cache too. It holds
 * the timelines of the last KEEL_MYSQL_CACHE_BATCHES batches at most,
 * fewer when batches are large (as many as fill half of
 * KEEL_MYSQL_CACHE_MAX, at least KEEL_MYSQL_CACHE_MIN_BATCHES): memory
 * stays bounded by the batch and by KEEL_MYSQL_CACHE_MAX.
 * docs/store-mysql.md has the measurements.
 */

/* Forgets everything: the next batch reads every open row. */
void keel_mysql_cache_drop(struct keel_mysql_store *m)
{
	keel_open_rows_clear(&m->cache);
	m->expect_known = false;
}

static int keel_mysql_cmp_mark(const void *pa, const void *pb)
{
	const struct keel_mysql_mark *a = pa, *b = pb;
	return keel_str_cmp(a->tenant, b->tenant);
}

/* Adds a tenant of the open batch (its string outlives the batch's
 * statements); the caller keeps m->marks sorted. */
static struct keel_mysql_mark *keel_mysql_mark_add(struct keel_mysql_store *m,
						   struct keel_str tenant)
{
	if (m->nmarks == m->marks_cap) {
		m->marks_cap = m->marks_cap ? 2 * m->marks_cap : 8;
		m->marks = keel_xrealloc(m->marks, m->marks_cap * sizeof *m->marks);
	}
	struct keel_mysql_mark *k = &m->marks[m->nmarks++];
	k->tenant = tenant;
	k->present = false;
	k->locked = false;
	k->mine = false;
	k->unwritten = false;
	return k;
}

static struct keel_mysql_mark *keel_mysql_mark_find(struct keel_mysql_store *m,
						    struct keel_str tenant)
{
	struct keel_mysql_mark key = {.tenant = tenant};
	if (!m->nmarks)
		return NULL; /* bsearch takes no NULL array, even an empty one */
	if (keel_str_eq(m->marks[m->nmarks - 1].tenant, tenant))
		return &m->marks[m->nmarks - 1];
	return bsearch(&key, m->marks, m->nmarks, sizeof key, keel_mysql_cmp_mark);
}

static int keel_mysql_cmp_str_ptr(const void *pa, const void *pb)
{
	return keel_str_cmp(**(const struct keel_str *const *)pa,
			    **(const struct keel_str *const *)pb);
}

static bool keel_mysql_mine(struct keel_mysql_store *m, struct keel_str tenant)
{
	const struct keel_mysql_mark *k = keel_mysql_mark_find(m, tenant);
	return k && k->mine;
}

/* Were all the overlay's tenants last written by this connection? */
static bool keel_mysql_overlay_mine(struct keel_mysql_store *m,
				    const struct keel_overlay *o)
{
	const struct keel_str *prev = NULL;
	for (size_t i = 0; i < o->timelines.len; i++) {
		const struct keel_timeline *tl = o->timelines.items[i];
		if (prev && keel_str_eq(*prev, tl->tenant))
			continue;
		if (!keel_mysql_mine(m, tl->tenant))
			return false;
		prev = &tl->tenant;
	}
	prev = NULL;
	for (size_t i = 0; i < o->entities.len; i++) {
		const struct keel_entity *e = o->entities.items[i];
		if (prev && keel_str_eq(*prev, e->tenant))
			continue;
		if (!keel_mysql_mine(m, e->tenant))
			return false;
		prev = &e->tenant;
	}
	return true;
}

/* The tables' MAX(seq), read with the lock while bulk executions hand back
 * ids (see "The open-row cache"): rows with a NULL tenant, the table's
 * initial third. */
#define KEEL_MYSQL_MAX_SEQS                                                              \
	" UNION ALL SELECT NULL, MAX(seq), 'e' FROM keel_events UNION ALL SELECT "       \
	"NULL, MAX(seq), 'f' FROM keel_facts UNION ALL SELECT NULL, MAX(seq), 'r' FROM " \
	"keel_relations"

#define KEEL_MYSQL_LOCK_SELECT                                                           \
	"SELECT tenant, writer, NULL FROM keel_writers FORCE INDEX (PRIMARY) WHERE "     \
	"tenant IN ("

static int keel_mysql_lock_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	if (!row[0]) {
		int t = row[2][0] == 'e' ? 0 : row[2][0] == 'f' ? 1 : 2;
		int64_t v = row[1] ? (int64_t)keel_mysql_u64(row[1], len[1]) : 0;
		if (m->seen_reads >= 3 && m->seen_max[t] != v)
			m->seen_differ = true;
		m->seen_max[t] = v;
		m->seen_reads++;
		return 0;
	}
	struct keel_mysql_mark *k = keel_mysql_mark_find(m, keel_mysql_col(row, len, 0));
	if (k) {
		uint64_t writer = row[1] ? keel_mysql_u64(row[1], len[1]) : 0;
		k->locked = true;
		k->mine = writer == m->writer;
		k->unwritten = writer == 0;
	}
	return 0;
}

static int keel_mysql_run_lock(struct keel_mysql_list *l)
{
	return keel_mysql_select(l->m, l->what, keel_mysql_lock_row, NULL);
}

/* The batch's first statement in its transaction: locks the rows of its
 * tenants in keel_writers until the commit. A second connection writing
 * one of them waits here until the first commits, and its reads, which
 * come after, see what the first wrote: writers of one tenant take turns
 * batch by batch instead of reading state the other is changing. The rows
 * are locked in key order by one statement (cut only at the packet limit),
 * so two writers never wait for each other in a circle. The key is forced:
 * on a table of a few rows the optimizer prefers a scan, and a locking scan
 * waits for every row another writer holds, so workers of different
 * tenants would take turns too (measured: two workers 0.88x one). What they hold
 * says whether this connection wrote each tenant last (the open-row
 * cache), and that each row exists (keel_mysql_log_first). */
static int keel_mysql_lock_tenants(struct keel_mysql_store *m)
{
	/* parentheses only around a locking read with a UNION after it */
	bool max_seqs = m->cache_on && m->bulk_ids;
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "locking the batch's tenants",
	    .head = max_seqs ? "(" KEEL_MYSQL_LOCK_SELECT : KEEL_MYSQL_LOCK_SELECT,
	    .open = "",
	    .sep = ",",
	    .close = ")",
	    .join = " OR tenant IN (",
	    .tail = max_seqs ? " FOR UPDATE)" KEEL_MYSQL_MAX_SEQS : " FOR UPDATE",
	    .part_max = KEEL_MYSQL_IN_MAX,
	    .run = keel_mysql_run_lock,
	};
	int rc = 0;
	for (size_t i = 0; i < m->nmarks && rc == 0; i++) {
		rc =
		    keel_mysql_list_item(&l, keel_mysql_str_size(m->marks[i].tenant) + 2);
		if (rc == 0)
			keel_mysql_add_str(m, &m->sql, m->marks[i].tenant);
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* Writes the keel_writers rows of the tenants in v (pointers to keel_str,
 * in any order, repeats allowed), in key order, one statement cut only at
 * the packet limit: with claim, this connection becomes their last writer
 * (INSERT ... ON DUPLICATE KEY UPDATE); without, rows that are missing are
 * created naming nobody (INSERT IGNORE, writer 0). */
int keel_mysql_put_writers(struct keel_mysql_store *m, struct keel_ptrvec *v, bool claim)
{
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_str_ptr);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = claim ? "marking the batch's tenants" : "adding the batch's tenants",
	    .head = claim ? "INSERT INTO keel_writers (tenant, writer) VALUES "
			  : "INSERT IGNORE INTO keel_writers (tenant, writer) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = claim ? m->writer_tail : "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_list,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_str *t = v->items[i];
		if (i && keel_str_eq(*(const struct keel_str *)v->items[i - 1], *t))
			continue;
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(*t) + 32);
		if (rc)
			break;
		keel_buf_addc(&m->sql, '(');
		keel_mysql_add_str(m, &m->sql, *t);
		keel_buf_addf(&m->sql, ",%llu)", (unsigned long long)(claim ? m->writer : 0));
	}
	if (rc == 0)
		rc = keel_mysql_list_flush(&l);
	return rc;
}

/* In write_back, once everything else is written: this connection becomes
 * the last writer of every tenant the batch wrote (one statement), and
 * each timeline's open row as it will stand after the commit goes into the
 * cache (a rollback or a failed commit drops it all). If the batch wrote a
 * tenant someone else wrote last, older rows are forgotten first. */
int keel_mysql_mark_written(struct keel_mysql_store *m, struct keel_overlay *o,
			    struct keel_batch_event **ev, size_t n)
{
	bool fresh = keel_mysql_overlay_mine(m, o);
	/* the batch's tenants whose row does not name this connection yet:
	 * the events' (the overlay's are among them) and any the marks do not
	 * know */
	struct keel_ptrvec *v = &m->rows;
	v->len = 0;
	for (size_t i = 0; i < n; i++) {
		struct keel_str *t = &ev[i]->tenant;
		if (i && keel_str_eq(ev[i - 1]->tenant, *t))
			continue;
		if (keel_mysql_mine(m, *t))
			continue; /* its row says so already, and is locked */
		fresh = false;
		keel_ptrvec_push(v, t);
	}
	const struct keel_str *prev = NULL;
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		if (prev && keel_str_eq(*prev, tl->tenant))
			continue;
		if (!keel_mysql_mark_find(m, tl->tenant))
			keel_ptrvec_push(v, &tl->tenant);
		prev = &tl->tenant;
	}
	int rc = v->len ? keel_mysql_put_writers(m, v, true) : 0;
	v->len = 0;
	if (rc || !m->cache_on)
		return rc;
	if (!fresh)
		keel_mysql_cache_drop(m);
	/* what the tables' MAX(seq) will be after the commit */
	m->pending_known = m->bulk_ids && m->seen_reads >= 3 && !m->seen_differ;
	memcpy(m->pending, m->seen_max, sizeof m->pending);
	for (size_t i = 0; i < n; i++)
		if (ev[i]->seq > m->pending[0])
			m->pending[0] = ev[i]->seq;
	for (size_t i = 0; i < o->new_rows.len; i++) {
		const struct keel_row *r = o->new_rows.items[i];
		int t = r->timeline->kind == KEEL_ROW_FACT ? 1 : 2;
		if (r->seq > m->pending[t])
			m->pending[t] = r->seq;
	}
	/* Keep the timelines of as many recent batches as half the cache
	 * holds, up to KEEL_MYSQL_CACHE_BATCHES: a fleet's active timelines
	 * come back within a few dozen batches of 500, while batches of
	 * 5000 would overflow it (and an overflow empties it). */
	size_t fit = KEEL_MYSQL_CACHE_MAX / 2 / (o->timelines.len ? o->timelines.len : 1);
	m->cache.age = fit > KEEL_MYSQL_CACHE_BATCHES	    ? KEEL_MYSQL_CACHE_BATCHES
		       : fit < KEEL_MYSQL_CACHE_MIN_BATCHES ? KEEL_MYSQL_CACHE_MIN_BATCHES
							    : fit;
	keel_open_rows_learn(&m->cache, &o->timelines);
	if (m->cache.entries.len > m->stats.max_cache_entries)
		m->stats.max_cache_entries = m->cache.entries.len;
	return 0;
}

/* ------------------------------------------------------------- seen ids */

static uint64_t keel_mysql_id_hash(struct keel_str tenant, struct keel_str id)
{
	return keel_hash64(id.ptr, id.len, keel_hash64(tenant.ptr, tenant.len, 11));
}

static int keel_mysql_seen_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	struct keel_str tenant = keel_mysql_col(row, len, 0);
	if (!row[1]) {
		/* the tenant's last writer (keel_writers) */
		struct keel_mysql_mark *k = keel_mysql_mark_find(m, tenant);
		if (k)
			k->present = true;
		return 0;
	}
	struct keel_str id = keel_mysql_col(row, len, 1);
	uint64_t stored = keel_mysql_u64(row[2], len[2]);
	uint64_t h = keel_mysql_id_hash(tenant, id);
	/* Every copy of the id in the batch is a duplicate. */
	for (size_t i = keel_map_first(&m->ids, h); i != SIZE_MAX;
	     i = keel_map_next(&m->ids, h, i)) {
		struct keel_batch_event *ev = m->ids.values[i];
		if (keel_str_eq(ev->id, id) && keel_str_eq(ev->tenant, tenant)) {
			ev->status = KEEL_EV_DUPLICATE;
			ev->stored_hash = stored;
		}
	}
	return 0;
}

static int keel_mysql_run_seen(struct keel_mysql_list *l)
{
	l->m->stats.prefetch_statements++;
	return keel_mysql_select(l->m, l->what, keel_mysql_seen_row, NULL);
}

static int keel_mysql_cmp_event_key(const void *pa, const void *pb)
{
	const struct keel_batch_event *a = *(const struct keel_batch_event *const *)pa;
	const struct keel_batch_event *b = *(const struct keel_batch_event *const *)pb;
	int c = keel_str_cmp(a->tenant, b->tenant);
	return c ? c : keel_str_cmp(a->id, b->id);
}

/*
 * A batch's first statement asks which of the batch's ids are logged
 * already; in a stream of new events the answer is "none" batch after
 * batch, and asking cost 8 % of the server's time (docs/store-mysql.md).
 * So while the last lookup found no duplicate, a batch does not ask: it
 * starts its transaction, locks its tenants and inserts its events (the
 * first copy of each id, in order) at once, and the events' primary key
 * answers the question. A duplicate key error means some were logged: the
 * server undid the insert, whole (a failed statement, bulk or not, leaves
 * nothing behind), and the batch looks its ids up in the same transaction
 * (its tenants locked, so nobody else logs their events meanwhile) and
 * goes on as always; so do the batches after it until a lookup finds none
 * again, so re-sent input costs one failed insert and then its lookup a
 * batch. A tenant whose keel_writers row does not exist yet (the lock
 * returns none) rolls the attempt back and goes the lookup's way, which
 * creates the row outside any transaction. Returns 0 with the events in,
 * 1 if the batch must look its ids up, or an error.
 */
static int keel_mysql_log_first(struct keel_mysql_store *m, struct keel_ptrvec *v)
{
	/* the batch's tenants, as marks in key order: one per run of events
	 * of a tenant, then sorted (a batch is mostly one or a few runs) */
	struct keel_ptrvec *t = &m->tenants;
	t->len = 0;
	for (size_t i = 0; i < v->len; i++) {
		struct keel_batch_event *e = v->items[i];
		if (!i || !keel_str_eq(((struct keel_batch_event *)v->items[i - 1])->tenant,
				       e->tenant))
			keel_ptrvec_push(t, &e->tenant);
	}
	if (t->len > 1)
		qsort(t->items, t->len, sizeof(void *), keel_mysql_cmp_str_ptr);
	for (size_t i = 0; i < t->len; i++) {
		const struct keel_str *tenant = t->items[i];
		if (!i || !keel_str_eq(*(const struct keel_str *)t->items[i - 1], *tenant))
			keel_mysql_mark_add(m, *tenant)->present = true;
	}
	t->len = 0;
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->log_first = false;
	for (size_t i = 0; i < m->nmarks; i++) {
		if (m->marks[i].locked)
			continue;
		m->tx_open = false;
		m->nmarks = 0;
		m->seen_reads = 0;
		m->seen_differ = false;
		m->stats.log_fallbacks++;
		return (rc = keel_mysql_runs(m, "ROLLBACK", "rollback")) != 0 ? rc : 1;
	}
	rc = keel_mysql_write_events(m, (struct keel_batch_event **)v->items, v->len);
	if (rc == 0) {
		m->events_logged = true;
		m->log_first = true;
		m->stats.logged_first++;
		return 0;
	}
	if (m->broken || m->last_errno != ER_DUP_ENTRY)
		return rc;
	m->stats.log_fallbacks++;
	return 1;
}

/* The ids of each tenant as one scalar IN list on the primary key's second
 * column (tenant = .. AND id IN (..)): half the literals of (tenant, id)
 * row constructors, and a cheaper range analysis (measured 25-30% less
 * server time per lookup). Parts of at most KEEL_MYSQL_IN_MAX ids, one per
 * tenant at least, joined by UNION ALL in one statement. Each tenant's part
 * first reads the tenant's last writer (a row with a NULL id: does its
 * row exist). v: the batch's distinct ids, sorted by (tenant, id); with
 * add_marks the batch's tenants become its marks. */
static int keel_mysql_lookup(struct keel_mysql_store *m, const struct keel_ptrvec *v,
			     bool add_marks)
{
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "looking up event ids",
	    .head = "",
	    .open = "",
	    .sep = ",",
	    .close = ")",
	    .join = " UNION ALL ",
	    .tail = "",
	    .part_max = KEEL_MYSQL_IN_MAX,
	    .in_list = true,
	    .run = keel_mysql_run_seen,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_batch_event *e = v->items[i];
		const struct keel_batch_event *prev = i ? v->items[i - 1] : NULL;
		if (!prev || !keel_str_eq(prev->tenant, e->tenant)) {
			if (add_marks)
				keel_mysql_mark_add(m, e->tenant);
			keel_buf_reset(&m->part);
			keel_buf_adds(&m->part, "SELECT tenant, NULL, writer FROM "
						"keel_writers WHERE tenant = ");
			keel_mysql_add_str(m, &m->part, e->tenant);
			keel_buf_adds(&m->part, " UNION ALL ");
			keel_buf_adds(
			    &m->part,
			    "SELECT tenant, id, hash FROM keel_events WHERE tenant = ");
			keel_mysql_add_str(m, &m->part, e->tenant);
			keel_buf_adds(&m->part, " AND id IN (");
			keel_mysql_list_part(&l, m->part.data);
		}
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(e->id) + 2);
		if (rc)
			break;
		keel_mysql_add_str(m, &m->sql, e->id);
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/*
 * Which of the batch's events are logged already. The lookup runs before
 * the transaction, so that a batch of nothing but logged events costs it
 * alone; a batch that will write then starts its transaction here, before
 * the cartridge sees the events, and if another connection wrote one of
 * its tenants since this connection's last commit (the lock says so: the
 * tenant's mark is another's; 0 means nobody has written it since its row
 * was created, which every writer does before it writes), it may have
 * logged some of these very ids after the lookup, so the lookup runs again
 * under the lock. Without that, two deliveries of the same events at once
 * both found them new, and the second one's insert failed the batch. While
 * no duplicates come, batches log first instead (keel_mysql_log_first).
 */
static int keel_mysql_seen_ids(struct keel_store *s, struct keel_batch_event **ev,
			       size_t n)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	keel_map_clear(&m->ids);
	m->nmarks = 0;
	struct keel_ptrvec *v = &m->rows;
	v->len = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = keel_mysql_id_hash(ev[i]->tenant, ev[i]->id);
		bool repeat = false;
		for (size_t k = keel_map_first(&m->ids, h); k != SIZE_MAX && !repeat;
		     k = keel_map_next(&m->ids, h, k)) {
			const struct keel_batch_event *o = m->ids.values[k];
			repeat = keel_str_eq(o->id, ev[i]->id) &&
				 keel_str_eq(o->tenant, ev[i]->tenant);
		}
		keel_map_put(&m->ids, h, ev[i]);
		if (!repeat)
			keel_ptrvec_push(v, ev[i]); /* asked once per id */
	}
	int rc = 0;
	if (m->log_first && v->len)
		rc = keel_mysql_log_first(m, v);
	if (rc == 1 || (rc == 0 && !m->events_logged)) {
		/* after a failed attempt to log first, its lock stands */
		bool locked = m->tx_open;
		if (v->len > 1)
			qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_event_key);
		rc = keel_mysql_lookup(m, v, !locked);
		bool writes = false;
		for (size_t i = 0; i < v->len && !writes; i++)
			writes = ((const struct keel_batch_event *)v->items[i])->status !=
				 KEEL_EV_DUPLICATE;
		if (rc == 0 && writes && !locked) {
			rc = keel_mysql_tx(m);
			bool others = false;
			for (size_t i = 0; i < m->nmarks && !others; i++)
				others = !m->marks[i].mine && !m->marks[i].unwritten;
			if (rc == 0 && others)
				rc = keel_mysql_lookup(m, v, false);
		}
		/* the next batch logs first if this one found nothing logged */
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = ev[i]->status == KEEL_EV_DUPLICATE;
		m->log_first = rc == 0 && m->log_first_on && !found;
	}
	v->len = 0;
	keel_map_clear(&m->ids);
	return rc;
}

/* ------------------------------------------------------------- prefetch */

/* The columns every prefetch of rows returns, facts and relations alike
 * (from f). Rows are found on the timeline index, which is forced: with a
 * long list and a small table the optimizer may judge a full scan cheaper
 * (MariaDB 10.11 did so for 600 tuples against 10 000 rows), and the batch path
 * promises reads that touch only the rows they return, whatever the
 * table's size. */
#define KEEL_MYSQL_FACT_COLS                                                             \
	"SELECT 0, f.seq, f.tenant, f.subject, f.predicate, NULL, f.value, 0, "          \
	"f.valid_from, f.valid_to, f.asserted_by, f.closed_by FROM "
#define KEEL_MYSQL_REL_COLS                                                              \
	"SELECT 1, f.seq, f.tenant, f.subject, f.relation, f.object, NULL, f.linked, "   \
	"f.valid_from, f.valid_to, f.asserted_by, f.closed_by FROM "

static int keel_mysql_row_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			      const unsigned long *len, unsigned ncols)
{
	(void)ncols;
	struct keel_overlay *o = ud;
	m->stats.prefetch_rows++;
	m->batch_rows++;
	if (m->batch_rows > m->stats.max_batch_rows)
		m->stats.max_batch_rows = m->batch_rows;
	enum keel_row_kind kind = row[0][0] == '1' ? KEEL_ROW_RELATION : KEEL_ROW_FACT;
	struct keel_timeline *tl = keel_overlay_timeline(
	    o, kind, keel_mysql_col(row, len, 2), keel_mysql_col(row, len, 3),
	    keel_mysql_col(row, len, 4), keel_mysql_col(row, len, 5));
	struct keel_row r = {
	    .seq = keel_mysql_i64(row[1], len[1]),
	    .value = keel_mysql_col(row, len, 6),
	    .linked = row[7][0] == '1',
	    .valid_from = keel_mysql_i64(row[8], len[8]),
	    .valid_to = keel_mysql_i64(row[9], len[9]),
	    .asserted_by = keel_mysql_col(row, len, 10),
	};
	r.closed_by = keel_mysql_read_closed_by(r.valid_to, keel_mysql_col(row, len, 11));
	keel_overlay_add_fetched_row(o, tl, &r);
	return 0;
}

static int keel_mysql_run_rows(struct keel_mysql_list *l)
{
	l->m->stats.prefetch_statements++;
	return keel_mysql_select(l->m, l->what, keel_mysql_row_row, l->ud);
}

static size_t keel_mysql_key_size(const struct keel_timeline *tl)
{
	return keel_mysql_str_size(tl->tenant) + keel_mysql_str_size(tl->subject) +
	       keel_mysql_str_size(tl->name) + keel_mysql_str_size(tl->object) + 80;
}

/* "(tenant,subject,name[,object]" of a timeline, as literals. */
static void keel_mysql_add_key(struct keel_mysql_store *m, const struct keel_timeline *tl)
{
	struct keel_buf *b = &m->sql;
	keel_buf_addc(b, '(');
	keel_mysql_add_str(m, b, tl->tenant);
	keel_buf_addc(b, ',');
	keel_mysql_add_str(m, b, tl->subject);
	keel_buf_addc(b, ',');
	keel_mysql_add_str(m, b, tl->name);
	if (tl->kind == KEEL_ROW_RELATION) {
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, tl->object);
	}
}

static int keel_mysql_cmp_timeline(const void *pa, const void *pb)
{
	const struct keel_timeline *a = *(const struct keel_timeline *const *)pa;
	const struct keel_timeline *b = *(const struct keel_timeline *const *)pb;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	int c = keel_str_cmp(a->tenant, b->tenant);
	if (!c)
		c = keel_str_cmp(a->subject, b->subject);
	if (!c)
		c = keel_str_cmp(a->name, b->name);
	return c ? c : keel_str_cmp(a->object, b->object);
}

/*
 * Open rows. A timeline's open row is its last entry on the timeline index
 * by (valid_from, seq): non-empty rows tile the timeline, so the open row
 * starts last, and an emptied row [t, t) sharing its valid_from was written
 * before it (lower seq), as the SQLite store relies on too. The index
 * holds valid_from, not valid_to, so that a closure rewrites only the row
 * itself (schema version 3).
 *
 * One statement for all the keys: each kind's keys as a table value
 * constructor, WITH k(t, s, p) AS (VALUES (..), ..), r(t, s, b, o) AS
 * (..), and per key one backward dive on the timeline index (a dependent
 * subquery, ORDER BY valid_from DESC, seq DESC LIMIT 1, answered from the
 * index alone), then the row by seq if it is open. A key with no rows
 * returns nothing. Measured on 250 keys against the 101 000-event store:
 * 2.9-3.0 ms against 3.3-3.5 ms for the version 2 read, (subject,
 * predicate) IN (..) with valid_to = INF in the index. The constructor is
 * no IN list, so the range optimizer never sees the keys (the 1000-tuple
 * limit of IN lists does not arise) and the keys are not cut into parts.
 */
#define KEEL_MYSQL_OPEN_FACTS_BODY                                                       \
	KEEL_MYSQL_FACT_COLS                                                             \
	"(SELECT (SELECT x.seq FROM keel_facts x FORCE INDEX (keel_facts_from) WHERE "   \
	"x.tenant = k.t AND x.subject = k.s AND x.predicate = k.p ORDER BY "             \
	"x.valid_from DESC, x.seq DESC LIMIT 1) AS seq FROM k) AS q STRAIGHT_JOIN "      \
	"keel_facts f ON f.seq = q.seq WHERE f.valid_to = " KEEL_MYSQL_INF
#define KEEL_MYSQL_OPEN_RELATIONS_BODY                                                   \
	KEEL_MYSQL_REL_COLS                                                              \
	"(SELECT (SELECT x.seq FROM keel_relations x FORCE INDEX (keel_relations_from) " \
	"WHERE x.tenant = r.t AND x.subject = r.s AND x.relation = r.b AND x.object = "  \
	"r.o ORDER BY x.valid_from DESC, x.seq DESC LIMIT 1) AS seq FROM r) AS q "       \
	"STRAIGHT_JOIN keel_relations f ON f.seq = q.seq WHERE f.valid_to "              \
	"= " KEEL_MYSQL_INF

/* Runs the statement built so far: the constructors in m->sql, then the
 * bodies of the kinds they hold and the tail. */
static int keel_mysql_open_run(struct keel_mysql_store *m, struct keel_overlay *o,
			       bool kinds[2])
{
	const char *close = m->mariadb || m->row_alias ? ")" : "";
	keel_buf_adds(&m->sql, close);
	keel_buf_adds(&m->sql, ") ");
	if (kinds[0])
		keel_buf_adds(&m->sql, KEEL_MYSQL_OPEN_FACTS_BODY);
	if (kinds[1])
		keel_buf_adds(&m->sql, kinds[0]
					   ? " UNION ALL " KEEL_MYSQL_OPEN_RELATIONS_BODY
					   : KEEL_MYSQL_OPEN_RELATIONS_BODY);
	kinds[0] = kinds[1] = false;
	m->stats.prefetch_statements++;
	return keel_mysql_select(m, "prefetch of open rows", keel_mysql_row_row, o);
}

/* One read of the open rows of the timelines in v (sorted: facts first),
 * as described above. Cut into several statements only at the packet
 * limit. Rows are (..) on
 * MariaDB, ROW(..) on MySQL 8.0.19+, SELECT .. UNION ALL before that. */
static int keel_mysql_read_open(struct keel_mysql_store *m, struct keel_overlay *o,
				struct keel_ptrvec *v)
{
	const char *row_open = m->mariadb ? "(" : m->row_alias ? "ROW(" : "SELECT ";
	const char *row_close = m->mariadb || m->row_alias ? ")" : "";
	const char *row_sep = m->mariadb || m->row_alias ? "," : " UNION ALL ";
	const char *values = m->mariadb || m->row_alias ? "VALUES " : "";
	struct keel_buf *b = &m->sql;
	bool kinds[2] = {false, false};
	size_t items = 0;
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_timeline *tl = v->items[i];
		bool fact = tl->kind == KEEL_ROW_FACT;
		size_t size = keel_mysql_key_size(tl) + 16;
		if (items && b->len + size + 2048 > m->packet) {
			rc = keel_mysql_open_run(m, o, kinds);
			items = 0;
			if (rc)
				break;
		}
		if (!items)
			keel_buf_reset(b);
		if (!kinds[fact ? 0 : 1]) {
			/* the first key of its kind opens its constructor */
			if (items)
				keel_buf_adds(b, row_close[0] ? ")), " : "), ");
			else
				keel_buf_adds(b, "WITH ");
			keel_buf_adds(b, fact ? "k(t, s, p) AS (" : "r(t, s, b, o) AS (");
			keel_buf_adds(b, values);
			kinds[fact ? 0 : 1] = true;
		} else {
			keel_buf_adds(b, row_close);
			keel_buf_adds(b, row_sep);
		}
		keel_buf_adds(b, row_open);
		keel_mysql_add_str(m, b, tl->tenant);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, tl->subject);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, tl->name);
		if (!fact) {
			keel_buf_addc(b, ',');
			keel_mysql_add_str(m, b, tl->object);
		}
		items++;
	}
	if (rc == 0 && items)
		return keel_mysql_open_run(m, o, kinds);
	return rc;
}

/* Has anyone else inserted since this connection's last commit? Only known
 * while bulk executions hand back ids; once it has happened they stop (the
 * connection is one writer of several from then on). */
static bool keel_mysql_others_inserted(struct keel_mysql_store *m)
{
	if (!m->bulk_ids)
		return false;
	bool read = m->seen_reads >= 3 && !m->seen_differ;
	if (!read || !m->expect_known ||
	    memcmp(m->seen_max, m->expect, sizeof m->expect)) {
		if (read && m->expect_known) {
			m->worker = true;
			m->bulk_ids = false;
			m->stats.other_writers++;
		}
		return true;
	}
	return false;
}

/* Open rows. The timelines whose open row the open-row cache holds are
 * left out of the read if this connection wrote the batch's tenants last
 * (and, while bulk executions hand back ids, nobody else has inserted at
 * all); otherwise the cache is dropped and every open row read. */
static int keel_mysql_prefetch_open(struct keel_mysql_store *m, struct keel_overlay *o)
{
	struct keel_ptrvec *v = &m->rows, *hits = &m->hits;
	v->len = 0;
	hits->len = 0;
	bool usable = m->cache_on && !keel_mysql_others_inserted(m) &&
		      keel_mysql_overlay_mine(m, o);
	if (!usable)
		keel_mysql_cache_drop(m);
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		const struct keel_row *r =
		    usable ? keel_open_rows_get(&m->cache, tl) : NULL;
		if (!r) {
			keel_ptrvec_push(v, tl);
			continue;
		}
		if (hits->len == m->hit_rows_cap) {
			m->hit_rows_cap = m->hit_rows_cap ? 2 * m->hit_rows_cap : 64;
			m->hit_rows = keel_xrealloc(m->hit_rows, m->hit_rows_cap *
								     sizeof *m->hit_rows);
		}
		m->hit_rows[hits->len] = r;
		keel_ptrvec_push(hits, tl);
	}
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_timeline);
	int rc = keel_mysql_read_open(m, o, v);
	v->len = 0;
	for (size_t i = 0; rc == 0 && i < hits->len; i++) {
		keel_overlay_add_fetched_row(o, hits->items[i], m->hit_rows[i]);
		m->stats.cached_rows++;
		if (++m->batch_rows > m->stats.max_batch_rows)
			m->stats.max_batch_rows = m->batch_rows;
	}
	hits->len = 0;
	return rc;
}

/* Late times: for each time the fetched rows do not cover, the row
 * containing it or else the first non-empty row after it. The row
 * containing t is the timeline's last row by (valid_from, seq) starting at
 * or before t: among rows with equal valid_from the non-empty one has the
 * highest seq (an emptied row [t, t) was written before the row that
 * replaced it), as the SQLite store relies on too. Each is one short
 * backward or forward dive on the timeline index, whatever the timeline's
 * length. */
static int keel_mysql_prefetch_late(struct keel_mysql_store *m, struct keel_overlay *o)
{
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "prefetch of rows around late events",
	    .head = "",
	    .open = "",
	    .sep = " UNION ALL ",
	    .close = "",
	    .join = "",
	    .tail = "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_rows,
	    .ud = o,
	};
	int rc = 0;
	for (size_t i = 0; i < o->timelines.len && rc == 0; i++) {
		const struct keel_timeline *tl = o->timelines.items[i];
		if (!tl->ntimes || !tl->nrows)
			continue;
		if (m->times_cap < tl->ntimes) {
			m->times_cap = tl->ntimes * 2;
			m->times =
			    keel_xrealloc(m->times, m->times_cap * sizeof *m->times);
		}
		size_t n = keel_overlay_uncovered_times(tl, m->times, tl->ntimes);
		bool fact = tl->kind == KEEL_ROW_FACT;
		for (size_t k = 0; k < n && rc == 0; k++) {
			rc = keel_mysql_list_item(&l, 2 * keel_mysql_key_size(tl) + 640);
			if (rc)
				break;
			struct keel_buf *b = &m->sql;
			m->stats.late_lookups++;
			/* seq = COALESCE(the last row by (valid_from, seq)
			 * starting at or before t, the first non-empty row
			 * after t): both index-only dives, then one row. */
			keel_buf_adds(b,
				      fact ? "(" KEEL_MYSQL_FACT_COLS
					     "keel_facts f WHERE f.seq = COALESCE("
					   : "(" KEEL_MYSQL_REL_COLS
					     "keel_relations f WHERE f.seq = COALESCE(");
			for (int half = 0; half < 2; half++) {
				keel_buf_adds(b, half ? ",(" : "(");
				keel_buf_adds(
				    b, fact
					   ? "SELECT seq FROM keel_facts FORCE INDEX "
					     "(keel_facts_from) WHERE tenant="
					   : "SELECT seq FROM keel_relations FORCE INDEX "
					     "(keel_relations_from) WHERE tenant=");
				keel_mysql_add_str(m, b, tl->tenant);
				keel_buf_adds(b, " AND subject=");
				keel_mysql_add_str(m, b, tl->subject);
				keel_buf_adds(b, fact ? " AND predicate="
						      : " AND relation=");
				keel_mysql_add_str(m, b, tl->name);
				if (!fact) {
					keel_buf_adds(b, " AND object=");
					keel_mysql_add_str(m, b, tl->object);
				}
				keel_buf_adds(b, half ? " AND valid_from>"
						      : " AND valid_from<=");
				keel_buf_addi64(b, m->times[k]);
				keel_buf_adds(
				    b, half ? " AND valid_from<valid_to ORDER BY "
					      "valid_from LIMIT 1)"
					    : " ORDER BY valid_from DESC, seq DESC "
					      "LIMIT 1)");
			}
			keel_buf_adds(b, "))");
		}
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

static int keel_mysql_prefetch(struct keel_store *s, struct keel_overlay *o)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Entities are not read: the write-back's upsert merges them. */
	int rc = keel_mysql_tx(m);
	if (rc == 0)
		rc = keel_mysql_prefetch_open(m, o);
	if (rc == 0)
		rc = keel_mysql_prefetch_late(m, o);
	return rc;
}

/* ----------------------------------------------------------- write-back */

/* Multi-row INSERTs into AUTO_INCREMENT tables: the server numbers the rows
 * of one statement in the order written, from mysql_insert_id() in steps of
 * auto_increment_increment (a "simple insert": InnoDB reserves the whole
 * range at once in every innodb_autoinc_lock_mode). */
static int keel_mysql_run_insert(struct keel_mysql_list *l, bool events)
{
	struct keel_mysql_store *m = l->m;
	m->stats.insert_statements++;
	int rc = keel_mysql_run(m, m->sql.data, m->sql.len, l->what);
	if (rc)
		return rc;
	int64_t first = (int64_t)mysql_insert_id(m->db);
	for (size_t i = 0; i < l->items; i++) {
		int64_t seq = first + (int64_t)i * m->autoinc_step;
		if (events)
			((struct keel_batch_event **)l->ud)[l->done + i]->seq = seq;
		else
			((struct keel_row **)l->ud)[l->done + i]->seq = seq;
	}
	return 0;
}

static int keel_mysql_run_insert_rows(struct keel_mysql_list *l)
{
	return keel_mysql_run_insert(l, false);
}

static int keel_mysql_run_insert_events(struct keel_mysql_list *l)
{
	return keel_mysql_run_insert(l, true);
}

int keel_mysql_write_events(struct keel_mysql_store *m, struct keel_batch_event **ev,
			    size_t n)
{
	if (m->bulk_ids)
		return keel_mysql_bulk_events(m, ev, n);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "writing events",
	    .head = "INSERT INTO keel_events (tenant, id, type, time, hash, envelope) "
		    "VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_insert_events,
	    .ud = ev,
	};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_batch_event *e = ev[i];
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(e->tenant) +
						  keel_mysql_str_size(e->id) +
						  keel_mysql_str_size(e->type) +
						  keel_mysql_str_size(e->envelope) + 64);
		if (rc)
			break;
		struct keel_buf *b = &m->sql;
		keel_buf_addc(b, '(');
		keel_mysql_add_str(m, b, e->tenant);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->id);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->type);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, e->time);
		keel_buf_addf(b, ",%llu,", (unsigned long long)e->hash);
		keel_mysql_add_str(m, b, e->envelope);
		keel_buf_addc(b, ')');
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

static int keel_mysql_cmp_entity(const void *pa, const void *pb)
{
	const struct keel_entity *a = *(const struct keel_entity *const *)pa;
	const struct keel_entity *b = *(const struct keel_entity *const *)pb;
	int c = keel_str_cmp(a->tenant, b->tenant);
	return c ? c : keel_str_cmp(a->subject, b->subject);
}

/* Entities in one upsert, in primary-key order (locality in the clustered
 * index, and one lock order for concurrent writers). The store's entity
 * rows are not read before the batch: the upsert merges the batch's view
 * into the stored row by the rule of docs/semantics.md (first_seen the least,
 * last_seen the greatest, the kind of the earliest mention, a later arrival
 * winning ties), so the overlay's entities all arrive as NEW. kind_time is
 * assigned before kind, and the condition holds the same either way. */
int keel_mysql_write_entities(struct keel_mysql_store *m, struct keel_overlay *o)
{
	struct keel_ptrvec *v = &m->rows;
	v->len = 0;
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		if (e->flags & (KEEL_ENTITY_NEW | KEEL_ENTITY_DIRTY))
			keel_ptrvec_push(v, e);
	}
	if (!v->len)
		return 0;
	qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_entity);
	if (m->bulk)
		return keel_mysql_bulk_entities(m, v);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "writing entities",
	    .head = "INSERT INTO keel_entities (tenant, subject, kind, kind_time, "
		    "first_seen, last_seen) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail =
		m->row_alias ? KEEL_MYSQL_ENTITY_MERGE_ALIAS : KEEL_MYSQL_ENTITY_MERGE,
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_list,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_entity *e = v->items[i];
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(e->tenant) +
						  keel_mysql_str_size(e->subject) +
						  keel_mysql_str_size(e->kind) + 72);
		if (rc)
			break;
		struct keel_buf *b = &m->sql;
		keel_buf_addc(b, '(');
		keel_mysql_add_str(m, b, e->tenant);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->subject);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->kind);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, e->kind_time);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, e->first_seen);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, e->last_seen);
		keel_buf_addc(b, ')');
	}
	if (rc == 0)
		rc = keel_mysql_list_flush(&l);
	if (rc == 0)
		m->stats.insert_statements++;
	return rc;
}

/* The rows of one kind (facts or relations) from an overlay list, in its
 * order, gathered into m->rows. */
static struct keel_ptrvec *keel_mysql_rows_of_kind(struct keel_mysql_store *m,
						   const struct keel_ptrvec *rows,
						   enum keel_row_kind kind)
{
	struct keel_ptrvec *v = &m->rows;
	v->len = 0;
	for (size_t i = 0; i < rows->len; i++) {
		struct keel_row *r = rows->items[i];
		if (r->timeline->kind == kind)
			keel_ptrvec_push(v, r);
	}
	return v;
}

/* New rows of one kind, in creation order (= seq order). */
int keel_mysql_write_rows(struct keel_mysql_store *m, struct keel_overlay *o,
			  enum keel_row_kind kind)
{
	struct keel_ptrvec *v = keel_mysql_rows_of_kind(m, &o->new_rows, kind);
	if (!v->len)
		return 0;
	if (m->bulk_ids)
		return keel_mysql_bulk_rows(m, v, kind);
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_mysql_list l = {
	    .m = m,
	    .what = fact ? "writing facts" : "writing relations",
	    .head =
		fact ? "INSERT INTO keel_facts (tenant, subject, predicate, value, "
		       "valid_from, valid_to, asserted_by, closed_by) VALUES "
		     : "INSERT INTO keel_relations (tenant, subject, relation, object, "
		       "linked, valid_from, valid_to, asserted_by, closed_by) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_insert_rows,
	    .ud = v->items,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_row *r = v->items[i];
		const struct keel_timeline *tl = r->timeline;
		rc = keel_mysql_list_item(
		    &l, keel_mysql_key_size(tl) + keel_mysql_str_size(r->value) +
			    keel_mysql_str_size(r->asserted_by) +
			    keel_mysql_str_size(keel_mysql_stored_closed_by(r)) + 64);
		if (rc)
			break;
		struct keel_buf *b = &m->sql;
		keel_mysql_add_key(m, tl);
		keel_buf_addc(b, ',');
		if (fact)
			keel_mysql_add_str(m, b, r->value);
		else
			keel_buf_addc(b, r->linked ? '1' : '0');
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, r->valid_from);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, r->valid_to);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, r->asserted_by);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, keel_mysql_stored_closed_by(r));
		keel_buf_addc(b, ')');
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

static int keel_mysql_cmp_seq(const void *pa, const void *pb)
{
	const struct keel_row *a = *(const struct keel_row *const *)pa;
	const struct keel_row *b = *(const struct keel_row *const *)pb;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/* One CASE over the closures rows[lo..hi) (sorted by seq) giving each
 * row's new valid_to (closed_by when `cb`). A flat CASE seq WHEN ... is
 * a linear search per updated row, so a batch of n closures would cost n^2
 * comparisons on the server; above a handful of rows the CASE bisects on
 * seq instead (CASE WHEN seq < pivot THEN ... ELSE ... END), log n deep. */
static void keel_mysql_add_case(struct keel_mysql_store *m, struct keel_row **rows,
				size_t lo, size_t hi, bool cb)
{
	struct keel_buf *b = &m->sql;
	if (hi - lo > 8) {
		size_t mid = lo + (hi - lo) / 2;
		keel_buf_adds(b, "CASE WHEN seq<");
		keel_buf_addi64(b, rows[mid]->seq);
		keel_buf_adds(b, " THEN ");
		keel_mysql_add_case(m, rows, lo, mid, cb);
		keel_buf_adds(b, " ELSE ");
		keel_mysql_add_case(m, rows, mid, hi, cb);
		keel_buf_adds(b, " END");
		return;
	}
	keel_buf_adds(b, "CASE seq");
	for (size_t i = lo; i < hi; i++) {
		keel_buf_adds(b, " WHEN ");
		keel_buf_addi64(b, rows[i]->seq);
		keel_buf_adds(b, " THEN ");
		if (cb)
			keel_mysql_add_str(m, b, rows[i]->closed_by);
		else
			keel_buf_addi64(b, rows[i]->valid_to);
	}
	keel_buf_adds(b, " END");
}

/* UPDATE t SET valid_to = CASE .., closed_by = CASE .. WHERE seq IN (..)
 * for rows[lo..hi). */
static int keel_mysql_close_rows(struct keel_mysql_store *m, const char *table,
				 struct keel_row **rows, size_t lo, size_t hi,
				 const char *what)
{
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_addf(b, "UPDATE %s SET valid_to=", table);
	keel_mysql_add_case(m, rows, lo, hi, false);
	keel_buf_adds(b, ",closed_by=");
	keel_mysql_add_case(m, rows, lo, hi, true);
	keel_buf_adds(b, " WHERE seq IN (");
	for (size_t i = lo; i < hi; i++) {
		if (i > lo)
			keel_buf_addc(b, ',');
		keel_buf_addi64(b, rows[i]->seq);
	}
	keel_buf_addc(b, ')');
	size_t n = hi - lo;
	m->stats.closure_statements++;
	m->stats.rows_closed += n;
	int rc = keel_mysql_run(m, b->data, b->len, what);
	if (rc == 0 && mysql_affected_rows(m->db) != n)
		rc = keel_store_fail(&m->base, KEEL_ESTORE,
				     "%s: %llu of %zu rows to close were found", what,
				     (unsigned long long)mysql_affected_rows(m->db), n);
	return rc;
}

/* Closures of fetched rows: one UPDATE ... CASE per table, never one
 * statement per row; cut only by the packet limit. */
int keel_mysql_write_closures(struct keel_mysql_store *m, struct keel_overlay *o,
			      enum keel_row_kind kind)
{
	struct keel_ptrvec *v = keel_mysql_rows_of_kind(m, &o->dirty_rows, kind);
	if (!v->len)
		return 0;
	qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_seq);
	if (m->bulk && m->bulk_close)
		return keel_mysql_bulk_close(m, v, kind);
	struct keel_row **rows = (struct keel_row **)v->items;
	const char *table = kind == KEEL_ROW_FACT ? "keel_facts" : "keel_relations";
	const char *what = kind == KEEL_ROW_FACT ? "closing facts" : "closing relations";
	size_t start = 0, size = 128;
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		/* A row costs its WHENs, its share of the bisection's pivots
		 * (about as much again) and its IN entry. */
		size_t row_size = keel_mysql_str_size(rows[i]->closed_by) + 4 * 64;
		if (i > start && size + row_size > m->packet) {
			rc = keel_mysql_close_rows(m, table, rows, start, i, what);
			start = i;
			size = 128;
		}
		size += row_size;
	}
	if (rc == 0)
		rc = keel_mysql_close_rows(m, table, rows, start, v->len, what);
	return rc;
}

int keel_mysql_write_back(struct keel_store *s, struct keel_overlay *o,
			  struct keel_batch_event **ev, size_t n)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Events first (unless logged first already): their key claims the
	 * ids. */
	int rc = keel_mysql_tx(m);
	if (rc == 0 && !m->events_logged)
		rc = keel_mysql_write_events(m, ev, n);
	if (rc == 0)
		rc = keel_mysql_write_entities(m, o);
	if (rc == 0)
		rc = keel_mysql_write_rows(m, o, KEEL_ROW_FACT);
	if (rc == 0)
		rc = keel_mysql_write_rows(m, o, KEEL_ROW_RELATION);
	if (rc == 0)
		rc = keel_mysql_write_closures(m, o, KEEL_ROW_FACT);
	if (rc == 0)
		rc = keel_mysql_write_closures(m, o, KEEL_ROW_RELATION);
	m->rows.len = 0;
	if (rc == 0)
		rc = keel_mysql_mark_written(m, o, ev, n);
	return rc;
}

/* keel ingest --workers: each worker's connection reads committed rows
 * only, so concurrent batches of other tenants take no gap locks from one
 * another (docs/store-mysql.md, "Session settings Keel makes"). */
int keel_mysql_worker_init(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Rows of one bulk execution get their ids a few at a time, so
	 * another connection inserting at once could interleave with them
	 * and the ids handed back would be wrong; workers insert with the
	 * text path's multi-row INSERTs, which reserve a statement's ids at
	 * once, and keep the bulk path for entities and closures. */
	m->worker = true;
	m->bulk_ids = false;
	return keel_mysql_runs(m,
			       "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
			       "setting READ COMMITTED");
}

const struct keel_store_ops keel_store_mysql_ops = {
    .scheme = "mysql",
    .url_form = "mysql://user:password@host:port/db",
    .open = keel_mysql_open,
    .close = keel_mysql_close,
    .begin = keel_mysql_begin,
    .commit = keel_mysql_commit,
    .rollback = keel_mysql_rollback,
    .seen_ids = keel_mysql_seen_ids,
    .prefetch = keel_mysql_prefetch,
    .write_back = keel_mysql_write_back,
    .tenants = keel_mysql_tenants,
    .scan = keel_mysql_scan,
    .counts = keel_mysql_counts,
    .replace_tenant = keel_mysql_replace_tenant,
    .worker_init = keel_mysql_worker_init,
    .concurrent_writers = true,
};

/* ------------------------------------------------- tests and benchmarks */

const struct keel_mysql_stats *keel_store_mysql_stats(const struct keel_store *s)
{
	return &keel_mysql_cdowncast(s)->stats;
}

void keel_store_mysql_reset_stats(struct keel_store *s)
{
	memset(&keel_mysql_downcast(s)->stats, 0, sizeof(struct keel_mysql_stats));
}

void keel_store_mysql_set_profile(struct keel_store *s, bool on)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	memset(m->prof, 0, sizeof m->prof);
	m->profile = on;
}

size_t keel_store_mysql_profile(const struct keel_store *s,
				const struct keel_mysql_prof **kinds)
{
	const struct keel_mysql_store *m = keel_mysql_cdowncast(s);
	size_t n = 0;
	while (n < KEEL_ARRAY_LEN(m->prof) && m->prof[n].what)
		n++;
	*kinds = m->prof;
	return n;
}

void keel_store_mysql_set_cache(struct keel_store *s, bool on)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	keel_mysql_cache_drop(m);
	m->cache_on = on;
}

size_t keel_store_mysql_packet_limit(const struct keel_store *s)
{
	return keel_mysql_cdowncast(s)->packet;
}

void keel_store_mysql_set_packet_limit(struct keel_store *s, size_t bytes)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	m->packet = bytes;
	keel_mysql_set_max_envelope(m);
}

struct keel_mysql_exec_ctx {
	keel_mysql_row_fn fn;
	void *ud;
};

static int keel_mysql_exec_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)len;
	struct keel_mysql_exec_ctx *c = ud;
	return c->fn ? c->fn(c->ud, ncols, row) : 0;
}

int keel_store_mysql_exec(struct keel_store *s, const char *sql, keel_mysql_row_fn fn,
			  void *ud)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	struct keel_mysql_exec_ctx c = {fn, ud};
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, sql);
	return keel_mysql_select(m, "exec", keel_mysql_exec_row, &c);
}
