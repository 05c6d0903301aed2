/*
 * mysql.c - the MySQL/MariaDB store: design A of the note on a real server,
 * through MariaDB Connector/C.
 *
 * A batch costs a handful of statements whatever its size (SPEC section 6):
 *
 *   seen ids      SELECT ... FROM keel_writers WHERE tenant = .. UNION ALL
 *                 SELECT ... FROM keel_events WHERE tenant = .. AND id IN
 *                 (...) UNION ALL the next tenant's (and, while bulk
 *                 executions hand back ids, the tables' MAX(seq))
 *   START TRANSACTION, then SELECT ... FROM keel_writers WHERE tenant IN
 *                 (...) FOR UPDATE: writers of one tenant take turns
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
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "../store.h"
#include "mysql_internal.h"
#include "open_rows.h"

/* The open-row cache (below): batches an open row may go unused (at most
 * and at least: as many as fit in half the cache, see
 * keel_mysql_cache_stage), open rows kept at most. */
#define KEEL_MYSQL_CACHE_BATCHES 32
#define KEEL_MYSQL_CACHE_MIN_BATCHES 4
#define KEEL_MYSQL_CACHE_MAX 65536

#define KEEL_MYSQL_SCHEMA_VERSION 4
#define KEEL_MYSQL_INF "9223372036854775807"
#define KEEL_MYSQL_URL_FORM "mysql://user:password@host:port/db"

struct keel_mysql_url {
	char *user;	/* NULL: the connector's default */
	char *password; /* NULL: none */
	char *host;	/* NULL: localhost */
	char *db;
	char *socket; /* NULL: TCP, or the default socket for localhost */
	unsigned port;
	unsigned connect_timeout;
	unsigned read_timeout;
	struct keel_buf shown; /* the URL with the password masked */
};

/* The statements of the bulk path, prepared once per connection. */
enum keel_mysql_bulk_kind {
	KEEL_MYSQL_BULK_EVENTS,
	KEEL_MYSQL_BULK_ENTITIES,
	KEEL_MYSQL_BULK_FACTS,
	KEEL_MYSQL_BULK_RELATIONS,
	KEEL_MYSQL_BULK_CLOSE_FACTS,
	KEEL_MYSQL_BULK_CLOSE_RELATIONS,
	KEEL_MYSQL_BULK_KINDS
};

#define KEEL_MYSQL_BULK_MAX_COLS 10

/* One parameter column of a bulk execution: strings as pointers and
 * lengths (NULL marked in ind), numbers in num. */
struct keel_mysql_col {
	const char **ptr;
	unsigned long *len;
	char *ind;
	int64_t *num;
};

/* One tenant of the open batch: does keel_writers have its row, and is
 * this connection its last writer? */
struct keel_mysql_mark {
	struct keel_str tenant; /* the batch's own copy */
	bool present;
	bool mine;
};

struct keel_mysql_store {
	struct keel_store base;
	MYSQL *db;
	struct keel_mysql_url url;
	bool mariadb;
	unsigned long version;
	bool row_alias;	      /* MySQL 8.0.19+: INSERT ... AS new (VALUES() deprecated) */
	size_t packet;	      /* statements are cut at this many bytes */
	int64_t autoinc_step; /* auto_increment_increment */
	bool broken;	      /* connection lost: reconnect at the next begin */
	bool streaming;	      /* an unbuffered scan result is open */
	bool tx_open;	      /* START TRANSACTION sent for the open batch */
	struct keel_buf sql;
	struct keel_buf part;	 /* the current part's prefix (one tenant's list) */
	struct keel_ptrvec rows; /* write-back scratch */
	int64_t *times;		 /* prefetch scratch */
	size_t times_cap;
	struct keel_map ids; /* seen_ids: batch events by (tenant, id) */
	struct keel_mysql_stats stats;
	uint64_t batch_rows;   /* rows prefetched in the open batch */
	const char *bulk_file; /* the file LOAD DATA LOCAL may send (replay) */
	/* KEEL_MYSQL_PROFILE set: wall time per kind of statement ("what"),
	 * printed to stderr at close; a developer's tool, off by default. */
	bool profile;
	/* MariaDB's bulk protocol (array binding, one COM_STMT_BULK_EXECUTE
	 * per table per batch): see "The bulk path" in docs/store-mysql.md.
	 * bulk: the writes that need no ids (entities, closures) use it;
	 * bulk_ids: the inserts that hand back seq do too (only while this
	 * connection is the tables' one writer, see keel_mysql_worker_init). */
	bool bulk;
	bool bulk_ids;
	bool bulk_close; /* closures as bulk upserts (KEEL_MYSQL_BULK_CLOSE=0: CASE) */
	/* Other connections write too: keel_mysql_worker_init, or seen by
	 * the tables' MAX(seq) (see "The open-row cache"). */
	bool worker;
	/* Open rows of recent batches (see "The open-row cache" below). */
	bool cache_on;
	struct keel_open_rows cache; /* open rows (open_rows.h) */
	/* This connection's mark in keel_writers, random at open, and the
	 * batch's tenants with whether their last writer was this connection
	 * (read with the ids; sorted by tenant). */
	uint64_t writer;
	char writer_tail[64]; /* " ON DUPLICATE KEY UPDATE writer = <mark>" */
	struct keel_mysql_mark *marks;
	size_t nmarks, marks_cap;
	/* While bulk executions hand back ids (bulk_ids): the MAX(seq) of
	 * events, facts and relations this connection's last commit left,
	 * and those read with the open batch's ids. */
	bool expect_known;
	int64_t expect[3];
	int64_t pending[3]; /* what this batch's commit will leave */
	bool pending_known;
	int64_t seen_max[3];
	int seen_reads;	  /* MAX(seq) readings in the open batch */
	bool seen_differ; /* two readings of one table disagreed */
	struct keel_ptrvec hits; /* prefetch scratch: timelines the cache holds */
	const struct keel_row **hit_rows; /* and their rows */
	size_t hit_rows_cap;
	MYSQL_STMT *stmts[KEEL_MYSQL_BULK_KINDS];
	struct keel_mysql_col *cols; /* column-wise parameter arrays */
	size_t cols_cap;	     /* rows each column array holds */
	struct {
		const char *what;
		double seconds;
		uint64_t count;
	} prof[24];
};

static void keel_mysql_infile_setup(struct keel_mysql_store *m);
static void keel_mysql_bulk_close_stmts(struct keel_mysql_store *m);
static int keel_mysql_bulk_prepare(struct keel_mysql_store *m);
static void keel_mysql_cache_drop(struct keel_mysql_store *m);

static struct keel_mysql_store *keel_mysql_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_mysql_ops)
		abort();
	return (struct keel_mysql_store *)s;
}

static const struct keel_mysql_store *keel_mysql_cdowncast(const struct keel_store *s)
{
	if (s->ops != &keel_store_mysql_ops)
		abort();
	return (const struct keel_mysql_store *)s;
}

/* ------------------------------------------------------------------ URL */

static int keel_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes p[0..n) into a new string; false on a bad escape or %00
 * (a NUL cannot reach the connector's C strings). */
static bool keel_mysql_pct_decode(const char *p, size_t n, char **out)
{
	char *s = keel_xmalloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '%') {
			s[k++] = p[i];
			continue;
		}
		int hi = i + 2 < n ? keel_hexval(p[i + 1]) : -1;
		int lo = i + 2 < n ? keel_hexval(p[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(s);
			return false;
		}
		s[k++] = (char)(hi * 16 + lo);
		i += 2;
	}
	s[k] = 0;
	*out = s;
	return true;
}

static bool keel_mysql_uint(const char *p, size_t n, unsigned long max, unsigned *out)
{
	if (n == 0 || n > 10)
		return false;
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

static void keel_mysql_url_free(struct keel_mysql_url *u)
{
	free(u->user);
	free(u->password);
	free(u->host);
	free(u->db);
	free(u->socket);
	keel_buf_free(&u->shown);
	memset(u, 0, sizeof *u);
}

/* The URL as messages show it: the password replaced by "***". */
static void keel_mysql_url_shown(const char *url, struct keel_buf *out)
{
	keel_buf_reset(out);
	const char *p = url + strlen("mysql://");
	size_t auth = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
	if (!colon) {
		keel_buf_adds(out, url);
		return;
	}
	keel_buf_add(out, url, (size_t)(colon - url));
	keel_buf_adds(out, ":***");
	keel_buf_adds(out, at);
}

static int keel_mysql_url_fail(struct keel_mysql_url *u, struct keel_buf *err,
			       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int keel_mysql_url_fail(struct keel_mysql_url *u, struct keel_buf *err,
			       const char *fmt, ...)
{
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(err, fmt, ap);
	va_end(ap);
	keel_mysql_url_free(u);
	return KEEL_EURL;
}

/* mysql://[user[:password]@]host[:port]/db[?socket=PATH&connect_timeout=S
 * &read_timeout=S]; user, password, db and parameter values are
 * percent-decoded. */
static int keel_mysql_url_parse(const char *url, struct keel_mysql_url *u,
				struct keel_buf *err)
{
	memset(u, 0, sizeof *u);
	keel_buf_init(&u->shown);
	u->port = 3306;
	u->connect_timeout = 10;
	u->read_timeout = 600;
	if (strncmp(url, "mysql://", 8) != 0) {
		keel_buf_adds(&u->shown, url);
		return keel_mysql_url_fail(u, err, "expected " KEEL_MYSQL_URL_FORM);
	}
	keel_mysql_url_shown(url, &u->shown);
	const char *p = url + 8;
	size_t auth = strcspn(p, "/?#");
	const char *host = p;
	size_t host_len = auth;
	const char *at = NULL;
	for (size_t i = 0; i < auth; i++)
		if (p[i] == '@')
			at = p + i;
	if (at) {
		size_t ui = (size_t)(at - p);
		const char *colon = memchr(p, ':', ui);
		size_t ulen = colon ? (size_t)(colon - p) : ui;
		if (ulen && !keel_mysql_pct_decode(p, ulen, &u->user))
			return keel_mysql_url_fail(u, err,
						   "bad percent-escape in the user name");
		if (colon && !keel_mysql_pct_decode(colon + 1, (size_t)(at - colon - 1),
						    &u->password))
			return keel_mysql_url_fail(u, err,
						   "bad percent-escape in the password");
		host = at + 1;
		host_len = auth - ui - 1;
	}
	/* host[:port], host may be an [IPv6] literal */
	const char *port = NULL;
	size_t name_len = host_len;
	if (host_len && host[0] == '[') {
		const char *close = memchr(host, ']', host_len);
		if (!close)
			return keel_mysql_url_fail(u, err, "unterminated [ in the host");
		name_len = (size_t)(close - host) + 1;
		if (name_len < host_len) {
			if (host[name_len] != ':')
				return keel_mysql_url_fail(u, err,
							   "unexpected text after ]");
			port = host + name_len + 1;
		}
		if (name_len > 2)
			u->host = keel_xstrndup(host + 1, name_len - 2);
	} else {
		const char *colon = memchr(host, ':', host_len);
		if (colon) {
			name_len = (size_t)(colon - host);
			port = colon + 1;
		}
		if (name_len)
			u->host = keel_xstrndup(host, name_len);
	}
	if (port &&
	    !keel_mysql_uint(port, (size_t)(host + host_len - port), 65535, &u->port))
		return keel_mysql_url_fail(u, err,
					   "port must be a number from 1 to 65535");
	if (port && u->port == 0)
		return keel_mysql_url_fail(u, err,
					   "port must be a number from 1 to 65535");
	if (u->host && strchr(u->host, '%'))
		return keel_mysql_url_fail(u, err, "bad character %% in the host");

	p += auth;
	if (*p != '/' || p[1] == 0 || p[1] == '?' || p[1] == '#')
		return keel_mysql_url_fail(
		    u, err, "missing database name (" KEEL_MYSQL_URL_FORM ")");
	p++;
	size_t db_len = strcspn(p, "?#");
	if (memchr(p, '/', db_len))
		return keel_mysql_url_fail(u, err, "bad database name: it contains /");
	if (!keel_mysql_pct_decode(p, db_len, &u->db))
		return keel_mysql_url_fail(u, err,
					   "bad percent-escape in the database name");
	p += db_len;
	if (*p == '#')
		return keel_mysql_url_fail(u, err, "unexpected # in the URL");
	if (*p == '?')
		p++;
	while (*p) {
		size_t n = strcspn(p, "&#");
		if (p[n] == '#')
			return keel_mysql_url_fail(u, err, "unexpected # in the URL");
		const char *eq = memchr(p, '=', n);
		size_t klen = eq ? (size_t)(eq - p) : n;
		const char *v = eq ? eq + 1 : p + n;
		size_t vlen = (size_t)(p + n - v);
		if (klen == 6 && !memcmp(p, "socket", 6)) {
			free(u->socket);
			u->socket = NULL;
			if (!vlen || !keel_mysql_pct_decode(v, vlen, &u->socket))
				return keel_mysql_url_fail(u, err, "bad socket path");
		} else if (klen == 15 && !memcmp(p, "connect_timeout", 15)) {
			if (!keel_mysql_uint(v, vlen, 86400, &u->connect_timeout) ||
			    !u->connect_timeout)
				return keel_mysql_url_fail(
				    u, err, "connect_timeout must be 1 to 86400 seconds");
		} else if (klen == 12 && !memcmp(p, "read_timeout", 12)) {
			if (!keel_mysql_uint(v, vlen, 86400, &u->read_timeout) ||
			    !u->read_timeout)
				return keel_mysql_url_fail(
				    u, err, "read_timeout must be 1 to 86400 seconds");
		} else {
			return keel_mysql_url_fail(
			    u, err,
			    "unknown parameter \"%.*s\" (expected socket, "
			    "connect_timeout or read_timeout)",
			    (int)klen, p);
		}
		p += n;
		if (*p == '&')
			p++;
	}
	if (u->socket && u->host && strcmp(u->host, "localhost") != 0)
		return keel_mysql_url_fail(
		    u, err, "socket= needs the host localhost or none, not \"%s\"",
		    u->host);
	return 0;
}

/* ----------------------------------------------------------- statements */

static bool keel_mysql_lost(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
	       e == ER_CONNECTION_KILLED || e == 4031 /* MySQL: client timeout */;
}

/* Sets the store's message for the failed statement `what`. */
static int keel_mysql_fail(struct keel_mysql_store *m, const char *what)
{
	unsigned e = mysql_errno(m->db);
	if (keel_mysql_lost(e)) {
		m->broken = true;
		return keel_store_fail(
		    &m->base, KEEL_ESTORE,
		    "%s: lost the connection to the mysql server (error "
		    "%u: %s); nothing of the batch was committed",
		    what, e, mysql_error(m->db));
	}
	if (e == ER_LOCK_WAIT_TIMEOUT)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: mysql error %u: %s (another connection held "
				       "the rows longer than innodb_lock_wait_timeout; "
				       "writers of one tenant take turns, see "
				       "docs/store-mysql.md)",
				       what, e, mysql_error(m->db));
	return keel_store_fail(&m->base, KEEL_ESTORE, "%s: mysql error %u: %s", what, e,
			       mysql_error(m->db));
}

static double keel_mysql_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Adds the time since t0 to the profile of statements `what`. */
static void keel_mysql_prof_add(struct keel_mysql_store *m, const char *what, double t0)
{
	double dt = keel_mysql_now() - t0;
	size_t i = 0;
	for (; i < KEEL_ARRAY_LEN(m->prof) && m->prof[i].what; i++)
		if (!strcmp(m->prof[i].what, what))
			break;
	if (i == KEEL_ARRAY_LEN(m->prof))
		return;
	m->prof[i].what = what;
	m->prof[i].seconds += dt;
	m->prof[i].count++;
}

static void keel_mysql_prof_print(const struct keel_mysql_store *m)
{
	for (size_t i = 0; i < KEEL_ARRAY_LEN(m->prof) && m->prof[i].what; i++)
		fprintf(stderr, "keel mysql profile: %-40s %8llu statements %9.3f s\n",
			m->prof[i].what, (unsigned long long)m->prof[i].count,
			m->prof[i].seconds);
}

static int keel_mysql_run(struct keel_mysql_store *m, const char *sql, size_t len,
			  const char *what)
{
	if (m->broken)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: the connection to the mysql server was lost",
				       what);
	if (m->streaming)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: a scan of the mysql store is still open",
				       what);
	m->base.statements++;
	if (len > m->stats.max_statement)
		m->stats.max_statement = len;
	double t0 = m->profile ? keel_mysql_now() : 0;
	int failed = mysql_real_query(m->db, sql, (unsigned long)len);
	if (m->profile)
		keel_mysql_prof_add(m, what, t0);
	if (failed)
		return keel_mysql_fail(m, what);
	return 0;
}

static int keel_mysql_runs(struct keel_mysql_store *m, const char *sql, const char *what)
{
	return keel_mysql_run(m, sql, strlen(sql), what);
}

typedef int (*keel_mysql_rows_fn)(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols);

/* After a read: SHOW WARNINGS if the server raised any, so that a range
 * optimizer that gave up (MySQL warning 3170) is noticed, not silent. */
static int keel_mysql_check_warnings(struct keel_mysql_store *m, const char *what)
{
	if (!mysql_warning_count(m->db))
		return 0;
	int rc = keel_mysql_runs(m, "SHOW WARNINGS", what);
	if (rc)
		return rc;
	MYSQL_RES *res = mysql_store_result(m->db);
	if (!res)
		return keel_mysql_fail(m, what);
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		m->stats.warnings++;
		unsigned code = 0;
		if (row[1]) {
			for (const char *c = row[1]; *c >= '0' && *c <= '9'; c++)
				code = code * 10 + (unsigned)(*c - '0');
		}
		m->stats.last_warning = code;
	}
	mysql_free_result(res);
	return 0;
}

/* Runs m->sql and hands each row of its result to fn. */
static int keel_mysql_select(struct keel_mysql_store *m, const char *what,
			     keel_mysql_rows_fn fn, void *ud)
{
	int rc = keel_mysql_run(m, m->sql.data, m->sql.len, what);
	if (rc)
		return rc;
	MYSQL_RES *res = mysql_store_result(m->db);
	if (!res)
		return mysql_field_count(m->db) ? keel_mysql_fail(m, what) : 0;
	unsigned ncols = mysql_num_fields(res);
	MYSQL_ROW row;
	while (rc == 0 && (row = mysql_fetch_row(res)))
		rc = fn(m, ud, row, mysql_fetch_lengths(res), ncols);
	mysql_free_result(res);
	return rc ? rc : keel_mysql_check_warnings(m, what);
}

/* Literals. Strings are escaped by the connector for the connection's
 * character set and marked _binary, so the server takes the bytes as they
 * are (no character set conversion or validation) and compares them as the
 * VARBINARY columns do. */
static void keel_mysql_add_str(struct keel_mysql_store *m, struct keel_buf *b,
			       struct keel_str s)
{
	if (!s.ptr) {
		keel_buf_add(b, "NULL", 4);
		return;
	}
	keel_buf_reserve(b, 2 * s.len + 10);
	memcpy(b->data + b->len, "_binary'", 8);
	b->len += 8;
	unsigned long n = mysql_real_escape_string(m->db, b->data + b->len, s.ptr,
						   (unsigned long)s.len);
	b->len += n;
	b->data[b->len++] = '\'';
	b->data[b->len] = 0;
}

/* Worst-case bytes of a string literal, for cutting statements. */
static size_t keel_mysql_str_size(struct keel_str s)
{
	return 2 * s.len + 12;
}

static int64_t keel_mysql_i64(const char *p, unsigned long n)
{
	bool neg = n && *p == '-';
	uint64_t v = 0;
	for (unsigned long i = neg; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	return neg ? (int64_t)(0 - v) : (int64_t)v;
}

static uint64_t keel_mysql_u64(const char *p, unsigned long n)
{
	uint64_t v = 0;
	for (unsigned long i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	return v;
}

static struct keel_str keel_mysql_col(MYSQL_ROW row, const unsigned long *len, unsigned i)
{
	return row[i] ? keel_str_make(row[i], len[i]) : KEEL_STR_NULL;
}

/*
 * closed_by as stored. An open row holds a placeholder there, its own
 * asserted_by: the closing event's id most often has the same length (ids
 * of one stream do), so that closing the row rewrites it in place instead
 * of growing it, which in InnoDB's full pages means moving the record and
 * often splitting the page (measured: closing a row costs half as much).
 * Readers take closed_by only from closed rows (keel_mysql_read_closed_by),
 * so the placeholder never leaves the store.
 */
static struct keel_str keel_mysql_stored_closed_by(const struct keel_row *r)
{
	if (r->valid_to == KEEL_TIME_INF && !r->closed_by.ptr)
		return r->asserted_by;
	return r->closed_by;
}

/* closed_by of a stored row: none while the row is open. */
static struct keel_str keel_mysql_read_closed_by(int64_t valid_to, struct keel_str stored)
{
	return valid_to == KEEL_TIME_INF ? KEEL_STR_NULL : stored;
}

/*
 * A statement built from many items, cut where it would pass the packet
 * limit:
 *
 *   head open item sep item ... close join open item ... close tail
 *
 * A part (open ... close) holds at most part_max items; parts are joined by
 * `join`. For row-constructor lookups a part is "SELECT ... IN (" ... ")"
 * and parts are joined by UNION ALL; for INSERTs there is one part.
 */
struct keel_mysql_list {
	struct keel_mysql_store *m;
	const char *what;
	const char *head, *open, *sep, *close, *join, *tail;
	size_t part_max;
	bool in_list;	   /* parts are row-constructor IN lists (stats) */
	size_t items;	   /* in the current statement */
	size_t part_items; /* in the current part */
	bool new_part;	   /* the next item starts a part (open changed) */
	size_t done;	   /* items of earlier statements */
	int (*run)(struct keel_mysql_list *l);
	void *ud;
};

static void keel_mysql_list_end_part(struct keel_mysql_list *l)
{
	keel_buf_adds(&l->m->sql, l->close);
	if (l->in_list) {
		l->m->stats.in_lists++;
		if (l->part_items > l->m->stats.max_in_tuples)
			l->m->stats.max_in_tuples = l->part_items;
	}
}

static int keel_mysql_list_flush(struct keel_mysql_list *l)
{
	if (!l->items)
		return 0;
	keel_mysql_list_end_part(l);
	keel_buf_adds(&l->m->sql, l->tail);
	int rc = l->run(l);
	l->done += l->items;
	l->items = 0;
	l->part_items = 0;
	l->new_part = false;
	return rc;
}

/* Starts the next item, which takes at most `size` bytes. */
static int keel_mysql_list_item(struct keel_mysql_list *l, size_t size)
{
	struct keel_buf *b = &l->m->sql;
	if (l->items) {
		size_t need = b->len + size + strlen(l->join) + strlen(l->open) +
			      strlen(l->close) + strlen(l->tail) + 8;
		if (need > l->m->packet) {
			int rc = keel_mysql_list_flush(l);
			if (rc)
				return rc;
		}
	}
	if (!l->items) {
		keel_buf_reset(b);
		keel_buf_adds(b, l->head);
		keel_buf_adds(b, l->open);
		l->part_items = 0;
	} else if (l->new_part || l->part_items == l->part_max) {
		keel_mysql_list_end_part(l);
		keel_buf_adds(b, l->join);
		keel_buf_adds(b, l->open);
		l->part_items = 0;
	} else {
		keel_buf_adds(b, l->sep);
	}
	l->new_part = false;
	l->items++;
	l->part_items++;
	return 0;
}

/* Switches to another part prefix (e.g. from facts to relations). */
static void keel_mysql_list_part(struct keel_mysql_list *l, const char *open)
{
	l->open = open;
	l->new_part = l->items > 0;
}

static int keel_mysql_run_list(struct keel_mysql_list *l)
{
	return keel_mysql_run(l->m, l->m->sql.data, l->m->sql.len, l->what);
}

/* --------------------------------------------------------------- schema */

/* Each tenant's last writer: every write of a tenant sets its row to the
 * writing connection's random mark in the same transaction, so a
 * connection that finds its own mark there knows nobody else has written
 * the tenant since (see "The open-row cache"). */
#define KEEL_MYSQL_WRITERS_TABLE                                                         \
	"CREATE TABLE IF NOT EXISTS keel_writers ("                                      \
	"tenant VARBINARY(64) NOT NULL,"                                                 \
	"writer BIGINT UNSIGNED NOT NULL,"                                               \
	"PRIMARY KEY (tenant)"                                                           \
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

static const char *const keel_mysql_tables[] = {
    "CREATE TABLE IF NOT EXISTS keel_entities ("
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "kind MEDIUMBLOB NULL,"
    "kind_time BIGINT NOT NULL,"
    "first_seen BIGINT NOT NULL,"
    "last_seen BIGINT NOT NULL,"
    "PRIMARY KEY (tenant, subject)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_facts ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "predicate VARBINARY(128) NOT NULL,"
    "value MEDIUMBLOB NULL,"
    "valid_from BIGINT NOT NULL,"
    "valid_to BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "closed_by VARBINARY(256) NULL,"
    "PRIMARY KEY (seq),"
    "KEY keel_facts_from (tenant, subject, predicate, valid_from)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_relations ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "subject VARBINARY(255) NOT NULL,"
    "relation VARBINARY(128) NOT NULL,"
    "object VARBINARY(255) NOT NULL,"
    "linked TINYINT NOT NULL,"
    "valid_from BIGINT NOT NULL,"
    "valid_to BIGINT NOT NULL,"
    "asserted_by VARBINARY(256) NOT NULL,"
    "closed_by VARBINARY(256) NULL,"
    "PRIMARY KEY (seq),"
    "KEY keel_relations_from (tenant, subject, relation, object, valid_from)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    "CREATE TABLE IF NOT EXISTS keel_events ("
    "seq BIGINT NOT NULL AUTO_INCREMENT,"
    "tenant VARBINARY(64) NOT NULL,"
    "id VARBINARY(256) NOT NULL,"
    "type VARBINARY(256) NOT NULL,"
    "time BIGINT NOT NULL,"
    "hash BIGINT UNSIGNED NOT NULL,"
    "envelope LONGBLOB NOT NULL,"
    "PRIMARY KEY (tenant, id),"
    "UNIQUE KEY keel_events_seq (seq)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",

    KEEL_MYSQL_WRITERS_TABLE,

    "INSERT IGNORE INTO keel_meta (name, value) VALUES ('schema_version', 4)",
};

/* Steps from schema version v to v + 1, indexed by v: statements run in
 * order, then the version row is updated. DDL is not transactional, so a
 * step must be able to run again after an interruption: a statement with
 * `index` set runs only while that index of `table` still exists.
 *
 * 1 -> 2: open rows may hold a placeholder in closed_by (see
 * keel_mysql_stored_closed_by); version 1's NULLs read the same, so no
 * statement, but a keel that knows only version 1 would show the
 * placeholders and must refuse the store.
 *
 * 2 -> 3: the timeline indexes end in valid_from instead of valid_to, so
 * that closing a row no longer moves its index entry; the open row is then
 * a timeline's last entry by (valid_from, seq). Each ALTER swaps one
 * table's index in one statement.
 *
 * 3 -> 4: keel_writers, each tenant's last writer, which lets the open-row
 * cache hold while other connections write other tenants. A tenant without
 * a row has no known writer, so a store written by version 3 needs no
 * rows; a keel that knows only version 3 would not set them and must
 * refuse the store. */
struct keel_mysql_migration {
	const char *sql;
	const char *table, *index; /* run only while this index exists */
};

static const struct keel_mysql_migration keel_mysql_to_3[] = {
    {"ALTER TABLE keel_facts DROP INDEX keel_facts_timeline, ADD INDEX "
     "keel_facts_from (tenant, subject, predicate, valid_from)",
     "keel_facts", "keel_facts_timeline"},
    {"ALTER TABLE keel_relations DROP INDEX keel_relations_timeline, ADD INDEX "
     "keel_relations_from (tenant, subject, relation, object, valid_from)",
     "keel_relations", "keel_relations_timeline"},
    {NULL, NULL, NULL},
};

static const struct keel_mysql_migration keel_mysql_to_4[] = {
    {KEEL_MYSQL_WRITERS_TABLE, NULL, NULL},
    {NULL, NULL, NULL},
};

static const struct keel_mysql_migration
    *const keel_mysql_migrations[KEEL_MYSQL_SCHEMA_VERSION] = {
	NULL,
	NULL,
	keel_mysql_to_3,
	keel_mysql_to_4,
};

static int keel_mysql_version_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	*(int64_t *)ud = row[0] ? keel_mysql_i64(row[0], len[0]) : 0;
	return 0;
}

static int keel_mysql_schema(struct keel_mysql_store *m, struct keel_buf *err)
{
	int64_t version = -1;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql,
		      "SELECT value FROM keel_meta WHERE name = 'schema_version'");
	int rc = keel_mysql_select(m, "reading the schema version",
				   keel_mysql_version_row, &version);
	if (rc && mysql_errno(m->db) != ER_NO_SUCH_TABLE)
		goto fail;
	if (rc || version < 0) {
		rc = keel_mysql_runs(m,
				     "CREATE TABLE IF NOT EXISTS keel_meta ("
				     "name VARBINARY(64) NOT NULL PRIMARY KEY,"
				     "value BIGINT NOT NULL) ENGINE=InnoDB",
				     "creating the schema");
		for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(keel_mysql_tables); i++)
			rc = keel_mysql_runs(m, keel_mysql_tables[i],
					     "creating the schema");
		if (rc)
			goto fail;
		version = KEEL_MYSQL_SCHEMA_VERSION;
	}
	if (version > KEEL_MYSQL_SCHEMA_VERSION) {
		keel_buf_addf(err,
			      "store \"%s\": schema version %lld is newer than this keel "
			      "supports (%d): upgrade keel",
			      m->url.shown.data, (long long)version,
			      KEEL_MYSQL_SCHEMA_VERSION);
		return KEEL_ESCHEMA;
	}
	if (version < 1) {
		keel_buf_addf(
		    err, "store \"%s\": keel_meta holds an invalid schema version %lld",
		    m->url.shown.data, (long long)version);
		return KEEL_ESCHEMA;
	}
	for (; version < KEEL_MYSQL_SCHEMA_VERSION; version++) {
		const struct keel_mysql_migration *step = keel_mysql_migrations[version];
		for (size_t i = 0; rc == 0 && step && step[i].sql; i++) {
			int64_t present = 1;
			if (step[i].index) {
				keel_buf_reset(&m->sql);
				keel_buf_addf(
				    &m->sql,
				    "SELECT COUNT(*) FROM information_schema."
				    "STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
				    "AND TABLE_NAME = '%s' AND INDEX_NAME = '%s'",
				    step[i].table, step[i].index);
				rc = keel_mysql_select(m, "migrating the schema",
						       keel_mysql_version_row, &present);
			}
			if (rc == 0 && present)
				rc = keel_mysql_runs(m, step[i].sql,
						     "migrating the schema");
		}
		keel_buf_reset(&m->sql);
		keel_buf_addf(
		    &m->sql,
		    "UPDATE keel_meta SET value = %lld WHERE name = 'schema_version'",
		    (long long)version + 1);
		if (rc == 0)
			rc = keel_mysql_run(m, m->sql.data, m->sql.len,
					    "migrating the schema");
		if (rc)
			goto fail;
	}
	return 0;
fail:
	keel_buf_addf(err, "store \"%s\": %s", m->url.shown.data, m->base.errmsg.data);
	return rc;
}

/* ----------------------------------------------------------- connecting */

static pthread_once_t keel_mysql_once = PTHREAD_ONCE_INIT;

static void keel_mysql_library_init(void)
{
	/* Not thread-safe inside mysql_init; done once here instead. */
	mysql_library_init(0, NULL, NULL);
}

static void keel_mysql_add_errno(struct keel_buf *out, int e);

/* The OS error a connector message ends with, "... (111)", as text. */
static void keel_mysql_os_reason(const char *msg, struct keel_buf *out)
{
	size_t n = strlen(msg);
	if (n > 3 && msg[n - 1] == ')') {
		size_t i = n - 1;
		while (i > 0 && msg[i - 1] >= '0' && msg[i - 1] <= '9')
			i--;
		if (i > 0 && msg[i - 1] == '(' && i < n - 1) {
			keel_mysql_add_errno(
			    out,
			    (int)keel_mysql_i64(msg + i, (unsigned long)(n - 1 - i)));
			return;
		}
	}
	keel_buf_adds(out, msg);
}

/* Why a TCP connection to host:port fails, as errno. Connector/C reports
 * EINPROGRESS for a refused non-blocking connect, which says nothing; one
 * plain connect, only on this failure path, finds the real reason. */
static int keel_mysql_probe(const char *host, unsigned port, unsigned timeout)
{
	char service[16];
	snprintf(service, sizeof service, "%u", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	if (getaddrinfo(host, service, &hints, &ai) != 0 || !ai)
		return 0;
	int e = 0;
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd >= 0) {
		struct timeval tv = {.tv_sec = (time_t)timeout};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
			e = errno == EINPROGRESS || errno == EAGAIN ? ETIMEDOUT : errno;
		close(fd);
	}
	freeaddrinfo(ai);
	return e;
}

static void keel_mysql_add_errno(struct keel_buf *out, int e)
{
	size_t at = out->len;
	keel_buf_adds(out, strerror(e));
	if (out->data[at] >= 'A' && out->data[at] <= 'Z')
		out->data[at] = (char)(out->data[at] - 'A' + 'a');
}

static void keel_mysql_connect_error(struct keel_mysql_store *m, struct keel_buf *err)
{
	const struct keel_mysql_url *u = &m->url;
	unsigned e = mysql_errno(m->db);
	const char *msg = mysql_error(m->db);
	keel_buf_addf(err, "store \"%s\": ", u->shown.data);
	switch (e) {
	case ER_ACCESS_DENIED_ERROR:
	case ER_ACCESS_DENIED_NO_PASSWORD_ERROR: /* MariaDB: an unknown user */
		keel_buf_addf(
		    err, "access denied for user \"%s\" (wrong user name or password)",
		    u->user ? u->user : "");
		break;
	case ER_DBACCESS_DENIED_ERROR:
		keel_buf_addf(err, "user \"%s\" may not use database \"%s\"",
			      u->user ? u->user : "", u->db);
		break;
	case ER_BAD_DB_ERROR:
		keel_buf_addf(err, "database \"%s\" does not exist", u->db);
		break;
	case CR_UNKNOWN_HOST:
		keel_buf_addf(err, "unknown host \"%s\"", u->host ? u->host : "");
		break;
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
		if (u->socket || !u->host || !strcmp(u->host, "localhost")) {
			keel_buf_addf(err, "cannot connect through socket \"%s\": ",
				      u->socket ? u->socket : "(the default socket)");
			keel_mysql_os_reason(msg, err);
			break;
		}
		keel_buf_addf(err, "cannot connect to %s:%u: ", u->host, u->port);
		{
			int why = keel_mysql_probe(u->host, u->port, u->connect_timeout);
			if (why)
				keel_mysql_add_errno(err, why);
			else
				keel_mysql_os_reason(msg, err);
		}
		break;
	case CR_SERVER_LOST:
		/* Connected, but the handshake never came (or broke off). */
		if (u->socket)
			keel_buf_addf(err, "the server at socket \"%s\"", u->socket);
		else
			keel_buf_addf(err, "the server at %s:%u",
				      u->host ? u->host : "localhost", u->port);
		if (strstr(msg, "system error: 110"))
			keel_buf_addf(err, " did not answer within %u s",
				      u->connect_timeout);
		else
			keel_buf_addf(err, " broke off the handshake: %s", msg);
		break;
	default:
		keel_buf_addf(err, "cannot connect: mysql error %u: %s", e, msg);
		break;
	}
}

static int keel_mysql_settings_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				   const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	uint64_t packet = row[0] ? keel_mysql_u64(row[0], len[0]) : 0;
	/* Leave room for the packet header and our own estimate's slack. */
	m->packet = packet > 65536 ? (size_t)packet - 4096 : 16384;
	m->autoinc_step = row[1] ? keel_mysql_i64(row[1], len[1]) : 1;
	if (m->autoinc_step < 1)
		m->autoinc_step = 1;
	return 0;
}

/* Connects and sets the session up; on failure writes a one-line message
 * into err. */
static int keel_mysql_connect(struct keel_mysql_store *m, struct keel_buf *err)
{
	const struct keel_mysql_url *u = &m->url;
	m->db = mysql_init(NULL);
	if (!m->db) {
		keel_buf_addf(err, "store \"%s\": out of memory", u->shown.data);
		return KEEL_ESTORE;
	}
	unsigned timeout = u->connect_timeout, rtimeout = u->read_timeout;
	my_bool off = 0;
	unsigned long max_packet = 1024ul * 1024 * 1024;
	unsigned protocol = u->socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_DEFAULT;
	mysql_options(m->db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m->db, MYSQL_OPT_READ_TIMEOUT, &rtimeout);
	mysql_options(m->db, MYSQL_OPT_WRITE_TIMEOUT, &rtimeout);
	/* A reconnect inside a transaction would silently lose the batch's
	 * earlier statements; the store reconnects itself, between batches. */
	mysql_options(m->db, MYSQL_OPT_RECONNECT, &off);
	keel_mysql_infile_setup(m); /* replay's LOAD DATA, own file only */
	mysql_options(m->db, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
	mysql_options(m->db, MYSQL_OPT_PROTOCOL, &protocol);
	mysql_options(m->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (!mysql_real_connect(m->db, u->socket ? "localhost" : u->host, u->user,
				u->password, u->db, u->port, u->socket, 0)) {
		keel_mysql_connect_error(m, err);
		return KEEL_ESTORE;
	}
	const char *info = mysql_get_server_info(m->db);
	m->mariadb = info && strstr(info, "MariaDB");
	m->version = mysql_get_server_version(m->db);
	if (m->mariadb ? m->version < 101100 : m->version < 80000) {
		keel_buf_addf(
		    err,
		    "store \"%s\": server %s is not supported (MySQL 8.0 or later, "
		    "MariaDB 10.11 or later)",
		    u->shown.data, info ? info : "?");
		return KEEL_ESTORE;
	}
	m->row_alias = !m->mariadb && m->version >= 80019;
	/* The bulk path where the server has it (MariaDB 10.2+), unless
	 * KEEL_MYSQL_BULK=0 asks for the text path that MySQL uses. */
	uint64_t caps = 0;
	const char *want = getenv("KEEL_MYSQL_BULK");
	if (mariadb_get_infov(m->db, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES,
			      &caps) != 0)
		caps = 0;
	m->bulk = m->mariadb &&
		  (caps & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0 &&
		  !(want && !strcmp(want, "0"));
	m->bulk_ids = m->bulk && !m->worker;
	const char *close_want = getenv("KEEL_MYSQL_BULK_CLOSE");
	m->bulk_close = m->bulk && !(close_want && !strcmp(close_want, "0"));
	/* Session only: strict, so that nothing is ever silently truncated,
	 * and no mode that changes how our literals or quotes parse. MariaDB
	 * also rewrites an IN list of 1000 or more scalars (a 4-tuple counts
	 * 4) into a join with a derived table, which it may answer with a full
	 * scan (in_predicate_conversion_threshold); off, the lists stay range
	 * reads on the index. */
	int rc = keel_mysql_runs(m,
				 m->mariadb ? "SET SESSION sql_mode = 'STRICT_ALL_TABLES,"
					      "NO_ENGINE_SUBSTITUTION', "
					      "in_predicate_conversion_threshold = 0"
					    : "SET SESSION sql_mode = 'STRICT_ALL_TABLES,"
					      "NO_ENGINE_SUBSTITUTION'",
				 "setting up the session");
	if (rc == 0) {
		keel_buf_reset(&m->sql);
		keel_buf_adds(&m->sql,
			      "SELECT @@max_allowed_packet, @@auto_increment_increment");
		rc = keel_mysql_select(m, "setting up the session",
				       keel_mysql_settings_row, NULL);
	}
	if (rc)
		keel_buf_addf(err, "store \"%s\": %s", u->shown.data,
			      m->base.errmsg.data);
	return rc;
}

static void keel_mysql_free(struct keel_mysql_store *m)
{
	if (m->profile)
		keel_mysql_prof_print(m);
	keel_mysql_bulk_close_stmts(m);
	keel_open_rows_free(&m->cache);
	keel_ptrvec_free(&m->hits);
	free(m->hit_rows);
	for (size_t c = 0; m->cols && c < KEEL_MYSQL_BULK_MAX_COLS; c++) {
		free(m->cols[c].ptr);
		free(m->cols[c].len);
		free(m->cols[c].ind);
		free(m->cols[c].num);
	}
	free(m->cols);
	if (m->db)
		mysql_close(m->db);
	keel_mysql_url_free(&m->url);
	keel_buf_free(&m->sql);
	keel_buf_free(&m->part);
	keel_ptrvec_free(&m->rows);
	keel_map_free(&m->ids);
	free(m->marks);
	free(m->times);
	keel_store_base_free(&m->base);
	free(m);
}

/* A connection's mark in keel_writers: 64 random bits, so that two
 * connections, in this process or any other, never share one. */
static uint64_t keel_mysql_new_writer(void)
{
	uint64_t w = 0;
	if (getrandom(&w, sizeof w, 0) != (ssize_t)sizeof w) {
		/* no getrandom (old kernel): time, process and address */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
			     ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&w;
		w = keel_hash64(&x, sizeof x, (uint64_t)clock());
	}
	return w ? w : 1; /* 0 marks a tenant's row before its first writer */
}

static int keel_mysql_open(const char *url, struct keel_store **out, struct keel_buf *err)
{
	*out = NULL;
	struct keel_mysql_store *m = keel_xcalloc(1, sizeof *m);
	keel_store_base_init(&m->base, &keel_store_mysql_ops);
	keel_buf_init(&m->sql);
	keel_buf_init(&m->part);
	keel_map_init(&m->ids);
	keel_open_rows_init(&m->cache, KEEL_MYSQL_CACHE_MAX, KEEL_MYSQL_CACHE_BATCHES, true);
	const char *cache = getenv("KEEL_MYSQL_CACHE");
	m->cache_on = !(cache && !strcmp(cache, "0"));
	m->writer = keel_mysql_new_writer();
	snprintf(m->writer_tail, sizeof m->writer_tail,
		 " ON DUPLICATE KEY UPDATE writer = %llu", (unsigned long long)m->writer);
	m->packet = 1024 * 1024;
	m->autoinc_step = 1;
	m->profile = getenv("KEEL_MYSQL_PROFILE") != NULL;
	int rc = keel_mysql_url_parse(url, &m->url, err);
	if (rc) {
		keel_mysql_free(m);
		return rc;
	}
	pthread_once(&keel_mysql_once, keel_mysql_library_init);
	rc = keel_mysql_connect(m, err);
	if (rc == 0)
		rc = keel_mysql_schema(m, err);
	if (rc == 0 && (rc = keel_mysql_bulk_prepare(m)) != 0)
		keel_buf_addf(err, "store \"%s\": %s", m->url.shown.data,
			      m->base.errmsg.data);
	if (rc) {
		keel_mysql_free(m);
		return rc;
	}
	*out = &m->base;
	return 0;
}

static void keel_mysql_close(struct keel_store *s)
{
	keel_mysql_free(keel_mysql_downcast(s));
}

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
	return 0;
}

static int keel_mysql_lock_tenants(struct keel_mysql_store *m);

/* The transaction starts when the batch is known to write (prefetch, or a
 * write-back without one): a batch of nothing but duplicates costs its one
 * lookup and no transaction at all. It starts by locking the batch's
 * tenants (keel_mysql_lock_tenants), so that the reads after it see what
 * any other writer of them committed. */
static int keel_mysql_tx(struct keel_mysql_store *m)
{
	if (m->tx_open)
		return 0;
	int rc = 0;
	/* keel_writers rows first, outside the transaction: a locking read
	 * of a row that is not there would lock a gap, and two writers of
	 * new tenants inserting into the same gap deadlock */
	bool missing = false;
	for (size_t i = 0; i < m->nmarks && !missing; i++)
		missing = !m->marks[i].present;
	if (missing) {
		struct keel_mysql_list l = {
		    .m = m,
		    .what = "adding the batch's tenants",
		    .head = "INSERT IGNORE INTO keel_writers (tenant, writer) VALUES ",
		    .open = "",
		    .sep = ",",
		    .close = "",
		    .join = "",
		    .tail = "",
		    .part_max = SIZE_MAX,
		    .run = keel_mysql_run_list,
		};
		for (size_t i = 0; i < m->nmarks && rc == 0; i++) {
			if (m->marks[i].present)
				continue;
			rc = keel_mysql_list_item(&l, keel_mysql_str_size(m->marks[i].tenant) + 8);
			if (rc)
				break;
			keel_buf_addc(&m->sql, '(');
			keel_mysql_add_str(m, &m->sql, m->marks[i].tenant);
			keel_buf_adds(&m->sql, ",0)");
		}
		if (rc == 0)
			rc = keel_mysql_list_flush(&l);
		if (rc)
			return rc;
	}
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
static void keel_mysql_cache_drop(struct keel_mysql_store *m)
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
	k->mine = false;
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

static int keel_mysql_lock_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)ud;
	(void)ncols;
	struct keel_mysql_mark *k = keel_mysql_mark_find(m, keel_mysql_col(row, len, 0));
	if (k)
		k->mine = row[1] && keel_mysql_u64(row[1], len[1]) == m->writer;
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
 * cache). */
static int keel_mysql_lock_tenants(struct keel_mysql_store *m)
{
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "locking the batch's tenants",
	    .head = "SELECT tenant, writer FROM keel_writers FORCE INDEX (PRIMARY) "
		    "WHERE tenant IN (",
	    .open = "",
	    .sep = ",",
	    .close = ")",
	    .join = " OR tenant IN (",
	    .tail = " FOR UPDATE",
	    .part_max = KEEL_MYSQL_IN_MAX,
	    .run = keel_mysql_run_lock,
	};
	int rc = 0;
	for (size_t i = 0; i < m->nmarks && rc == 0; i++) {
		rc = keel_mysql_list_item(&l, keel_mysql_str_size(m->marks[i].tenant) + 2);
		if (rc == 0)
			keel_mysql_add_str(m, &m->sql, m->marks[i].tenant);
	}
	return rc ? rc : keel_mysql_list_flush(&l);
}

/* Makes this connection the last writer of the tenants in v (pointers to
 * keel_str, in any order, repeats allowed): one INSERT ... ON DUPLICATE
 * KEY UPDATE, cut only at the packet limit. */
static int keel_mysql_mark_tenants(struct keel_mysql_store *m, struct keel_ptrvec *v)
{
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_str_ptr);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "marking the batch's tenants",
	    .head = "INSERT INTO keel_writers (tenant, writer) VALUES ",
	    .open = "",
	    .sep = ",",
	    .close = "",
	    .join = "",
	    .tail = m->writer_tail,
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
		keel_buf_addf(&m->sql, ",%llu)", (unsigned long long)m->writer);
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
static int keel_mysql_mark_written(struct keel_mysql_store *m, struct keel_overlay *o,
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
	int rc = v->len ? keel_mysql_mark_tenants(m, v) : 0;
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
	m->cache.age = fit > KEEL_MYSQL_CACHE_BATCHES	  ? KEEL_MYSQL_CACHE_BATCHES
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
	if (!row[0]) {
		/* MAX(seq) of the table named by the second column */
		int t = row[1][0] == 'e' ? 0 : row[1][0] == 'f' ? 1 : 2;
		int64_t v = row[2] ? (int64_t)keel_mysql_u64(row[2], len[2]) : 0;
		if (m->seen_reads >= 3 && m->seen_max[t] != v)
			m->seen_differ = true;
		m->seen_max[t] = v;
		m->seen_reads++;
		return 0;
	}
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

/* The tables' MAX(seq), read with the ids while bulk executions hand back
 * ids (see "The open-row cache"): rows with a NULL tenant. */
#define KEEL_MYSQL_MAX_SEQS                                                              \
	" UNION ALL SELECT NULL, 'e', MAX(seq) FROM keel_events UNION ALL SELECT "       \
	"NULL, 'f', MAX(seq) FROM keel_facts UNION ALL SELECT NULL, 'r', MAX(seq) FROM " \
	"keel_relations"

/* The ids of each tenant as one scalar IN list on the primary key's second
 * column (tenant = .. AND id IN (..)): half the literals of (tenant, id)
 * row constructors, and a cheaper range analysis (measured 25-30% less
 * server time per lookup). Parts of at most KEEL_MYSQL_IN_MAX ids, one per
 * tenant at least, joined by UNION ALL in one statement. With the open-row
 * cache on, each tenant's part first reads the tenant's last writer (a row
 * with a NULL id), and the tables' MAX(seq) may follow. */
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
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(void *), keel_mysql_cmp_event_key);
	struct keel_mysql_list l = {
	    .m = m,
	    .what = "looking up event ids",
	    .head = "",
	    .open = "",
	    .sep = ",",
	    .close = ")",
	    .join = " UNION ALL ",
	    .tail = m->cache_on && m->bulk_ids ? KEEL_MYSQL_MAX_SEQS : "",
	    .part_max = KEEL_MYSQL_IN_MAX,
	    .in_list = true,
	    .run = keel_mysql_run_seen,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_batch_event *e = v->items[i];
		const struct keel_batch_event *prev = i ? v->items[i - 1] : NULL;
		if (!prev || !keel_str_eq(prev->tenant, e->tenant)) {
			keel_mysql_mark_add(m, e->tenant);
			keel_buf_reset(&m->part);
			keel_buf_adds(&m->part, "SELECT tenant, NULL, writer FROM "
						"keel_writers WHERE tenant = ");
			keel_mysql_add_str(m, &m->part, e->tenant);
			keel_buf_adds(&m->part, " UNION ALL ");
			keel_buf_adds(&m->part,
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
	if (rc == 0)
		rc = keel_mysql_list_flush(&l);
	v->len = 0;
	keel_map_clear(&m->ids);
	return rc;
}

/* ------------------------------------------------------------- prefetch */

/* The columns every prefetch of rows returns, facts and relations alike
 * (from f). Rows are found on the timeline index, which is forced: with a
 * long list and a small table the optimizer may judge a full scan cheaper
 * (MariaDB 10.11 did so for 600 tuples against 10 000 rows), and design A
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
 * no IN list, so the range optimizer never sees the keys (the note's 1000
 * tuple caveat does not arise) and the keys are not cut into parts.
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
	if (!read || !m->expect_known || memcmp(m->seen_max, m->expect, sizeof m->expect)) {
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
		const struct keel_row *r = usable ? keel_open_rows_get(&m->cache, tl) : NULL;
		if (!r) {
			keel_ptrvec_push(v, tl);
			continue;
		}
		if (hits->len == m->hit_rows_cap) {
			m->hit_rows_cap = m->hit_rows_cap ? 2 * m->hit_rows_cap : 64;
			m->hit_rows = keel_xrealloc(m->hit_rows,
						    m->hit_rows_cap * sizeof *m->hit_rows);
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

static int keel_mysql_bulk_events(struct keel_mysql_store *m,
				  struct keel_batch_event **ev, size_t n);
static int keel_mysql_bulk_entities(struct keel_mysql_store *m, struct keel_ptrvec *v);
static int keel_mysql_bulk_rows(struct keel_mysql_store *m, struct keel_ptrvec *v,
				enum keel_row_kind kind);
static int keel_mysql_bulk_close(struct keel_mysql_store *m, struct keel_ptrvec *v,
				 enum keel_row_kind kind);

static int keel_mysql_write_events(struct keel_mysql_store *m,
				   struct keel_batch_event **ev, size_t n)
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

/* The merge, with the new row as VALUES(col) (MariaDB, MySQL before
 * 8.0.19) or through the row alias n (MySQL 8.0.19+, where VALUES() is
 * deprecated). */
#define KEEL_MYSQL_MERGE(n_kind, n_kind_time, n_first, n_last)                           \
	" ON DUPLICATE KEY UPDATE first_seen = LEAST(first_seen, " n_first               \
	"), last_seen = GREATEST(last_seen, " n_last "), kind_time = IF(" n_kind         \
	" IS NOT NULL AND (kind IS NULL OR " n_kind_time " <= kind_time), " n_kind_time  \
	", kind_time), kind = IF(" n_kind " IS NOT NULL AND (kind "                      \
	"IS NULL OR " n_kind_time " <= kind_time), " n_kind ", kind)"
#define KEEL_MYSQL_ENTITY_MERGE                                                          \
	KEEL_MYSQL_MERGE("VALUES(kind)", "VALUES(kind_time)", "VALUES(first_seen)",      \
			 "VALUES(last_seen)")
#define KEEL_MYSQL_ENTITY_MERGE_ALIAS                                                    \
	" AS n" KEEL_MYSQL_MERGE("n.kind", "n.kind_time", "n.first_seen", "n.last_seen")

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
 * into the stored row by the rule of SPEC 5.2 (first_seen the least,
 * last_seen the greatest, the kind of the earliest mention, a later arrival
 * winning ties), so the overlay's entities all arrive as NEW. kind_time is
 * assigned before kind, and the condition holds the same either way. */
static int keel_mysql_write_entities(struct keel_mysql_store *m, struct keel_overlay *o)
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
static int keel_mysql_write_rows(struct keel_mysql_store *m, struct keel_overlay *o,
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
static int keel_mysql_write_closures(struct keel_mysql_store *m, struct keel_overlay *o,
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
 * Closures are one bulk upsert per table (below), not a bulk UPDATE ...
 * WHERE seq = ?, which the server runs as a whole statement once per row
 * and which measured slower than the text path's CASE (docs/store-mysql.md).
 */

/* Closures on the bulk path: each row is sent whole with its seq, and the
 * duplicate key turns the insert into the update of valid_to and
 * closed_by. The server runs one statement over the array (an UPDATE
 * would run once per row) and parses nothing per batch: the text path's
 * CASE over 770 rows took 2.8 ms more to parse and evaluate than the same
 * SELECT without it (4.4 against 1.6 ms). Measured, with the version 3
 * indexes: closing facts 18 % less server time than the CASE (five paired
 * runs, docs/store-mysql.md). Every row must exist: each counts 2 affected
 * rows, and anything else (a row inserted because it was gone) fails the
 * batch. KEEL_MYSQL_BULK_CLOSE=0 keeps the CASE. */
#define KEEL_MYSQL_CLOSE_MERGE                                                           \
	" ON DUPLICATE KEY UPDATE valid_to = VALUES(valid_to), closed_by = "             \
	"VALUES(closed_by)"

/* Types of the parameters: s string (NULL allowed), i BIGINT, u BIGINT
 * UNSIGNED. */
static const struct {
	const char *sql, *types;
} keel_mysql_bulk_stmts[KEEL_MYSQL_BULK_KINDS] = {
    [KEEL_MYSQL_BULK_EVENTS] = {"INSERT INTO keel_events (tenant, id, type, time, hash, "
				"envelope) VALUES (?,?,?,?,?,?)",
				"sssius"},
    [KEEL_MYSQL_BULK_ENTITIES] = {"INSERT INTO keel_entities (tenant, subject, kind, "
				  "kind_time, first_seen, last_seen) VALUES "
				  "(?,?,?,?,?,?)" KEEL_MYSQL_ENTITY_MERGE,
				  "sssiii"},
    [KEEL_MYSQL_BULK_FACTS] = {"INSERT INTO keel_facts (tenant, subject, predicate, "
			       "value, valid_from, valid_to, asserted_by, closed_by) "
			       "VALUES (?,?,?,?,?,?,?,?)",
			       "ssssiiss"},
    [KEEL_MYSQL_BULK_RELATIONS] = {"INSERT INTO keel_relations (tenant, subject, "
				   "relation, object, linked, valid_from, valid_to, "
				   "asserted_by, closed_by) VALUES (?,?,?,?,?,?,?,?,?)",
				   "ssssiiiss"},
    [KEEL_MYSQL_BULK_CLOSE_FACTS] =
	{"INSERT INTO keel_facts (seq, tenant, subject, "
	 "predicate, valid_from, valid_to, asserted_by, "
	 "closed_by) VALUES (?,?,?,?,?,?,?,?)" KEEL_MYSQL_CLOSE_MERGE,
	 "isssiiss"},
    [KEEL_MYSQL_BULK_CLOSE_RELATIONS] = {"INSERT INTO keel_relations (seq, tenant, "
					 "subject, relation, object, linked, valid_from, "
					 "valid_to, asserted_by, closed_by) VALUES "
					 "(?,?,?,?,?,?,?,?,?,?)" KEEL_MYSQL_CLOSE_MERGE,
					 "issssiiiss"},
};

static void keel_mysql_bulk_close_stmts(struct keel_mysql_store *m)
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
	unsigned e = mysql_stmt_errno(st);
	if (keel_mysql_lost(e)) {
		m->broken = true;
		return keel_store_fail(
		    &m->base, KEEL_ESTORE,
		    "%s: lost the connection to the mysql server (error "
		    "%u: %s); nothing of the batch was committed",
		    what, e, mysql_stmt_error(st));
	}
	return keel_store_fail(&m->base, KEEL_ESTORE, "%s: mysql error %u: %s", what, e,
			       mysql_stmt_error(st));
}

/* Prepares the bulk statements on a new connection (the tables exist). */
static int keel_mysql_bulk_prepare(struct keel_mysql_store *m)
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
	/* inserts: where the rows' seq go (events or keel_row), and whether
	 * every row must have been written */
	struct keel_batch_event **events;
	struct keel_row **set_seq;
	bool check_count;
	bool closures; /* an upsert that must update every row (2 each) */
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
			bind[c].buffer_type = MYSQL_TYPE_STRING;
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
	if (b->closures) {
		m->stats.closure_statements++;
		m->stats.rows_closed += b->rows;
	} else {
		m->stats.insert_statements++;
	}
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
	if (b->check_count && affected != b->rows)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: %llu of %zu rows were written", b->what,
				       (unsigned long long)affected, b->rows);
	if (b->closures && affected != 2 * b->rows)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: %llu rows affected closing %zu (each must "
				       "be found and changed)",
				       b->what, (unsigned long long)affected, b->rows);
	if (b->events || b->set_seq) {
		/* One statement's rows are numbered in order from its first
		 * id (single writer: see keel_mysql_worker_init). */
		int64_t first = (int64_t)mysql_stmt_insert_id(st);
		for (size_t i = 0; i < b->rows; i++) {
			int64_t seq = first + (int64_t)i * m->autoinc_step;
			if (b->events)
				b->events[b->done + i]->seq = seq;
			else
				b->set_seq[b->done + i]->seq = seq;
		}
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

static int keel_mysql_bulk_events(struct keel_mysql_store *m,
				  struct keel_batch_event **ev, size_t n)
{
	struct keel_mysql_bulk b = {.m = m,
				    .kind = KEEL_MYSQL_BULK_EVENTS,
				    .what = "writing events",
				    .events = ev,
				    .check_count = true};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct keel_batch_event *e = ev[i];
		size_t r;
		rc = keel_mysql_bulk_row(&b,
					 keel_mysql_bulk_size(e->tenant) +
					     keel_mysql_bulk_size(e->id) +
					     keel_mysql_bulk_size(e->type) +
					     keel_mysql_bulk_size(e->envelope) + 20,
					 &r);
		if (rc)
			break;
		keel_mysql_bulk_str(&b, r, 0, e->tenant);
		keel_mysql_bulk_str(&b, r, 1, e->id);
		keel_mysql_bulk_str(&b, r, 2, e->type);
		keel_mysql_bulk_num(&b, r, 3, e->time);
		keel_mysql_bulk_num(&b, r, 4, (int64_t)e->hash);
		keel_mysql_bulk_str(&b, r, 5, e->envelope);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

/* v: the entities to write, in key order. */
static int keel_mysql_bulk_entities(struct keel_mysql_store *m, struct keel_ptrvec *v)
{
	struct keel_mysql_bulk b = {
	    .m = m, .kind = KEEL_MYSQL_BULK_ENTITIES, .what = "writing entities"};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_entity *e = v->items[i];
		size_t r;
		rc = keel_mysql_bulk_row(&b,
					 keel_mysql_bulk_size(e->tenant) +
					     keel_mysql_bulk_size(e->subject) +
					     keel_mysql_bulk_size(e->kind) + 30,
					 &r);
		if (rc)
			break;
		keel_mysql_bulk_str(&b, r, 0, e->tenant);
		keel_mysql_bulk_str(&b, r, 1, e->subject);
		keel_mysql_bulk_str(&b, r, 2, e->kind);
		keel_mysql_bulk_num(&b, r, 3, e->kind_time);
		keel_mysql_bulk_num(&b, r, 4, e->first_seen);
		keel_mysql_bulk_num(&b, r, 5, e->last_seen);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

/* New rows of one kind, in creation order: v holds them. */
static int keel_mysql_bulk_rows(struct keel_mysql_store *m, struct keel_ptrvec *v,
				enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_mysql_bulk b = {
	    .m = m,
	    .kind = fact ? KEEL_MYSQL_BULK_FACTS : KEEL_MYSQL_BULK_RELATIONS,
	    .what = fact ? "writing facts" : "writing relations",
	    .set_seq = (struct keel_row **)v->items,
	    .check_count = true,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_row *row = v->items[i];
		const struct keel_timeline *tl = row->timeline;
		size_t r;
		rc = keel_mysql_bulk_row(
		    &b,
		    keel_mysql_bulk_size(tl->tenant) + keel_mysql_bulk_size(tl->subject) +
			keel_mysql_bulk_size(tl->name) +
			keel_mysql_bulk_size(tl->object) +
			keel_mysql_bulk_size(row->value) +
			keel_mysql_bulk_size(row->asserted_by) +
			keel_mysql_bulk_size(keel_mysql_stored_closed_by(row)) + 30,
		    &r);
		if (rc)
			break;
		size_t c = 0;
		keel_mysql_bulk_str(&b, r, c++, tl->tenant);
		keel_mysql_bulk_str(&b, r, c++, tl->subject);
		keel_mysql_bulk_str(&b, r, c++, tl->name);
		if (fact) {
			keel_mysql_bulk_str(&b, r, c++, row->value);
		} else {
			keel_mysql_bulk_str(&b, r, c++, tl->object);
			keel_mysql_bulk_num(&b, r, c++, row->linked ? 1 : 0);
		}
		keel_mysql_bulk_num(&b, r, c++, row->valid_from);
		keel_mysql_bulk_num(&b, r, c++, row->valid_to);
		keel_mysql_bulk_str(&b, r, c++, row->asserted_by);
		keel_mysql_bulk_str(&b, r, c, keel_mysql_stored_closed_by(row));
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

/* Closed stored rows of one kind, sorted by seq: v holds them. */
static int keel_mysql_bulk_close(struct keel_mysql_store *m, struct keel_ptrvec *v,
				 enum keel_row_kind kind)
{
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_mysql_bulk b = {
	    .m = m,
	    .kind = fact ? KEEL_MYSQL_BULK_CLOSE_FACTS : KEEL_MYSQL_BULK_CLOSE_RELATIONS,
	    .what = fact ? "closing facts" : "closing relations",
	    .closures = true,
	};
	int rc = 0;
	for (size_t i = 0; i < v->len && rc == 0; i++) {
		const struct keel_row *row = v->items[i];
		const struct keel_timeline *tl = row->timeline;
		size_t r;
		rc = keel_mysql_bulk_row(&b,
					 keel_mysql_bulk_size(tl->tenant) +
					     keel_mysql_bulk_size(tl->subject) +
					     keel_mysql_bulk_size(tl->name) +
					     keel_mysql_bulk_size(tl->object) +
					     keel_mysql_bulk_size(row->asserted_by) +
					     keel_mysql_bulk_size(row->closed_by) + 40,
					 &r);
		if (rc)
			break;
		size_t c = 0;
		keel_mysql_bulk_num(&b, r, c++, row->seq);
		keel_mysql_bulk_str(&b, r, c++, tl->tenant);
		keel_mysql_bulk_str(&b, r, c++, tl->subject);
		keel_mysql_bulk_str(&b, r, c++, tl->name);
		if (!fact) {
			keel_mysql_bulk_str(&b, r, c++, tl->object);
			keel_mysql_bulk_num(&b, r, c++, row->linked ? 1 : 0);
		}
		keel_mysql_bulk_num(&b, r, c++, row->valid_from);
		keel_mysql_bulk_num(&b, r, c++, row->valid_to);
		keel_mysql_bulk_str(&b, r, c++, row->asserted_by);
		keel_mysql_bulk_str(&b, r, c, row->closed_by);
	}
	if (rc == 0)
		rc = keel_mysql_bulk_flush(&b);
	return rc;
}

static int keel_mysql_write_back(struct keel_store *s, struct keel_overlay *o,
				 struct keel_batch_event **ev, size_t n)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	/* Events first: their key claims the ids, so a concurrent writer of
	 * the same events waits here and then fails cleanly. */
	int rc = keel_mysql_tx(m);
	if (rc == 0)
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

/* -------------------------------------------------------------- reading */

static int keel_mysql_tenant_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				 const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	keel_ptrvec_push(ud, keel_xstrndup(row[0], len[0]));
	return 0;
}

static int keel_mysql_tenants(struct keel_store *s, struct keel_ptrvec *out)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT DISTINCT tenant FROM keel_events ORDER BY tenant");
	return keel_mysql_select(m, "listing tenants", keel_mysql_tenant_row, out);
}

static void keel_mysql_filter(struct keel_mysql_store *m, const char *col,
			      struct keel_str v)
{
	if (!v.ptr)
		return;
	keel_buf_addf(&m->sql, " AND %s = ", col);
	keel_mysql_add_str(m, &m->sql, v);
}

static void keel_mysql_record(const struct keel_scan *q, MYSQL_ROW row,
			      const unsigned long *len, struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = q->type;
	r->tenant = q->tenant;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		r->subject = keel_mysql_col(row, len, 0);
		r->kind = keel_mysql_col(row, len, 1);
		r->kind_time = keel_mysql_i64(row[2], len[2]);
		r->first_seen = keel_mysql_i64(row[3], len[3]);
		r->last_seen = keel_mysql_i64(row[4], len[4]);
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		r->seq = keel_mysql_i64(row[0], len[0]);
		r->subject = keel_mysql_col(row, len, 1);
		r->name = keel_mysql_col(row, len, 2);
		r->object = keel_mysql_col(row, len, 3);
		r->value = keel_mysql_col(row, len, 4);
		r->linked = row[5] && row[5][0] == '1';
		r->valid_from = keel_mysql_i64(row[6], len[6]);
		r->valid_to = keel_mysql_i64(row[7], len[7]);
		r->asserted_by = keel_mysql_col(row, len, 8);
		r->closed_by =
		    keel_mysql_read_closed_by(r->valid_to, keel_mysql_col(row, len, 9));
		break;
	case KEEL_REC_EVENT:
		r->seq = keel_mysql_i64(row[0], len[0]);
		r->id = keel_mysql_col(row, len, 1);
		r->event_type = keel_mysql_col(row, len, 2);
		r->time = keel_mysql_i64(row[3], len[3]);
		r->hash = keel_mysql_u64(row[4], len[4]);
		r->envelope = keel_mysql_col(row, len, 5);
		break;
	}
}

/* Records in canonical dump order (SPEC 8): the ORDER BY compares the
 * VARBINARY columns bytewise, shorter first on a common prefix, exactly as
 * keel_str_cmp; seq breaks the remaining ties in insertion order, as the
 * memory store does. A scan of a whole tenant streams its result; a narrow
 * one is read whole so that its callback may query the store again. */
static int keel_mysql_scan(struct keel_store *s, const struct keel_scan *q,
			   keel_scan_fn fn, void *ud)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	switch (q->type) {
	case KEEL_REC_ENTITY:
		keel_buf_adds(b, "SELECT subject, kind, kind_time, first_seen, last_seen "
				 "FROM keel_entities WHERE tenant = ");
		keel_mysql_add_str(m, b, q->tenant);
		keel_mysql_filter(m, "subject", q->subject);
		keel_buf_adds(b, " ORDER BY subject");
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION: {
		bool fact = q->type == KEEL_REC_FACT;
		keel_buf_adds(
		    b, fact ? "SELECT seq, subject, predicate, NULL, value, 0, "
			      "valid_from, valid_to, asserted_by, closed_by FROM "
			      "keel_facts WHERE tenant = "
			    : "SELECT seq, subject, relation, object, NULL, linked, "
			      "valid_from, valid_to, asserted_by, closed_by FROM "
			      "keel_relations WHERE tenant = ");
		keel_mysql_add_str(m, b, q->tenant);
		keel_mysql_filter(m, "subject", q->subject);
		keel_mysql_filter(m, fact ? "predicate" : "relation", q->name);
		if (!fact)
			keel_mysql_filter(m, "object", q->object);
		if (q->at_set) {
			keel_buf_adds(b, " AND valid_from <= ");
			keel_buf_addi64(b, q->at);
			keel_buf_adds(b, " AND valid_to > ");
			keel_buf_addi64(b, q->at);
		}
		keel_buf_adds(
		    b, fact ? " ORDER BY subject, predicate, valid_from, valid_to, "
			      "asserted_by, seq"
			    : " ORDER BY subject, relation, object, valid_from, "
			      "valid_to, asserted_by, seq");
		break;
	}
	case KEEL_REC_EVENT:
		keel_buf_adds(
		    b, "SELECT seq, id, type, time, hash, envelope FROM keel_events "
		       "WHERE tenant = ");
		keel_mysql_add_str(m, b, q->tenant);
		keel_mysql_filter(m, "id", q->event_id);
		keel_buf_adds(b, " ORDER BY seq");
		break;
	}
	int rc = keel_mysql_run(m, b->data, b->len, "scan");
	if (rc)
		return rc;
	bool narrow = q->subject.ptr || q->event_id.ptr;
	MYSQL_RES *res = narrow ? mysql_store_result(m->db) : mysql_use_result(m->db);
	if (!res)
		return keel_mysql_fail(m, "scan");
	m->streaming = !narrow;
	MYSQL_ROW row;
	struct keel_record r;
	while (rc == 0 && (row = mysql_fetch_row(res))) {
		keel_mysql_record(q, row, mysql_fetch_lengths(res), &r);
		rc = fn(ud, &r);
	}
	/* mysql_fetch_row ends with NULL on the last row and on an error. */
	int err = rc == 0 && mysql_errno(m->db) ? keel_mysql_fail(m, "scan") : 0;
	mysql_free_result(res);
	m->streaming = false;
	return rc ? rc : err;
}

static int keel_mysql_counts_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				 const unsigned long *len, unsigned ncols)
{
	(void)m;
	uint64_t *out = ud;
	for (unsigned i = 0; i < ncols && i < 4; i++)
		out[i] = row[i] ? keel_mysql_u64(row[i], len[i]) : 0;
	return 0;
}

static int keel_mysql_counts(struct keel_store *s, struct keel_str tenant,
			     uint64_t out[4])
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	static const char *const tables[] = {"keel_entities", "keel_facts",
					     "keel_relations", "keel_events"};
	memset(out, 0, 4 * sizeof *out);
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT ");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(tables); i++) {
		keel_buf_addf(b,
			      "%s(SELECT COUNT(*) FROM %s WHERE tenant = ", i ? "," : "",
			      tables[i]);
		keel_mysql_add_str(m, b, tenant);
		keel_buf_addc(b, ')');
	}
	return keel_mysql_select(m, "counting rows", keel_mysql_counts_row, out);
}

/* ------------------------------------------- replay (docs/replay.md) */

/*
 * Design B: a tenant built in memory is written with LOAD DATA LOCAL
 * INFILE, one temporary TSV file per table, inside the batch transaction.
 * The connection announces LOCAL INFILE support, but the only file it
 * ever sends is the one keel_mysql_bulk_load is loading at that moment:
 * the handlers below refuse any other name a server might ask for. When
 * the server has local_infile off, the rows go through the multi-row
 * INSERTs of write-back instead, and the note says so.
 */

static int keel_mysql_infile_init(void **ptr, const char *name, void *ud)
{
	struct keel_mysql_store *m = ud;
	int *fd = malloc(sizeof *fd);
	*ptr = fd;
	if (!fd)
		return 1;
	*fd = -1;
	if (!m->bulk_file || strcmp(name, m->bulk_file) != 0) {
		errno = EACCES;
		return 1;
	}
	*fd = open(name, O_RDONLY | O_CLOEXEC);
	return *fd < 0;
}

static int keel_mysql_infile_read(void *ptr, char *buf, unsigned len)
{
	int *fd = ptr;
	ssize_t n;
	do
		n = read(*fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -1 : (int)n;
}

static void keel_mysql_infile_end(void *ptr)
{
	int *fd = ptr;
	if (fd && *fd >= 0)
		close(*fd);
	free(fd);
}

static int keel_mysql_infile_error(void *ptr, char *buf, unsigned len)
{
	(void)ptr;
	snprintf(buf, len, "keel sends only its own temporary load file");
	return CR_UNKNOWN_ERROR;
}

/* Called by keel_mysql_connect before the connection is made. */
static void keel_mysql_infile_setup(struct keel_mysql_store *m)
{
	unsigned on = 1;
	mysql_options(m->db, MYSQL_OPT_LOCAL_INFILE, &on);
	mysql_set_local_infile_handler(m->db, keel_mysql_infile_init,
				       keel_mysql_infile_read, keel_mysql_infile_end,
				       keel_mysql_infile_error, m);
}

/* A TSV field as LOAD DATA reads it with FIELDS ESCAPED BY '\\': NULL is
 * \N; backslash, tab, newline, carriage return and NUL are escaped; every
 * other byte (non-ASCII included) goes as it is, and CHARACTER SET binary
 * keeps the server from converting anything. */
static void keel_tsv_str(struct keel_buf *b, struct keel_str s)
{
	if (!s.ptr) {
		keel_buf_add(b, "\\N", 2);
		return;
	}
	keel_buf_reserve(b, 2 * s.len);
	char *o = b->data + b->len;
	for (size_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		switch (c) {
		case '\\':
			*o++ = '\\';
			*o++ = '\\';
			break;
		case '\t':
			*o++ = '\\';
			*o++ = 't';
			break;
		case '\n':
			*o++ = '\\';
			*o++ = 'n';
			break;
		case '\r':
			*o++ = '\\';
			*o++ = 'r';
			break;
		case '\0':
			*o++ = '\\';
			*o++ = '0';
			break;
		default:
			*o++ = c;
		}
	}
	b->len = (size_t)(o - b->data);
	b->data[b->len] = 0;
}

struct keel_mysql_tsv {
	struct keel_mysql_store *m;
	char path[64];
	FILE *f;
	struct keel_buf buf;
	uint64_t rows;
};

static int keel_mysql_tsv_flush(struct keel_mysql_tsv *t)
{
	if (t->buf.len && fwrite(t->buf.data, 1, t->buf.len, t->f) != t->buf.len)
		return keel_store_fail(&t->m->base, KEEL_ESTORE,
				       "writing the load file \"%s\": %s", t->path,
				       strerror(errno));
	keel_buf_reset(&t->buf);
	return 0;
}

static int keel_mysql_tsv_row_end(struct keel_mysql_tsv *t)
{
	keel_buf_addc(&t->buf, '\n');
	t->rows++;
	return t->buf.len >= (1u << 20) ? keel_mysql_tsv_flush(t) : 0;
}

/* Loads what t holds into table (columns cols) and empties the file. */
static int keel_mysql_tsv_load(struct keel_mysql_tsv *t, const char *table,
			       const char *cols, const char *what)
{
	struct keel_mysql_store *m = t->m;
	int rc = keel_mysql_tsv_flush(t);
	if (rc == 0 && fflush(t->f) != 0)
		rc = keel_store_fail(&m->base, KEEL_ESTORE,
				     "writing the load file \"%s\": %s", t->path,
				     strerror(errno));
	if (rc == 0 && t->rows) {
		keel_buf_reset(&m->sql);
		/* The path is ours (mkstemp under /tmp): no quote in it. */
		keel_buf_addf(
		    &m->sql,
		    "LOAD DATA LOCAL INFILE '%s' INTO TABLE %s CHARACTER SET binary "
		    "FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' "
		    "LINES TERMINATED BY '\\n' (%s)",
		    t->path, table, cols);
		m->bulk_file = t->path;
		rc = keel_mysql_run(m, m->sql.data, m->sql.len, what);
		m->bulk_file = NULL;
		if (rc == 0 && mysql_affected_rows(m->db) != t->rows)
			rc = keel_store_fail(
			    &m->base, KEEL_ESTORE, "%s: %llu of %llu rows loaded", what,
			    (unsigned long long)mysql_affected_rows(m->db),
			    (unsigned long long)t->rows);
		if (rc == 0 && mysql_warning_count(m->db))
			rc = keel_store_fail(&m->base, KEEL_ESTORE, "%s: %u warnings",
					     what, mysql_warning_count(m->db));
	}
	t->rows = 0;
	if (ftruncate(fileno(t->f), 0) != 0 || fseek(t->f, 0, SEEK_SET) != 0)
		rc = rc ? rc
			: keel_store_fail(&m->base, KEEL_ESTORE, "load file \"%s\": %s",
					  t->path, strerror(errno));
	return rc;
}

static int keel_mysql_bulk_load(struct keel_mysql_store *m, struct keel_overlay *o,
				struct keel_batch_event **ev, size_t n)
{
	struct keel_mysql_tsv t = {.m = m};
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir || strlen(dir) > 40 || strpbrk(dir, "'\\"))
		dir = "/tmp";
	snprintf(t.path, sizeof t.path, "%s/keel-load-XXXXXX", dir);
	int fd = mkstemp(t.path);
	if (fd < 0)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "creating a load file in %s: %s", dir,
				       strerror(errno));
	t.f = fdopen(fd, "w+");
	if (!t.f) {
		close(fd);
		unlink(t.path);
		return keel_store_fail(&m->base, KEEL_ESTORE, "load file: %s",
				       strerror(errno));
	}
	keel_buf_init(&t.buf);
	struct keel_buf *b = &t.buf;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct keel_batch_event *e = ev[i];
		keel_tsv_str(b, e->tenant);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->id);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->type);
		keel_buf_addf(b, "\t%lld\t%llu\t", (long long)e->time,
			      (unsigned long long)e->hash);
		keel_tsv_str(b, e->envelope);
		rc = keel_mysql_tsv_row_end(&t);
	}
	if (rc == 0)
		rc = keel_mysql_tsv_load(&t, "keel_events",
					 "tenant, id, type, time, hash, envelope",
					 "loading events");
	for (size_t i = 0; rc == 0 && i < o->entities.len; i++) {
		const struct keel_entity *e = o->entities.items[i];
		keel_tsv_str(b, e->tenant);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->subject);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->kind);
		keel_buf_addf(b, "\t%lld\t%lld\t%lld", (long long)e->kind_time,
			      (long long)e->first_seen, (long long)e->last_seen);
		rc = keel_mysql_tsv_row_end(&t);
	}
	if (rc == 0)
		rc = keel_mysql_tsv_load(
		    &t, "keel_entities",
		    "tenant, subject, kind, kind_time, first_seen, last_seen",
		    "loading entities");
	for (int kind = KEEL_ROW_FACT; rc == 0 && kind <= KEEL_ROW_RELATION; kind++) {
		bool fact = kind == KEEL_ROW_FACT;
		for (size_t i = 0; rc == 0 && i < o->new_rows.len; i++) {
			const struct keel_row *r = o->new_rows.items[i];
			const struct keel_timeline *tl = r->timeline;
			if ((int)tl->kind != kind)
				continue;
			keel_tsv_str(b, tl->tenant);
			keel_buf_addc(b, '\t');
			keel_tsv_str(b, tl->subject);
			keel_buf_addc(b, '\t');
			keel_tsv_str(b, tl->name);
			keel_buf_addc(b, '\t');
			if (fact)
				keel_tsv_str(b, r->value);
			else
				keel_tsv_str(b, tl->object);
			if (!fact)
				keel_buf_adds(b, r->linked ? "\t1" : "\t0");
			keel_buf_addf(b, "\t%lld\t%lld\t", (long long)r->valid_from,
				      (long long)r->valid_to);
			keel_tsv_str(b, r->asserted_by);
			keel_buf_addc(b, '\t');
			keel_tsv_str(b, keel_mysql_stored_closed_by(r));
			rc = keel_mysql_tsv_row_end(&t);
		}
		/* The server numbers the rows in file order (AUTO_INCREMENT),
		 * which is the order the replay gave them. */
		if (rc == 0)
			rc = keel_mysql_tsv_load(
			    &t, fact ? "keel_facts" : "keel_relations",
			    fact ? "tenant, subject, predicate, value, valid_from, "
				   "valid_to, "
				   "asserted_by, closed_by"
				 : "tenant, subject, relation, object, linked, "
				   "valid_from, "
				   "valid_to, asserted_by, closed_by",
			    fact ? "loading facts" : "loading relations");
	}
	fclose(t.f);
	unlink(t.path);
	keel_buf_free(&t.buf);
	return rc;
}

static int keel_mysql_count_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	*(uint64_t *)ud = row[0] ? keel_mysql_u64(row[0], len[0]) : 0;
	return 0;
}

static int keel_mysql_replace_tenant(struct keel_store *s, struct keel_str tenant,
				     const struct keel_replace_scope *scope,
				     struct keel_overlay *o, struct keel_batch_event **ev,
				     size_t n, uint64_t log_events, struct keel_buf *note)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	keel_mysql_cache_drop(m); /* the tenant's rows are renumbered */
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	/* The tenant's keel_writers row first, as a batch takes it (so the
	 * two never wait for each other's locks in a circle): batches of the
	 * tenant wait for the replay, and other connections' caches of it
	 * are stale from now on. */
	struct keel_str *mark = &tenant;
	m->rows.len = 0;
	keel_ptrvec_push(&m->rows, mark);
	rc = keel_mysql_mark_tenants(m, &m->rows);
	m->rows.len = 0;
	if (rc)
		return rc;
	/* The log was read outside this transaction: lock the tenant's
	 * events (in REPEATABLE READ the gap too, so none can be added until
	 * commit) and check that none came or went meanwhile. */
	uint64_t logged = 0;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT COUNT(*) FROM keel_events WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_adds(&m->sql, " FOR UPDATE");
	if ((rc = keel_mysql_select(m, "locking the tenant's log", keel_mysql_count_row,
				    &logged)))
		return rc;
	if (logged != log_events)
		return keel_store_fail(
		    s, KEEL_ESTORE,
		    "tenant \"%.*s\": the log changed during the replay (%llu "
		    "events read, %llu logged now): run it again",
		    (int)tenant.len, tenant.ptr, (unsigned long long)log_events,
		    (unsigned long long)logged);
	/* The rows the scope covers (all of the tenant's without one): the
	 * entities, then each predicate's facts and relation's relations. */
	static const char *const tables[] = {"keel_entities", "keel_facts",
					     "keel_relations"};
	static const char *const columns[] = {"", "predicate", "relation"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(tables); i++) {
		size_t parts = 1; /* one DELETE, or one per name */
		if (scope && i == 0 && !scope->entities)
			parts = 0;
		else if (scope && i > 0)
			parts = scope->nnames[i == 1 ? KEEL_ROW_FACT : KEEL_ROW_RELATION];
		for (size_t k = 0; k < parts; k++) {
			keel_buf_reset(&m->sql);
			keel_buf_addf(&m->sql, "DELETE FROM %s WHERE tenant = ", tables[i]);
			keel_mysql_add_str(m, &m->sql, tenant);
			if (scope && i > 0) {
				keel_buf_addf(&m->sql, " AND %s = ", columns[i]);
				keel_mysql_add_str(
				    m, &m->sql,
				    scope->names[i == 1 ? KEEL_ROW_FACT : KEEL_ROW_RELATION][k]);
			}
			if ((rc = keel_mysql_run(m, m->sql.data, m->sql.len,
						 "deleting the tenant's rows")))
				return rc;
		}
	}
	uint64_t local_infile = 0;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT @@GLOBAL.local_infile");
	if ((rc = keel_mysql_select(m, "reading local_infile", keel_mysql_count_row,
				    &local_infile)))
		return rc;
	if (local_infile && !getenv("KEEL_MYSQL_NO_LOAD_DATA")) {
		rc = keel_mysql_bulk_load(m, o, ev, n);
		if (rc == 0)
			keel_buf_adds(note,
				      "mysql: LOAD DATA LOCAL INFILE in one transaction");
		return rc;
	}
	rc = keel_mysql_write_back(s, o, ev, n);
	keel_mysql_cache_drop(m); /* learned from the replay's rows: not kept */
	if (rc == 0)
		keel_buf_adds(
		    note, "mysql: local_infile is off on the server: multi-row INSERTs "
			  "instead of LOAD DATA LOCAL INFILE");
	return rc;
}

/* keel ingest --workers: each worker's connection reads committed rows
 * only, so concurrent batches of other tenants take no gap locks from one
 * another (the note's caveat 5). */
static int keel_mysql_worker_init(struct keel_store *s)
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
	keel_mysql_downcast(s)->packet = bytes;
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
