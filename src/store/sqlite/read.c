/*
 * read.c - reading the SQLite store: tenants, raw scans (the
 * contract above struct keel_scan: rows as written, in timeline order; one
 * cached statement per record type and filters), counts.
 */
#include "parts.h"

/* ------------------------------------------------------------- reading */

/* Drops the filters a record type does not have. */
static unsigned keel_sqlite_scan_mask(const struct keel_scan *q)
{
	unsigned m = q->known_at_set ? KEEL_SF_KNOWN_AT : 0;
	switch (q->type) {
	case KEEL_REC_ENTITY:
		m |= q->subject.ptr ? KEEL_SF_SUBJECT : 0;
		m |= q->recorded_set ? KEEL_SF_RECORDED : 0;
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
		m |= q->event_id.ptr ? KEEL_SF_EVENT_ID : 0;
		m |= q->recorded_set ? KEEL_SF_RECORDED : 0;
		break;
	}
	return m;
}

/* The equality filters of a scan: tenant, and those the mask has. The
 * fact and relation rows (ids: true) name the tenant, predicate and
 * relation by id (parts.h, KEEL_SQ_ID). */
static void keel_sqlite_filters(struct keel_buf *b, bool fact, bool ids, unsigned m)
{
	keel_buf_adds(b, ids ? "tenant = " KEEL_SQ_ID("?1") : "tenant = ?1");
	if (m & KEEL_SF_SUBJECT)
		keel_buf_adds(b, " AND subject = ?2");
	if (m & KEEL_SF_NAME)
		keel_buf_adds(b, fact ? " AND predicate = " KEEL_SQ_ID("?3")
				      : " AND relation = " KEEL_SQ_ID("?3"));
	if (m & KEEL_SF_OBJECT)
		keel_buf_adds(b, " AND object = ?4");
}

static void keel_sqlite_row_filters(struct keel_buf *b, bool fact, unsigned m)
{
	keel_sqlite_filters(b, fact, true, m);
}

/* One arm of keel_sqlite_at_row: the timeline's rows that pass `bound`,
 * the last (before) or the first (after) in index order. */
static void keel_sqlite_at_arm(struct keel_buf *b, bool fact, bool before, const char *bound)
{
	keel_buf_addf(b, "(SELECT seq FROM %s WHERE tenant = " KEEL_SQ_ID("?1") " AND subject = k.s AND %s",
		      fact ? "fact_rows" : "relation_rows",
		      fact ? "predicate = k.n" : "relation = k.n AND object = k.o");
	keel_buf_adds(b, bound);
	keel_buf_adds(b, before ? " ORDER BY valid_from DESC, recorded_at DESC, seq DESC"
				: " ORDER BY valid_from, recorded_at, seq");
	keel_buf_adds(b, " LIMIT 1)");
}

/* A timeline's row just before or after `at`, as its seq: the last with
 * valid_from <= at, or the first after. (valid_from, recorded_at, seq) is
 * the index's order and, since recorded_at never decreases along seq,
 * the (valid_from, arrival) order of the timeline.
 *
 * Known at a moment K, only rows recorded by K count, and a walk along
 * the index from `at` would step over every row recorded after K (on a
 * timeline of a GPS every 10 s, tens of thousands). A row that is not
 * ahead of its own recording (valid_from <= recorded_at) and was
 * recorded by K is valid from K at the latest, so those rows are sought
 * from min(at, K) on; the rows ahead of their recording, few, have their
 * own partial index (fact_rows_ahead, relation_rows_ahead) and are
 * sought there; the row is the later (before) or earlier (after) of the
 * two. */
static void keel_sqlite_at_row(struct keel_buf *b, bool fact, unsigned m, bool before)
{
	if (!(m & KEEL_SF_KNOWN_AT)) {
		keel_sqlite_at_arm(b, fact, before,
				   before ? " AND valid_from <= ?5" : " AND valid_from > ?5");
		return;
	}
	keel_buf_addf(b, "(SELECT seq FROM %s WHERE seq IN (",
		      fact ? "fact_rows" : "relation_rows");
	keel_sqlite_at_arm(b, fact, before,
			   before ? " AND valid_from <= min(?5, ?7) AND recorded_at <= ?7"
				  : " AND valid_from > ?5 AND valid_from <= ?7 AND recorded_at <= ?7");
	keel_buf_addc(b, ',');
	keel_sqlite_at_arm(b, fact, before,
			   before ? " AND valid_from > recorded_at AND valid_from <= ?5 AND "
				    "recorded_at <= ?7"
				  : " AND valid_from > recorded_at AND valid_from > ?5 AND "
				    "recorded_at <= ?7");
	keel_buf_adds(b, before ? ") ORDER BY valid_from DESC, recorded_at DESC, seq DESC"
				: ") ORDER BY valid_from, recorded_at, seq");
	keel_buf_adds(b, " LIMIT 1)");
}

/*
 * Rows valid at a time, without reading a timeline's history: the
 * timelines the filters select are enumerated by a skip-scan (k: one
 * index seek per timeline, to the first key after the previous one), and
 * each gives its row at `at` and the row after it (two seeks). The
 * incoming direction (an object and no subject) enumerates through
 * relation_rows_object. The few rows are then sorted into the scan's
 * order.
 *
 * The next key after k is asked column by column, not as one row-value
 * comparison: SQLite 3.40 seeks "(a, b) > (?, ?)" on a alone and then
 * sorts everything after it to find the first (a scan of the tenant per
 * key), while "a = ? AND b > ? ORDER BY b LIMIT 1" stops at the first
 * index entry.
 */
struct keel_sqlite_key_col {
	const char *col, *k; /* column, and its name in k */
	unsigned fixed;	     /* the filter that fixes it */
};

static void keel_sqlite_at_sql(struct keel_buf *b, bool fact, unsigned m)
{
	const char *table = fact ? "fact_rows" : "relation_rows";
	bool incoming = !fact && (m & KEEL_SF_OBJECT) && !(m & KEEL_SF_SUBJECT);
	const struct keel_sqlite_key_col subject = {"subject", "s", KEEL_SF_SUBJECT};
	const struct keel_sqlite_key_col name = {fact ? "predicate" : "relation", "n",
						 KEEL_SF_NAME};
	const struct keel_sqlite_key_col object = {"object", "o", KEEL_SF_OBJECT};
	/* The key in the order of the index that enumerates it. */
	struct keel_sqlite_key_col key[3];
	size_t nkey = 0;
	if (fact) {
		key[nkey++] = subject;
		key[nkey++] = name;
	} else if (incoming) {
		key[nkey++] = object;
		key[nkey++] = name;
		key[nkey++] = subject;
	} else {
		key[nkey++] = subject;
		key[nkey++] = name;
		key[nkey++] = object;
	}
	/* The columns the filters leave free, in index order. */
	const struct keel_sqlite_key_col *free_cols[3];
	size_t nfree = 0;
	for (size_t i = 0; i < nkey; i++)
		if (!(m & key[i].fixed))
			free_cols[nfree++] = &key[i];

	keel_buf_adds(b, "WITH RECURSIVE k(");
	for (size_t i = 0; i < nkey; i++)
		keel_buf_addf(b, "%s%s", i ? ", " : "", key[i].k);
	keel_buf_adds(b, ") AS (SELECT ");
	for (size_t i = 0; i < nkey; i++)
		keel_buf_addf(b, "%s%s", i ? ", " : "", key[i].col);
	keel_buf_addf(b, " FROM %s WHERE seq = (SELECT seq FROM %s WHERE ", table, table);
	keel_sqlite_row_filters(b, fact, m);
	keel_buf_adds(b, " ORDER BY ");
	for (size_t i = 0; i < nkey; i++)
		keel_buf_addf(b, "%s%s", i ? ", " : "", key[i].col);
	keel_buf_adds(b, " LIMIT 1)");
	if (nfree) {
		keel_buf_adds(b, " UNION ALL SELECT ");
		for (size_t i = 0; i < nkey; i++)
			keel_buf_addf(b, "%st.%s", i ? ", " : "", key[i].col);
		keel_buf_addf(b, " FROM k CROSS JOIN %s AS t ON t.seq = coalesce(",
			      table);
		/* The deepest free column first: the next key under the same
		 * prefix, then under the next prefix, and so on. */
		for (size_t j = nfree; j-- > 0;) {
			keel_buf_addf(b, "(SELECT seq FROM %s WHERE ", table);
			keel_sqlite_row_filters(b, fact, m);
			for (size_t i = 0; i < j; i++)
				keel_buf_addf(b, " AND %s = k.%s", free_cols[i]->col,
					      free_cols[i]->k);
			keel_buf_addf(b, " AND %s > k.%s ORDER BY ", free_cols[j]->col,
				      free_cols[j]->k);
			for (size_t i = j; i < nfree; i++)
				keel_buf_addf(b, "%s%s", i > j ? ", " : "",
					      free_cols[i]->col);
			keel_buf_adds(b, " LIMIT 1)");
			keel_buf_adds(b, j ? ", " : "");
		}
		/* coalesce() takes at least two arguments */
		keel_buf_adds(b, nfree == 1 ? ", NULL)" : ")");
	}
	keel_buf_adds(b, ") ");
	/* the names joined back; the tenant is ?1's */
	keel_buf_adds(
	    b, fact ? "SELECT ?1, r.subject, " KEEL_SQ_NAME("r.predicate") ", r.value, "
		      "r.valid_from, r.asserted_by, r.seq, r.recorded_at, "
		      KEEL_SQ_NAME("r.asserted_by_source")
		    : "SELECT ?1, r.subject, " KEEL_SQ_NAME("r.relation") ", r.object, r.linked, "
		      "r.valid_from, r.asserted_by, r.seq, r.recorded_at, "
		      KEEL_SQ_NAME("r.asserted_by_source"));
	keel_buf_addf(b, " FROM k CROSS JOIN %s AS r ON r.seq IN (", table);
	keel_sqlite_at_row(b, fact, m, true);
	keel_buf_addc(b, ',');
	keel_sqlite_at_row(b, fact, m, false);
	/* 3: the name's text, which orders as the dump does (ids do not) */
	keel_buf_adds(b,
		      fact ? ") ORDER BY r.subject, 3, r.valid_from, "
			     "r.recorded_at, r.seq"
			   : ") ORDER BY r.subject, 3, r.object, r.valid_from, "
			     "r.recorded_at, r.seq");
}

static void keel_sqlite_scan_sql(struct keel_buf *b, enum keel_record_type type,
				 unsigned m)
{
	bool fact = type == KEEL_REC_FACT;
	bool rows = type == KEEL_REC_FACT || type == KEEL_REC_RELATION;
	if (rows && (m & KEEL_SF_AT)) {
		keel_sqlite_at_sql(b, fact, m);
		return;
	}
	static const char *const select[] = {
	    /* Mentions in the index's order (subject, recorded_at, ...): the
	     * index covers them, and the scan folds each subject's run. */
	    [KEEL_REC_ENTITY] = "SELECT tenant, subject, kind, kind_time, first_seen, "
				"last_seen, recorded_at, seq FROM entity_mentions",
	    /* the names as ids, their text found by keel_sqlite_timelines;
	     * the tenant is ?1's */
	    [KEEL_REC_FACT] = "SELECT ?1, subject, predicate, value, valid_from, "
			      "asserted_by, seq, recorded_at, asserted_by_source FROM fact_rows",
	    [KEEL_REC_RELATION] = "SELECT ?1, subject, relation, object, linked, valid_from, "
				  "asserted_by, seq, recorded_at, asserted_by_source FROM "
				  "relation_rows",
	    /* The log is read in rowid (arrival) order with no sort; one
	     * event by id is found through event_ids (below). */
	    [KEEL_REC_EVENT] = "SELECT tenant, id, type, time, envelope, hash, seq, "
			       "recorded_at, source FROM events",
	};
	/* Every timeline's rows contiguous, in (valid_from, arrival) order:
	 * the key index's order, no sort. Its names come in the order of
	 * their ids: keel_sqlite_timelines puts each subject's timelines in
	 * the order of their names' text. */
	static const char *const order[] = {
	    [KEEL_REC_ENTITY] = " ORDER BY subject, recorded_at",
	    [KEEL_REC_FACT] = " ORDER BY subject, predicate, valid_from, recorded_at, seq",
	    [KEEL_REC_RELATION] =
		" ORDER BY subject, relation, object, valid_from, recorded_at, seq",
	    [KEEL_REC_EVENT] = " ORDER BY seq",
	};
	keel_buf_adds(b, select[type]);
	keel_buf_adds(b, " WHERE ");
	if (m & KEEL_SF_EVENT_ID)
		keel_buf_adds(b, "seq = (SELECT seq FROM event_ids WHERE tenant = ?1 AND "
				 "source = ?8 AND id = ?6) AND ");
	keel_sqlite_filters(b, fact, rows, m);
	if (m & KEEL_SF_KNOWN_AT)
		keel_buf_adds(b, " AND recorded_at <= ?7");
	/* One transaction's events (keel forget): their seqs from the narrow
	 * event_ids, which hold recorded_at, not from a walk of the log's
	 * envelopes. */
	if ((m & KEEL_SF_RECORDED) && type == KEEL_REC_EVENT)
		keel_buf_adds(b, " AND seq IN (SELECT seq FROM event_ids WHERE tenant = ?1 "
				 "AND recorded_at = ?9)");
	else if (m & KEEL_SF_RECORDED)
		keel_buf_adds(b, " AND recorded_at = ?9");
	keel_buf_adds(b, order[type]);
}

/* Columns: tenant, subject, name, [object, linked,] value (facts),
 * valid_from, asserted_by, seq, recorded_at, asserted_by_source. valid_to and closed_by are
 * left for keel_store_scan to derive. */
static void keel_sqlite_scan_record(sqlite3_stmt *st, enum keel_record_type type,
				    struct keel_record *r)
{
	memset(r, 0, sizeof *r);
	r->type = type;
	r->tenant = keel_sqlite_col_str(st, 0);
	r->valid_to = KEEL_TIME_INF;
	int c = 1;
	switch (type) {
	case KEEL_REC_ENTITY: /* folded by keel_sqlite_scan_entities */
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		r->subject = keel_sqlite_col_str(st, c++);
		r->name = keel_sqlite_col_str(st, c++);
		if (type == KEEL_REC_FACT) {
			r->value = keel_sqlite_col_str(st, c++);
		} else {
			r->object = keel_sqlite_col_str(st, c++);
			r->linked = sqlite3_column_int64(st, c++) != 0;
		}
		r->valid_from = sqlite3_column_int64(st, c++);
		r->asserted_by.id = keel_sqlite_col_str(st, c++);
		r->seq = sqlite3_column_int64(st, c++);
		r->recorded_at = sqlite3_column_int64(st, c++);
		r->asserted_by.source = keel_sqlite_col_str(st, c);
		break;
	case KEEL_REC_EVENT:
		r->id = keel_sqlite_col_str(st, 1);
		r->event_type = keel_sqlite_col_str(st, 2);
		r->time = sqlite3_column_int64(st, 3);
		r->envelope = keel_sqlite_col_str(st, 4);
		r->hash = (uint64_t)sqlite3_column_int64(st, 5);
		r->seq = sqlite3_column_int64(st, 6);
		r->recorded_at = sqlite3_column_int64(st, 7);
		r->source = keel_sqlite_col_str(st, 8);
		break;
	}
}

/* One entity folded from its mentions (docs/semantics.md, "Entities"):
 * first_seen the least, last_seen the greatest, the kind of the mention
 * with the least kind_time that gives one (at equal kind_time the later
 * mention), recorded_at the latest. Strings are copied: the statement
 * has moved on to the next subject's first mention when it is handed on. */
struct keel_sqlite_entity_fold {
	bool any, kind_set;
	struct keel_buf subject, kind;
	int64_t kind_time, kind_seq, first_seen, last_seen, recorded_at;
};

static void keel_sqlite_fold_mention(struct keel_sqlite_entity_fold *e, sqlite3_stmt *st)
{
	struct keel_str kind = keel_sqlite_col_str(st, 2);
	int64_t kind_time = sqlite3_column_int64(st, 3);
	int64_t first_seen = sqlite3_column_int64(st, 4);
	int64_t last_seen = sqlite3_column_int64(st, 5);
	int64_t recorded_at = sqlite3_column_int64(st, 6);
	int64_t seq = sqlite3_column_int64(st, 7);
	if (!e->any) {
		struct keel_str subject = keel_sqlite_col_str(st, 1);
		keel_buf_reset(&e->subject);
		keel_buf_add(&e->subject, subject.ptr, subject.len);
		e->any = true;
		e->kind_set = false;
		e->first_seen = first_seen;
		e->last_seen = last_seen;
		e->recorded_at = recorded_at;
	} else {
		if (first_seen < e->first_seen)
			e->first_seen = first_seen;
		if (last_seen > e->last_seen)
			e->last_seen = last_seen;
		if (recorded_at > e->recorded_at)
			e->recorded_at = recorded_at;
	}
	if (kind.ptr && (!e->kind_set || kind_time < e->kind_time ||
			 (kind_time == e->kind_time && seq > e->kind_seq))) {
		keel_buf_reset(&e->kind);
		keel_buf_add(&e->kind, kind.ptr, kind.len);
		e->kind_set = true;
		e->kind_time = kind_time;
		e->kind_seq = seq;
	}
}

static int keel_sqlite_emit_entity(struct keel_sqlite_entity_fold *e,
				   struct keel_str tenant, keel_scan_fn fn, void *ud)
{
	struct keel_record r;
	memset(&r, 0, sizeof r);
	r.type = KEEL_REC_ENTITY;
	r.tenant = tenant;
	r.subject = keel_str_make(e->subject.data ? e->subject.data : "", e->subject.len);
	r.kind = e->kind_set
		     ? keel_str_make(e->kind.data ? e->kind.data : "", e->kind.len)
		     : KEEL_STR_NULL;
	r.kind_time = e->kind_set ? e->kind_time : 0;
	r.first_seen = e->first_seen;
	r.last_seen = e->last_seen;
	r.recorded_at = e->recorded_at;
	r.valid_to = KEEL_TIME_INF;
	e->any = false;
	return fn(ud, &r);
}

/*
 * The rows of a whole-timeline scan, which names its names by id in the
 * index's order (subject, name id, [object,] valid_from, ...), handed on
 * in the scan's order (subject, name text, ...): each subject's rows are
 * kept until the next subject begins, their timelines then handed on in
 * the order of their names' text (the rows of one name id are one run,
 * in order). With the name fixed by the filter there is one name, and
 * nothing is kept. Memory: the largest subject's rows, which SQLite's
 * sorter would hold as well; sorting them here costs less than SQL's
 * ORDER BY on the names' text did (docs/store-sqlite.md, "Names as
 * integers").
 */
struct keel_sqlite_kept {
	int64_t name, source, valid_from, seq, recorded_at;
	struct keel_str name_text, object, value, asserted_by;
	bool linked;
};

struct keel_sqlite_run {
	size_t first, n;
	struct keel_str name;
};

struct keel_sqlite_timelines {
	struct keel_sqlite_store *s;
	const struct keel_scan *q;
	keel_scan_fn fn;
	void *ud;
	struct keel_buf subject;
	struct keel_arena arena;
	struct keel_sqlite_kept *kept;
	size_t nkept, kept_cap;
	struct keel_sqlite_run *runs;
	size_t nruns, runs_cap;
};

static int keel_sqlite_run_cmp(const void *a, const void *b)
{
	const struct keel_sqlite_run *x = a, *y = b;
	int c = keel_str_cmp(x->name, y->name);
	return c ? c : (x->first > y->first) - (x->first < y->first);
}

/* Hands on one row: its names' text found (the source's here). */
static int keel_sqlite_timeline_row(struct keel_sqlite_timelines *t, struct keel_str subject,
				    const struct keel_sqlite_kept *k, int *stop)
{
	struct keel_record r;
	memset(&r, 0, sizeof r);
	r.type = t->q->type;
	r.tenant = t->q->tenant;
	r.valid_to = KEEL_TIME_INF;
	r.subject = subject;
	r.name = k->name_text;
	r.value = k->value;
	r.object = k->object;
	r.linked = k->linked;
	r.valid_from = k->valid_from;
	r.asserted_by.id = k->asserted_by;
	r.seq = k->seq;
	r.recorded_at = k->recorded_at;
	bool stable;
	int rc = keel_sqlite_name_of(t->s, k->source, &r.asserted_by.source, &stable);
	if (rc)
		return rc;
	*stop = t->fn(t->ud, &r);
	return 0;
}

/* The kept subject's timelines, in the order of their names' text. */
static int keel_sqlite_timelines_flush(struct keel_sqlite_timelines *t, int *stop)
{
	qsort(t->runs, t->nruns, sizeof *t->runs, keel_sqlite_run_cmp);
	struct keel_str subject =
	    keel_str_make(t->subject.data ? t->subject.data : "", t->subject.len);
	int rc = 0;
	for (size_t i = 0; !rc && !*stop && i < t->nruns; i++)
		for (size_t j = 0; !rc && !*stop && j < t->runs[i].n; j++)
			rc = keel_sqlite_timeline_row(t, subject, &t->kept[t->runs[i].first + j],
						      stop);
	t->nkept = t->nruns = 0;
	keel_arena_reset(&t->arena);
	return rc;
}

/* The row st is on, kept (its strings copied) or, with the name fixed,
 * handed on. */
static int keel_sqlite_timelines_add(struct keel_sqlite_timelines *t, sqlite3_stmt *st,
				     bool keep, int *stop)
{
	bool fact = t->q->type == KEEL_REC_FACT;
	struct keel_sqlite_kept k = {.name = sqlite3_column_int64(st, 2)};
	int c = 3;
	if (fact) {
		k.value = keel_sqlite_col_str(st, c++);
	} else {
		k.object = keel_sqlite_col_str(st, c++);
		k.linked = sqlite3_column_int64(st, c++) != 0;
	}
	k.valid_from = sqlite3_column_int64(st, c++);
	k.asserted_by = keel_sqlite_col_str(st, c++);
	k.seq = sqlite3_column_int64(st, c++);
	k.recorded_at = sqlite3_column_int64(st, c++);
	k.source = sqlite3_column_int64(st, c);
	bool stable;
	int rc = keel_sqlite_name_of(t->s, k.name, &k.name_text, &stable);
	if (rc)
		return rc;
	if (!keep)
		return keel_sqlite_timeline_row(t, keel_sqlite_col_str(st, 1), &k, stop);
	if (!stable)
		k.name_text = keel_arena_str(&t->arena, k.name_text);
	k.value = keel_arena_str(&t->arena, k.value);
	k.object = keel_arena_str(&t->arena, k.object);
	k.asserted_by = keel_arena_str(&t->arena, k.asserted_by);
	if (t->nkept == t->kept_cap) {
		t->kept_cap = t->kept_cap ? 2 * t->kept_cap : 256;
		t->kept = keel_xrealloc(t->kept, t->kept_cap * sizeof *t->kept);
	}
	if (!t->nruns || t->kept[t->nkept - 1].name != k.name) {
		if (t->nruns == t->runs_cap) {
			t->runs_cap = t->runs_cap ? 2 * t->runs_cap : 16;
			t->runs = keel_xrealloc(t->runs, t->runs_cap * sizeof *t->runs);
		}
		t->runs[t->nruns++] =
		    (struct keel_sqlite_run){.first = t->nkept, .n = 0, .name = k.name_text};
	}
	t->runs[t->nruns - 1].n++;
	t->kept[t->nkept++] = k;
	return 0;
}

/* Steps st (a whole-timeline scan of facts or relations) to its end or
 * until fn stops; returns the last step's result, *err a failure to find
 * a name. */
static int keel_sqlite_timelines(struct keel_sqlite_store *s, sqlite3_stmt *st,
				 const struct keel_scan *q, unsigned m, keel_scan_fn fn,
				 void *ud, int *stop, int *err)
{
	struct keel_sqlite_timelines t = {.s = s, .q = q, .fn = fn, .ud = ud};
	keel_buf_init(&t.subject);
	keel_arena_init(&t.arena);
	bool keep = !(m & KEEL_SF_NAME);
	int rc = SQLITE_DONE;
	*err = 0;
	while (!*err && !*stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (keep && t.nkept) {
			struct keel_str subject = keel_sqlite_col_str(st, 1);
			if (!keel_str_eq(subject, keel_str_make(t.subject.data ? t.subject.data
										: "",
								t.subject.len)))
				*err = keel_sqlite_timelines_flush(&t, stop);
		}
		if (*err || *stop)
			break;
		if (keep && !t.nkept) {
			struct keel_str subject = keel_sqlite_col_str(st, 1);
			keel_buf_reset(&t.subject);
			keel_buf_add(&t.subject, subject.ptr ? subject.ptr : "", subject.len);
		}
		*err = keel_sqlite_timelines_add(&t, st, keep, stop);
	}
	if (!*err && !*stop && rc == SQLITE_DONE && t.nkept)
		*err = keel_sqlite_timelines_flush(&t, stop);
	keel_buf_free(&t.subject);
	keel_arena_free(&t.arena);
	free(t.kept);
	free(t.runs);
	return rc;
}

/* Steps st to its end (or until fn stops): rows handed on one by one,
 * entities folded per subject. Returns the last step's result, and the
 * callback's in *stop. */
static int keel_sqlite_scan_rows(sqlite3_stmt *st, const struct keel_scan *q,
				 keel_scan_fn fn, void *ud, int *stop)
{
	int rc;
	struct keel_record r;
	if (q->type != KEEL_REC_ENTITY) {
		while (!*stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			keel_sqlite_scan_record(st, q->type, &r);
			*stop = fn(ud, &r);
		}
		return rc;
	}
	struct keel_sqlite_entity_fold e;
	memset(&e, 0, sizeof e);
	keel_buf_init(&e.subject);
	keel_buf_init(&e.kind);
	while (!*stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct keel_str subject = keel_sqlite_col_str(st, 1);
		if (e.any &&
		    !keel_str_eq(subject,
				 keel_str_make(e.subject.data ? e.subject.data : "",
					       e.subject.len)))
			*stop = keel_sqlite_emit_entity(&e, q->tenant, fn, ud);
		if (!*stop)
			keel_sqlite_fold_mention(&e, st);
	}
	if (!*stop && rc == SQLITE_DONE && e.any)
		*stop = keel_sqlite_emit_entity(&e, q->tenant, fn, ud);
	keel_buf_free(&e.subject);
	keel_buf_free(&e.kind);
	return rc;
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
	if (m & KEEL_SF_EVENT_ID) {
		keel_sqlite_bind_str(s, st, KEEL_SP_EVENT_ID, q->event_id);
		keel_sqlite_bind_str(s, st, KEEL_SP_EVENT_SOURCE, q->event_source);
	}
	if (m & KEEL_SF_KNOWN_AT)
		keel_sqlite_bind_i64(s, st, KEEL_SP_KNOWN_AT, q->known_at);
	if (m & KEEL_SF_RECORDED)
		keel_sqlite_bind_i64(s, st, KEEL_SP_RECORDED, q->recorded);

	int rc = keel_sqlite_start(s, st), stop = 0;
	if (!rc) {
		if (!own)
			s->scan_busy[q->type][m] = true;
		int err = 0;
		if ((q->type == KEEL_REC_FACT || q->type == KEEL_REC_RELATION) &&
		    !(m & KEEL_SF_AT))
			rc = keel_sqlite_timelines(s, st, q, m, fn, ud, &stop, &err);
		else
			rc = keel_sqlite_scan_rows(st, q, fn, ud, &stop);
		if (err) {
			sqlite3_reset(st);
			rc = err;
		} else
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
	KEEL_SQ_TENANTS_OF("b", "entity_mentions") ", "                    \
	KEEL_SQ_TENANTS_OF("c", "fact_rows") ", "                          \
	KEEL_SQ_TENANTS_OF("d", "relation_rows")                           \
	" SELECT x FROM a WHERE x IS NOT NULL"                             \
	" UNION SELECT x FROM b WHERE x IS NOT NULL"                       \
	" UNION SELECT " KEEL_SQ_NAME("x") " FROM c WHERE x IS NOT NULL"   \
	" UNION SELECT " KEEL_SQ_NAME("x") " FROM d WHERE x IS NOT NULL"   \
	" ORDER BY 1"
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

/* What was recorded by known_at (KEEL_TIME_INF: everything). Entities
 * are counted by a skip-scan over the subjects, each visible if its first
 * mention (the index orders a subject's mentions by recorded_at) is; rows
 * and events by their indexes, which hold recorded_at. */
int keel_sqlite_counts(struct keel_store *bs, struct keel_str tenant, int64_t known_at,
		       uint64_t out[4])
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	int rc = keel_sqlite_fixed_stmt(
	    s, &s->counts,
	    "SELECT (WITH RECURSIVE e(s) AS (SELECT (SELECT min(subject) FROM "
	    "entity_mentions WHERE tenant = ?1) UNION ALL SELECT (SELECT min(subject) "
	    "FROM entity_mentions WHERE tenant = ?1 AND subject > e.s) FROM e WHERE "
	    "e.s IS NOT NULL) SELECT count(*) FROM e WHERE e.s IS NOT NULL AND "
	    "(SELECT min(recorded_at) FROM entity_mentions WHERE tenant = ?1 AND "
	    "subject = e.s) <= ?2), "
	    "(SELECT count(*) FROM fact_rows WHERE tenant = " KEEL_SQ_ID("?1")
	    " AND recorded_at <= ?2), "
	    "(SELECT count(*) FROM relation_rows WHERE tenant = " KEEL_SQ_ID("?1")
	    " AND recorded_at <= ?2), "
	    "(SELECT count(*) FROM event_ids WHERE tenant = ?1 AND recorded_at <= ?2)");
	if (rc)
		return rc;
	keel_sqlite_bind_str(s, s->counts, 1, tenant);
	keel_sqlite_bind_i64(s, s->counts, 2, known_at);
	if ((rc = keel_sqlite_start(s, s->counts)))
		return rc;
	memset(out, 0, 4 * sizeof *out);
	rc = sqlite3_step(s->counts);
	if (rc == SQLITE_ROW)
		for (int i = 0; i < 4; i++)
			out[i] = (uint64_t)sqlite3_column_int64(s->counts, i);
	return keel_sqlite_finish(s, s->counts, rc);
}
