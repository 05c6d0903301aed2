/*
 * find.c - the candidates of keel entities and keel search
 * (src/read/find.c confirms each): distinct subjects in one range of an index.
 *
 *   entities:          the primary key (tenant, subject, seq)
 *   entities by kind:  keel_entity_mentions_kind (tenant, kind_key, subject)
 *   search:            keel_facts_value (tenant, predicate, value_key, subject)
 *
 * kind and value are BLOBs, which InnoDB indexes only by a prefix, and a
 * prefix in the middle of an index would leave the subjects after it
 * unordered; kind_key and value_key are generated columns holding their
 * first 255 bytes, so equality on them keeps the subjects in index order,
 * and the full column is compared on the rows found (docs/store-mysql.md,
 * "Finding").
 */
#include <stdlib.h>

#include <mysql.h>

#include "parts.h"

static int keel_mysql_subject_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols)
{
	(void)m;
	(void)ncols;
	keel_ptrvec_push(ud, keel_xstrndup(row[0], len[0]));
	return 0;
}

/* " AND <key> = LEFT(v, 255) AND <col> = v" */
static void keel_mysql_key_filter(struct keel_mysql_store *m, const char *key,
				  const char *col, struct keel_str v)
{
	keel_buf_addf(&m->sql, " AND %s = LEFT(", key);
	keel_mysql_add_str(m, &m->sql, v);
	keel_buf_addf(&m->sql, ", 255) AND %s = ", col);
	keel_mysql_add_str(m, &m->sql, v);
}

static int keel_mysql_candidates(struct keel_store *s, const struct keel_candidates *q,
				 bool fact, struct keel_ptrvec *out)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	struct keel_str lo;
	bool lo_inclusive;
	struct keel_buf hi;
	keel_buf_init(&hi);
	keel_candidates_range(q, &lo, &lo_inclusive, &hi);
	keel_buf_reset(&m->sql);
	if (fact)
		keel_buf_adds(&m->sql, "SELECT DISTINCT subject FROM keel_fact_rows "
				       "FORCE INDEX (keel_facts_value)");
	else if (q->kind.ptr)
		keel_buf_adds(&m->sql, "SELECT DISTINCT subject FROM keel_entity_mentions "
				       "FORCE INDEX (keel_entity_mentions_kind)");
	else
		keel_buf_adds(&m->sql, "SELECT DISTINCT subject FROM keel_entity_mentions "
				       "FORCE INDEX (PRIMARY)");
	keel_buf_adds(&m->sql, " WHERE tenant = ");
	keel_mysql_add_str(m, &m->sql, q->tenant);
	if (fact) {
		keel_buf_adds(&m->sql, " AND predicate = ");
		keel_mysql_add_str(m, &m->sql, q->predicate);
		keel_mysql_key_filter(m, "value_key", "value", q->value);
	} else if (q->kind.ptr) {
		keel_mysql_key_filter(m, "kind_key", "kind", q->kind);
	}
	if (lo.ptr) {
		keel_buf_adds(&m->sql, lo_inclusive ? " AND subject >= " : " AND subject > ");
		keel_mysql_add_str(m, &m->sql, lo);
	}
	if (hi.len) {
		keel_buf_adds(&m->sql, " AND subject < ");
		keel_mysql_add_str(m, &m->sql, keel_str_make(hi.data, hi.len));
	}
	keel_buf_addf(&m->sql, " ORDER BY subject LIMIT %zu", q->limit);
	keel_buf_free(&hi);
	return keel_mysql_select(m, fact ? "searching facts" : "listing entities",
				 keel_mysql_subject_row, out);
}

int keel_mysql_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			       struct keel_ptrvec *out)
{
	return keel_mysql_candidates(s, q, false, out);
}

int keel_mysql_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			     struct keel_ptrvec *out)
{
	return keel_mysql_candidates(s, q, true, out);
}
