/*
 * mysql_read.c - reading the store: its tenants, scans of a tenant's
 * records in the dump's order, and counts.
 */
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "mysql_store.h"

/* -------------------------------------------------------------- reading */

static int keel_mysql_tenant_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				 const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	keel_ptrvec_push(ud, keel_xstrndup(row[0], len[0]));
	return 0;
}

int keel_mysql_tenants(struct keel_store *s, struct keel_ptrvec *out)
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

/* Records in canonical dump order (docs/dump.md): the ORDER BY compares the
 * VARBINARY columns bytewise, shorter first on a common prefix, exactly as
 * keel_str_cmp; seq breaks the remaining ties in insertion order, as the
 * memory store does. A scan of a whole tenant streams its result; a narrow
 * one is read whole so that its callback may query the store again. */
int keel_mysql_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud)
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

int keel_mysql_counts(struct keel_store *s, struct keel_str tenant, uint64_t out[4])
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
