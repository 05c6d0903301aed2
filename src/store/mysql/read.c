/*
 * read.c - reading the store: its tenants, raw scans of a tenant's
 * records (src/store/store.h, "the raw contract": assertions as written, which
 * keel_store_scan derives valid_to and closed_by from), and counts.
 */
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "parts.h"

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

/* " AND <alias>col = 'v'" if v is given. */
static void keel_mysql_filter(struct keel_mysql_store *m, const char *alias,
			      const char *col, struct keel_str v)
{
	if (!v.ptr)
		return;
	keel_buf_addf(&m->sql, " AND %s%s = ", alias, col);
	keel_mysql_add_str(m, &m->sql, v);
}

/* " AND <alias>recorded_at <= known_at" with known_at_set. */
static void keel_mysql_known(struct keel_mysql_store *m, const char *alias,
			     const struct keel_scan *q)
{
	if (!q->known_at_set)
		return;
	keel_buf_addf(&m->sql, " AND %srecorded_at <= ", alias);
	keel_buf_addi64(&m->sql, q->known_at);
}

/* " AND recorded_at = recorded" with recorded_set (entities, events). */
static void keel_mysql_recorded(struct keel_mysql_store *m, const struct keel_scan *q)
{
	if (!q->recorded_set)
		return;
	keel_buf_adds(&m->sql, " AND recorded_at = ");
	keel_buf_addi64(&m->sql, q->recorded);
}

/* "WHERE tenant = .. AND subject = .. ..." of a fact or relation scan,
 * on the columns of alias. */
static void keel_mysql_row_filters(struct keel_mysql_store *m, const char *alias,
				   const struct keel_scan *q, bool known)
{
	bool fact = q->type == KEEL_REC_FACT;
	keel_buf_addf(&m->sql, " WHERE %stenant = ", alias);
	keel_mysql_add_str(m, &m->sql, q->tenant);
	keel_mysql_filter(m, alias, "subject", q->subject);
	keel_mysql_filter(m, alias, fact ? "predicate" : "relation", q->name);
	if (!fact)
		keel_mysql_filter(m, alias, "object", q->object);
	if (known)
		keel_mysql_known(m, alias, q);
}

/* The timeline index a scan of rows goes through: the incoming-relations
 * index when only the object is given, else the timeline index. */
static const char *keel_mysql_row_index(const struct keel_scan *q)
{
	if (q->type == KEEL_REC_FACT)
		return "keel_facts_from";
	return q->object.ptr && !q->subject.ptr ? "keel_relations_object"
						: "keel_relations_from";
}

#define KEEL_MYSQL_FACT_COLS                                                             \
	"SELECT f.seq, f.subject, f.predicate, NULL, f.value, 0, f.valid_from, "         \
	"f.asserted_by, f.recorded_at, f.asserted_by_source FROM "
#define KEEL_MYSQL_RELATION_COLS                                                         \
	"SELECT f.seq, f.subject, f.relation, f.object, NULL, f.linked, f.valid_from, "  \
	"f.asserted_by, f.recorded_at, f.asserted_by_source FROM "

/* The timelines of an at-scan's subject or object, for the dives. */
struct keel_mysql_keys {
	struct keel_ptrvec subject, name, object; /* malloc'd keel_str each */
};

static struct keel_str *keel_mysql_key_copy(MYSQL_ROW row, const unsigned long *len,
					    unsigned i)
{
	struct keel_str *k = keel_xcalloc(1, sizeof *k + len[i] + 1);
	char *text = (char *)(k + 1);
	if (row[i])
		memcpy(text, row[i], len[i]);
	*k = row[i] ? keel_str_make(text, len[i]) : KEEL_STR_NULL;
	return k;
}

static int keel_mysql_key_row(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
			      const unsigned long *len, unsigned ncols)
{
	(void)m;
	struct keel_mysql_keys *k = ud;
	keel_ptrvec_push(&k->subject, keel_mysql_key_copy(row, len, 1));
	keel_ptrvec_push(&k->name, keel_mysql_key_copy(row, len, 2));
	keel_ptrvec_push(&k->object,
			 ncols > 3 ? keel_mysql_key_copy(row, len, 3)
				   : keel_xcalloc(1, sizeof(struct keel_str)));
	return 0;
}

static void keel_mysql_keys_free(struct keel_mysql_keys *k)
{
	struct keel_ptrvec *v[] = {&k->subject, &k->name, &k->object};
	for (size_t i = 0; i < 3; i++) {
		for (size_t j = 0; j < v[i]->len; j++)
			free(v[i]->items[j]);
		keel_ptrvec_free(v[i]);
	}
}

/*
 * Rows valid at `at` of one subject's (or object's) timelines: per
 * timeline the last row starting at or before `at` and the row after it
 * (src/store/store.h). First the timelines, by a loose scan of the index (one
 * entry a timeline, which the optimizer takes knowing the index's
 * statistics); then per timeline two dives on the timeline index,
 * backwards from `at` and forwards after it, with the key as literals so
 * that each is a range read of one entry (with the key taken from another
 * table the server walks the whole timeline instead: measured, 10 000
 * entries for a timeline of 10 000 rows). However long a timeline's
 * history, a show or a why reads a few entries of it. With known_at, a
 * dive skips the rows recorded later. Returns 0 with the statement in
 * m->sql, 1 when the subject has no timelines (nothing to read), 2 when
 * the dives would not fit in one statement (the caller then reads the
 * rows whole), or an error.
 */
static int keel_mysql_at_scan(struct keel_mysql_store *m, const struct keel_scan *q)
{
	bool fact = q->type == KEEL_REC_FACT;
	const char *table = fact ? "keel_fact_rows" : "keel_relation_rows";
	const char *name = fact ? "predicate" : "relation";
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	/* the tenant too: a loose scan needs a prefix of the index */
	keel_buf_addf(b,
		      "SELECT DISTINCT y.tenant, y.subject, y.%s%s FROM %s y FORCE INDEX (%s)",
		      name, fact ? "" : ", y.object", table, keel_mysql_row_index(q));
	keel_mysql_row_filters(m, "y.", q, false);
	struct keel_mysql_keys k = {0};
	int rc = keel_mysql_select(m, "finding the timelines", keel_mysql_key_row, &k);
	if (rc == 0 && !k.subject.len)
		rc = 1;
	keel_buf_reset(b);
	for (size_t i = 0; rc == 0 && i < k.subject.len; i++) {
		for (int half = 0; half < 2; half++) {
			keel_buf_adds(b, i || half ? " UNION ALL (" : "(");
			keel_buf_adds(b, fact ? KEEL_MYSQL_FACT_COLS : KEEL_MYSQL_RELATION_COLS);
			keel_buf_addf(b, "%s f FORCE INDEX (%s) WHERE f.tenant = ", table,
				      fact ? "keel_facts_from" : "keel_relations_from");
			keel_mysql_add_str(m, b, q->tenant);
			keel_mysql_filter(m, "f.", "subject",
					  *(struct keel_str *)k.subject.items[i]);
			keel_mysql_filter(m, "f.", name, *(struct keel_str *)k.name.items[i]);
			if (!fact)
				keel_mysql_filter(m, "f.", "object",
						  *(struct keel_str *)k.object.items[i]);
			keel_buf_adds(b, half ? " AND f.valid_from > "
					      : " AND f.valid_from <= ");
			keel_buf_addi64(b, q->at);
			keel_mysql_known(m, "f.", q);
			keel_buf_adds(b, half ? " ORDER BY f.valid_from, f.seq LIMIT 1)"
					      : " ORDER BY f.valid_from DESC, f.seq DESC "
						"LIMIT 1)");
		}
		if (b->len + 1024 > m->packet)
			rc = 2;
	}
	/* subject, name, object, valid_from, seq */
	keel_buf_adds(b, " ORDER BY 2, 3, 4, 7, 1");
	keel_mysql_keys_free(&k);
	return rc;
}

static void keel_mysql_rows_scan(struct keel_mysql_store *m, const struct keel_scan *q)
{
	bool fact = q->type == KEEL_REC_FACT;
	struct keel_buf *b = &m->sql;
	keel_buf_adds(b, fact ? KEEL_MYSQL_FACT_COLS "keel_fact_rows f"
			      : KEEL_MYSQL_RELATION_COLS "keel_relation_rows f");
	/* a subject's or an object's rows through their index; a whole
	 * tenant as the optimizer likes */
	if (q->subject.ptr || q->object.ptr)
		keel_buf_addf(b, " FORCE INDEX (%s)", keel_mysql_row_index(q));
	keel_mysql_row_filters(m, "f.", q, true);
	keel_buf_adds(b, fact ? " ORDER BY f.subject, f.predicate, f.valid_from, f.seq"
			      : " ORDER BY f.subject, f.relation, f.object, f.valid_from, "
				"f.seq");
}

static void keel_mysql_record(const struct keel_scan *q, MYSQL_ROW row,
			      const unsigned long *len, struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = q->type;
	r->tenant = q->tenant;
	r->valid_to = KEEL_TIME_INF;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		break; /* keel_mysql_entities */
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		r->seq = keel_mysql_i64(row[0], len[0]);
		r->subject = keel_mysql_col(row, len, 1);
		r->name = keel_mysql_col(row, len, 2);
		r->object = keel_mysql_col(row, len, 3);
		r->value = keel_mysql_col(row, len, 4);
		r->linked = row[5] && row[5][0] == '1';
		r->valid_from = keel_mysql_i64(row[6], len[6]);
		r->asserted_by.id = keel_mysql_col(row, len, 7);
		r->recorded_at = keel_mysql_i64(row[8], len[8]);
		r->asserted_by.source = keel_mysql_col(row, len, 9);
		break;
	case KEEL_REC_EVENT:
		r->seq = keel_mysql_i64(row[0], len[0]);
		r->id = keel_mysql_col(row, len, 1);
		r->event_type = keel_mysql_col(row, len, 2);
		r->time = keel_mysql_i64(row[3], len[3]);
		r->hash = keel_mysql_u64(row[4], len[4]);
		r->envelope = keel_mysql_col(row, len, 5);
		r->recorded_at = keel_mysql_i64(row[6], len[6]);
		r->source = keel_mysql_col(row, len, 7);
		break;
	}
}

/* An entity being aggregated from its mentions (docs/semantics.md,
 * "Entities"): first_seen the least, last_seen the greatest, the kind of
 * the mention with the least kind_time that gives one, the later mention
 * on a tie (mentions come in seq order); recorded_at the latest. */
struct keel_mysql_entity {
	struct keel_record r;
	struct keel_buf subject, kind;
	bool open, has_kind;
};

static void keel_mysql_entity_add(struct keel_mysql_entity *e, MYSQL_ROW row,
				  const unsigned long *len)
{
	int64_t kind_time = keel_mysql_i64(row[2], len[2]);
	int64_t first = keel_mysql_i64(row[3], len[3]);
	int64_t last = keel_mysql_i64(row[4], len[4]);
	int64_t recorded = keel_mysql_i64(row[5], len[5]);
	if (!e->open) {
		keel_buf_reset(&e->subject);
		keel_buf_add(&e->subject, row[0], len[0]);
		e->r.first_seen = first;
		e->r.last_seen = last;
		e->r.recorded_at = recorded;
		e->has_kind = false;
		e->open = true;
	} else {
		if (first < e->r.first_seen)
			e->r.first_seen = first;
		if (last > e->r.last_seen)
			e->r.last_seen = last;
		if (recorded > e->r.recorded_at)
			e->r.recorded_at = recorded;
	}
	if (row[1] && (!e->has_kind || kind_time <= e->r.kind_time)) {
		keel_buf_reset(&e->kind);
		keel_buf_add(&e->kind, row[1], len[1]);
		e->r.kind_time = kind_time;
		e->has_kind = true;
	}
}

static int keel_mysql_entity_emit(struct keel_mysql_entity *e, keel_scan_fn fn, void *ud)
{
	if (!e->open)
		return 0;
	e->open = false;
	e->r.subject = keel_str_make(e->subject.data ? e->subject.data : "", e->subject.len);
	e->r.kind = e->has_kind ? keel_str_make(e->kind.data ? e->kind.data : "", e->kind.len)
				: KEEL_STR_NULL;
	if (!e->has_kind)
		e->r.kind_time = 0;
	return fn(ud, &e->r);
}

/* Runs the scan in m->sql and hands its records to fn: a scan of a whole
 * tenant streams its result; a narrow one is read whole so that its
 * callback may query the store again. */
int keel_mysql_scan_run(struct keel_mysql_store *m, const struct keel_scan *q,
			keel_scan_fn fn, void *ud)
{
	int rc = keel_mysql_run(m, m->sql.data, m->sql.len, "scan");
	if (rc)
		return rc;
	bool narrow = q->subject.ptr || q->object.ptr || q->event_id.ptr;
	MYSQL_RES *res = narrow ? mysql_store_result(m->db) : mysql_use_result(m->db);
	if (!res)
		return keel_mysql_fail(m, "scan");
	m->streaming = !narrow;
	MYSQL_ROW row;
	struct keel_mysql_entity e = {.r = {.type = KEEL_REC_ENTITY,
					    .tenant = q->tenant,
					    .valid_to = KEEL_TIME_INF}};
	keel_buf_init(&e.subject);
	keel_buf_init(&e.kind);
	struct keel_record r;
	while (rc == 0 && (row = mysql_fetch_row(res))) {
		const unsigned long *len = mysql_fetch_lengths(res);
		if (q->type != KEEL_REC_ENTITY) {
			keel_mysql_record(q, row, len, &r);
			rc = fn(ud, &r);
			continue;
		}
		if (e.open && (e.subject.len != len[0] ||
			       memcmp(e.subject.data, row[0], len[0]) != 0))
			rc = keel_mysql_entity_emit(&e, fn, ud);
		if (rc == 0)
			keel_mysql_entity_add(&e, row, len);
	}
	/* mysql_fetch_row ends with NULL on the last row and on an error. */
	int err = rc == 0 && mysql_errno(m->db) ? keel_mysql_fail(m, "scan") : 0;
	mysql_free_result(res);
	m->streaming = false;
	if (rc == 0 && err == 0)
		rc = keel_mysql_entity_emit(&e, fn, ud);
	keel_buf_free(&e.subject);
	keel_buf_free(&e.kind);
	return rc ? rc : err;
}

/* Records as the raw contract of src/store/store.h has them. Strings compare as
 * the VARBINARY columns do, bytewise, shorter first on a common prefix,
 * exactly as keel_str_cmp; seq orders the rest in arrival order. */
int keel_mysql_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud)
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	switch (q->type) {
	case KEEL_REC_ENTITY:
		/* the mentions in primary-key order, (subject, seq): one pass
		 * aggregates them */
		keel_buf_adds(b, "SELECT subject, kind, kind_time, first_seen, "
				 "last_seen, recorded_at FROM keel_entity_mentions "
				 "WHERE tenant = ");
		keel_mysql_add_str(m, b, q->tenant);
		keel_mysql_filter(m, "", "subject", q->subject);
		keel_mysql_known(m, "", q);
		keel_mysql_recorded(m, q);
		keel_buf_adds(b, " ORDER BY subject, seq");
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		if (q->at_set && (q->subject.ptr || q->object.ptr)) {
			int rc = keel_mysql_at_scan(m, q);
			if (rc == 0)
				break;
			if (rc != 2)
				return rc == 1 ? 0 : rc; /* 1: no timelines */
		}
		/* the rows whole (a tenant's: keel_store_scan derives them
		 * all and keeps those valid at `at`) */
		keel_buf_reset(b);
		keel_mysql_rows_scan(m, q);
		break;
	case KEEL_REC_EVENT:
		keel_buf_adds(b, "SELECT seq, id, type, time, hash, envelope, "
				 "recorded_at, source FROM keel_events WHERE tenant = ");
		keel_mysql_add_str(m, b, q->tenant);
		if (q->event_id.ptr)
			keel_mysql_filter(m, "", "source", q->event_source);
		keel_mysql_filter(m, "", "id", q->event_id);
		keel_mysql_known(m, "", q);
		keel_mysql_recorded(m, q);
		keel_buf_adds(b, " ORDER BY seq");
		break;
	}
	return keel_mysql_scan_run(m, q, fn, ud);
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

int keel_mysql_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		      uint64_t out[4])
{
	struct keel_mysql_store *m = keel_mysql_downcast(s);
	static const char *const counted[] = {
	    "COUNT(DISTINCT subject) FROM keel_entity_mentions", "COUNT(*) FROM keel_fact_rows",
	    "COUNT(*) FROM keel_relation_rows", "COUNT(*) FROM keel_events"};
	memset(out, 0, 4 * sizeof *out);
	struct keel_buf *b = &m->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT ");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(counted); i++) {
		keel_buf_addf(b, "%s(SELECT %s WHERE tenant = ", i ? "," : "", counted[i]);
		keel_mysql_add_str(m, b, tenant);
		if (known_at != KEEL_TIME_INF) {
			keel_buf_adds(b, " AND recorded_at <= ");
			keel_buf_addi64(b, known_at);
		}
		keel_buf_addc(b, ')');
	}
	return keel_mysql_select(m, "counting rows", keel_mysql_counts_row, out);
}
