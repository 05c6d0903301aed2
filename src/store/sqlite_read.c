/*
 * sqlite_read.c - reading the SQLite store: tenants, scans in the dump's
 * order (one cached statement per record type and filters), counts.
 */
#include "sqlite_store.h"

/* ------------------------------------------------------------- reading */

/* Drops the filters a record type does not have. */
static unsigned keel_sqlite_scan_mask(const struct keel_scan *q)
{
	unsigned m = 0;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		m = q->subject.ptr ? KEEL_SF_SUBJECT : 0;
		break;
	case KEEL_REC_RELATION:
		m |= q->object.ptr ? KEEL_SF_OBJECT : 0;
		__attribute__((fallthrough));
	case KEEL_REC_FACT:
		m |= q->subject.ptr ? KEEL_SF_SUBJECT : 0;
		m |= q->name.ptr ? KEEL_SF_NAME : 0;
		m |= q->at_set ? KEEL_SF_AT : 0;
		break;
	case KEEL_REC_EVENT:
		m = q->event_id.ptr ? KEEL_SF_EVENT_ID : 0;
		break;
	}
	return m;
}

static void keel_sqlite_scan_sql(struct keel_buf *b, enum keel_record_type type,
				 unsigned m)
{
	static const char *const select[] = {
	    [KEEL_REC_ENTITY] = "SELECT tenant, subject, kind, kind_time, first_seen, "
				"last_seen FROM entities",
	    [KEEL_REC_FACT] = "SELECT tenant, subject, predicate, value, valid_from, "
			      "valid_to, asserted_by, closed_by, seq FROM facts",
	    [KEEL_REC_RELATION] = "SELECT tenant, subject, relation, object, linked, "
				  "valid_from, valid_to, asserted_by, closed_by, seq "
				  "FROM relations",
	    /* The log is read in rowid (arrival) order with no sort; one
	     * event by id is found through event_ids (below). */
	    [KEEL_REC_EVENT] = "SELECT tenant, id, type, time, envelope, hash, seq "
			       "FROM events",
	};
	static const char *const order[] = {
	    [KEEL_REC_ENTITY] = " ORDER BY subject",
	    [KEEL_REC_FACT] = " ORDER BY subject, predicate, valid_from, valid_to, "
			      "asserted_by, seq",
	    [KEEL_REC_RELATION] = " ORDER BY subject, relation, object, valid_from, "
				  "valid_to, asserted_by, seq",
	    [KEEL_REC_EVENT] = " ORDER BY seq",
	};
	keel_buf_adds(b, select[type]);
	if (m & KEEL_SF_EVENT_ID)
		keel_buf_adds(b, " WHERE seq = (SELECT seq FROM event_ids "
				 "WHERE tenant = ?1 AND id = ?6) AND tenant = ?1");
	else
		keel_buf_adds(b, " WHERE tenant = ?1");
	if (m & KEEL_SF_SUBJECT)
		keel_buf_adds(b, " AND subject = ?2");
	if (m & KEEL_SF_NAME)
		keel_buf_adds(b, type == KEEL_REC_FACT ? " AND predicate = ?3"
						       : " AND relation = ?3");
	if (m & KEEL_SF_OBJECT)
		keel_buf_adds(b, " AND object = ?4");
	if (m & KEEL_SF_AT)
		keel_buf_adds(b, " AND valid_from <= ?5 AND valid_to > ?5");
	keel_buf_adds(b, order[type]);
}

static void keel_sqlite_scan_record(sqlite3_stmt *st, enum keel_record_type type,
				    struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = type;
	r->tenant = keel_sqlite_col_str(st, 0);
	switch (type) {
	case KEEL_REC_ENTITY:
		r->subject = keel_sqlite_col_str(st, 1);
		r->kind = keel_sqlite_col_str(st, 2);
		r->kind_time = sqlite3_column_int64(st, 3);
		r->first_seen = sqlite3_column_int64(st, 4);
		r->last_seen = sqlite3_column_int64(st, 5);
		break;
	case KEEL_REC_FACT:
		r->subject = keel_sqlite_col_str(st, 1);
		r->name = keel_sqlite_col_str(st, 2);
		r->value = keel_sqlite_col_str(st, 3);
		r->valid_from = sqlite3_column_int64(st, 4);
		r->valid_to = sqlite3_column_int64(st, 5);
		r->asserted_by = keel_sqlite_col_str(st, 6);
		r->closed_by = keel_sqlite_col_str(st, 7);
		r->seq = sqlite3_column_int64(st, 8);
		break;
	case KEEL_REC_RELATION:
		r->subject = keel_sqlite_col_str(st, 1);
		r->name = keel_sqlite_col_str(st, 2);
		r->object = keel_sqlite_col_str(st, 3);
		r->linked = sqlite3_column_int64(st, 4) != 0;
		r->valid_from = sqlite3_column_int64(st, 5);
		r->valid_to = sqlite3_column_int64(st, 6);
		r->asserted_by = keel_sqlite_col_str(st, 7);
		r->closed_by = keel_sqlite_col_str(st, 8);
		r->seq = sqlite3_column_int64(st, 9);
		break;
	case KEEL_REC_EVENT:
		r->id = keel_sqlite_col_str(st, 1);
		r->event_type = keel_sqlite_col_str(st, 2);
		r->time = sqlite3_column_int64(st, 3);
		r->envelope = keel_sqlite_col_str(st, 4);
		r->hash = (uint64_t)sqlite3_column_int64(st, 5);
		r->seq = sqlite3_column_int64(st, 6);
		break;
	}
}

int keel_sqlite_scan(struct keel_store *bs, const struct keel_scan *q, keel_scan_fn fn,
		     void *ud)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if ((unsigned)q->type > KEEL_REC_EVENT || !q->tenant.ptr)
		return keel_store_fail(bs, KEEL_EINVAL, "scan: no record type or tenant");
	unsigned m = keel_sqlite_scan_mask(q);
	sqlite3_stmt *st = s->scan[q->type][m];
	/* A callback may scan again; a statement already running is not
	 * reset under it: the nested scan gets a statement of its own. */
	bool own = st && s->scan_busy[q->type][m];
	if (!st || own) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_sqlite_scan_sql(&b, q->type, m);
		int rc = keel_sqlite_prepare(s, b.data, b.len, &st);
		keel_buf_free(&b);
		if (rc)
			return rc;
		if (!own)
			s->scan[q->type][m] = st;
	}
	keel_sqlite_bind_str(s, st, KEEL_SP_TENANT, q->tenant);
	if (m & KEEL_SF_SUBJECT)
		keel_sqlite_bind_str(s, st, KEEL_SP_SUBJECT, q->subject);
	if (m & KEEL_SF_NAME)
		keel_sqlite_bind_str(s, st, KEEL_SP_NAME, q->name);
	if (m & KEEL_SF_OBJECT)
		keel_sqlite_bind_str(s, st, KEEL_SP_OBJECT, q->object);
	if (m & KEEL_SF_AT)
		keel_sqlite_bind_i64(s, st, KEEL_SP_AT, q->at);
	if (m & KEEL_SF_EVENT_ID)
		keel_sqlite_bind_str(s, st, KEEL_SP_EVENT_ID, q->event_id);

	int rc = keel_sqlite_start(s, st), stop = 0;
	if (!rc) {
		if (!own)
			s->scan_busy[q->type][m] = true;
		struct keel_record r;
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			keel_sqlite_scan_record(st, q->type, &r);
			stop = fn(ud, &r);
		}
		rc = stop ? (sqlite3_reset(st), 0) : keel_sqlite_finish(s, st, rc);
		if (!own)
			s->scan_busy[q->type][m] = false;
	}
	sqlite3_clear_bindings(st);
	if (own)
		sqlite3_finalize(st);
	return rc ? rc : stop;
}

/* Tenants of all four tables, each found by hopping through its index
 * with min(tenant) > previous: one seek per tenant, not a scan of rows. */
#define KEEL_SQ_TENANTS_OF(name, table)                                                  \
	name "(x) AS (SELECT (SELECT min(tenant) FROM " table ") UNION ALL "             \
	     "SELECT (SELECT min(tenant) FROM " table " WHERE tenant > " name ".x) "     \
	     "FROM " name " WHERE " name ".x IS NOT NULL)"

/* The log's tenants are those of event_ids (every event has its id row). */
/* clang-format off */
#define KEEL_SQ_TENANTS                                                    \
	"WITH RECURSIVE "                                                  \
	KEEL_SQ_TENANTS_OF("a", "event_ids") ", "                          \
	KEEL_SQ_TENANTS_OF("b", "entities") ", "                           \
	KEEL_SQ_TENANTS_OF("c", "facts") ", "                              \
	KEEL_SQ_TENANTS_OF("d", "relations")                               \
	" SELECT x FROM a WHERE x IS NOT NULL"                             \
	" UNION SELECT x FROM b WHERE x IS NOT NULL"                       \
	" UNION SELECT x FROM c WHERE x IS NOT NULL"                       \
	" UNION SELECT x FROM d WHERE x IS NOT NULL ORDER BY 1"
/* clang-format on */

int keel_sqlite_tenants(struct keel_store *bs, struct keel_ptrvec *out)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(s, &s->tenants, KEEL_SQ_TENANTS);
	if (rc || (rc = keel_sqlite_start(s, s->tenants)))
		return rc;
	while ((rc = sqlite3_step(s->tenants)) == SQLITE_ROW) {
		struct keel_str t = keel_sqlite_col_str(s->tenants, 0);
		keel_ptrvec_push(out, keel_xstrndup(t.ptr ? t.ptr : "", t.len));
	}
	return keel_sqlite_finish(s, s->tenants, rc);
}

int keel_sqlite_counts(struct keel_store *bs, struct keel_str tenant, uint64_t out[4])
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->counts,
	    "SELECT (SELECT count(*) FROM entities WHERE tenant = ?1), "
	    "(SELECT count(*) FROM facts WHERE tenant = ?1), "
	    "(SELECT count(*) FROM relations WHERE tenant = ?1), "
	    "(SELECT count(*) FROM event_ids WHERE tenant = ?1)");
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, s->counts, 1, tenant);
	if ((rc = keel_sqlite_start(s, s->counts)))
		return rc;
	memset(out, 0, 4 * sizeof *out);
	rc = sqlite3_step(s->counts);
	if (rc == SQLITE_ROW)
		for (int i = 0; i < 4; i++)
			out[i] = (uint64_t)sqlite3_column_int64(s->counts, i);
	return keel_sqlite_finish(s, s->counts, rc);
}
