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

/* ----------------------------------------- forgetting without a rebuild */

static int keel_mysql_predicate_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				    const unsigned long *len, unsigned ncols)
{
	(void)ncols;
	struct keel_buf *list = ud;
	keel_buf_addc(list, list->len ? ',' : '(');
	keel_mysql_add_str(m, list, keel_str_make(row[0], len[0]));
	return 0;
}

/* "(p1,p2,...)": the tenant's predicates, by a loose scan of
 * keel_facts_value (one seek each); empty when it has none. A fact
 * naming the subject as its value is then one seek per predicate. */
static int keel_mysql_predicates(struct keel_mysql_store *m, struct keel_str tenant,
				 struct keel_buf *list)
{
	keel_buf_reset(list);
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT DISTINCT predicate FROM keel_fact_rows "
			       "FORCE INDEX (keel_facts_value) WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	int rc = keel_mysql_select(m, "listing predicates", keel_mysql_predicate_row, list);
	if (rc == 0 && list->len)
		keel_buf_addc(list, ')');
	return rc;
}

/* " WHERE r.tenant = T AND r.predicate IN (...) AND value is quoted" */
static void keel_mysql_value_rows(struct keel_mysql_store *m, struct keel_str tenant,
				  struct keel_str quoted, const struct keel_buf *preds)
{
	keel_buf_adds(&m->sql, " WHERE r.tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_adds(&m->sql, " AND r.predicate IN ");
	keel_buf_add(&m->sql, preds->data, preds->len);
	keel_buf_adds(&m->sql, " AND r.value_key = LEFT(");
	keel_mysql_add_str(m, &m->sql, quoted);
	keel_buf_adds(&m->sql, ", 255) AND r.value = ");
	keel_mysql_add_str(m, &m->sql, quoted);
}

static void keel_mysql_asserter(struct keel_mysql_store *m, const char *table,
				struct keel_str tenant, const char *col, struct keel_str v)
{
	keel_buf_addf(&m->sql,
		      " UNION SELECT k.seq FROM %s AS r JOIN keel_events AS k ON k.tenant = "
		      "r.tenant AND k.source = r.asserted_by_source AND k.id = r.asserted_by "
		      "WHERE r.tenant = ",
		      table);
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_addf(&m->sql, " AND r.%s = ", col);
	keel_mysql_add_str(m, &m->sql, v);
}

/* " type IN ('a', ...)" */
static void keel_mysql_types_in(struct keel_mysql_store *m, const struct keel_str *types,
				size_t n)
{
	keel_buf_adds(&m->sql, "type IN (");
	for (size_t i = 0; i < n; i++) {
		if (i)
			keel_buf_adds(&m->sql, ", ");
		keel_mysql_add_str(m, &m->sql, types[i]);
	}
	keel_buf_addc(&m->sql, ')');
}

int keel_mysql_forget_find(struct keel_store *s, struct keel_str tenant,
			   const struct keel_forget_find *f, keel_scan_fn fn, void *ud)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	struct keel_str subject = f->subject, quoted = f->quoted;
	int rc = keel_mysql_tx(m);
	struct keel_buf preds;
	keel_buf_init(&preds);
	if (rc == 0)
		rc = keel_mysql_predicates(m, tenant, &preds);
	if (rc) {
		keel_buf_free(&preds);
		return rc;
	}
	/* The envelopes are read once, by LOCATE() in the server: a hit
	 * holds the subject's bytes or a backslash (an escape may spell
	 * them); the caller parses only those. */
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, "SELECT e.seq, e.id, e.type, e.time, e.hash, e.envelope, "
			       "e.recorded_at, e.source FROM keel_events AS e JOIN (SELECT "
			       "seq FROM keel_events WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_adds(&m->sql, " AND (LOCATE(");
	keel_mysql_add_str(m, &m->sql, subject);
	keel_buf_adds(&m->sql, ", envelope) > 0 OR LOCATE(");
	keel_mysql_add_str(m, &m->sql, keel_str_cstr("\\"));
	keel_buf_adds(&m->sql, ", envelope) > 0");
	if (f->nalways || f->nredacted) {
		keel_buf_addf(&m->sql, " OR (time BETWEEN %lld AND %lld AND (", (long long)f->from,
			      (long long)f->to);
		if (f->nalways)
			keel_mysql_types_in(m, f->always, f->nalways);
		if (f->nalways && f->nredacted)
			keel_buf_adds(&m->sql, " OR ");
		if (f->nredacted) {
			keel_buf_addc(&m->sql, '(');
			keel_mysql_types_in(m, f->redacted, f->nredacted);
			keel_buf_adds(&m->sql, " AND LOCATE('keelredacted', envelope) > 0)");
		}
		keel_buf_adds(&m->sql, "))");
	}
	keel_buf_addc(&m->sql, ')');
	keel_mysql_asserter(m, "keel_fact_rows", tenant, "subject", subject);
	keel_mysql_asserter(m, "keel_relation_rows", tenant, "subject", subject);
	keel_mysql_asserter(m, "keel_relation_rows", tenant, "object", subject);
	if (preds.len) {
		keel_buf_adds(&m->sql, " UNION SELECT k.seq FROM keel_fact_rows AS r JOIN "
				       "keel_events AS k ON k.tenant = r.tenant AND k.source = "
				       "r.asserted_by_source AND k.id = r.asserted_by");
		keel_mysql_value_rows(m, tenant, quoted, &preds);
	}
	keel_buf_adds(&m->sql, ") AS h ON e.seq = h.seq ORDER BY e.seq");
	keel_buf_free(&preds);
	struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = tenant};
	return keel_mysql_scan_run(m, &q, fn, ud);
}

static int keel_mysql_forget_delete(struct keel_mysql_store *m, const char *head,
				    struct keel_str tenant, const char *col,
				    struct keel_str v, uint64_t *removed)
{
	keel_buf_reset(&m->sql);
	keel_buf_adds(&m->sql, head);
	keel_mysql_add_str(m, &m->sql, tenant);
	keel_buf_addf(&m->sql, " AND %s = ", col);
	keel_mysql_add_str(m, &m->sql, v);
	int rc = keel_mysql_run(m, m->sql.data, m->sql.len, "deleting what named the subject");
	if (rc == 0 && removed)
		*removed += (uint64_t)mysql_affected_rows(m->db);
	return rc;
}

int keel_mysql_forget_rows(struct keel_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str quoted,
			   const struct keel_mention_fix *fix, size_t n, uint64_t *removed)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	int rc = keel_mysql_tx(m);
	if (rc)
		return rc;
	m->tx_writes = true;
	struct keel_buf preds;
	keel_buf_init(&preds);
	rc = keel_mysql_predicates(m, tenant, &preds);
	if (rc == 0 && preds.len) {
		keel_buf_reset(&m->sql);
		keel_buf_adds(&m->sql, "DELETE r FROM keel_fact_rows AS r");
		keel_mysql_value_rows(m, tenant, quoted, &preds);
		rc = keel_mysql_run(m, m->sql.data, m->sql.len,
				    "deleting what named the subject");
		if (rc == 0)
			*removed += (uint64_t)mysql_affected_rows(m->db);
	}
	keel_buf_free(&preds);
	static const struct {
		const char *head, *col;
		bool rows;
	} drops[] = {
	    {"DELETE FROM keel_fact_rows WHERE tenant = ", "subject", true},
	    {"DELETE FROM keel_relation_rows WHERE tenant = ", "subject", true},
	    {"DELETE FROM keel_relation_rows WHERE tenant = ", "object", true},
	    {"DELETE FROM keel_entity_mentions WHERE tenant = ", "subject", false},
	};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(drops); i++)
		rc = keel_mysql_forget_delete(m, drops[i].head, tenant, drops[i].col, subject,
					      drops[i].rows ? removed : NULL);
	/* The other entities' mentions the forgotten operations made. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keel_buf_reset(&m->sql);
		if (fix[i].gone)
			keel_buf_adds(&m->sql, "DELETE FROM keel_entity_mentions");
		else
			keel_buf_addf(&m->sql,
				      "UPDATE keel_entity_mentions SET first_seen = %lld, "
				      "last_seen = %lld",
				      (long long)fix[i].first_seen, (long long)fix[i].last_seen);
		keel_buf_adds(&m->sql, " WHERE tenant = ");
		keel_mysql_add_str(m, &m->sql, tenant);
		keel_buf_adds(&m->sql, " AND subject = ");
		keel_mysql_add_str(m, &m->sql, fix[i].subject);
		keel_buf_addf(&m->sql, " AND recorded_at = %lld", (long long)fix[i].recorded_at);
		rc = keel_mysql_run(m, m->sql.data, m->sql.len, "mending mentions");
	}
	return rc;
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
