/*
 * copy.c - new rows through COPY ... FROM STDIN in PostgreSQL's binary
 * format: each value sent as its bytes with a length (strings as they are,
 * integers big-endian), so nothing is escaped or parsed as text, and a
 * table's rows of a batch, however many, cost two round trips (the COPY's
 * start, then its end).
 *
 *   header   "PGCOPY\n\377\r\n\0", flags (int32 0), extension length (int32 0)
 *   a row    its field count (int16), then each field: length (int32, -1
 *            for NULL) and bytes
 *   trailer  int16 -1
 *
 * Rows are built into g->copy and handed to libpq a MiB at a time, so a
 * replay of a whole tenant streams with bounded memory. Every row takes the
 * next seq of the batch's reserved blocks, in the order written.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

#define KEEL_PG_COPY_CHUNK ((size_t)1 << 20)

static const char keel_pg_copy_header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

/* Starts a COPY: 0 once the server waits for the rows. */
static int keel_pg_copy_begin(struct keel_pg_store *g, const char *sql, const char *what)
{
	if (g->broken)
		return keel_store_fail(
		    &g->base, KEEL_ESTORE,
		    "%s: the connection to the postgres server was lost", what);
	g->stats.round_trips++;
	g->stats.copies++;
	g->base.statements++;
	PGresult *res = PQexec(g->conn, sql);
	if (!res || PQresultStatus(res) != PGRES_COPY_IN) {
		int rc = keel_pg_result_error(g, res, what);
		PQclear(res);
		return rc;
	}
	PQclear(res);
	keel_buf_reset(&g->copy);
	keel_buf_add(&g->copy, keel_pg_copy_header, sizeof keel_pg_copy_header);
	return 0;
}

static int keel_pg_copy_send(struct keel_pg_store *g, const char *what)
{
	if (!g->copy.len)
		return 0;
	g->stats.copied_bytes += g->copy.len;
	int ok = PQputCopyData(g->conn, g->copy.data, (int)g->copy.len);
	keel_buf_reset(&g->copy);
	return ok == 1 ? 0 : keel_pg_lost(g, what);
}

/* After each row: hands a full chunk to libpq. */
static int keel_pg_copy_row_end(struct keel_pg_store *g, const char *what)
{
	g->stats.copied_rows++;
	return g->copy.len >= KEEL_PG_COPY_CHUNK ? keel_pg_copy_send(g, what) : 0;
}

/* Ends the COPY (sending the trailer, or abandoning it after a failure
 * here, rc) and takes the server's answer. */
static int keel_pg_copy_end(struct keel_pg_store *g, int rc, const char *what)
{
	if (g->broken)
		return rc;
	if (rc == 0) {
		keel_pg_put16(&g->copy, -1);
		rc = keel_pg_copy_send(g, what);
	}
	if (!g->broken &&
	    PQputCopyEnd(g->conn, rc ? "keel abandoned the copy" : NULL) != 1)
		return keel_pg_lost(g, what);
	g->stats.round_trips++;
	PGresult *res;
	int result = 0;
	while ((res = PQgetResult(g->conn))) {
		if (result == 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
			result = keel_pg_result_error(g, res, what);
		PQclear(res);
	}
	if (result == 0 && PQstatus(g->conn) == CONNECTION_BAD)
		result = keel_pg_lost(g, what);
	return rc ? rc : result;
}

static inline void keel_pg_field_str(struct keel_buf *b, struct keel_str s)
{
	if (!s.ptr) {
		keel_pg_put32(b, -1);
		return;
	}
	keel_pg_put32(b, (int32_t)s.len);
	keel_buf_add(b, s.ptr, s.len);
}

static inline void keel_pg_field_i64(struct keel_buf *b, int64_t v)
{
	keel_pg_put32(b, 8);
	keel_pg_put64(b, v);
}

int keel_pg_copy_events(struct keel_pg_store *g, struct keel_batch_event **ev, size_t n)
{
	static const char what[] = "writing events";
	if (!n)
		return 0;
	int rc =
	    keel_pg_copy_begin(g,
			       "COPY keel_events (seq, tenant, source, id, type, time, "
			       "hash, envelope, recorded_at) FROM STDIN (FORMAT binary)",
			       what);
	if (rc)
		return rc;
	struct keel_buf *b = &g->copy;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct keel_batch_event *e = ev[i];
		e->seq = keel_pg_next_seq(g);
		keel_pg_put16(b, 9);
		keel_pg_field_i64(b, e->seq);
		keel_pg_field_str(b, e->tenant);
		keel_pg_field_str(b, e->source);
		keel_pg_field_str(b, e->id);
		keel_pg_field_str(b, e->type);
		keel_pg_field_i64(b, e->time);
		keel_pg_field_i64(b, (int64_t)e->hash);
		keel_pg_field_str(b, e->envelope);
		keel_pg_field_i64(b, e->recorded_at);
		rc = keel_pg_copy_row_end(g, what);
	}
	return keel_pg_copy_end(g, rc, what);
}

int keel_pg_copy_mentions(struct keel_pg_store *g, const struct keel_mention *v, size_t n)
{
	static const char what[] = "writing entity mentions";
	if (!n)
		return 0;
	int rc = keel_pg_copy_begin(
	    g,
	    "COPY keel_entity_mentions (seq, tenant, subject, kind, "
	    "kind_time, first_seen, last_seen, recorded_at) FROM STDIN "
	    "(FORMAT binary)",
	    what);
	if (rc)
		return rc;
	g->stats.mentions_appended += n;
	struct keel_buf *b = &g->copy;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct keel_mention *m = &v[i];
		keel_pg_put16(b, 8);
		keel_pg_field_i64(b, keel_pg_next_seq(g));
		keel_pg_field_str(b, m->tenant);
		keel_pg_field_str(b, m->subject);
		keel_pg_field_str(b, m->kind);
		keel_pg_field_i64(b, m->kind_time);
		keel_pg_field_i64(b, m->first_seen);
		keel_pg_field_i64(b, m->last_seen);
		keel_pg_field_i64(b, m->recorded_at);
		rc = keel_pg_copy_row_end(g, what);
	}
	return keel_pg_copy_end(g, rc, what);
}

static const char *const keel_pg_copy_rows_sql[2] = {
    "COPY keel_fact_rows (seq, tenant, subject, predicate, value, valid_from, "
    "asserted_by_source, asserted_by, recorded_at) FROM STDIN (FORMAT binary)",
    "COPY keel_relation_rows (seq, tenant, subject, relation, object, linked, "
    "valid_from, asserted_by_source, asserted_by, recorded_at) FROM STDIN (FORMAT "
    "binary)",
};

static const char *keel_pg_rows_what(bool fact)
{
	return fact ? "writing facts" : "writing relations";
}

/* One fact or relation row, numbered seq. */
static void keel_pg_put_row(struct keel_buf *b, const struct keel_assertion *r, bool fact,
			    int64_t seq)
{
	keel_pg_put16(b, fact ? 9 : 10);
	keel_pg_field_i64(b, seq);
	keel_pg_field_str(b, r->tenant);
	keel_pg_field_str(b, r->subject);
	keel_pg_field_str(b, r->name);
	if (fact) {
		keel_pg_field_str(b, r->value);
	} else {
		keel_pg_field_str(b, r->object);
		keel_pg_put32(b, 1);
		keel_buf_addc(b, r->linked ? 1 : 0);
	}
	keel_pg_field_i64(b, r->valid_from);
	keel_pg_field_str(b, r->asserted_by.source);
	keel_pg_field_str(b, r->asserted_by.id);
	keel_pg_field_i64(b, r->recorded_at);
}

/* The assertions of one kind among v, in the order given, as one COPY
 * now (replay: streamed a MiB at a time). */
int keel_pg_copy_rows(struct keel_pg_store *g, const struct keel_assertion *v, size_t n,
		      enum keel_row_kind kind)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += v[i].kind == kind;
	if (!count)
		return 0;
	bool fact = kind == KEEL_ROW_FACT;
	const char *what = keel_pg_rows_what(fact);
	int rc = keel_pg_copy_begin(g, keel_pg_copy_rows_sql[!fact], what);
	if (rc)
		return rc;
	g->stats.rows_appended += count;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (v[i].kind != kind)
			continue;
		keel_pg_put_row(&g->copy, &v[i], fact, keel_pg_next_seq(g));
		rc = keel_pg_copy_row_end(g, what);
	}
	return keel_pg_copy_end(g, rc, what);
}

/* ------------------------------------------------ rows waiting for COPY */

/*
 * The batch path's facts and relations are the bulk of its rows, and a
 * COPY has a cost of its own whatever its rows (the server sets up a
 * slot for each row it buffers, up to a thousand, and opens the table's
 * indexes): at batch 500 one COPY a table a batch was about a tenth of
 * the server's work. So a transaction's rows of each table wait here,
 * encoded, and go in one COPY just before the commit. Nothing reads them
 * in between but this connection, and every other statement it sends
 * writes them first (keel_pg_exec, the scans). A batch rolled back to its
 * savepoint drops its own (g->pending[].mark_*, set by the savepoint).
 */
void keel_pg_defer_rows(struct keel_pg_store *g, const struct keel_assertion *v, size_t n,
			enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_pg_pending *p = &g->pending[!fact];
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind != kind)
			continue;
		keel_pg_put_row(&p->rows, &v[i], fact, keel_pg_next_seq(g));
		p->n++;
		g->stats.rows_appended++;
	}
}

size_t keel_pg_pending_bytes(const struct keel_pg_store *g)
{
	return g->pending[0].rows.len + g->pending[1].rows.len;
}

void keel_pg_drop_rows(struct keel_pg_store *g)
{
	for (int k = 0; k < 2; k++) {
		keel_buf_reset(&g->pending[k].rows);
		g->pending[k].n = 0;
		g->pending[k].mark_len = 0;
		g->pending[k].mark_n = 0;
	}
}

/* One table's waiting rows as one COPY, handed to libpq a MiB at a time. */
static int keel_pg_flush_table(struct keel_pg_store *g, int k)
{
	struct keel_pg_pending *p = &g->pending[k];
	const char *what = keel_pg_rows_what(k == 0);
	int rc = keel_pg_copy_begin(g, keel_pg_copy_rows_sql[k], what);
	if (rc)
		return rc;
	rc = keel_pg_copy_send(g, what); /* the header */
	for (size_t at = 0; rc == 0 && at < p->rows.len; at += KEEL_PG_COPY_CHUNK) {
		size_t len = p->rows.len - at;
		if (len > KEEL_PG_COPY_CHUNK)
			len = KEEL_PG_COPY_CHUNK;
		g->stats.copied_bytes += len;
		if (PQputCopyData(g->conn, p->rows.data + at, (int)len) != 1)
			rc = keel_pg_lost(g, what);
	}
	if (rc == 0)
		g->stats.copied_rows += p->n;
	return keel_pg_copy_end(g, rc, what);
}

int keel_pg_flush_rows(struct keel_pg_store *g)
{
	int rc = 0;
	for (int k = 0; rc == 0 && k < 2; k++)
		if (g->pending[k].n)
			rc = keel_pg_flush_table(g, k);
	/* On failure the transaction's batches lost theirs, and it cannot
	 * commit. Written, those of the batches before the open one are
	 * within its savepoint now. */
	if (rc)
		g->pending_lost = true;
	else if (g->pending[0].mark_n || g->pending[1].mark_n)
		g->pending_tied = true;
	keel_pg_drop_rows(g);
	return rc;
}
