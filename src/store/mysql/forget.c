/*
 * forget.c - keel forget on MySQL/MariaDB (docs/store-mysql.md,
 * "Forgetting"): the redacted envelopes written over the logged ones and
 * the tombstone, in the forget's transaction. What the server itself keeps
 * of the old bytes (binary log, undo log until purged, backups) is the
 * operator's to manage; the docs say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

int keel_mysql_forget(struct keel_store *s, struct keel_str tenant,
		      const struct keel_redaction *r, size_t n,
		      const struct keel_tombstone *t)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->tx_writes = true;
	/* The hash column keeps the received envelope's hash: a redelivery
	 * is a plain duplicate. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_buf_reset(&m->sql);
		keel_buf_adds(&m->sql, "UPDATE keel_events SET envelope = ");
		keel_mysql_add_str(m, &m->sql, r[i].envelope);
		keel_buf_adds(&m->sql, " WHERE tenant = ");
		keel_mysql_add_str(m, &m->sql, tenant);
		keel_buf_addf(&m->sql, " AND seq = %lld", (long long)r[i].seq);
		rc = keel_mysql_run(m, m->sql.data, m->sql.len, "redacting an event");
	}
	if (rc || !t)
		return rc;
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql,
		      "INSERT INTO keel_tombstones (tenant, subject_sha256, "
		      "forgotten_at, forgotten_by, events_redacted, rows_removed) "
		      "VALUES (");
	keel_mysql_add_str(m, &m->sql, t->tenant);
	keel_buf_addc(&m->sql, ',');
	keel_mysql_add_str(m, &m->sql, keel_str_cstr(t->subject_hash));
	keel_buf_addf(&m->sql, ",%lld,", (long long)t->forgotten_at);
	keel_mysql_add_str(m, &m->sql, t->forgotten_by);
	keel_buf_addf(&m->sql,
		      ",%llu,%llu) ON DUPLICATE KEY UPDATE forgotten_at = "
		      "VALUES(forgotten_at), forgotten_by = VALUES(forgotten_by), "
		      "events_redacted = VALUES(events_redacted), rows_removed = "
		      "VALUES(rows_removed)",
		      (unsigned long long)t->events, (unsigned long long)t->rows);
	return keel_mysql_run(m, m->sql.data, m->sql.len, "writing the tombstone");
}

struct keel_mysql_tomb_ctx {
	struct keel_tombstone *out;
	struct keel_buf *buf;
	bool found;
};

static int keel_mysql_tomb_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			       const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	struct keel_mysql_tomb_ctx *c = ud;
	c->found = true;
	c->out->forgotten_at = keel_mysql_i64(row[0], len[0]);
	keel_buf_reset(c->buf);
	keel_buf_add(c->buf, row[1] ? row[1] : "", row[1] ? len[1] : 0);
	keel_buf_reserve(c->buf, 0);
	c->out->forgotten_by =
	    keel_str_make(c->buf->data ? c->buf->data : "", row[1] ? len[1] : 0);
	c->out->events = keel_mysql_u64(row[2], len[2]);
	c->out->rows = keel_mysql_u64(row[3], len[3]);
	return 0;
}

int keel_mysql_tombstone(struct keel_store *s, struct keel_str tenant,
			 const char *subject_hash, struct keel_tombstone *out,
			 struct keel_buf *buf)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	memset(out, 0, sizeof *out);
	out->tenant = tenant;
	snprintf(out->subject_hash, sizeof out->subject_hash, "%s", subject_hash);
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT forgotten_at, forgotten_by, events_redacted, "
			       "rows_removed FROM keel_tombstones WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_adds(&m->sql, " AND subject_sha256 = ");
	keel_mysql_add_str(m, &m->sql, keel_str_cstr(subject_hash));
	struct keel_mysql_tomb_ctx c = {.out = out, .buf = buf};
	int rc = keel_mysql_select(m, "reading a tombstone", keel_mysql_tomb_row, &c);
	if (rc)
		return rc;
	return c.found ? 0 : KEEL_ENOTFOUND;
}
