/*
 * sql.c - running the PostgreSQL store's statements: parameters (always
 * binary: strings as their bytes, integers big-endian, so nothing is ever
 * escaped into SQL text), binary results, errors in one line, and the
 * round-trip count the tests hold the write path to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"
#include "event/utf8.h"

/* Type oids of the built-in types the store binds (pg_type.h, stable). */
#define KEEL_PG_INT8OID 20
#define KEEL_PG_TEXTOID 25

/* ----------------------------------------------------------- parameters */

void keel_pg_params_init(struct keel_pg_params *p)
{
	p->n = 0;
}

static int keel_pg_param_next(struct keel_pg_params *p)
{
	if (p->n >= KEEL_PG_MAX_PARAMS)
		abort(); /* a statement of ours with too many: a bug */
	return p->n++;
}

void keel_pg_param_str(struct keel_pg_params *p, struct keel_str s)
{
	int i = keel_pg_param_next(p);
	p->values[i] = s.ptr ? (s.len ? s.ptr : "") : NULL;
	p->lengths[i] = (int)s.len;
	p->formats[i] = 1;
	p->types[i] = KEEL_PG_TEXTOID;
}

void keel_pg_param_i64(struct keel_pg_params *p, int64_t v)
{
	int i = keel_pg_param_next(p);
	uint64_t u = (uint64_t)v;
	for (int k = 0; k < 8; k++)
		p->ints[i][k] = (char)(u >> (56 - 8 * k));
	p->values[i] = p->ints[i];
	p->lengths[i] = 8;
	p->formats[i] = 1;
	p->types[i] = KEEL_PG_INT8OID;
}

void keel_pg_param_bytes(struct keel_pg_params *p, Oid type, const void *v, size_t n)
{
	int i = keel_pg_param_next(p);
	p->values[i] = v;
	p->lengths[i] = (int)n;
	p->formats[i] = 1;
	p->types[i] = type;
}

/* ------------------------------------------------------- binary encoding */

void keel_pg_put16(struct keel_buf *b, int16_t v)
{
	uint16_t u = (uint16_t)v;
	char c[2] = {(char)(u >> 8), (char)u};
	keel_buf_add(b, c, 2);
}

void keel_pg_put32(struct keel_buf *b, int32_t v)
{
	uint32_t u = (uint32_t)v;
	char c[4] = {(char)(u >> 24), (char)(u >> 16), (char)(u >> 8), (char)u};
	keel_buf_add(b, c, 4);
}

void keel_pg_put64(struct keel_buf *b, int64_t v)
{
	uint64_t u = (uint64_t)v;
	char c[8];
	for (int k = 0; k < 8; k++)
		c[k] = (char)(u >> (56 - 8 * k));
	keel_buf_add(b, c, 8);
}

/* array_recv's format: dimensions, a null flag, the element type, the
 * length and lower bound of the one dimension, then each element as a
 * length and its bytes. The length is written at the end. */
void keel_pg_text_array_begin(struct keel_buf *b)
{
	keel_buf_reset(b);
	keel_pg_put32(b, 1); /* dimensions */
	keel_pg_put32(b, 0); /* no NULLs */
	keel_pg_put32(b, KEEL_PG_TEXTOID);
	keel_pg_put32(b, 0); /* the length, set by _end */
	keel_pg_put32(b, 1); /* lower bound */
}

void keel_pg_text_array_add(struct keel_buf *b, struct keel_str s)
{
	keel_pg_put32(b, (int32_t)s.len);
	keel_buf_add(b, s.ptr, s.len);
}

void keel_pg_text_array_end(struct keel_buf *b, int32_t n)
{
	uint32_t u = (uint32_t)n;
	b->data[12] = (char)(u >> 24);
	b->data[13] = (char)(u >> 16);
	b->data[14] = (char)(u >> 8);
	b->data[15] = (char)u;
}

/* ------------------------------------------------------- binary results */

struct keel_str keel_pg_str(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return KEEL_STR_NULL;
	return keel_str_make(PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

int64_t keel_pg_i64(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return 0;
	const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
	int n = PQgetlength(r, row, col);
	uint64_t u = 0;
	for (int k = 0; k < n; k++)
		u = (u << 8) | p[k];
	/* int4 and int2 results are sign-extended */
	if (n > 0 && n < 8 && (p[0] & 0x80))
		u |= ~(uint64_t)0 << (8 * n);
	return (int64_t)u;
}

bool keel_pg_bool(const PGresult *r, int row, int col)
{
	return !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == 1 &&
	       PQgetvalue(r, row, col)[0] != 0;
}

/* ----------------------------------------------------------- statements */

/* The server's message without its trailing newline. */
static void keel_pg_add_message(struct keel_buf *b, const char *msg)
{
	size_t n = msg ? strlen(msg) : 0;
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		n--;
	keel_buf_add(b, msg ? msg : "", n);
}

/* A libpq message as one line: "FATAL:  " dropped, its lines
 * (a hint after a tab) joined by "; ". */
void keel_pg_one_line(struct keel_buf *out, const char *msg)
{
	const char *p = msg ? msg : "";
	bool first = true;
	while (*p) {
		size_t n = strcspn(p, "\n");
		const char *line = p;
		size_t len = n;
		while (len && (*line == '\t' || *line == ' ')) {
			line++;
			len--;
		}
		if (len >= 8 && !strncmp(line, "FATAL:  ", 8)) {
			line += 8;
			len -= 8;
		}
		while (len && line[len - 1] == ' ')
			len--;
		if (len) {
			if (!first)
				keel_buf_adds(out, "; ");
			keel_buf_add(out, line, len);
			first = false;
		}
		p += n;
		if (*p == '\n')
			p++;
	}
}

int keel_pg_lost(struct keel_pg_store *g, const char *what)
{
	g->broken = true;
	struct keel_buf m;
	keel_buf_init(&m);
	keel_pg_one_line(&m, g->conn ? PQerrorMessage(g->conn) : "no connection");
	int rc = keel_store_fail(&g->base, KEEL_ESTORE,
				 "%s: lost the connection to the postgres server (%s); "
				 "nothing of the batch was committed",
				 what, m.data ? m.data : "");
	keel_buf_free(&m);
	return rc;
}

/* A failed statement's one-line message, from its result (NULL: the
 * connection's). A lost connection says so and what it means. */
int keel_pg_result_error(struct keel_pg_store *g, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	snprintf(g->sqlstate, sizeof g->sqlstate, "%s", state ? state : "");
	if (!g->conn || PQstatus(g->conn) == CONNECTION_BAD)
		return keel_pg_lost(g, what);
	/* Admin shutdown, crash shutdown, cannot connect now: the session is
	 * gone even when libpq has not noticed yet; and an error without a
	 * SQLSTATE is libpq's own (the server's errors all have one), such as
	 * "server closed the connection unexpectedly". */
	if (!g->sqlstate[0] || !strncmp(g->sqlstate, "57P0", 4) ||
	    !strncmp(g->sqlstate, "08", 2))
		return keel_pg_lost(g, what);
	struct keel_buf m;
	keel_buf_init(&m);
	const char *primary =
	    res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	keel_pg_add_message(&m, primary ? primary : PQerrorMessage(g->conn));
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	if (detail) {
		keel_buf_adds(&m, " (");
		keel_pg_add_message(&m, detail);
		keel_buf_adds(&m, ")");
	}
	int rc =
	    keel_store_fail(&g->base, KEEL_ESTORE, "%s: postgres error %s: %s", what,
			    g->sqlstate[0] ? g->sqlstate : "?", m.data ? m.data : "");
	keel_buf_free(&m);
	return rc;
}

/* Takes a statement's result: 0 with *out set (or cleared), or an error. */
static int keel_pg_take(struct keel_pg_store *g, PGresult *res, const char *what,
			PGresult **out)
{
	g->stats.round_trips++;
	g->base.statements++;
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int rc = keel_pg_result_error(g, res, what);
		PQclear(res);
		return rc;
	}
	g->sqlstate[0] = 0;
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}

static int keel_pg_ready(struct keel_pg_store *g, const char *what)
{
	if (g->broken || !g->conn)
		return keel_store_fail(
		    &g->base, KEEL_ESTORE,
		    "%s: the connection to the postgres server was lost", what);
	if (g->streaming)
		return keel_store_fail(&g->base, KEEL_ESTORE,
				       "%s: a scan of the postgres store is still open",
				       what);
	return 0;
}

int keel_pg_exec(struct keel_pg_store *g, const char *sql, const struct keel_pg_params *p,
		 const char *what, PGresult **out)
{
	if (out)
		*out = NULL;
	int rc = keel_pg_ready(g, what);
	if (rc)
		return rc;
	/* whatever the statement reads or writes, the rows waiting for COPY
	 * are written before it (copy.c) */
	if ((rc = keel_pg_flush_rows(g)) != 0)
		return rc;
	PGresult *res = PQexecParams(g->conn, sql, p ? p->n : 0, p ? p->types : NULL,
				     p ? p->values : NULL, p ? p->lengths : NULL,
				     p ? p->formats : NULL, 1);
	return keel_pg_take(g, res, what, out);
}

/* The statements every connection prepares once, by enum keel_pg_stmt. */
static const struct {
	const char *name, *sql;
} keel_pg_stmts[KEEL_PG_STMTS] = {
    [KEEL_PG_SEEN] = {"keel_seen", KEEL_PG_SEEN_SQL},
    /* $1 blocks of KEEL_PG_SEQ_BLOCK numbers (keel_seq steps by it) */
    [KEEL_PG_RESERVE] =
	{"keel_reserve",
	 "SELECT nextval('keel_seq') FROM generate_series(1, $1::bigint)"},
    /* store.c, the writers' gate. The lock is in FROM, so that the
     * clock and the log's latest recorded_at (one dive on
     * keel_events_seq) are read once it is held. */
    [KEEL_PG_GATE] =
	{"keel_gate",
	 "SELECT GREATEST(COALESCE((SELECT recorded_at FROM keel_events ORDER BY seq "
	 "DESC LIMIT 1), 0), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint "
	 "- 1) FROM (SELECT pg_advisory_xact_lock_shared(" KEEL_PG_GATE_KEY ")) AS gate"},
    [KEEL_PG_SETTLE] = {"keel_settle",
			"SELECT pg_advisory_xact_lock(" KEEL_PG_GATE_KEY ")"},
    [KEEL_PG_BEGIN] = {"keel_begin", "BEGIN"},
    [KEEL_PG_SAVEPOINT] = {"keel_savepoint", "SAVEPOINT keel_batch"},
    [KEEL_PG_COMMIT] = {"keel_commit", "COMMIT"},
    [KEEL_PG_ROLLBACK] = {"keel_rollback", "ROLLBACK"},
};

/* Each statement is prepared on the connection the first time it runs,
 * so that a command that only reads (keel show, a page of keel entities)
 * pays for none of the write path's. */
int keel_pg_exec_prepared(struct keel_pg_store *g, enum keel_pg_stmt st,
			  const struct keel_pg_params *p, const char *what,
			  PGresult **out)
{
	if (out)
		*out = NULL;
	int rc = keel_pg_ready(g, what);
	if (rc)
		return rc;
	if (!(g->prepared & (1u << st))) {
		PGresult *res = PQprepare(g->conn, keel_pg_stmts[st].name,
					  keel_pg_stmts[st].sql, 0, NULL);
		g->stats.prepares++;
		if ((rc = keel_pg_take(g, res, what, NULL)) != 0)
			return rc;
		g->prepared |= 1u << st;
	}
	PGresult *res = PQexecPrepared(g->conn, keel_pg_stmts[st].name, p ? p->n : 0,
				       p ? p->values : NULL, p ? p->lengths : NULL,
				       p ? p->formats : NULL, 1);
	return keel_pg_take(g, res, what, out);
}

int keel_pg_command(struct keel_pg_store *g, const char *sql, const char *what)
{
	int rc = keel_pg_ready(g, what);
	if (rc)
		return rc;
	return keel_pg_take(g, PQexec(g->conn, sql), what, NULL);
}

bool keel_pg_storable(struct keel_str s)
{
	return !s.ptr || (!memchr(s.ptr, 0, s.len) && keel_utf8_valid(s.ptr, s.len));
}
