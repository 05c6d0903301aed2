/*
 * store.c - the MySQL/MariaDB store: the append-only batch path on a
 * server, through MariaDB Connector/C.
 *
 * A batch costs a handful of statements whatever its size
 * (docs/store-mysql.md, "Statements per batch"):
 *
 *   seen ids      SELECT tenant, id, hash FROM keel_events WHERE tenant = ..
 *                 AND id IN (...) UNION ALL the next tenant's (parts of at
 *                 most KEEL_MYSQL_IN_MAX ids): the only stored state the
 *                 write path reads
 *   START TRANSACTION   (with the first batch of a commit), or
 *   SAVEPOINT           (a later batch of the same commit)
 *   events, entity mentions, fact rows, relation rows:
 *                 one multi-row INSERT each, or on MariaDB one bulk
 *                 execution each (array binding)
 *   COMMIT        once per commit interval (the core decides)
 *
 * Nothing is updated and nothing but the ids is read: a row's valid_to
 * and closed_by are derived on read (keel_store_scan, and the views of
 * schema.c), entities aggregated from their mentions. A batch of
 * nothing but duplicates costs the id lookup alone.
 *
 * IN lists are cut into parts of at most KEEL_MYSQL_IN_MAX entries joined
 * by UNION ALL inside one statement, so the range optimizer sees short
 * lists while the round trips stay constant. Any statement is cut only
 * when it would pass the server's max_allowed_packet. Every value goes into
 * the text as an escaped _binary literal or a number, never raw, or is a
 * bound parameter (bulk path).
 *
 * Strings are stored in VARBINARY/BLOB columns: they compare bytewise with
 * no trailing-space padding, exactly as keel_str_cmp and SQLite do (the
 * utf8mb4_bin collation is PAD SPACE on MariaDB and would make "a" and "a "
 * the same key). docs/store-mysql.md has the schema and the reasons.
 *
 * Results of the id lookup are bounded by the batch (mysql_store_result);
 * scans of a whole tenant stream (mysql_use_result).
 */
#include <stdlib.h>
#include <string.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "parts.h"

/* ---------------------------------------------------------- transactions */

int keel_mysql_reconnect(struct keel_mysql_store *m)
{
	/* The server rolled the lost transaction back; start afresh. */
	keel_mysql_bulk_close_stmts(m);
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
		keel_store_fail(&m->base, rc, "reconnecting: %s", err.data);
		keel_buf_free(&err);
		return rc;
	}
	keel_buf_free(&err);
	if ((rc = keel_mysql_bulk_prepare(m)) != 0) {
		m->broken = true;
		return rc;
	}
	m->stats.reconnects++;
	return 0;
}

static int keel_mysql_begin(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	m->tx_open = false;
	m->tx_writes = false;
	m->savepoint_sent = false;
	return m->broken ? keel_mysql_reconnect(m) : 0;
}

/* The transaction starts with its first statement that needs it: the
 * writers' gate when the store's own transactions begin, or the first
 * write of those who write without one (schema, positions). */
int keel_mysql_tx(struct keel_mysql_store *m)
{
	if (m->tx_open)
		return 0;
	int rc = keel_mysql_runs(m, "START TRANSACTION", "starting the transaction");
	if (rc == 0)
		m->tx_open = true;
	return rc;
}

void (*keel_mysql_before_commit)(struct keel_store *s);

static int keel_mysql_commit(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (!m->tx_open)
		return 0;
	if (keel_mysql_before_commit)
		keel_mysql_before_commit(s);
	int rc = keel_mysql_runs(m, "COMMIT", "commit");
	if (rc == 0 || m->broken) {
		m->tx_open = false;
		m->tx_writes = false;
	}
	if (rc && m->broken) {
		/* The server may have committed before the connection went:
		 * the transaction is over, its outcome unknown here. */
		unsigned e = m->db ? mysql_errno(m->db) : 0;
		return keel_store_fail(
		    s, KEEL_EUNCERTAIN,
		    "commit: lost the connection to the mysql server (error "
		    "%u); the transaction may or may not have been committed",
		    e);
	}
	return rc;
}

static int keel_mysql_rollback(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	bool open = m->tx_open;
	m->tx_open = false;
	m->tx_writes = false;
	/* Without a connection the server has rolled back already. */
	if (m->broken || !open)
		return 0;
	return keel_mysql_runs(m, "ROLLBACK", "rollback");
}

/*
 * Savepoints, one per batch (docs/semantics.md, "Batches, commits and
 * failures"), in every open transaction: even the first batch's cannot be
 * rolled back by rolling back the transaction, which holds the writers'
 * gate and the clock read in it. One name serves every batch: a SAVEPOINT
 * replaces an older one of the same name, so release sends nothing.
 */
static int keel_mysql_savepoint(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	m->savepoint_sent = false;
	if (!m->tx_open)
		return 0;
	int rc = keel_mysql_runs(m, "SAVEPOINT keel_batch", "starting the batch");
	if (rc == 0)
		m->savepoint_sent = true;
	return rc;
}

static int keel_mysql_release(struct keel_store *s)
{
	(void)s;
	return 0;
}

static int keel_mysql_rollback_to_savepoint(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (m->broken)
		return 0; /* the server has rolled the whole transaction back */
	if (!m->savepoint_sent) {
		/* the batch's first write began the transaction: nothing
		 * before it to keep */
		bool writes = m->tx_writes;
		m->tx_writes = false;
		if (!m->tx_open || !writes)
			return 0;
		m->tx_open = false;
		return keel_mysql_runs(m, "ROLLBACK", "rolling the batch back");
	}
	m->savepoint_sent = false;
	return keel_mysql_runs(m, "ROLLBACK TO SAVEPOINT keel_batch",
			       "rolling the batch back");
}

/* The latest recorded_at of the log: the last logged event's, one dive
 * on keel_events_seq. */
static int keel_mysql_recorded_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				   const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	*(int64_t *)ud = row[0] ? keel_mysql_i64(row[0], len[0]) : 0;
	return 0;
}

#define KEEL_MYSQL_LAST_RECORDED                                                         \
	"(SELECT recorded_at FROM keel_events ORDER BY seq DESC LIMIT 1)"

static int keel_mysql_last_recorded_at(struct keel_store *s, int64_t *out)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	*out = 0;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT " KEEL_MYSQL_LAST_RECORDED);
	return keel_mysql_select(m, "reading the log's clock", keel_mysql_recorded_row,
				 out);
}

/*
 * The writers' gate (docs/store-mysql.md, "Transaction time"): keel_meta's
 * schema_version row, which every store has at every version. A write
 * transaction holds its shared lock from its start to its end and reads
 * the server's clock once it holds it; a read known at a past moment
 * takes its exclusive lock, which InnoDB grants once every writer then
 * inside has ended, and before any writer that asked after it. So a
 * writer either ends before the read or takes a clock later than the
 * read's moment. SYSDATE, not NOW: the time the row is read, after the
 * wait for the lock, not when the statement began (the session's
 * time_zone is UTC, connect.c).
 */
#define KEEL_MYSQL_GATE " FROM keel_meta WHERE name = 'schema_version'"

static int keel_mysql_writer_gate(struct keel_store *s, int64_t *floor)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	*floor = 0;
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT GREATEST(COALESCE(" KEEL_MYSQL_LAST_RECORDED
			       ", 0), CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED) "
			       "- 1)" KEEL_MYSQL_GATE " LOCK IN SHARE MODE");
	return keel_mysql_select(m, "entering the writers' gate", keel_mysql_recorded_row,
				 floor);
}

/* In autocommit the exclusive lock is taken, waited for, and let go when
 * the statement ends: the wait is all a read needs. */
static int keel_mysql_settle(struct keel_store *s, int64_t known_at)
{
	(void)known_at;
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	if (m->tx_open)
		return 0; /* this handle's own transaction: nothing to wait for */
	int64_t one = 0;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT 1" KEEL_MYSQL_GATE " FOR UPDATE");
	return keel_mysql_select(m, "waiting for the writers", keel_mysql_recorded_row,
				 &one);
}

/* ------------------------------------------------------------- seen ids */

static uint64_t keel_mysql_id_hash(struct keel_str tenant, struct keel_str source,
				   struct keel_str id)
{
	return keel_event_key_hash(tenant, source, id);
}

static int keel_mysql_seen_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	struct keel_str tenant = keel_mysql_col(row, len, 0);
	struct keel_str source = keel_mysql_col(row, len, 1);
	struct keel_str id = keel_mysql_col(row, len, 2);
	uint64_t stored = keel_mysql_u64(row[3], len[3]);
	int64_t seq = keel_mysql_i64(row[4], len[4]);
	uint64_t h = keel_mysql_id_hash(tenant, source, id);
	/* Every copy of the identity in the batch is a duplicate. */
	for (size_t i = keel_map_first(&m->ids, h); i != SIZE_MAX;
	     i = keel_map_next(&m->ids, h, i)) {
		struct keel_batch_event *ev = m->ids.values[i];
		if (keel_str_eq(ev->id, id) && keel_str_eq(ev->source, source) &&
		    keel_str_eq(ev->tenant, tenant)) {
			ev->status = KEEL_EV_DUPLICATE;
			ev->stored_hash = stored;
			ev->stored_seq = seq;
		}
	}
	return 0;
}

static int keel_mysql_run_seen(struct keel_mysql_list *l)
{
	l->m->stats.lookup_statements++;
	return keel_mysql_select(l->m, l->what, keel_mysql_seen_row, NULL);
}

static int keel_mysql_cmp_event_key(const void *pa, const void *pb)
{
	const struct keel_batch_event *a = *(const struct keel_batch_event *const *)pa;
	const struct keel_batch_event *b = *(const struct keel_batch_event *const *)pb;
	int c = keel_str_cmp(a->tenant, b->tenant);
	if (!c)
		c = keel_str_cmp(a->source, b->source);
	return c ? c : keel_str_cmp(a->id, b->id);
}

/* The ids of each (tenant, source) as one scalar IN list on the primary
 * key's last column (tenant = .. AND source = .. AND id IN (..)): fewer
 * literals than (tenant, source, id) row constructors, and a cheaper
 * range analysis (measured 25-30% less server time per lookup). Parts of
 * at most KEEL_MYSQL_IN_MAX ids, one per (tenant, source) at least,
 * joined by UNION ALL in one statement. v: the batch's distinct
 * identities, sorted by (tenant, source, id).
 *
 * A (tenant, source) with fewer than KEEL_MYSQL_ROW_IN_BELOW ids of the
 * batch goes instead into parts of row constructors, (tenant, source, id)
 * IN ((..), ..), which the range optimizer also reads as ranges of the
 * primary key: events of many tenants (20 000 tenants, each event
 * another's) made a part per event, 500 subqueries a batch, each with its
 * own range analysis. */
#define KEEL_MYSQL_ROW_IN_BELOW 4

static size_t keel_mysql_group_end(const struct keel_ptrvec *v, size_t i)
{
	const struct keel_batch_event *e = v->items[i];
	size_t j = i + 1;
	while (j < v->len) {
		const struct keel_batch_event *f = v->items[j];
		if (!keel_str_eq(f->tenant, e->tenant) || !keel_str_eq(f->source, e->source))
			break;
		j++;
	}
	return j;
}

static int keel_mysql_lookup(struct keel_mysql_store *m, const struct keel_ptrvec *v)
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
	bool few = false; /* a group of few ids was left for the rows' parts */
	for (size_t i = 0, end; i < v->len && rc == 0; i = end) {
		end = keel_mysql_group_end(v, i);
		if (end - i < KEEL_MYSQL_ROW_IN_BELOW) {
			few = true;
			continue;
		}
		const struct keel_batch_event *e = v->items[i];
		keel_buf_reset(&m->part);
		keel_buf_adds(&m->part, "SELECT tenant, source, id, hash, seq FROM "
					"keel_events WHERE tenant = ");
		keel_mysql_add_str(m, &m->part, e->tenant);
		keel_buf_adds(&m->part, " AND source = ");
		keel_mysql_add_str(m, &m->part, e->source);
		keel_buf_adds(&m->part, " AND id IN (");
		keel_mysql_list_part(&l, m->part.data);
		for (size_t k = i; k < end && rc == 0; k++) {
			const struct keel_batch_event *x = v->items[k];
			rc = keel_mysql_list_item(&l, keel_mysql_str_size(x->id) + 2);
			if (rc == 0)
				keel_mysql_add_str(m, &m->sql, x->id);
		}
	}
	if (few && rc == 0)
		keel_mysql_list_part(&l, "SELECT tenant, source, id, hash, seq FROM keel_events "
					 "WHERE (tenant, source, id) IN (");
	for (size_t i = 0, end; few && i < v->len && rc == 0; i = end) {
		end = keel_mysql_group_end(v, i);
		if (end - i >= KEEL_MYSQL_ROW_IN_BELOW)
			continue;
		for (size_t k = i; k < end && rc == 0; k++) {
			const struct keel_batch_event *x = v->items[k];
			rc = keel_mysql_list_item(&l, keel_mysql_str_size(x->tenant) +
							  keel_mysql_str_size(x->source) +
							  keel_mysql_str_size(x->id) + 8);
			if (rc)
				break;
			keel_buf_addc(&m->sql, '(');
			keel_mysql_add_str(m, &m->sql, x->tenant);
			keel_buf_addc(&m->sql, ',');
			keel_mysql_add_str(m, &m->sql, x->source);
			keel_buf_addc(&m->sql, ',');
			keel_mysql_add_str(m, &m->sql, x->id);
			keel_buf_addc(&m->sql, ')');
		}
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* Which of the batch's events are logged already: one statement (cut only
 * at the packet limit), each distinct id asked once. */
static int keel_mysql_seen_ids(struct keel_store *s, struct keel_batch_event **ev,
			       size_t n)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	keel_map_clear(&m->ids);
	struct keel_ptrvec *v = &m->rows;
	v->len = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = keel_batch_event_key_hash(ev[i]);
		bool repeat = false;
		for (size_t k = keel_map_first(&m->ids, h); k != SIZE_MAX && !repeat;
		     k = keel_map_next(&m->ids, h, k))
			repeat = keel_batch_event_same(m->ids.values[k], ev[i]);
		keel_map_put(&m->ids, h, ev[i]);
		if (!repeat)
			keel_ptrvec_push(v, ev[i]); /* asked once per id */
	}
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_event_key);
	int rc = keel_mysql_lookup(m, v);
	v->len = 0;
	keel_map_clear(&m->ids);
	return rc;
}

/* ------------------------------------------------------------ appending */

/* Multi-row INSERTs into AUTO_INCREMENT tables: the server numbers the rows
 * of one statement in the order written, from mysql_insert_id() in steps of
 * auto_increment_increment (a "simple insert": InnoDB reserves the whole
 * range at once in every innodb_autoinc_lock_mode). */
static int keel_mysql_run_insert_events(struct keel_mysql_list *l)
{
	struct keel_mysql_store *m = l->m;
	m->stats.insert_statements++;
	int rc = keel_mysql_run(m, m->sql.data, m->sql.len, l->what);
	if (rc)
		return rc;
	int64_t first = (int64_t)mysql_insert_id(m->db);
	for (size_t i = 0; i < l->items; i++)
		((struct keel_batch_event **)l->ud)[l->done + i]->seq =
		    first + (int64_t)i * m->autoinc_step;
	return 0;
}

static int keel_mysql_run_insert(struct keel_mysql_list *l)
{
	l->m->stats.insert_statements++;
	return keel_mysql_run_list(l);
}

int keel_mysql_write_events(struct keel_mysql_store *m, struct keel_batch_event **ev,
			    size_t n, bool seqs_wanted)
{
	if (m->bulk && (!m->worker || !seqs_wanted))
		return keel_mysql_bulk_events(m, ev, n);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "writing events",
	    .head = "INSERT INTO keel_events (tenant, id, type, time, hash, envelope, "
		    "recorded_at, source) VALUES ",
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
						  keel_mysql_str_size(e->source) +
						  keel_mysql_str_size(e->type) +
						  keel_mysql_str_size(e->envelope) + 96);
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
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, e->recorded_at);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->source);
		keel_buf_addc(b, ')');
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* Entity mentions, one row each, in the order given. */
static int keel_mysql_write_mentions(struct keel_mysql_store *m,
				     const struct keel_mention *v, size_t n)
{
	if (!n)
		return 0;
	m->stats.mentions_appended += n;
	if (m->bulk)
		return keel_mysql_bulk_mentions(m, v, n);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "writing entity mentions",
	    .head = "INSERT INTO keel_entity_mentions (tenant, subject, kind, "
		    "kind_time, first_seen, last_seen, recorded_at) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_insert,
	};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_mention *e = &v[i];
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(e->tenant) +
						  keel_mysql_str_size(e->subject) +
						  keel_mysql_str_size(e->kind) + 96);
		if (rc)
			break;
		struct keel_buf *b = &m->sql;
		keel_buf_addc(b, '(');
		keel_mysql_add_str(m, b, e->tenant);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->subject);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, e->kind);
		keel_buf_addf(b, ",%lld,%lld,%lld,%lld)", (long long)e->kind_time,
			      (long long)e->first_seen, (long long)e->last_seen,
			      (long long)e->recorded_at);
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* The assertions of one kind (facts or relations) among a->rows, in the
 * order given, which is seq order. */
static int keel_mysql_write_rows(struct keel_mysql_store *m, const struct keel_assertion *v,
				 size_t n, enum keel_row_kind kind)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += v[i].kind == kind;
	if (!count)
		return 0;
	m->stats.rows_appended += count;
	if (m->bulk)
		return keel_mysql_bulk_rows(m, v, n, kind);
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_mysql_list l = {
	    .m = m,
	    .what = fact ? "writing facts" : "writing relations",
	    .head = fact ? "INSERT INTO keel_fact_rows (tenant, subject, predicate, "
			   "value, valid_from, asserted_by, recorded_at, asserted_by_source) "
			   "VALUES "
			 : "INSERT INTO keel_relation_rows (tenant, subject, relation, "
			   "object, linked, valid_from, asserted_by, recorded_at, "
			   "asserted_by_source) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = "",
	    .part_max = SIZE_MAX,
	    .run = keel_mysql_run_insert,
	};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_assertion *r = &v[i];
		if (r->kind != kind)
			continue;
		rc = keel_mysql_list_item(
		    &l, keel_mysql_str_size(r->tenant) + keel_mysql_str_size(r->subject) +
			    keel_mysql_str_size(r->name) + keel_mysql_str_size(r->object) +
			    keel_mysql_str_size(r->value) +
			    keel_mysql_str_size(r->asserted_by.id) +
			    keel_mysql_str_size(r->asserted_by.source) + 96);
		if (rc)
			break;
		struct keel_buf *b = &m->sql;
		keel_buf_addc(b, '(');
		keel_mysql_add_str(m, b, r->tenant);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, r->subject);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, r->name);
		keel_buf_addc(b, ',');
		if (fact) {
			keel_mysql_add_str(m, b, r->value);
		} else {
			keel_mysql_add_str(m, b, r->object);
			keel_buf_adds(b, r->linked ? ",1" : ",0");
		}
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, r->valid_from);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, r->asserted_by.id);
		keel_buf_addc(b, ',');
		keel_buf_addi64(b, r->recorded_at);
		keel_buf_addc(b, ',');
		keel_mysql_add_str(m, b, r->asserted_by.source);
		keel_buf_addc(b, ')');
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* A batch's appends: events first (their key claims the ids), then the
 * mentions and the rows, each one statement, in the order given. */
int keel_mysql_write_append(struct keel_mysql_store *m, const struct keel_append *a)
{
	int rc = keel_mysql_tx(m);
	if (rc == 0)
		m->tx_writes = true;
	if (rc == 0 && a->nevents) {
		rc = keel_mysql_write_events(m, a->events, a->nevents, a->seqs_wanted);
		if (rc && !m->broken && m->last_errno == ER_DUP_ENTRY) {
			/* logged between this batch's lookup and its insert:
			 * another writer delivered the same events at once */
			char *why = keel_xstrndup(m->base.errmsg.data, m->base.errmsg.len);
			rc = keel_store_fail(
			    &m->base, KEEL_ESTORE,
			    "writing events: another connection logged some of "
			    "the batch's events at the same moment (%s): run the "
			    "same input again (events already logged are skipped)",
			    why);
			free(why);
		}
	}
	if (rc == 0)
		rc = keel_mysql_write_mentions(m, a->mentions, a->nmentions);
	if (rc == 0)
		rc = keel_mysql_write_rows(m, a->rows, a->nrows, KEEL_ROW_FACT);
	if (rc == 0)
		rc = keel_mysql_write_rows(m, a->rows, a->nrows, KEEL_ROW_RELATION);
	return rc;
}

static int keel_mysql_append(struct keel_store *s, const struct keel_append *a)
{
	return keel_mysql_write_append(keel_mysql_downcast(s), a);
}

/* keel ingest --workers: each worker's connection reads committed rows
 * only, so concurrent batches of other tenants take no gap locks from one
 * another (docs/store-mysql.md, "Session settings Keel makes"). */
int keel_mysql_worker_init(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Rows of one bulk execution get their ids a few at a time, so
	 * another connection inserting at once could interleave with them
	 * and the events' seq handed back would be wrong; a worker logs
	 * events whose seq is wanted back with the text path's multi-row
	 * INSERTs, which reserve a statement's ids at once (3.5 times the
	 * server's time of the bulk path: docs/store-mysql.md). Events whose
	 * seq nobody reads (keel consume's), rows and mentions keep the bulk
	 * path. */
	m->worker = true;
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
    .savepoint = keel_mysql_savepoint,
    .release = keel_mysql_release,
    .rollback_to_savepoint = keel_mysql_rollback_to_savepoint,
    .last_recorded_at = keel_mysql_last_recorded_at,
    .writer_gate = keel_mysql_writer_gate,
    .settle = keel_mysql_settle,
    .seen_ids = keel_mysql_seen_ids,
    .append = keel_mysql_append,
    .tenants = keel_mysql_tenants,
    .scan = keel_mysql_scan,
    .counts = keel_mysql_counts,
    .entity_subjects = keel_mysql_entity_subjects,
    .fact_subjects = keel_mysql_fact_subjects,
    .replace_tenant = keel_mysql_replace_tenant,
    .forget = keel_mysql_forget,
    .forget_find = keel_mysql_forget_find,
    .forget_rows = keel_mysql_forget_rows,
    .tombstone = keel_mysql_tombstone,
    .cartridge_get = keel_mysql_cartridge_get,
    .cartridge_put = keel_mysql_cartridge_put,
    .worker_init = keel_mysql_worker_init,
    .log_position = keel_mysql_log_position,
    .log_positions = keel_mysql_log_positions,
    .schema_versions = keel_mysql_schema_versions,
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

unsigned long keel_store_mysql_connection_id(struct keel_store *s)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	return m->db ? mysql_thread_id(m->db) : 0;
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
