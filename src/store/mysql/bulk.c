/*
 * bulk.c - MariaDB's bulk protocol: each write of a batch as one
 * execution of a prepared statement over column-wise parameter arrays
 * (docs/store-mysql.md, "The bulk path").
 */
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "parts.h"

/* ------------------------------------------------------------ bulk path */

/*
 * MariaDB's bulk protocol: a statement prepared once per connection, its
 * parameters bound as arrays (one element per row, column-wise), sent as
 * one COM_STMT_BULK_EXECUTE. The server parses nothing per batch and the
 * values travel in binary (no escaping, no literals to scan), which is
 * where the text path's server time went (docs/store-mysql.md). One
 * execution is one statement and one round trip, whatever the rows; it is
 * cut only where the rows would pass the packet limit, as the text path.
 *
 * Rows and mentions need no ids back (their order in the table is the
 * order sent, which is all seq must give), so every connection sends them
 * this way; events hand their seq back and go this way only on a
 * connection that is the tables' one writer (keel_mysql_worker_init).
 */

/* Types of the parameters: s string (NULL allowed), i BIGINT, u BIGINT
 * UNSIGNED. */
static const struct {
	const char *sql, *types;
} keel_mysql_bulk_stmts[KEEL_MYSQL_BULK_KINDS] = {
    [KEEL_MYSQL_BULK_EVENTS] = {"INSERT INTO keel_events (tenant, id, type, time, hash, "
				"envelope, recorded_at, source) VALUES "
				"(?,?,?,?,?,?,?,?)",
				"sssiusis"},
    [KEEL_MYSQL_BULK_MENTIONS] = {"INSERT INTO keel_entity_mentions (tenant, subject, "
				  "kind, kind_time, first_seen, last_seen, "
				  "recorded_at) VALUES (?,?,?,?,?,?,?)",
				  "sssiiii"},
    [KEEL_MYSQL_BULK_FACTS] = {"INSERT INTO keel_fact_rows (tenant, subject, "
			       "predicate, value, valid_from, asserted_by, "
			       "recorded_at, asserted_by_source) VALUES "
			       "(?,?,?,?,?,?,?,?)",
			       "ssssisis"},
    [KEEL_MYSQL_BULK_RELATIONS] = {"INSERT INTO keel_relation_rows (tenant, subject, "
				   "relation, object, linked, valid_from, "
				   "asserted_by, recorded_at, asserted_by_source) "
				   "VALUES (?,?,?,?,?,?,?,?,?)",
				   "ssssiisis"},
};

void keel_mysql_bulk_close_stmts(struct keel_mysql_store *m)
{
	for (size_t i = 0; i < KEEL_MYSQL_BULK_KINDS; i++) {
		if (m->stmts[i])
			mysql_stmt_close(m->stmts[i]);
		m->stmts[i] = NULL;
	}
}

static int keel_mysql_stmt_fail(struct keel_mysql_store *m, MYSQL_STMT *st,
				const char *what)
{
	return keel_mysql_error(m, what, mysql_stmt_errno(st), mysql_stmt_error(st));
}

/* Prepares the bulk statements on a new connection (the tables exist). */
int keel_mysql_bulk_prepare(struct keel_mysql_store *m)
{
	keel_mysql_bulk_close_stmts(m);
	if (!m->bulk)
		return 0;
	for (size_t i = 0; i < KEEL_MYSQL_BULK_KINDS; i++) {
		MYSQL_STMT *st = mysql_stmt_init(m->db);
		if (!st)
			return keel_store_fail(&m->base, KEEL_ESTORE,
					       "preparing statements: out of memory");
		m->stmts[i] = st;
		const char *sql = keel_mysql_bulk_stmts[i].sql;
		if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)))
			return keel_mysql_stmt_fail(m, st, "preparing statements");
	}
	return 0;
}

/* Rows of one bulk statement, executed whenever the next row would pass
 * the packet limit and at the end. */
struct keel_mysql_bulk {
	struct keel_mysql_store *m;
	enum keel_mysql_bulk_kind kind;
	const char *what;
	size_t rows;  /* in the current execution */
	size_t bytes; /* their size on the wire, at most */
	size_t done;  /* rows of earlier executions */
	/* events: where their seq go */
	struct keel_batch_event **events;
};

static void keel_mysql_bulk_grow(struct keel_mysql_store *m, size_t rows)
{
	if (rows <= m->cols_cap)
		return;
	size_t cap = m->cols_cap ? m->cols_cap : 256;
	while (cap < rows)
		cap *= 2;
	if (!m->cols)
		m->cols = keel_xcalloc(KEEL_MYSQL_BULK_MAX_COLS, sizeof *m->cols);
	for (size_t c = 0; c < KEEL_MYSQL_BULK_MAX_COLS; c++) {
		struct keel_mysql_col *col = &m->cols[c];
		col->ptr = keel_xrealloc(col->ptr, cap * sizeof *col->ptr);
		col->len = keel_xrealloc(col->len, cap * sizeof *col->len);
		col->ind = keel_xrealloc(col->ind, cap * sizeof *col->ind);
		col->num = keel_xrealloc(col->num, cap * sizeof *col->num);
	}
	m->cols_cap = cap;
}

static size_t keel_mysql_bulk_head(enum keel_mysql_bulk_kind kind)
{
	return 64 + 2 * strlen(keel_mysql_bulk_stmts[kind].types);
}

static int keel_mysql_bulk_flush(struct keel_mysql_bulk *b)
{
	struct keel_mysql_store *m = b->m;
	if (!b->rows)
		return 0;
	if (m->broken)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: the connection to the mysql server was lost",
				       b->what);
	MYSQL_STMT *st = m->stmts[b->kind];
	const char *types = keel_mysql_bulk_stmts[b->kind].types;
	MYSQL_BIND bind[KEEL_MYSQL_BULK_MAX_COLS];
	memset(bind, 0, sizeof bind);
	for (size_t c = 0; types[c]; c++) {
		struct keel_mysql_col *col = &m->cols[c];
		if (types[c] == 's') {
			/* binary: every column is VARBINARY or BLOB, and a
			 * string typed as text in the connection's utf8mb4 is
			 * scanned for its characters on the way in (3 % of the
			 * server's time, measured) */
			bind[c].buffer_type = MYSQL_TYPE_BLOB;
			bind[c].buffer = (void *)col->ptr;
			bind[c].length = col->len;
			bind[c].u.indicator = col->ind;
		} else {
			bind[c].buffer_type = MYSQL_TYPE_LONGLONG;
			bind[c].buffer = col->num;
			bind[c].is_unsigned = types[c] == 'u';
		}
	}
	unsigned int n = (unsigned int)b->rows;
	m->base.statements++;
	m->stats.bulk_statements++;
	m->stats.insert_statements++;
	if (b->bytes > m->stats.max_statement)
		m->stats.max_statement = b->bytes;
	double t0 = m->profile ? keel_mysql_now() : 0;
	int failed = mysql_stmt_attr_set(st, STMT_ATTR_ARRAY_SIZE, &n) ||
		     mysql_stmt_bind_param(st, bind) || mysql_stmt_execute(st);
	if (m->profile)
		keel_mysql_prof_add(m, b->what, t0);
	if (failed)
		return keel_mysql_stmt_fail(m, st, b->what);
	uint64_t affected = mysql_stmt_affected_rows(st);
	if (affected != b->rows)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: %llu of %zu rows were written", b->what,
				       (unsigned long long)affected, b->rows);
	if (b->events) {
		/* One statement's rows are numbered in order from its first
		 * id with a single writer; a worker's are not known (see
		 * keel_mysql_worker_init). */
		int64_t first = m->worker ? 0 : (int64_t)mysql_stmt_insert_id(st);
		for (size_t i = 0; i < b->rows; i++)
			b->events[b->done + i]->seq =
			    first ? first + (int64_t)i * m->autoinc_step : 0;
	}
	b->done += b->rows;
	b->rows = 0;
	b->bytes = keel_mysql_bulk_head(b->kind);
	return 0;
}

/* Starts a row of at most `size` bytes on the wire; *row is its index. */
static int keel_mysql_bulk_row(struct keel_mysql_bulk *b, size_t size, size_t *row)
{
	if (!b->bytes)
		b->bytes = keel_mysql_bulk_head(b->kind);
	if (b->rows && b->bytes + size > b->m->packet) {
		int rc = keel_mysql_bulk_flush(b);
		if (rc)
			return rc;
	}
	keel_mysql_bulk_grow(b->m, b->rows + 1);
	b->bytes += size;
	*row = b->rows++;
	return 0;
}

static void keel_mysql_bulk_str(struct keel_mysql_bulk *b, size_t row, size_t c,
				struct keel_str s)
{
	struct keel_mysql_col *col = &b->m->cols[c];
	col->ptr[row] = s.ptr ? s.ptr : "";
	col->len[row] = (unsigned long)s.len;
	col->ind[row] = s.ptr ? STMT_INDICATOR_NONE : STMT_INDICATOR_NULL;
}

static void keel_mysql_bulk_num(struct keel_mysql_bulk *b, size_t row, size_t c,
				int64_t v)
{
	b->m->cols[c].num[row] = v;
}

/* Bytes of a string parameter on the wire: indicator, length, data. */
static size_t keel_mysql_bulk_size(struct keel_str s)
{
	return s.len + 10;
}

int keel_mysql_bulk_events(struct keel_mysql_store *m, struct keel_batch_event **ev,
			   size_t n)
{
	struct keel_mysql_bulk b = {
	    .m = m, .kind = KEEL_MYSQL_BULK_EVENTS, .what = "writing events", .events = ev};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_batch_event *e = ev[i];
		size_t r;
		rc = keel_mysql_bulk_row(&b,
					 keel_mysql_bulk_size(e->tenant) +
					     keel_mysql_bulk_size(e->id) +
					     keel_mysql_bulk_size(e->source) +
					     keel_mysql_bulk_size(e->type) +
					     keel_mysql_bulk_size(e->envelope) + 30,
					 &r);
		if (rc)
			break;
		keel_mysql_bulk_str(&b, r, 0, e->tenant);
		keel_mysql_bulk_str(&b, r, 1, e->id);
		keel_mysql_bulk_str(&b, r, 2, e->type);
		keel_mysql_bulk_num(&b, r, 3, e->time);
		keel_mysql_bulk_num(&b, r, 4, (int64_t)e->hash);
		keel_mysql_bulk_str(&b, r, 5, e->envelope);
		keel_mysql_bulk_num(&b, r, 6, e->recorded_at);
		keel_mysql_bulk_str(&b, r, 7, e->source);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

int keel_mysql_bulk_mentions(struct keel_mysql_store *m, const struct keel_mention *v,
			     size_t n)
{
	struct keel_mysql_bulk b = {
	    .m = m, .kind = KEEL_MYSQL_BULK_MENTIONS, .what = "writing entity mentions"};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_mention *e = &v[i];
		size_t r;
		rc = keel_mysql_bulk_row(&b,
					 keel_mysql_bulk_size(e->tenant) +
					     keel_mysql_bulk_size(e->subject) +
					     keel_mysql_bulk_size(e->kind) + 40,
					 &r);
		if (rc)
			break;
		keel_mysql_bulk_str(&b, r, 0, e->tenant);
		keel_mysql_bulk_str(&b, r, 1, e->subject);
		keel_mysql_bulk_str(&b, r, 2, e->kind);
		keel_mysql_bulk_num(&b, r, 3, e->kind_time);
		keel_mysql_bulk_num(&b, r, 4, e->first_seen);
		keel_mysql_bulk_num(&b, r, 5, e->last_seen);
		keel_mysql_bulk_num(&b, r, 6, e->recorded_at);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

/* The assertions of one kind among v[0..n), in order. */
int keel_mysql_bulk_rows(struct keel_mysql_store *m, const struct keel_assertion *v,
			 size_t n, enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_mysql_bulk b = {
	    .m = m,
	    .kind = fact ? KEEL_MYSQL_BULK_FACTS : KEEL_MYSQL_BULK_RELATIONS,
	    .what = fact ? "writing facts" : "writing relations",
	};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_assertion *a = &v[i];
		if (a->kind != kind)
			continue;
		size_t r;
		rc = keel_mysql_bulk_row(
		    &b,
		    keel_mysql_bulk_size(a->tenant) + keel_mysql_bulk_size(a->subject) +
			keel_mysql_bulk_size(a->name) + keel_mysql_bulk_size(a->object) +
			keel_mysql_bulk_size(a->value) +
			keel_mysql_bulk_size(a->asserted_by.id) +
			keel_mysql_bulk_size(a->asserted_by.source) + 30,
		    &r);
		if (rc)
			break;
		size_t c = 0;
		keel_mysql_bulk_str(&b, r, c++, a->tenant);
		keel_mysql_bulk_str(&b, r, c++, a->subject);
		keel_mysql_bulk_str(&b, r, c++, a->name);
		if (fact) {
			keel_mysql_bulk_str(&b, r, c++, a->value);
		} else {
			keel_mysql_bulk_str(&b, r, c++, a->object);
			keel_mysql_bulk_num(&b, r, c++, a->linked ? 1 : 0);
		}
		keel_mysql_bulk_num(&b, r, c++, a->valid_from);
		keel_mysql_bulk_str(&b, r, c++, a->asserted_by.id);
		keel_mysql_bulk_num(&b, r, c++, a->recorded_at);
		keel_mysql_bulk_str(&b, r, c, a->asserted_by.source);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}
