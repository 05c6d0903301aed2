/*
 * replay.c - replacing a tenant's rows in one transaction (keel
 * replay, keel ingest --replay): LOAD DATA LOCAL INFILE from a temporary
 * file escaped for every byte, or multi-row INSERTs where local_infile
 * is off (docs/replay.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>

#include "parts.h"

/* ------------------------------------------- replay (docs/replay.md) */

/*
 * Replay: a tenant built in memory is written with LOAD DATA LOCAL
 * INFILE, one temporary TSV file per table, inside the batch transaction.
 * The connection announces LOCAL INFILE support, but the only file it
 * ever sends is the one keel_mysql_bulk_load is loading at that moment:
 * the handlers below refuse any other name a server might ask for. When
 * the server has local_infile off, the rows go through the batch path's
 * appends instead, and the report says so.
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
void keel_mysql_infile_setup(struct keel_mysql_store *m)
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

static int keel_mysql_bulk_load(struct keel_mysql_store *m, const struct keel_append *a)
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
	for (size_t i = 0; rc == 0 && i < a->nevents; i++) {
		const struct keel_batch_event *e = a->events[i];
		keel_tsv_str(b, e->tenant);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->id);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->type);
		keel_buf_addf(b, "\t%lld\t%llu\t", (long long)e->time,
			      (unsigned long long)e->hash);
		keel_tsv_str(b, e->envelope);
		keel_buf_addf(b, "\t%lld\t", (long long)e->recorded_at);
		keel_tsv_str(b, e->source);
		rc = keel_mysql_tsv_row_end(&t);
	}
	if (rc == 0)
		rc = keel_mysql_tsv_load(&t, "keel_events",
					 "tenant, id, type, time, hash, envelope, "
					 "recorded_at, source",
					 "loading events");
	for (size_t i = 0; rc == 0 && i < a->nmentions; i++) {
		const struct keel_mention *e = &a->mentions[i];
		keel_tsv_str(b, e->tenant);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->subject);
		keel_buf_addc(b, '\t');
		keel_tsv_str(b, e->kind);
		keel_buf_addf(b, "\t%lld\t%lld\t%lld\t%lld", (long long)e->kind_time,
			      (long long)e->first_seen, (long long)e->last_seen,
			      (long long)e->recorded_at);
		rc = keel_mysql_tsv_row_end(&t);
	}
	if (rc == 0)
		rc = keel_mysql_tsv_load(&t, "keel_entity_mentions",
					 "tenant, subject, kind, kind_time, first_seen, "
					 "last_seen, recorded_at",
					 "loading entity mentions");
	for (int kind = KEEL_ROW_FACT; rc == 0 && kind <= KEEL_ROW_RELATION; kind++) {
		bool fact = kind == KEEL_ROW_FACT;
		for (size_t i = 0; rc == 0 && i < a->nrows; i++) {
			const struct keel_assertion *r = &a->rows[i];
			if ((int)r->kind != kind)
				continue;
			keel_tsv_str(b, r->tenant);
			keel_buf_addc(b, '\t');
			keel_tsv_str(b, r->subject);
			keel_buf_addc(b, '\t');
			keel_tsv_str(b, r->name);
			keel_buf_addc(b, '\t');
			if (fact) {
				keel_tsv_str(b, r->value);
			} else {
				keel_tsv_str(b, r->object);
				keel_buf_adds(b, r->linked ? "\t1" : "\t0");
			}
			keel_buf_addf(b, "\t%lld\t", (long long)r->valid_from);
			keel_tsv_str(b, r->asserted_by.id);
			keel_buf_addf(b, "\t%lld\t", (long long)r->recorded_at);
			keel_tsv_str(b, r->asserted_by.source);
			rc = keel_mysql_tsv_row_end(&t);
		}
		/* The server numbers the rows in file order (AUTO_INCREMENT),
		 * which is the order the replay gave them. */
		if (rc == 0)
			rc = keel_mysql_tsv_load(
			    &t, fact ? "keel_fact_rows" : "keel_relation_rows",
			    fact ? "tenant, subject, predicate, value, valid_from, "
				   "asserted_by, recorded_at, asserted_by_source"
				 : "tenant, subject, relation, object, linked, "
				   "valid_from, asserted_by, recorded_at, asserted_by_source",
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

int keel_mysql_replace_tenant(struct keel_store *s, struct keel_str tenant,
			      const struct keel_replace_scope *scope,
			      const struct keel_append *a, uint64_t log_events,
			      struct keel_buf *note)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->tx_writes = true;
	bool more = scope && scope->more;
	/* The log was read outside this transaction: lock the tenant's
	 * events (in REPEATABLE READ the gap too, so that no batch of the
	 * tenant logs one until the commit: its batches wait for the
	 * replay) and check that none came or went meanwhile. */
	uint64_t logged = 0;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT COUNT(*) FROM keel_events WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_adds(&m->sql, " FOR UPDATE");
	if (!more && (rc = keel_mysql_select(m, "locking the tenant's log",
					     keel_mysql_count_row, &logged)))
		return rc;
	if (!more && logged != log_events)
		return keel_store_fail(
		    s, KEEL_ESTORE,
		    "tenant \"%.*s\": the log changed during the replay (%llu "
		    "events read, %llu logged now): run it again",
		    (int)tenant.len, tenant.ptr, (unsigned long long)log_events,
		    (unsigned long long)logged);
	/* The rows the scope covers (all of the tenant's without one): the
	 * entities' mentions, then each predicate's facts and relation's
	 * relations. */
	static const char *const tables[] = {"keel_entity_mentions", "keel_fact_rows",
					     "keel_relation_rows"};
	static const char *const columns[] = {"", "predicate", "relation"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(tables); i++) {
		size_t parts = 1; /* one DELETE, or one per name */
		if (more || (scope && i == 0 && !scope->entities))
			parts = 0;
		else if (scope && i > 0)
			parts = scope->nnames[i == 1 ? KEEL_ROW_FACT : KEEL_ROW_RELATION];
		for (size_t k = 0; k < parts; k++) {
			keel_buf_reset(&m->sql);
			keel_buf_addf(&m->sql,
				      "DELETE FROM %s WHERE tenant = ", tables[i]);
			keel_mysql_add_str(m, &m->sql, tenant);
			if (scope && i > 0) {
				keel_buf_addf(&m->sql, " AND %s = ", columns[i]);
				keel_mysql_add_str(
				    m, &m->sql,
				    scope->names[i == 1 ? KEEL_ROW_FACT
							: KEEL_ROW_RELATION][k]);
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
		rc = keel_mysql_bulk_load(m, a);
		if (rc == 0)
			keel_buf_adds(note,
				      "mysql: LOAD DATA LOCAL INFILE in one transaction");
		return rc;
	}
	rc = keel_mysql_write_append(m, a);
	if (rc == 0)
		keel_buf_adds(
		    note, "mysql: local_infile is off on the server: multi-row INSERTs "
			  "instead of LOAD DATA LOCAL INFILE");
	return rc;
}
