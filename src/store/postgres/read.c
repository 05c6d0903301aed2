/*
 * read.c - reading the store: its tenants, raw scans of a tenant's records
 * (src/store.h, "the raw contract": assertions as written, which
 * keel_store_scan derives valid_to and closed_by from), and counts.
 *
 * Every value comes back in binary (text as its bytes, bigint as eight
 * bytes), every parameter goes in as one. A scan of a whole tenant streams
 * its rows (libpq's single-row mode); a narrow one (a subject, an object,
 * an event) is read whole, so that its callback may query the store again.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ------------------------------------------------------------- tenants */

/* PostgreSQL has no loose index scan: the distinct tenants are walked as
 * one dive on the log's key per tenant (a recursive query), not a read
 * of every event. */
int keel_pg_tenants(struct keel_store *s, struct keel_ptrvec *out)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	PGresult *r;
	int rc =
	    keel_pg_exec(g,
			 "WITH RECURSIVE t(tenant) AS ("
			 "(SELECT tenant FROM keel_events ORDER BY tenant LIMIT 1) "
			 "UNION ALL SELECT (SELECT e.tenant FROM keel_events e WHERE "
			 "e.tenant > t.tenant ORDER BY e.tenant LIMIT 1) FROM t WHERE "
			 "t.tenant IS NOT NULL) "
			 "SELECT tenant FROM t WHERE tenant IS NOT NULL",
			 NULL, "listing tenants", &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r); i++) {
		struct keel_str t = keel_pg_str(r, i, 0);
		keel_ptrvec_push(out, keel_xstrndup(t.ptr, t.len));
	}
	PQclear(r);
	return 0;
}

/* ---------------------------------------------------------------- scans */

/* A statement being built with its parameters: "$N" for each value
 * added. */
struct keel_pg_query {
	struct keel_buf *b;
	struct keel_pg_params p;
};

static void keel_pg_q_str(struct keel_pg_query *q, struct keel_str v)
{
	keel_pg_param_str(&q->p, v);
	keel_buf_addf(q->b, "$%d", q->p.n);
}

static void keel_pg_q_i64(struct keel_pg_query *q, int64_t v)
{
	keel_pg_param_i64(&q->p, v);
	keel_buf_addf(q->b, "$%d", q->p.n);
}

/* Parameter numbers of a row scan's values, each added once. */
struct keel_pg_row_params {
	int tenant, subject, name, object, at, known;
};

static int keel_pg_add_param(struct keel_pg_query *q, struct keel_str v)
{
	keel_pg_param_str(&q->p, v);
	return q->p.n;
}

#define KEEL_PG_FACT_COLS                                                                \
	"seq, subject, predicate, NULL::text AS object, value, false AS linked, "        \
	"valid_from, asserted_by, recorded_at, asserted_by_source"
#define KEEL_PG_RELATION_COLS                                                            \
	"seq, subject, relation, object, NULL::text AS value, linked, valid_from, "      \
	"asserted_by, recorded_at, asserted_by_source"

/* " AND col = $n" for each given filter of a row scan. */
static void keel_pg_row_filters(struct keel_buf *b, const struct keel_scan *q,
				const struct keel_pg_row_params *n)
{
	bool fact = q->type == KEEL_REC_FACT;
	keel_buf_addf(b, "tenant = $%d", n->tenant);
	if (n->subject)
		keel_buf_addf(b, " AND subject = $%d", n->subject);
	if (n->name)
		keel_buf_addf(b, " AND %s = $%d", fact ? "predicate" : "relation",
			      n->name);
	if (n->object)
		keel_buf_addf(b, " AND object = $%d", n->object);
}

/*
 * Rows valid at `at` of one subject's (or object's) timelines: per
 * timeline the last row starting at or before `at` and the row after it
 * (src/store.h). The timelines are found by a skip scan of the index (a
 * recursive query, one dive per timeline, since PostgreSQL has no loose
 * index scan), then each gets two dives on its index, backwards from
 * `at` and forwards after it: however long a timeline's history, a show
 * or a why reads a few entries of it. With known_at, a dive skips the
 * rows recorded later.
 */
static void keel_pg_at_scan(struct keel_pg_query *qq, const struct keel_scan *q)
{
	bool fact = q->type == KEEL_REC_FACT;
	const char *table = fact ? "keel_fact_rows" : "keel_relation_rows";
	struct keel_buf *b = qq->b;
	struct keel_pg_row_params n = {0};
	n.tenant = keel_pg_add_param(qq, q->tenant);
	if (q->subject.ptr)
		n.subject = keel_pg_add_param(qq, q->subject);
	if (q->name.ptr)
		n.name = keel_pg_add_param(qq, q->name);
	if (!fact && q->object.ptr)
		n.object = keel_pg_add_param(qq, q->object);
	keel_pg_param_i64(&qq->p, q->at);
	n.at = qq->p.n;
	if (q->known_at_set) {
		keel_pg_param_i64(&qq->p, q->known_at);
		n.known = qq->p.n;
	}
	/* The timeline's key columns the scan does not fix, in the order of
	 * the index it walks: the timeline index, or the incoming-relations
	 * index when only the object is given. */
	const char *key[2];
	int nkey = 0;
	if (fact) {
		if (!n.name)
			key[nkey++] = "predicate";
	} else if (n.subject) {
		if (!n.name)
			key[nkey++] = "relation";
		if (!n.object)
			key[nkey++] = "object";
	} else {
		key[nkey++] = "subject";
		if (!n.name)
			key[nkey++] = "relation";
	}
	if (nkey) {
		/* t(k1[, k2]): the distinct keys, in index order */
		keel_buf_addf(b,
			      "WITH RECURSIVE t(k1%s) AS ((SELECT %s%s%s FROM %s WHERE ",
			      nkey > 1 ? ", k2" : "", key[0], nkey > 1 ? ", " : "",
			      nkey > 1 ? key[1] : "", table);
		keel_pg_row_filters(b, q, &n);
		keel_buf_addf(b,
			      " ORDER BY %s%s%s LIMIT 1) UNION ALL SELECT x.* FROM t, "
			      "LATERAL (SELECT %s%s%s FROM %s WHERE ",
			      key[0], nkey > 1 ? ", " : "", nkey > 1 ? key[1] : "",
			      key[0], nkey > 1 ? ", " : "", nkey > 1 ? key[1] : "",
			      table);
		keel_pg_row_filters(b, q, &n);
		if (nkey > 1)
			keel_buf_addf(b, " AND (%s, %s) > (t.k1, t.k2)", key[0], key[1]);
		else
			keel_buf_addf(b, " AND %s > t.k1", key[0]);
		keel_buf_addf(b,
			      " ORDER BY %s%s%s LIMIT 1) x) SELECT r.* FROM t, LATERAL (",
			      key[0], nkey > 1 ? ", " : "", nkey > 1 ? key[1] : "");
	} else {
		keel_buf_adds(b, "SELECT r.* FROM (");
	}
	for (int half = 0; half < 2; half++) {
		keel_buf_addf(b, "%s(SELECT %s FROM %s WHERE ", half ? " UNION ALL " : "",
			      fact ? KEEL_PG_FACT_COLS : KEEL_PG_RELATION_COLS, table);
		keel_pg_row_filters(b, q, &n);
		for (int k = 0; k < nkey; k++)
			keel_buf_addf(b, " AND %s = t.k%d", key[k], k + 1);
		keel_buf_addf(b, " AND valid_from %s $%d", half ? ">" : "<=", n.at);
		if (n.known)
			keel_buf_addf(b, " AND recorded_at <= $%d", n.known);
		keel_buf_adds(b, half ? " ORDER BY valid_from, seq LIMIT 1)"
				      : " ORDER BY valid_from DESC, seq DESC LIMIT 1)");
	}
	/* subject, name, object, valid_from, seq */
	keel_buf_adds(b, ") r ORDER BY 2, 3, 4, 7, 1");
}

/* Every row of the scan's timelines, in timeline order. */
static void keel_pg_rows_scan(struct keel_pg_query *qq, const struct keel_scan *q)
{
	bool fact = q->type == KEEL_REC_FACT;
	struct keel_buf *b = qq->b;
	keel_buf_addf(b, "SELECT %s FROM %s WHERE tenant = ",
		      fact ? KEEL_PG_FACT_COLS : KEEL_PG_RELATION_COLS,
		      fact ? "keel_fact_rows" : "keel_relation_rows");
	keel_pg_q_str(qq, q->tenant);
	if (q->subject.ptr) {
		keel_buf_adds(b, " AND subject = ");
		keel_pg_q_str(qq, q->subject);
	}
	if (q->name.ptr) {
		keel_buf_adds(b, fact ? " AND predicate = " : " AND relation = ");
		keel_pg_q_str(qq, q->name);
	}
	if (!fact && q->object.ptr) {
		keel_buf_adds(b, " AND object = ");
		keel_pg_q_str(qq, q->object);
	}
	if (q->known_at_set) {
		keel_buf_adds(b, " AND recorded_at <= ");
		keel_pg_q_i64(qq, q->known_at);
	}
	keel_buf_adds(b, fact ? " ORDER BY subject, predicate, valid_from, seq"
			      : " ORDER BY subject, relation, object, valid_from, seq");
}

static void keel_pg_record(const struct keel_scan *q, const PGresult *res, int i,
			   struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = q->type;
	r->tenant = q->tenant;
	r->valid_to = KEEL_TIME_INF;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		break; /* keel_pg_entity_add */
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		r->seq = keel_pg_i64(res, i, 0);
		r->subject = keel_pg_str(res, i, 1);
		r->name = keel_pg_str(res, i, 2);
		r->object = keel_pg_str(res, i, 3);
		r->value = keel_pg_str(res, i, 4);
		r->linked = keel_pg_bool(res, i, 5);
		r->valid_from = keel_pg_i64(res, i, 6);
		r->asserted_by.id = keel_pg_str(res, i, 7);
		r->recorded_at = keel_pg_i64(res, i, 8);
		r->asserted_by.source = keel_pg_str(res, i, 9);
		break;
	case KEEL_REC_EVENT:
		r->seq = keel_pg_i64(res, i, 0);
		r->id = keel_pg_str(res, i, 1);
		r->event_type = keel_pg_str(res, i, 2);
		r->time = keel_pg_i64(res, i, 3);
		r->hash = (uint64_t)keel_pg_i64(res, i, 4);
		r->envelope = keel_pg_str(res, i, 5);
		r->recorded_at = keel_pg_i64(res, i, 6);
		r->source = keel_pg_str(res, i, 7);
		break;
	}
}

/* An entity being aggregated from its mentions (docs/semantics.md,
 * "Entities"): first_seen the least, last_seen the greatest, the kind of
 * the mention with the least kind_time that gives one, the later mention
 * on a tie (mentions come in seq order); recorded_at the latest. */
struct keel_pg_entity {
	struct keel_record r;
	struct keel_buf subject, kind;
	bool open, has_kind;
};

static void keel_pg_entity_add(struct keel_pg_entity *e, const PGresult *res, int i)
{
	struct keel_str subject = keel_pg_str(res, i, 0);
	struct keel_str kind = keel_pg_str(res, i, 1);
	int64_t kind_time = keel_pg_i64(res, i, 2);
	int64_t first = keel_pg_i64(res, i, 3);
	int64_t last = keel_pg_i64(res, i, 4);
	int64_t recorded = keel_pg_i64(res, i, 5);
	if (!e->open) {
		keel_buf_reset(&e->subject);
		keel_buf_add(&e->subject, subject.ptr, subject.len);
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
	if (kind.ptr && (!e->has_kind || kind_time <= e->r.kind_time)) {
		keel_buf_reset(&e->kind);
		keel_buf_add(&e->kind, kind.ptr, kind.len);
		e->r.kind_time = kind_time;
		e->has_kind = true;
	}
}

static int keel_pg_entity_emit(struct keel_pg_entity *e, keel_scan_fn fn, void *ud)
{
	if (!e->open)
		return 0;
	e->open = false;
	e->r.subject =
	    keel_str_make(e->subject.data ? e->subject.data : "", e->subject.len);
	e->r.kind = e->has_kind
			? keel_str_make(e->kind.data ? e->kind.data : "", e->kind.len)
			: KEEL_STR_NULL;
	if (!e->has_kind)
		e->r.kind_time = 0;
	return fn(ud, &e->r);
}

struct keel_pg_scan_ctx {
	const struct keel_scan *q;
	keel_scan_fn fn;
	void *ud;
	struct keel_pg_entity e;
};

/* The rows of one result, handed on. */
static int keel_pg_scan_rows(struct keel_pg_scan_ctx *c, const PGresult *res)
{
	int rc = 0;
	struct keel_record r;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		if (c->q->type != KEEL_REC_ENTITY) {
			keel_pg_record(c->q, res, i, &r);
			rc = c->fn(c->ud, &r);
			continue;
		}
		struct keel_str subject = keel_pg_str(res, i, 0);
		struct keel_pg_entity *e = &c->e;
		if (e->open && (e->subject.len != subject.len ||
				memcmp(e->subject.data, subject.ptr, subject.len) != 0))
			rc = keel_pg_entity_emit(e, c->fn, c->ud);
		if (rc == 0)
			keel_pg_entity_add(e, res, i);
	}
	return rc;
}

/* A whole tenant's rows, one result per row (single-row mode): the
 * client holds one row at a time however large the tenant. A callback
 * that stops the scan leaves the rest to be read and dropped. */
static int keel_pg_scan_stream(struct keel_pg_store *g, struct keel_pg_query *qq,
			       struct keel_pg_scan_ctx *c)
{
	static const char what[] = "scan";
	if (g->broken || g->streaming)
		return keel_store_fail(&g->base, KEEL_ESTORE,
				       "%s: the connection is not ready", what);
	int flushed = keel_pg_flush_rows(g); /* rows waiting for COPY first */
	if (flushed)
		return flushed;
	g->stats.round_trips++;
	g->base.statements++;
	if (!PQsendQueryParams(g->conn, qq->b->data, qq->p.n, qq->p.types, qq->p.values,
			       qq->p.lengths, qq->p.formats, 1))
		return keel_pg_lost(g, what);
	PQsetSingleRowMode(g->conn);
	g->streaming = true;
	int rc = 0, err = 0;
	PGresult *res;
	while ((res = PQgetResult(g->conn))) {
		ExecStatusType st = PQresultStatus(res);
		if (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK) {
			if (rc == 0 && err == 0)
				rc = keel_pg_scan_rows(c, res);
		} else if (err == 0) {
			g->streaming = false;
			err = keel_pg_result_error(g, res, what);
			g->streaming = true;
		}
		PQclear(res);
	}
	g->streaming = false;
	if (err == 0 && PQstatus(g->conn) == CONNECTION_BAD)
		err = keel_pg_lost(g, what);
	return rc ? rc : err;
}

/* Records as the raw contract of src/store.h has them. Strings compare as
 * the COLLATE "C" columns do, bytewise, shorter first on a common prefix,
 * exactly as keel_str_cmp; seq orders the rest in arrival order. */
int keel_pg_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		 void *ud)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	/* Nothing stored holds a string that is not UTF-8 text. */
	if (!keel_pg_storable(q->tenant) || !keel_pg_storable(q->subject) ||
	    !keel_pg_storable(q->name) || !keel_pg_storable(q->object) ||
	    !keel_pg_storable(q->event_id) || !keel_pg_storable(q->event_source))
		return 0;
	struct keel_pg_query qq = {.b = &g->sql};
	keel_pg_params_init(&qq.p);
	struct keel_buf *b = &g->sql;
	keel_buf_reset(b);
	bool narrow = q->subject.ptr || q->object.ptr || q->event_id.ptr;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		/* the mentions in index order, (subject, seq): one pass
		 * aggregates them */
		keel_buf_adds(b,
			      "SELECT subject, kind, kind_time, first_seen, last_seen, "
			      "recorded_at FROM keel_entity_mentions WHERE tenant = ");
		keel_pg_q_str(&qq, q->tenant);
		if (q->subject.ptr) {
			keel_buf_adds(b, " AND subject = ");
			keel_pg_q_str(&qq, q->subject);
		}
		if (q->known_at_set) {
			keel_buf_adds(b, " AND recorded_at <= ");
			keel_pg_q_i64(&qq, q->known_at);
		}
		if (q->recorded_set) {
			keel_buf_adds(b, " AND recorded_at = ");
			keel_pg_q_i64(&qq, q->recorded);
		}
		keel_buf_adds(b, " ORDER BY subject, seq");
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		if (q->at_set &&
		    (q->subject.ptr || (q->type == KEEL_REC_RELATION && q->object.ptr)))
			keel_pg_at_scan(&qq, q);
		else
			keel_pg_rows_scan(&qq, q);
		break;
	case KEEL_REC_EVENT:
		keel_buf_adds(b,
			      "SELECT seq, id, type, time, hash, envelope, recorded_at, "
			      "source FROM keel_events WHERE tenant = ");
		keel_pg_q_str(&qq, q->tenant);
		if (q->event_id.ptr) {
			keel_buf_adds(b, " AND source = ");
			keel_pg_q_str(&qq, q->event_source);
			keel_buf_adds(b, " AND id = ");
			keel_pg_q_str(&qq, q->event_id);
		}
		if (q->known_at_set) {
			keel_buf_adds(b, " AND recorded_at <= ");
			keel_pg_q_i64(&qq, q->known_at);
		}
		if (q->recorded_set) {
			keel_buf_adds(b, " AND recorded_at = ");
			keel_pg_q_i64(&qq, q->recorded);
		}
		keel_buf_adds(b, " ORDER BY seq");
		break;
	}
	struct keel_pg_scan_ctx c = {
	    .q = q,
	    .fn = fn,
	    .ud = ud,
	    .e = {.r = {.type = KEEL_REC_ENTITY,
			.tenant = q->tenant,
			.valid_to = KEEL_TIME_INF}},
	};
	keel_buf_init(&c.e.subject);
	keel_buf_init(&c.e.kind);
	int rc;
	if (narrow) {
		PGresult *res;
		rc = keel_pg_exec(g, b->data, &qq.p, "scan", &res);
		if (rc == 0) {
			rc = keel_pg_scan_rows(&c, res);
			PQclear(res);
		}
	} else {
		rc = keel_pg_scan_stream(g, &qq, &c);
	}
	if (rc == 0)
		rc = keel_pg_entity_emit(&c.e, fn, ud);
	keel_buf_free(&c.e.subject);
	keel_buf_free(&c.e.kind);
	return rc;
}

int keel_pg_scan_query(struct keel_pg_store *g, struct keel_buf *sql,
		       const struct keel_pg_params *p, const struct keel_scan *q,
		       keel_scan_fn fn, void *ud)
{
	struct keel_pg_query qq = {.b = sql, .p = *p};
	/* integers point into the copy's own buffers */
	for (int i = 0; i < p->n; i++)
		if (p->values[i] == p->ints[i])
			qq.p.values[i] = qq.p.ints[i];
	struct keel_pg_scan_ctx c = {
	    .q = q,
	    .fn = fn,
	    .ud = ud,
	    .e = {.r = {.type = KEEL_REC_ENTITY, .tenant = q->tenant, .valid_to = KEEL_TIME_INF}},
	};
	keel_buf_init(&c.e.subject);
	keel_buf_init(&c.e.kind);
	int rc = keel_pg_scan_stream(g, &qq, &c);
	if (rc == 0)
		rc = keel_pg_entity_emit(&c.e, fn, ud);
	keel_buf_free(&c.e.subject);
	keel_buf_free(&c.e.kind);
	return rc;
}

/* --------------------------------------------------------------- counts */

int keel_pg_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		   uint64_t out[4])
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	static const char *const counted[] = {
	    "count(DISTINCT subject) FROM keel_entity_mentions",
	    "count(*) FROM keel_fact_rows", "count(*) FROM keel_relation_rows",
	    "count(*) FROM keel_events"};
	memset(out, 0, 4 * sizeof *out);
	if (!keel_pg_storable(tenant))
		return 0;
	struct keel_buf *b = &g->sql;
	keel_buf_reset(b);
	keel_buf_adds(b, "SELECT ");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(counted); i++) {
		keel_buf_addf(b, "%s(SELECT %s WHERE tenant = $1%s)", i ? "," : "",
			      counted[i],
			      known_at != KEEL_TIME_INF ? " AND recorded_at <= $2" : "");
	}
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	keel_pg_param_str(&p, tenant);
	if (known_at != KEEL_TIME_INF)
		keel_pg_param_i64(&p, known_at);
	PGresult *r;
	int rc = keel_pg_exec(g, b->data, &p, "counting rows", &r);
	if (rc)
		return rc;
	for (int i = 0; i < 4 && i < PQnfields(r); i++)
		out[i] = (uint64_t)keel_pg_i64(r, 0, i);
	PQclear(r);
	return 0;
}
