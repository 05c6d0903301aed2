/*
 * sql.c - running the store's statements: errors, profiling,
 * result rows, escaped literals, and statements built from lists of values
 * (cut at the packet limit, IN lists at most KEEL_MYSQL_IN_MAX).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "parts.h"

/* ----------------------------------------------------------- statements */

bool keel_mysql_lost(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
	       e == ER_CONNECTION_KILLED || e == 4031 /* MySQL: client timeout */;
}

/* Sets the store's message for the failed statement `what`: the server's
 * error e and its text, and what it means for the batch. */
int keel_mysql_error(struct keel_mysql_store *m, const char *what, unsigned e,
		     const char *text)
{
	m->last_errno = e;
	if (keel_mysql_lost(e)) {
		m->broken = true;
		return keel_store_fail(
		    &m->base, KEEL_ESTORE,
		    "%s: lost the connection to the mysql server (error "
		    "%u: %s); nothing of the batch was committed",
		    what, e, text);
	}
	if (e == ER_LOCK_WAIT_TIMEOUT)
		return keel_store_fail(&m->base, KEEL_ESTORE,
				       "%s: mysql error %u: %s (another connection held "
				       "the rows longer than innodb_lock_wait_timeout; "
				       "writers of one tenant take turns, see "
				       "docs/store-mysql.md)",
				       what, e, text);
	return keel_store_fail(&m->base, KEEL_ESTORE, "%s: mysql error %u: %s", what, e,
			       text);
}

/* The same for the connection's last statement. */
int keel_mysql_fail(struct keel_mysql_store *m, const char *what)
{
	return keel_mysql_error(m, what, mysql_errno(m->db), mysql_error(m->db));
}

double keel_mysql_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Adds the time since t0 to the profile of statements `what`. */
void keel_mysql_prof_add(struct keel_mysql_store *m, const char *what, double t0)
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

void keel_mysql_prof_print(const struct keel_mysql_store *m)
{
	for (size_t i = 0; i < KEEL_ARRAY_LEN(m->prof) && m->prof[i].what; i++)
		fprintf(stderr, "keel mysql profile: %-40s %8llu statements %9.3f s\n",
			m->prof[i].what, (unsigned long long)m->prof[i].count,
			m->prof[i].seconds);
}

int keel_mysql_run(struct keel_mysql_store *m, const char *sql, size_t len,
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

int keel_mysql_runs(struct keel_mysql_store *m, const char *sql, const char *what)
{
	return keel_mysql_run(m, sql, strlen(sql), what);
}

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
int keel_mysql_select(struct keel_mysql_store *m, const char *what, keel_mysql_rows_fn fn,
		      void *ud)
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
void keel_mysql_add_str(struct keel_mysql_store *m, struct keel_buf *b, struct keel_str s)
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
size_t keel_mysql_str_size(struct keel_str s)
{
	return 2 * s.len + 12;
}

int64_t keel_mysql_i64(const char *p, unsigned long n)
{
	bool neg = n && *p == '-';
	uint64_t v = 0;
	for (unsigned long i = neg; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	return neg ? (int64_t)(0 - v) : (int64_t)v;
}

uint64_t keel_mysql_u64(const char *p, unsigned long n)
{
	uint64_t v = 0;
	for (unsigned long i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	return v;
}

struct keel_str keel_mysql_col(MYSQL_ROW row, const unsigned long *len, unsigned i)
{
	return row[i] ? keel_str_make(row[i], len[i]) : KEEL_STR_NULL;
}

static void keel_mysql_list_end_part(struct keel_mysql_list *l)
{
	keel_buf_adds(&l->m->sql, l->close);
	if (l->in_list) {
		l->m->stats.in_lists++;
		if (l->part_items > l->m->stats.max_in_tuples)
			l->m->stats.max_in_tuples = l->part_items;
	}
}

int keel_mysql_list_flush(struct keel_mysql_list *l)
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
int keel_mysql_list_item(struct keel_mysql_list *l, size_t size)
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
void keel_mysql_list_part(struct keel_mysql_list *l, const char *open)
{
	l->open = open;
	l->new_part = l->items > 0;
}

int keel_mysql_run_list(struct keel_mysql_list *l)
{
	return keel_mysql_run(l->m, l->m->sql.data, l->m->sql.len, l->what);
}
