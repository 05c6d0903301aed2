/*
 * store.c - the PostgreSQL store: the append-only batch path on a server,
 * through libpq.
 *
 * A batch costs a fixed number of round trips whatever its size
 * (docs/store-postgres.md, "Round trips per batch"):
 *
 *   SAVEPOINT     before a batch that follows written ones in the open
 *                 transaction (releasing the one before it)
 *   seen ids      one lookup of the batch's identities as three arrays
 *                 (tenant, source, id) joined to the log's key: the only
 *                 stored state the write path reads
 *   BEGIN         with the first batch of a commit
 *   seq           one block of KEEL_PG_SEQ_BLOCK numbers from keel_seq
 *   events        one binary COPY (two round trips): their key claims the
 *                 identities
 *   facts, relations: encoded and kept (copy.c, "rows waiting for COPY")
 *   before the commit: the mentions, the transaction's facts, its
 *                 relations, one binary COPY each (a table's waiting rows
 *                 also go at the end of a batch once they pass
 *                 KEEL_PG_PENDING_MAX, and before any other statement)
 *   COMMIT        once per commit interval (the core decides)
 *
 * Every statement but the COPYs and the savepoints' pair is prepared once
 * per connection (sql.c). Nothing is updated and nothing but the
 * identities is read: a row's valid_to and closed_by are derived on read,
 * entities aggregated from their mentions. A batch of nothing but
 * duplicates costs its lookup alone.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ---------------------------------------------------------- transactions */

static int keel_pg_begin(struct keel_store *s)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	g->tx_open = false;
	g->tx_writes = false;
	g->savepoint_sent = false;
	g->pending_lost = false;
	g->pending_tied = false;
	keel_pg_drop_rows(g);
	return g->broken ? keel_pg_reconnect(g) : 0;
}

/* The transaction starts with its first statement that needs it: the
 * writers' gate when the store's own transactions begin, or the first
 * write of those who write without one (schema, positions). */
int keel_pg_tx(struct keel_pg_store *g)
{
	if (g->tx_open)
		return 0;
	int rc = keel_pg_exec_prepared(g, KEEL_PG_BEGIN, NULL, "starting the transaction",
				       NULL);
	if (rc == 0)
		g->tx_open = true;
	return rc;
}

static int keel_pg_commit(struct keel_store *s)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (!g->tx_open)
		return 0;
	/* COMMIT of a failed transaction answers "ROLLBACK" without an
	 * error: never let a batch be reported committed that way. */
	if (g->pending_lost ||
	    (!g->broken && PQtransactionStatus(g->conn) == PQTRANS_INERROR))
		return keel_store_fail(s, KEEL_ESTORE,
				       "commit: a statement of the transaction failed "
				       "before it: nothing of it was committed");
	/* the transaction's facts and relations first; a failure leaves the
	 * transaction to the caller's rollback */
	int rc = keel_pg_flush_rows(g);
	if (rc)
		return rc;
	rc = keel_pg_exec_prepared(g, KEEL_PG_COMMIT, NULL, "commit", NULL);
	if (rc == 0 || g->broken) {
		g->tx_open = false;
		g->tx_writes = false;
		g->savepoint_sent = false;
	}
	if (rc && g->broken) {
		/* The server may have committed before the connection went:
		 * the transaction is over, its outcome unknown here. */
		return keel_store_fail(s, KEEL_EUNCERTAIN,
				       "commit: lost the connection to the postgres server; the "
				       "transaction may or may not have been committed");
	}
	return rc;
}

static int keel_pg_rollback(struct keel_store *s)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	bool open = g->tx_open;
	g->tx_open = false;
	g->tx_writes = false;
	g->savepoint_sent = false;
	g->pending_lost = false;
	g->pending_tied = false;
	keel_pg_drop_rows(g);
	/* Without a connection the server has rolled back already. */
	if (g->broken || !open)
		return 0;
	return keel_pg_exec_prepared(g, KEEL_PG_ROLLBACK, NULL, "rollback", NULL);
}

/*
 * Savepoints, one per batch (docs/semantics.md, "Batches, commits and
 * failures"), in every open transaction: even the first batch's cannot be
 * rolled back by rolling back the transaction, which holds the writers'
 * gate and the clock read in it. A batch's savepoint releases the one
 * before, in the same round trip, so that the transaction holds one at a
 * time (each is a subtransaction, and PostgreSQL keeps a transaction's
 * subtransactions until it ends).
 */
static int keel_pg_savepoint(struct keel_store *s)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	/* what waits for COPY now is the earlier batches': rolling this one
	 * back keeps it */
	for (int k = 0; k < 2; k++) {
		g->pending[k].mark_len = g->pending[k].rows.len;
		g->pending[k].mark_n = g->pending[k].n;
	}
	g->pending_tied = false;
	if (!g->tx_open)
		return 0;
	int rc =
	    g->savepoint_sent
		? keel_pg_command(g, "RELEASE SAVEPOINT keel_batch; SAVEPOINT keel_batch",
				  "starting the batch")
		: keel_pg_exec_prepared(g, KEEL_PG_SAVEPOINT, NULL, "starting the batch",
					NULL);
	if (rc == 0)
		g->savepoint_sent = true;
	return rc;
}

static int keel_pg_release(struct keel_store *s)
{
	(void)s;
	return 0; /* the next savepoint releases it, or the commit */
}

static int keel_pg_rollback_to_savepoint(struct keel_store *s)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (g->pending_lost || g->pending_tied) {
		/* rows of the batches before this one were not written, or
		 * went within this batch's savepoint: they cannot stay without
		 * them */
		keel_pg_drop_rows(g);
		bool open = g->tx_open && !g->broken;
		g->tx_open = false;
		g->tx_writes = false;
		g->savepoint_sent = false;
		g->pending_lost = false;
		g->pending_tied = false;
		if (open)
			keel_pg_exec_prepared(g, KEEL_PG_ROLLBACK, NULL, "rollback",
					      NULL);
		return keel_store_fail(
		    s, KEEL_ESTORE,
		    "rolling the batch back: rows of the transaction's "
		    "earlier batches went with it: nothing of the "
		    "transaction was committed");
	}
	if (g->broken)
		return 0; /* the server has rolled the whole transaction back */
	for (int k = 0; k < 2; k++) {
		/* the batch's own waiting rows go with it */
		struct keel_pg_pending *p = &g->pending[k];
		if (p->mark_len < p->rows.len) {
			p->rows.len = p->mark_len;
			p->rows.data[p->rows.len] = 0;
		}
		p->n = p->mark_n;
	}
	if (!g->savepoint_sent) {
		/* the batch's first write began the transaction: nothing
		 * before it to keep */
		bool writes = g->tx_writes;
		g->tx_writes = false;
		if (!g->tx_open ||
		    (!writes && PQtransactionStatus(g->conn) != PQTRANS_INERROR))
			return 0;
		g->tx_open = false;
		return keel_pg_exec_prepared(g, KEEL_PG_ROLLBACK, NULL,
					     "rolling the batch back", NULL);
	}
	g->savepoint_sent = false;
	return keel_pg_command(
	    g, "ROLLBACK TO SAVEPOINT keel_batch; RELEASE SAVEPOINT keel_batch",
	    "rolling the batch back");
}

/*
 * The writers' gate (docs/store-postgres.md, "Transaction time"): the
 * advisory lock KEEL_PG_GATE_KEY. A write transaction holds it shared
 * from its start to its end and reads the server's clock once it holds
 * it; a read known at a past moment takes it exclusively, which
 * PostgreSQL grants once every writer then inside has ended, and before
 * any writer that asked after it. So a writer either ends before the read
 * or takes a clock later than the read's moment. clock_timestamp(), not
 * now(): the time it is read, after the wait, not when the transaction
 * began.
 */
static int keel_pg_writer_gate(struct keel_store *s, int64_t *floor)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	*floor = 0;
	int rc = keel_pg_tx(g);
	if (rc)
		return rc;
	PGresult *r;
	rc = keel_pg_exec_prepared(g, KEEL_PG_GATE, NULL, "entering the writers' gate",
				   &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 1)
		*floor = keel_pg_i64(r, 0, 0);
	PQclear(r);
	return 0;
}

/* Outside a transaction the statement is one: the lock is taken, waited
 * for, and let go when it ends; the wait is all a read needs. */
static int keel_pg_settle(struct keel_store *s, int64_t known_at)
{
	(void)known_at;
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (g->tx_open)
		return 0; /* this handle's own transaction: nothing to wait for */
	PGresult *r;
	int rc = keel_pg_exec_prepared(g, KEEL_PG_SETTLE, NULL, "waiting for the writers",
				       &r);
	if (rc == 0)
		PQclear(r);
	return rc;
}

/* ------------------------------------------------------------- seen ids */

/* Which of the batch's events are logged already: one statement, each
 * distinct identity asked once, as three arrays side by side. */
static int keel_pg_seen_ids(struct keel_store *s, struct keel_batch_event **ev, size_t n)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	keel_map_clear(&g->ids);
	struct keel_buf *a = g->arrays;
	for (int k = 0; k < 3; k++)
		keel_pg_text_array_begin(&a[k]);
	int32_t distinct = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = keel_batch_event_key_hash(ev[i]);
		bool repeat = false;
		for (size_t k = keel_map_first(&g->ids, h); k != SIZE_MAX && !repeat;
		     k = keel_map_next(&g->ids, h, k))
			repeat = keel_batch_event_same(g->ids.values[k], ev[i]);
		keel_map_put(&g->ids, h, ev[i]);
		if (repeat)
			continue;
		keel_pg_text_array_add(&a[0], ev[i]->tenant);
		keel_pg_text_array_add(&a[1], ev[i]->source);
		keel_pg_text_array_add(&a[2], ev[i]->id);
		distinct++;
	}
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	for (int k = 0; k < 3; k++) {
		keel_pg_text_array_end(&a[k], distinct);
		keel_pg_param_bytes(&p, 1009 /* text[] */, a[k].data, a[k].len);
	}
	g->stats.lookups++;
	g->stats.lookup_ids += (uint64_t)distinct;
	PGresult *r;
	int rc = keel_pg_exec_prepared(g, KEEL_PG_SEEN, &p, "looking up event ids", &r);
	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct keel_str tenant = keel_pg_str(r, row, 0);
		struct keel_str source = keel_pg_str(r, row, 1);
		struct keel_str id = keel_pg_str(r, row, 2);
		uint64_t stored = (uint64_t)keel_pg_i64(r, row, 3);
		int64_t seq = keel_pg_i64(r, row, 4);
		uint64_t h = keel_event_key_hash(tenant, source, id);
		/* Every copy of the identity in the batch is a duplicate. */
		for (size_t i = keel_map_first(&g->ids, h); i != SIZE_MAX;
		     i = keel_map_next(&g->ids, h, i)) {
			struct keel_batch_event *e = g->ids.values[i];
			if (keel_str_eq(e->id, id) && keel_str_eq(e->source, source) &&
			    keel_str_eq(e->tenant, tenant)) {
				e->status = KEEL_EV_DUPLICATE;
				e->stored_hash = stored;
				e->stored_seq = seq;
			}
		}
	}
	if (rc == 0)
		PQclear(r);
	keel_map_clear(&g->ids);
	return rc;
}

/* ------------------------------------------------------------ appending */

/* Blocks of seq for n rows: one statement whatever n. keel_seq steps by
 * KEEL_PG_SEQ_BLOCK, so each value it hands out begins a block no other
 * connection gets; the blocks of one connection increase. */
int keel_pg_reserve(struct keel_pg_store *g, size_t n)
{
	g->nblocks = 0;
	g->seq_next = 0;
	if (!n)
		return 0;
	size_t k = (n + KEEL_PG_SEQ_BLOCK - 1) / KEEL_PG_SEQ_BLOCK;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_i64(&p, (int64_t)k);
	PGresult *r;
	int rc = keel_pg_exec_prepared(g, KEEL_PG_RESERVE, &p, "numbering the rows", &r);
	if (rc)
		return rc;
	if ((size_t)PQntuples(r) != k) {
		PQclear(r);
		return keel_store_fail(&g->base, KEEL_ESTORE,
				       "numbering the rows: %d blocks of %zu",
				       PQntuples(r), k);
	}
	if (k > g->blocks_cap) {
		g->blocks_cap = k;
		g->blocks = keel_xrealloc(g->blocks, k * sizeof *g->blocks);
	}
	for (size_t i = 0; i < k; i++)
		g->blocks[i] = keel_pg_i64(r, (int)i, 0);
	PQclear(r);
	/* nextval's values within one statement increase; sorted anyway, as
	 * the order rows are numbered in is the contract */
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && g->blocks[j - 1] > g->blocks[j]; j--) {
			int64_t t = g->blocks[j];
			g->blocks[j] = g->blocks[j - 1];
			g->blocks[j - 1] = t;
		}
	g->nblocks = k;
	g->stats.seq_blocks += k;
	return 0;
}

int64_t keel_pg_next_seq(struct keel_pg_store *g)
{
	size_t i = g->seq_next++;
	if (i / KEEL_PG_SEQ_BLOCK >= g->nblocks)
		abort(); /* more rows than keel_pg_reserve was told: a bug */
	return g->blocks[i / KEEL_PG_SEQ_BLOCK] + (int64_t)(i % KEEL_PG_SEQ_BLOCK);
}

/* A batch's appends: events first (their key claims the identities), then
 * the mentions and the rows, each one COPY, in the order given; with
 * defer, the facts and relations are numbered now and wait for the
 * commit. */
int keel_pg_write_append(struct keel_pg_store *g, const struct keel_append *a, bool defer)
{
	size_t total = a->nevents + a->nmentions + a->nrows;
	if (!total)
		return 0;
	int rc = keel_pg_tx(g);
	if (rc == 0)
		g->tx_writes = true;
	if (rc == 0)
		rc = keel_pg_reserve(g, total);
	if (rc == 0 && a->nevents) {
		rc = keel_pg_copy_events(g, a->events, a->nevents);
		if (rc && !g->broken && !strcmp(g->sqlstate, "23505")) {
			/* logged between this batch's lookup and its copy:
			 * another writer delivered the same events at once */
			char *why =
			    keel_xstrndup(g->base.errmsg.data, g->base.errmsg.len);
			rc = keel_store_fail(
			    &g->base, KEEL_ESTORE,
			    "writing events: another connection logged some of "
			    "the batch's events at the same moment (%s): run the "
			    "same input again (events already logged are skipped)",
			    why);
			free(why);
		}
	}
	if (rc == 0)
		rc = keel_pg_copy_mentions(g, a->mentions, a->nmentions);
	if (rc == 0 && defer) {
		keel_pg_defer_rows(g, a->rows, a->nrows, KEEL_ROW_FACT);
		keel_pg_defer_rows(g, a->rows, a->nrows, KEEL_ROW_RELATION);
		/* bounded memory: past the limit they go now, within this
		 * batch's savepoint (a failure takes the transaction) */
		if (keel_pg_pending_bytes(g) >= KEEL_PG_PENDING_MAX)
			rc = keel_pg_flush_rows(g);
		return rc;
	}
	if (rc == 0)
		rc = keel_pg_copy_rows(g, a->rows, a->nrows, KEEL_ROW_FACT);
	if (rc == 0)
		rc = keel_pg_copy_rows(g, a->rows, a->nrows, KEEL_ROW_RELATION);
	return rc;
}

static int keel_pg_append(struct keel_store *s, const struct keel_append *a)
{
	return keel_pg_write_append(keel_pg_downcast(s), a, true);
}

/* keel ingest --workers: nothing to set up (READ COMMITTED, PostgreSQL's
 * default, lets batches of other tenants go side by side; the seq blocks
 * are the sequence's, shared safely). */
static int keel_pg_worker_init(struct keel_store *s)
{
	keel_pg_downcast(s)->worker = true;
	return 0;
}

const struct keel_store_ops keel_store_postgres_ops = {
    .scheme = "postgres",
    .scheme_alias = "postgresql",
    .url_form = KEEL_PG_URL_FORM,
    .open = keel_pg_open,
    .close = keel_pg_close,
    .begin = keel_pg_begin,
    .commit = keel_pg_commit,
    .rollback = keel_pg_rollback,
    .savepoint = keel_pg_savepoint,
    .release = keel_pg_release,
    .rollback_to_savepoint = keel_pg_rollback_to_savepoint,
    .writer_gate = keel_pg_writer_gate,
    .settle = keel_pg_settle,
    .seen_ids = keel_pg_seen_ids,
    .append = keel_pg_append,
    .tenants = keel_pg_tenants,
    .scan = keel_pg_scan,
    .counts = keel_pg_counts,
    .entity_subjects = keel_pg_entity_subjects,
    .fact_subjects = keel_pg_fact_subjects,
    .replace_tenant = keel_pg_replace_tenant,
    .forget = keel_pg_forget,
    .forget_find = keel_pg_forget_find,
    .forget_rows = keel_pg_forget_rows,
    .tombstone = keel_pg_tombstone,
    .cartridge_get = keel_pg_cartridge_get,
    .cartridge_put = keel_pg_cartridge_put,
    .worker_init = keel_pg_worker_init,
    .log_position = keel_pg_log_position,
    .log_positions = keel_pg_log_positions,
    .schema_versions = keel_pg_schema_versions,
    .concurrent_writers = true,
};

/* ------------------------------------------------- tests and benchmarks */

const struct keel_pg_stats *keel_store_postgres_stats(const struct keel_store *s)
{
	return &keel_pg_cdowncast(s)->stats;
}

void keel_store_postgres_reset_stats(struct keel_store *s)
{
	memset(&keel_pg_downcast(s)->stats, 0, sizeof(struct keel_pg_stats));
}

int keel_store_postgres_exec(struct keel_store *s, const char *sql, keel_pg_row_fn fn,
			     void *ud)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	if (g->broken || g->streaming)
		return keel_store_fail(s, KEEL_ESTORE,
				       "exec: the connection is not ready");
	int flushed = keel_pg_flush_rows(g); /* rows waiting for COPY first */
	if (flushed)
		return flushed;
	g->stats.round_trips++;
	PGresult *r = PQexec(g->conn, sql);
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int rc = keel_pg_result_error(g, r, "exec");
		PQclear(r);
		return rc;
	}
	int ncols = PQnfields(r), rc = 0;
	char **row = keel_xcalloc((size_t)ncols + 1, sizeof *row);
	for (int i = 0; rc == 0 && fn && i < PQntuples(r); i++) {
		for (int c = 0; c < ncols; c++)
			row[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
		rc = fn(ud, ncols, row);
	}
	free(row);
	PQclear(r);
	return rc;
}
