/*
 * test_store_sqlite.c - the SQLite store on the append-only model: schema
 * creation, versions and URLs; the migration of a schema 1 file; the
 * views of the derived rows; the plans of the very statements the store
 * prepared (no table scan, no sort); a read at a time that does not grow
 * with a timeline's history; append then scan in canonical order; raw
 * rows at a time and as known at a moment; savepoints; seen ids; lock
 * errors.
 *
 * Batches are driven here directly through the store interface with
 * hand-built events and the append builder (the same steps as the
 * ingester), so that every key, time, order and recorded_at is chosen by
 * the test.
 */
#include "support.h"
#include "event/json_write.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "write/append.h"
#include "event/batch.h"
#include "store/store.h"
#include "store/sqlite/internal.h"
#include "event/timestamp.h"
#include "util.h"

#define SEC 1000000LL

/* ------------------------------------------------------------ fixtures */

struct fixture {
	char *dir;
	char url[4300];
	char path[4200];
	struct keel_store *s;
};

static void fx_open(struct fixture *f)
{
	f->dir = keel_test_tmpdir();
	snprintf(f->path, sizeof f->path, "%s/keel.db", f->dir);
	snprintf(f->url, sizeof f->url, "sqlite:%s", f->path);
	char *err = NULL;
	int rc = keel_store_open(f->url, &f->s, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
}

static void fx_close(struct fixture *f)
{
	keel_store_close(f->s);
	keel_test_rmdir(f->dir);
	free(f->dir);
}

/* One operation of a test event. */
struct op_spec {
	enum keel_op_kind kind;
	const char *subject;
	const char *name; /* kind, predicate or relation */
	const char *object;
	const char *value; /* fact: JSON text; NULL = no value */
};

/* Hand-built events, all in one arena. */
struct events {
	struct keel_arena arena;
	struct keel_ptrvec ev;
};

static void events_init(struct events *e)
{
	memset(e, 0, sizeof *e);
	keel_arena_init(&e->arena);
}

static void events_free(struct events *e)
{
	keel_ptrvec_free(&e->ev);
	keel_arena_free(&e->arena);
}

static struct keel_str astr(struct keel_arena *a, const char *s)
{
	return s ? keel_arena_str(a, keel_str_cstr(s)) : KEEL_STR_NULL;
}

/* Adds an event with ops; the envelope text depends on id, time and salt. */
static struct keel_batch_event *add_event_salted(struct events *e, const char *tenant,
						 const char *id, int64_t t,
						 const struct op_spec *ops, size_t nops,
						 int salt)
{
	struct keel_arena *a = &e->arena;
	struct keel_batch_event *ev = keel_arena_alloc(a, sizeof *ev);
	memset(ev, 0, sizeof *ev);
	ev->tenant = astr(a, tenant);
	ev->source = astr(a, "");
	ev->id = astr(a, id);
	ev->type = astr(a, "test.event");
	ev->time = t;
	char env[512];
	int n = snprintf(env, sizeof env, "{\"id\":\"%s\",\"t\":%lld,\"salt\":%d}", id,
			 (long long)t, salt);
	ev->envelope = keel_arena_str(a, keel_str_make(env, (size_t)n));
	ev->hash = keel_hash64(ev->envelope.ptr, ev->envelope.len, 0);
	ev->status = KEEL_EV_PENDING;
	ev->ops = keel_arena_alloc(a, (nops ? nops : 1) * sizeof *ev->ops);
	ev->nops = nops;
	for (size_t i = 0; i < nops; i++) {
		struct keel_op *op = &ev->ops[i];
		memset(op, 0, sizeof *op);
		op->kind = ops[i].kind;
		op->subject = astr(a, ops[i].subject);
		op->name = astr(a, ops[i].name);
		op->object = astr(a, ops[i].object);
		op->value = astr(a, ops[i].value);
	}
	keel_ptrvec_push(&e->ev, ev);
	return ev;
}

static struct keel_batch_event *add_event(struct events *e, const char *tenant,
					  const char *id, int64_t t,
					  const struct op_spec *ops, size_t nops)
{
	return add_event_salted(e, tenant, id, t, ops, nops, 0);
}

static void add_fact(struct events *e, const char *tenant, const char *id, int64_t t,
		     const char *subject, const char *pred, const char *value)
{
	const struct op_spec op = {value ? KEEL_OP_FACT : KEEL_OP_UNSET, subject, pred,
				   NULL, value};
	add_event(e, tenant, id, t, &op, 1);
}

/* Resets every event to pending, as a fresh delivery. */
static void events_pending(struct events *e)
{
	for (size_t i = 0; i < e->ev.len; i++) {
		struct keel_batch_event *ev = e->ev.items[i];
		ev->status = KEEL_EV_PENDING;
		ev->seq = 0;
	}
}

/* One batch through the store, as the ingester does it, inside the open
 * transaction: savepoint, seen ids, append of the new events' rows and
 * mentions (recorded at recorded_at), release. Returns how many events
 * were appended. */
static size_t batch_write(struct keel_store *s, struct keel_batch_event **ev, size_t n,
			  int64_t recorded_at)
{
	assert_int_equal(keel_store_savepoint(s), 0);
	assert_int_equal(keel_store_seen_ids(s, ev, n), 0);
	struct keel_append_builder b;
	keel_append_builder_init(&b, false);
	struct keel_ptrvec acc = {0};
	for (size_t i = 0; i < n; i++) {
		if (ev[i]->status != KEEL_EV_PENDING)
			continue;
		ev[i]->status = KEEL_EV_ACCEPTED;
		ev[i]->recorded_at = recorded_at;
		keel_ptrvec_push(&acc, ev[i]);
		keel_append_add_event(&b, ev[i]);
	}
	size_t appended = acc.len;
	if (acc.len) {
		struct keel_append a =
		    keel_append_view(&b, (struct keel_batch_event **)acc.items, acc.len);
		int rc = keel_store_append(s, &a);
		if (rc)
			fprintf(stderr, "append: %s\n", keel_store_errmsg(s));
		assert_int_equal(rc, 0);
	}
	assert_int_equal(keel_store_release(s), 0);
	keel_ptrvec_free(&acc);
	keel_append_builder_free(&b);
	return appended;
}

/* All events through the store in batches of `batch`, each committed,
 * each recorded at the store's clock. */
static void drive(struct keel_store *s, struct events *e, size_t batch)
{
	struct keel_batch_event **ev = (struct keel_batch_event **)e->ev.items;
	for (size_t i = 0; i < e->ev.len; i += batch) {
		size_t m = e->ev.len - i < batch ? e->ev.len - i : batch;
		assert_int_equal(keel_store_begin(s), 0);
		batch_write(s, ev + i, m, keel_store_recorded_at(s));
		assert_int_equal(keel_store_commit(s), 0);
	}
}

/* Events [from, to) of e in one committed batch recorded at recorded_at. */
static void drive_recorded(struct keel_store *s, struct events *e, size_t from, size_t to,
			   int64_t recorded_at)
{
	assert_int_equal(keel_store_begin(s), 0);
	batch_write(s, (struct keel_batch_event **)e->ev.items + from, to - from,
		    recorded_at);
	assert_int_equal(keel_store_commit(s), 0);
}

/* ------------------------------------------------------- scan helpers */

/* An event reference: its id as JSON, after its source and ':' when it
 * has one; null for none. */
static void add_ref(struct keel_buf *b, struct keel_event_ref r)
{
	if (r.source.len) {
		keel_buf_add_json_str(b, r.source);
		keel_buf_addc(b, ':');
	}
	keel_buf_add_json_str(b, r.id);
}

/* Every record of a scan, one line each, every field shown. */
static int collect_record(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	char t1[KEEL_TIME_BUFSZ], t2[KEEL_TIME_BUFSZ];
	switch (r->type) {
	case KEEL_REC_ENTITY:
		keel_buf_adds(b, "entity ");
		keel_buf_add_json_str(b, r->subject);
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, r->kind);
		keel_time_format(r->first_seen, t1);
		keel_time_format(r->last_seen, t2);
		keel_buf_addf(b, " %s %s\n", t1, t2);
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		keel_buf_adds(b, r->type == KEEL_REC_FACT ? "fact " : "relation ");
		keel_buf_add_json_str(b, r->subject);
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, r->name);
		keel_buf_addc(b, ' ');
		if (r->type == KEEL_REC_FACT)
			keel_buf_addstr(b,
					r->value.ptr ? r->value : keel_str_cstr("null"));
		else {
			keel_buf_add_json_str(b, r->object);
			keel_buf_adds(b, r->linked ? " linked" : " unlinked");
		}
		keel_time_format(r->valid_from, t1);
		keel_time_format(r->valid_to, t2);
		keel_buf_addf(b, " [%s %s) ", t1, t2);
		add_ref(b, r->asserted_by);
		keel_buf_addc(b, ' ');
		add_ref(b, r->closed_by);
		keel_buf_addc(b, '\n');
		break;
	case KEEL_REC_EVENT:
		keel_buf_adds(b, "event ");
		add_ref(b, (struct keel_event_ref){r->source, r->id});
		keel_buf_addc(b, ' ');
		keel_buf_addstr(b, r->envelope);
		keel_buf_addc(b, '\n');
		break;
	}
	return 0;
}

static char *scan_text(struct keel_store *s, const struct keel_scan *q)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	assert_int_equal(keel_store_scan(s, q, collect_record, &b), 0);
	return b.data;
}

static char *scan_all(struct keel_store *s, const char *tenant)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	for (int t = KEEL_REC_ENTITY; t <= KEEL_REC_EVENT; t++) {
		struct keel_scan q = {.type = (enum keel_record_type)t,
				      .tenant = keel_str_cstr(tenant)};
		char *part = scan_text(s, &q);
		keel_buf_adds(&b, part);
		free(part);
	}
	return b.data;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* fact_rows with its names as text (the rows hold ids: docs/store-sqlite.md,
 * "Names as integers"), for the checks below that compare with tables of
 * text. */
#define FACT_TEXT                                                                       \
	"(SELECT r.seq AS seq, (SELECT name FROM names WHERE id = r.tenant) AS tenant, " \
	"r.subject AS subject, (SELECT name FROM names WHERE id = r.predicate) AS "     \
	"predicate, r.value AS value, r.valid_from AS valid_from, r.recorded_at AS "    \
	"recorded_at FROM fact_rows AS r)"
/* The id of a name, in SQL. */
#define NAME_ID(n) "(SELECT id FROM names WHERE name = '" n "')"

/* fact_current holds exactly each fact timeline's latest row in
 * (valid_from, recorded_at, seq) order among those whose value a search
 * can use (a string, an integer, true, false) or that have none, and
 * fact_horizon each predicate's latest valid_from, as a window over
 * fact_rows derives them here (docs/store-sqlite.md, "Current rows"): what
 * a fold of every row must leave. */
static void current_is_the_latest_row(sqlite3 *db)
{
	static const char latest[] =
	    "SELECT tenant, subject, predicate, value, valid_from, recorded_at, seq FROM "
	    "(SELECT *, row_number() OVER (PARTITION BY tenant, subject, predicate ORDER "
	    "BY valid_from DESC, recorded_at DESC, seq DESC) AS n FROM " FACT_TEXT " WHERE "
	    "value IS NULL OR value GLOB '\"*' OR value IN ('true', 'false') OR value "
	    "NOT GLOB '*[^0-9-]*') WHERE n = 1";
	static const char current[] = "SELECT tenant, subject, predicate, value, "
				      "valid_from, recorded_at, seq FROM fact_current";
	char sql[2400];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM (%s EXCEPT %s)", latest, current);
	assert_int_equal(sql_int(db, sql), 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM (%s EXCEPT %s)", current, latest);
	assert_int_equal(sql_int(db, sql), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM (SELECT tenant, predicate, "
				     "max(valid_from) AS v FROM " FACT_TEXT " GROUP BY 1, 2) "
				     "FULL JOIN fact_horizon AS h USING (tenant, predicate) "
				     "WHERE h.valid_from IS NOT v"),
			 0);
}

static void span_key_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
	(void)n;
	sqlite3_result_int64(c, keel_store_sqlite_span_key(
				    (const char *)sqlite3_value_text(v[0]),
				    (const char *)sqlite3_value_text(v[1]),
				    (const char *)sqlite3_value_text(v[2])));
}

/* fact_spans holds one entry a fact row with a value the current rows
 * keep, under its key, from its valid_from to the next row's among those
 * and the unsets (open for the last), as 32-bit floats rounded outwards:
 * within 2^-22 of the value (under two float steps) of the exact bounds,
 * never inside them. Call after a fold of every row. */
static void spans_are_the_rows(sqlite3 *db)
{
	assert_int_equal(sqlite3_create_function(db, "span_key", 3, SQLITE_UTF8, NULL,
						 span_key_fn, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(
	    sql_int(db,
		    "WITH e AS (SELECT * FROM (SELECT seq, tenant, predicate, value, "
		    "valid_from AS f, coalesce(lead(valid_from) OVER (PARTITION BY tenant, "
		    "subject, predicate ORDER BY valid_from, recorded_at, seq), "
		    "9223372036854775807) AS t FROM " FACT_TEXT " WHERE value IS NULL OR value "
		    "GLOB '\"*' OR value IN ('true', 'false') OR value NOT GLOB "
		    "'*[^0-9-]*') WHERE value IS NOT NULL) SELECT count(*) FROM e FULL JOIN "
		    "fact_spans AS s ON s.seq = e.seq WHERE e.seq IS NULL OR s.seq IS NULL OR "
		    "s.key_lo != span_key(e.tenant, e.predicate, e.value) OR s.key_hi != "
		    "s.key_lo OR s.valid_from > e.f OR s.valid_from < e.f - abs(e.f) / "
		    "4194304.0 - 1 OR s.valid_to < e.t OR s.valid_to > e.t + abs(e.t) / "
		    "4194304.0 + 1"),
	    0);
}

static int64_t watermark(sqlite3 *db)
{
	return sql_int(db, "SELECT value FROM meta WHERE key = 'fact_current_seq'");
}

/* The candidates of a search (the store's fact_subjects) as one string,
 * subjects separated by spaces; at the present unless at is given. */
static char *candidates(struct keel_store *s, const char *tenant, const char *predicate,
			const char *value, int64_t at)
{
	struct keel_candidates q = {.tenant = keel_str_cstr(tenant),
				    .predicate = keel_str_cstr(predicate),
				    .value = keel_str_cstr(value),
				    .at = at,
				    .limit = 100};
	struct keel_ptrvec out = {0};
	int rc = keel_store_fact_subjects(s, &q, &out);
	if (rc)
		fprintf(stderr, "fact_subjects: %s\n", keel_store_errmsg(s));
	assert_int_equal(rc, 0);
	struct keel_buf b;
	keel_buf_init(&b);
	for (size_t i = 0; i < out.len; i++) {
		keel_buf_adds(&b, i ? " " : "");
		keel_buf_adds(&b, out.items[i]);
		free(out.items[i]);
	}
	keel_ptrvec_free(&out);
	keel_buf_addc(&b, 0);
	return b.data;
}

#define NOW (2000000000 * SEC)

/* -------------------------------------------------------------- schema */

static void schema_is_created_on_first_use(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	keel_store_close(f.s);

	sqlite3 *db;
	assert_int_equal(sqlite3_open(f.path, &db), SQLITE_OK);
	assert_int_equal(
	    sql_int(db, "SELECT value FROM meta WHERE key = 'schema_version'"),
	    keel_store_sqlite_schema_version());
	/* events by source, tombstones, tenants' recorded cartridges */
	assert_true(keel_store_sqlite_schema_version() >= 5);
	/* the finding indexes (docs/store-sqlite.md, "The finding step") */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = "
				     "'index' AND name IN ('entity_mentions_kind', "
				     "'fact_rows_value')"),
			 2);
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
			"AND name IN ('meta', 'events', 'event_ids', 'entity_mentions', "
			"'fact_rows', 'relation_rows', 'tombstones', 'tenant_cartridges', "
			"'cartridges', 'fact_current', 'fact_horizon')"),
	    11);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = "
				     "'view' AND name IN ('entities', 'facts', "
				     "'relations')"),
			 3);
	/* The key index of each row table, the incoming direction's, the
	 * mentions', the two of finding, the two partial ones of rows ahead
	 * of their recording, the current rows' value index
	 * (docs/store-sqlite.md), none other. */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = "
				     "'index' AND name IN ('fact_rows_ahead', "
				     "'relation_rows_ahead') AND sql LIKE "
				     "'%WHERE valid_from > recorded_at'"),
			 2);
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
			"AND sql IS NOT NULL"),
	    9);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM pragma_journal_mode "
				     "WHERE journal_mode = 'wal'"),
			 1);
	sqlite3_close(db);

	/* Reopening an existing store changes nothing. */
	char *err = NULL;
	assert_int_equal(keel_store_open(f.url, &f.s, &err), 0);
	fx_close(&f);
}

static void newer_schema_is_refused(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	keel_store_close(f.s);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(f.path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "UPDATE meta SET value = 99 WHERE key = "
				      "'schema_version'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);

	char *err = NULL;
	static char dummy;
	struct keel_store *s = (struct keel_store *)(void *)&dummy; /* must become NULL */
	assert_int_equal(keel_store_open(f.url, &s, &err), KEEL_ESCHEMA);
	assert_null(s);
	char want[4400];
	snprintf(want, sizeof want,
		 "store \"%s\": schema version 99 is newer than this keel supports (%d): "
		 "upgrade keel",
		 f.url, keel_store_sqlite_schema_version());
	assert_string_equal(err, want);
	free(err);
	f.s = NULL;
	fx_close(&f);
}

static void foreign_database_is_refused(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char path[4200], url[4300];
	snprintf(path, sizeof path, "%s/other.db", dir);
	snprintf(url, sizeof url, "sqlite:%s", path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db, "CREATE TABLE orders (id INTEGER)", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	char *err = NULL;
	struct keel_store *s;
	assert_int_equal(keel_store_open(url, &s, &err), KEEL_ESCHEMA);
	char want[4500];
	snprintf(want, sizeof want,
		 "store \"%s\": not a keel database (it has a table \"orders\" and no "
		 "meta table)",
		 url);
	assert_string_equal(err, want);
	free(err);

	/* A file that is not a database at all names SQLite's reason. */
	snprintf(path, sizeof path, "%s/junk.db", dir);
	snprintf(url, sizeof url, "sqlite:%s", path);
	static const char junk[] = "this is not a database, not even close, it is text";
	keel_test_write_file(path, junk, sizeof junk - 1);
	assert_int_equal(keel_store_open(url, &s, &err), KEEL_ESTORE);
	snprintf(want, sizeof want, "sqlite \"%s\": file is not a database", path);
	assert_string_equal(err, want);
	free(err);
	keel_test_rmdir(dir);
	free(dir);
}

static void url_without_path_is_refused(void **state)
{
	(void)state;
	char *err = NULL;
	struct keel_store *s;
	assert_int_equal(keel_store_open("sqlite:", &s, &err), KEEL_EURL);
	assert_null(s);
	assert_string_equal(err, "store \"sqlite:\": missing database path (use "
				 "sqlite:PATH, e.g. sqlite:keel.db)");
	free(err);

	/* sqlite::memory: is a private in-memory database. */
	assert_int_equal(keel_store_open("sqlite::memory:", &s, &err), 0);
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e1", 10 * SEC, "a", "p", "1");
	drive(s, &e, 1);
	uint64_t counts[4];
	assert_int_equal(keel_store_counts(s, keel_str_cstr("t"), KEEL_TIME_INF, counts),
			 0);
	assert_int_equal(counts[1], 1);
	assert_int_equal(counts[3], 1);
	events_free(&e);
	keel_store_close(s);
}

/* -------------------------------------------------------------- plans */

/* Every plan line of sql, run on db. */
static char *query_plan(sqlite3 *db, const char *sql)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	char *eqp = NULL;
	assert_true(asprintf(&eqp, "EXPLAIN QUERY PLAN %s", sql) > 0);
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, eqp, -1, &st, NULL);
	if (rc)
		fprintf(stderr, "%s\n%s\n", sqlite3_errmsg(db), eqp);
	assert_int_equal(rc, SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		keel_buf_adds(&b, (const char *)sqlite3_column_text(st, 3));
		keel_buf_addc(&b, '\n');
	}
	sqlite3_finalize(st);
	free(eqp);
	return b.data;
}

/* A plan line that reads a stored table without an index. */
static bool plan_scans_a_table(const char *plan)
{
	for (const char *l = plan; *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		if (n > 5 && !strncmp(l, "SCAN ", 5)) {
			/* The VALUES list itself ("SCAN k", "SCAN 64 CONSTANT
			 * ROWS", "SCAN CONSTANT ROW") is the only thing a batch
			 * statement may scan. */
			bool values = (n == 6 && (l[5] == 'k' || l[5] == 'v')) ||
				      memmem(l, n, "CONSTANT ROW", 12) != NULL;
			if (!values)
				return true;
		}
		l += n + (end ? 1 : 0);
	}
	return false;
}

/* A store with a bit of everything (facts, links, a kind, a late event),
 * then every kind of scan, so that the store has prepared every write and
 * read statement. */
static void every_statement(struct keel_store *s)
{
	struct events e;
	events_init(&e);
	const struct op_spec link = {KEEL_OP_LINK, "driver:1", "drives", "vehicle:1",
				     NULL};
	const struct op_spec ent = {KEEL_OP_ENTITY, "vehicle:1", "vehicle", NULL, NULL};
	add_fact(&e, "t", "e1", 100 * SEC, "vehicle:1", "status", "\"idle\"");
	add_event(&e, "t", "e2", 100 * SEC, &link, 1);
	add_event(&e, "t", "e3", 100 * SEC, &ent, 1);
	add_fact(&e, "t", "e4", 300 * SEC, "vehicle:1", "status", "\"moving\"");
	add_event(&e, "t", "e5", 300 * SEC, &link, 1);
	/* late, in a later batch */
	add_fact(&e, "t", "e6", 200 * SEC, "vehicle:1", "status", "\"parked\"");
	add_event(&e, "t", "e7", 200 * SEC, &link, 1);
	drive(s, &e, 2);
	events_free(&e);

	for (int t = KEEL_REC_ENTITY; t <= KEEL_REC_EVENT; t++)
		for (int known = 0; known < 2; known++) {
			struct keel_scan q = {.type = (enum keel_record_type)t,
					      .tenant = keel_str_cstr("t"),
					      .known_at_set = known,
					      .known_at = 250 * SEC};
			free(scan_text(s, &q));
			q.subject = keel_str_cstr("vehicle:1");
			free(scan_text(s, &q));
			q.at_set = true;
			q.at = 250 * SEC;
			free(scan_text(s, &q));
			if (t == KEEL_REC_RELATION) {
				q.subject = KEEL_STR_NULL;
				q.object = keel_str_cstr("vehicle:1");
				free(scan_text(s, &q));
			}
		}
	struct keel_scan by_id = {.type = KEEL_REC_EVENT,
				  .tenant = keel_str_cstr("t"),
				  .event_source = keel_str_cstr(""),
				  .event_id = keel_str_cstr("e3")};
	char *one = scan_text(s, &by_id);
	assert_non_null(strstr(one, "event \"e3\""));
	free(one);
	uint64_t counts[4];
	assert_int_equal(keel_store_counts(s, keel_str_cstr("t"), KEEL_TIME_INF, counts),
			 0);
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(s, &tenants), 0);
	for (size_t i = 0; i < tenants.len; i++)
		free(tenants.items[i]);
	keel_ptrvec_free(&tenants);
}

/* The statements the store prepared, read off its connection. */
static struct keel_ptrvec prepared_sql(sqlite3 *db)
{
	struct keel_ptrvec sqls = {0};
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st;
	     st = sqlite3_next_stmt(db, st))
		keel_ptrvec_push(&sqls, keel_xstrdup(sqlite3_sql(st)));
	return sqls;
}

static void free_sql(struct keel_ptrvec *sqls)
{
	for (size_t i = 0; i < sqls->len; i++)
		free(sqls->items[i]);
	keel_ptrvec_free(sqls);
}

/* The write path only inserts: nothing is updated, and what it reads is
 * the seen-ids lookup (a seek in the narrow id b-tree) and, once a
 * transaction, the last seqs and recorded_at (a seek to each table's
 * end). */
static void batch_statements_only_insert(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	every_statement(f.s);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct keel_ptrvec sqls = prepared_sql(db);
	static const char *const tables[] = {"fact_rows", "relation_rows", "events",
					     "event_ids", "entity_mentions"};
	size_t inserts[KEEL_ARRAY_LEN(tables)] = {0};
	bool seen = false;
	for (size_t i = 0; i < sqls.len; i++) {
		const char *sql = sqls.items[i];
		/* the R*Tree module's own statements on its shadow tables,
		 * prepared when it connects, are not the store's */
		if (strstr(sql, "'main'.'fact_spans_"))
			continue;
		assert_null(strstr(sql, "UPDATE"));
		assert_null(strstr(sql, "REPLACE"));
		for (size_t t = 0; t < KEEL_ARRAY_LEN(tables); t++) {
			char head[64];
			snprintf(head, sizeof head, "INSERT OR FAIL INTO %s (",
				 tables[t]);
			inserts[t] += strncmp(sql, head, strlen(head)) == 0;
		}
		if (strstr(sql, "CROSS JOIN event_ids")) {
			seen = true;
			char *plan = query_plan(db, sql);
			/* seen ids read the narrow id b-tree alone, never the
			 * event rows that hold the envelopes */
			assert_non_null(strstr(plan, "SEARCH e USING PRIMARY KEY "
						     "(tenant=? AND source=? AND id=?)"));
			assert_null(strstr(plan, "events"));
			assert_false(plan_scans_a_table(plan));
			free(plan);
		}
		if (strstr(sql, "max(seq)") || strstr(sql, "ORDER BY seq DESC LIMIT 1")) {
			char *plan = query_plan(db, sql);
			assert_null(strstr(plan, "TEMP B-TREE"));
			assert_null(strstr(plan, "INDEX"));
			free(plan);
		}
	}
	assert_true(seen);
	for (size_t t = 0; t < KEEL_ARRAY_LEN(tables); t++) {
		if (!inserts[t])
			fprintf(stderr, "no insert into %s prepared\n", tables[t]);
		assert_true(inserts[t] > 0);
	}
	/* The detector itself: a plain scan is caught. */
	char *plan = query_plan(db, "SELECT * FROM fact_rows WHERE value = '1'");
	assert_true(plan_scans_a_table(plan));
	free(plan);
	/* Why seen ids join and do not use row-value IN (docs). */
	plan = query_plan(db, "SELECT * FROM event_ids WHERE (tenant, id) IN "
			      "(VALUES ('t', 'a'), ('t', 'b'))");
	assert_true(plan_scans_a_table(plan));
	free(plan);
	free_sql(&sqls);
	fx_close(&f);
}

/* Scans read the key indexes in their order, never a table without one:
 * whole-tenant scans need no sort, scans at a time only sort their few
 * rows, and every one of those seeks. */
static void scan_plans_use_the_key_order(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	every_statement(f.s);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct keel_ptrvec sqls = prepared_sql(db);
	int checked = 0, at = 0;
	for (size_t i = 0; i < sqls.len; i++) {
		const char *sql = sqls.items[i];
		bool plain = !strncmp(sql, "SELECT tenant,", 14) || !strncmp(sql, "SELECT ?1,", 10);
		bool recursive = !strncmp(sql, "WITH RECURSIVE k(", 17);
		if (!plain && !recursive)
			continue;
		char *plan = query_plan(db, sql);
		if (plan_scans_a_table(plan) && !strstr(sql, "FROM events WHERE tenant"))
			fprintf(stderr, "bad plan for %s:\n%s", sql, plan);
		if (recursive) {
			/* one seek per timeline and two per row: no history */
			assert_false(plan_scans_a_table(plan));
			assert_null(strstr(plan, "RIGHT PART OF ORDER BY"));
			assert_non_null(strstr(plan, "AND valid_from<?)"));
			assert_non_null(strstr(plan, "AND valid_from>?)"));
			assert_non_null(strstr(plan, "COVERING INDEX"));
			if (strstr(sql, "k(o, n, s)"))
				assert_non_null(
				    strstr(plan, "COVERING INDEX relation_rows_object "
						 "(tenant=? AND object=?)"));
			at++;
		} else if (strstr(sql, "FROM entity_mentions")) {
			assert_non_null(
			    strstr(plan, "SEARCH entity_mentions USING COVERING INDEX "
					 "entity_mentions_key (tenant=?"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		} else if (strstr(sql, "FROM fact_rows")) {
			assert_non_null(
			    strstr(plan, "SEARCH fact_rows USING INDEX fact_rows_key "
					 "(tenant=?"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		} else if (strstr(sql, "FROM relation_rows") &&
			   strstr(sql, "object = ?4")) {
			/* the incoming direction: its own index, then a sort
			 * of the object's rows */
			assert_non_null(strstr(plan,
					       "INDEX relation_rows_object (tenant=? "
					       "AND object=?)"));
		} else if (strstr(sql, "FROM relation_rows")) {
			assert_non_null(strstr(plan, "SEARCH relation_rows USING INDEX "
						     "relation_rows_key (tenant=?"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		} else if (strstr(sql, "event_ids")) {
			/* one event by id: a seek in event_ids, then its row */
			assert_non_null(strstr(plan, "SEARCH events USING INTEGER "
						     "PRIMARY KEY (rowid=?)"));
			assert_non_null(strstr(plan, "SEARCH event_ids USING PRIMARY "
						     "KEY (tenant=? AND source=? AND id=?)"));
			assert_false(plan_scans_a_table(plan));
		} else {
			/* the log streams in arrival order, no sort */
			assert_non_null(strstr(plan, "SCAN events"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		}
		free(plan);
		checked++;
	}
	/* at-scans: facts, relations by subject and by object, with and
	 * without known_at */
	assert_int_equal(at, 6);
	assert_true(checked >= 20);
	free_sql(&sqls);
	fx_close(&f);
}

/* -------------------------------------------------- closed rows unseen */

/* VM steps and full-scan steps of every statement of db since the last
 * call (which resets them). */
static void stmt_steps(sqlite3 *db, int64_t *vm, int64_t *fullscan)
{
	*vm = *fullscan = 0;
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st;
	     st = sqlite3_next_stmt(db, st)) {
		*vm += sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
		*fullscan += sqlite3_stmt_status(st, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1);
	}
}

/* Events e1..e<nrows> on (t, vehicle:1, status): e<i> at i s, value i. */
static void add_status_rows(struct events *e, size_t nrows)
{
	for (size_t i = 1; i <= nrows; i++) {
		char id[32], v[32];
		snprintf(id, sizeof id, "e%zu", i);
		snprintf(v, sizeof v, "%zu", i);
		add_fact(e, "t", id, (int64_t)i * SEC, "vehicle:1", "status", v);
	}
}

/* The VM steps of the statements run since the last stmt_steps (none of
 * them a full scan); closes the fixture. */
static int64_t steps_done(struct fixture *f, struct events *e, sqlite3 *db)
{
	int64_t vm, fullscan;
	stmt_steps(db, &vm, &fullscan);
	assert_int_equal(fullscan, 0);
	events_free(e);
	fx_close(f);
	return vm;
}

/* A timeline of nrows rows on (t, vehicle:1, status), at 1..nrows s, one
 * row on (vehicle:1, make) and a late row in the middle of status; then
 * the subject's facts at a time in the middle and now, the way show reads
 * them. Returns the VM steps of those reads and checks what they gave. */
static int64_t read_at_steps(size_t nrows)
{
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "make", SEC, "vehicle:1", "make", "\"Volvo\"");
	add_status_rows(&e, nrows);
	int64_t mid = (int64_t)(nrows / 2) * SEC;
	add_fact(&e, "t", "late", mid + SEC / 2, "vehicle:1", "status", "\"late\"");
	drive(f.s, &e, 5000);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	int64_t vm, fullscan;
	stmt_steps(db, &vm, &fullscan);

	char t1[KEEL_TIME_BUFSZ], t2[KEEL_TIME_BUFSZ], t3[KEEL_TIME_BUFSZ], want[512];
	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("vehicle:1"),
			      .at_set = true,
			      .at = mid + 3 * SEC / 4};
	char *got = scan_text(f.s, &q);
	keel_time_format(SEC, t1);
	keel_time_format(mid + SEC / 2, t2);
	keel_time_format(mid + SEC, t3);
	snprintf(want, sizeof want,
		 "fact \"vehicle:1\" \"make\" \"Volvo\" [%s null) \"make\" null\n"
		 "fact \"vehicle:1\" \"status\" \"late\" [%s %s) \"late\" \"e%zu\"\n",
		 t1, t2, t3, nrows / 2 + 1);
	assert_string_equal(got, want);
	free(got);
	q.at = KEEL_TIME_INF - 1;
	got = scan_text(f.s, &q);
	keel_time_format((int64_t)nrows * SEC, t2);
	snprintf(want, sizeof want,
		 "fact \"vehicle:1\" \"make\" \"Volvo\" [%s null) \"make\" null\n"
		 "fact \"vehicle:1\" \"status\" %zu [%s null) \"e%zu\" null\n",
		 t1, nrows, t2, nrows);
	assert_string_equal(got, want);
	free(got);
	return steps_done(&f, &e, db);
}

/* show and why read a subject's rows at a time with a few seeks per
 * timeline: the steps for a timeline of 20 001 rows are those of 11. */
static void reads_at_a_time_skip_the_history(void **state)
{
	(void)state;
	int64_t small = read_at_steps(10), large = read_at_steps(20000);
	fprintf(stderr, "VM steps: 11-row timeline %lld, 20 001 rows %lld\n",
		(long long)small, (long long)large);
	assert_true(large <= small + 50);
}

/* A live feed on (t, vehicle:1, status): rows at 1..nrows s, the first
 * half recorded at K, just after the last of them, the second half later;
 * and one row recorded at K whose time is ahead of K (a quarter second
 * after it, before the second half's). Read known at K at the end of
 * time, three quarters in and a quarter in: the first two walked back or
 * forward over the second half before. Returns the VM steps of those
 * reads and checks what they gave. */
static int64_t read_known_at_steps(size_t nrows)
{
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	add_status_rows(&e, nrows);
	int64_t known = (int64_t)(nrows / 2) * SEC + 1;
	int64_t ahead = known + SEC / 4;
	add_fact(&e, "t", "ahead", ahead, "vehicle:1", "status", "\"ahead\"");
	drive_recorded(f.s, &e, 0, nrows / 2, known);
	drive_recorded(f.s, &e, nrows, nrows + 1, known);
	drive_recorded(f.s, &e, nrows / 2, nrows, (int64_t)nrows * SEC + 1);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	int64_t vm, fullscan;
	stmt_steps(db, &vm, &fullscan);

	char t1[KEEL_TIME_BUFSZ], t2[KEEL_TIME_BUFSZ], want[512];
	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("vehicle:1"),
			      .at_set = true,
			      .known_at_set = true,
			      .known_at = known};
	keel_time_format(ahead, t1);
	snprintf(want, sizeof want,
		 "fact \"vehicle:1\" \"status\" \"ahead\" [%s null) \"ahead\" null\n", t1);
	const int64_t late_at[] = {KEEL_TIME_INF - 1, (int64_t)(3 * nrows / 4) * SEC};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(late_at); i++) {
		q.at = late_at[i];
		char *got = scan_text(f.s, &q);
		assert_string_equal(got, want);
		free(got);
	}
	size_t quarter = nrows / 4;
	q.at = (int64_t)quarter * SEC + SEC / 2;
	char *got = scan_text(f.s, &q);
	keel_time_format((int64_t)quarter * SEC, t1);
	keel_time_format((int64_t)(quarter + 1) * SEC, t2);
	snprintf(want, sizeof want,
		 "fact \"vehicle:1\" \"status\" %zu [%s %s) \"e%zu\" \"e%zu\"\n", quarter,
		 t1, t2, quarter, quarter + 1);
	assert_string_equal(got, want);
	free(got);
	return steps_done(&f, &e, db);
}

/* Read known at a moment, a live feed's row is sought from that moment
 * back, not from `at` over every row recorded since, and a row ahead of
 * its recording is found in its own index: the steps for 20 000 rows are
 * those of 12. */
static void reads_known_at_skip_what_came_after(void **state)
{
	(void)state;
	int64_t small = read_known_at_steps(12), large = read_known_at_steps(20000);
	fprintf(stderr, "VM steps known at: 13-row timeline %lld, 20 001 rows %lld\n",
		(long long)small, (long long)large);
	assert_true(large <= small + 50);
}

/* ------------------------------------------------- write-back and scan */

/* A story with late events, equal times, unsets and unlinks, over subjects
 * whose bytewise order differs from any locale's. */
static void story(struct events *e)
{
	events_init(e);
	/* (a, p): e5 unset before everything, e3 late, e4 at e2's time */
	add_fact(e, "t", "e1", 100 * SEC, "a", "p", "1");
	add_fact(e, "t", "e2", 300 * SEC, "a", "p", "3");
	add_fact(e, "t", "e3", 200 * SEC, "a", "p", "2");
	add_fact(e, "t", "e4", 300 * SEC, "a", "p", "4");
	add_fact(e, "t", "e5", 50 * SEC, "a", "p", NULL);
	/* bytewise: "B" < "a" < "ab" < "z" < "\xc3\xa9" */
	add_fact(e, "t", "e6", 100 * SEC, "\xc3\xa9", "p", "{\"lat\":1.5,\"lon\":-2}");
	add_fact(e, "t", "e7", 100 * SEC, "z", "p", "[1,2]");
	add_fact(e, "t", "e8", 100 * SEC, "B", "p", "\"\"");
	add_fact(e, "t", "e9", 100 * SEC, "ab", "p", "true");
	add_fact(e, "t", "e10", 100 * SEC, "a", "P", "0");
	add_fact(e, "t", "e11", 100 * SEC, "a", "p2", "0");
	const struct op_spec link = {KEEL_OP_LINK, "a", "drives", "z", NULL};
	const struct op_spec unlink = {KEEL_OP_UNLINK, "a", "drives", "z", NULL};
	const struct op_spec link_b = {KEEL_OP_LINK, "a", "drives", "B", NULL};
	const struct op_spec kinds[] = {
	    {KEEL_OP_ENTITY, "a", "driver", NULL, NULL},
	    {KEEL_OP_ENTITY, "z", "vehicle", NULL, NULL},
	};
	add_event(e, "t", "e12", 100 * SEC, &link, 1);
	add_event(e, "t", "e13", 200 * SEC, &unlink, 1);
	add_event(e, "t", "e14", 150 * SEC, &unlink, 1); /* late */
	add_event(e, "t", "e15", 120 * SEC, &link_b, 1);
	add_event(e, "t", "e16", 90 * SEC, kinds, 2);
	/* another tenant, sorting before "t" */
	add_fact(e, "T", "e1", 100 * SEC, "a", "p", "9");
}

static const char story_t[] =
    "entity \"B\" null 1970-01-01T00:01:40Z 1970-01-01T00:02:00Z\n"
    "entity \"a\" \"driver\" 1970-01-01T00:00:50Z 1970-01-01T00:05:00Z\n"
    "entity \"ab\" null 1970-01-01T00:01:40Z 1970-01-01T00:01:40Z\n"
    "entity \"z\" \"vehicle\" 1970-01-01T00:01:30Z 1970-01-01T00:03:20Z\n"
    "entity \"\xc3\xa9\" null 1970-01-01T00:01:40Z 1970-01-01T00:01:40Z\n"
    "fact \"B\" \"p\" \"\" [1970-01-01T00:01:40Z null) \"e8\" null\n"
    "fact \"a\" \"P\" 0 [1970-01-01T00:01:40Z null) \"e10\" null\n"
    "fact \"a\" \"p\" null [1970-01-01T00:00:50Z 1970-01-01T00:01:40Z) \"e5\" \"e1\"\n"
    "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z 1970-01-01T00:03:20Z) \"e1\" \"e3\"\n"
    "fact \"a\" \"p\" 2 [1970-01-01T00:03:20Z 1970-01-01T00:05:00Z) \"e3\" \"e2\"\n"
    "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z 1970-01-01T00:05:00Z) \"e2\" \"e4\"\n"
    "fact \"a\" \"p\" 4 [1970-01-01T00:05:00Z null) \"e4\" null\n"
    "fact \"a\" \"p2\" 0 [1970-01-01T00:01:40Z null) \"e11\" null\n"
    "fact \"ab\" \"p\" true [1970-01-01T00:01:40Z null) \"e9\" null\n"
    "fact \"z\" \"p\" [1,2] [1970-01-01T00:01:40Z null) \"e7\" null\n"
    "fact \"\xc3\xa9\" \"p\" {\"lat\":1.5,\"lon\":-2} [1970-01-01T00:01:40Z null) \"e6\" "
    "null\n"
    "relation \"a\" \"drives\" \"B\" linked [1970-01-01T00:02:00Z null) \"e15\" null\n"
    "relation \"a\" \"drives\" \"z\" linked [1970-01-01T00:01:40Z "
    "1970-01-01T00:02:30Z) \"e12\" \"e14\"\n"
    "relation \"a\" \"drives\" \"z\" unlinked [1970-01-01T00:02:30Z "
    "1970-01-01T00:03:20Z) \"e14\" \"e13\"\n"
    "relation \"a\" \"drives\" \"z\" unlinked [1970-01-01T00:03:20Z null) \"e13\" null\n";

static void append_then_scan_in_canonical_order(void **state)
{
	(void)state;
	/* The same story in batches of 1, 3 and all at once, and on the
	 * memory store: the same records in the same order. */
	struct keel_store *mem;
	assert_int_equal(keel_store_open("memory:", &mem, NULL), 0);
	struct events e;
	story(&e);
	drive(mem, &e, 1);
	char *want_t = scan_all(mem, "t"), *want_T = scan_all(mem, "T");
	keel_store_close(mem);
	/* the expected rows, written out, are a prefix of the memory dump */
	assert_int_equal(strncmp(want_t, story_t, strlen(story_t)), 0);

	const size_t batches[] = {1, 3, 100};
	for (size_t b = 0; b < KEEL_ARRAY_LEN(batches); b++) {
		struct fixture f;
		fx_open(&f);
		events_pending(&e);
		drive(f.s, &e, batches[b]);
		char *got = scan_all(f.s, "t");
		assert_string_equal(got, want_t);
		free(got);
		got = scan_all(f.s, "T");
		assert_string_equal(got, want_T);
		free(got);

		struct keel_ptrvec tenants = {0};
		assert_int_equal(keel_store_tenants(f.s, &tenants), 0);
		assert_int_equal(tenants.len, 2);
		assert_string_equal(tenants.items[0], "T");
		assert_string_equal(tenants.items[1], "t");
		for (size_t i = 0; i < tenants.len; i++)
			free(tenants.items[i]);
		keel_ptrvec_free(&tenants);

		uint64_t counts[4];
		assert_int_equal(
		    keel_store_counts(f.s, keel_str_cstr("t"), KEEL_TIME_INF, counts), 0);
		assert_int_equal(counts[0], 5);
		assert_int_equal(counts[1], 11);
		assert_int_equal(counts[2], 4);
		assert_int_equal(counts[3], 16);

		/* Each assertion is one row as written, never closed: "no
		 * value" is NULL, never the JSON text null. */
		sqlite3 *db = keel_store_sqlite_db(f.s);
		assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_rows "
					     "WHERE tenant = " NAME_ID("t")),
				 11);
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM fact_rows WHERE value IS NULL"), 1);
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM fact_rows WHERE value = 'null'"),
		    0);
		/* the views derive what was closed: 7 open fact rows of t */
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM facts WHERE tenant = 't' AND "
				"valid_to IS NULL AND closed_by IS NULL"),
		    7);
		/* seqs follow insertion order; recorded_at never decreases */
		assert_int_equal(sql_int(db, "SELECT max(seq) FROM events"), 17);
		assert_int_equal(sql_int(db,
					 "SELECT count(*) FROM events AS a JOIN events "
					 "AS b ON b.seq = a.seq + 1 WHERE "
					 "b.recorded_at < a.recorded_at"),
				 0);
		assert_true(sql_int(db, "SELECT min(recorded_at) FROM fact_rows") > 0);
		fx_close(&f);
	}
	free(want_t);
	free(want_T);
	events_free(&e);
}

static void scans_filter(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	drive(f.s, &e, 4);

	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("a"),
			      .name = keel_str_cstr("p"),
			      .at_set = true,
			      .at = 250 * SEC};
	char *got = scan_text(f.s, &q);
	assert_string_equal(got, "fact \"a\" \"p\" 2 [1970-01-01T00:03:20Z "
				 "1970-01-01T00:05:00Z) \"e3\" \"e2\"\n");
	free(got);
	/* at a time where only an empty row starts, the row after it holds */
	q.at = 300 * SEC;
	got = scan_text(f.s, &q);
	assert_string_equal(
	    got, "fact \"a\" \"p\" 4 [1970-01-01T00:05:00Z null) \"e4\" null\n");
	free(got);
	q.at_set = false;
	q.name = KEEL_STR_NULL;
	q.subject = keel_str_cstr("ab");
	got = scan_text(f.s, &q);
	assert_string_equal(
	    got, "fact \"ab\" \"p\" true [1970-01-01T00:01:40Z null) \"e9\" null\n");
	free(got);

	struct keel_scan r = {.type = KEEL_REC_RELATION,
			      .tenant = keel_str_cstr("t"),
			      .object = keel_str_cstr("B")};
	got = scan_text(f.s, &r);
	assert_string_equal(got, "relation \"a\" \"drives\" \"B\" linked "
				 "[1970-01-01T00:02:00Z null) \"e15\" null\n");
	free(got);
	r.object = keel_str_cstr("z");
	r.at_set = true;
	r.at = 160 * SEC;
	got = scan_text(f.s, &r);
	assert_string_equal(
	    got, "relation \"a\" \"drives\" \"z\" unlinked [1970-01-01T00:02:30Z "
		 "1970-01-01T00:03:20Z) \"e14\" \"e13\"\n");
	free(got);

	struct keel_scan en = {.type = KEEL_REC_ENTITY,
			       .tenant = keel_str_cstr("t"),
			       .subject = keel_str_cstr("z")};
	got = scan_text(f.s, &en);
	assert_string_equal(got, "entity \"z\" \"vehicle\" 1970-01-01T00:01:30Z "
				 "1970-01-01T00:03:20Z\n");
	free(got);

	struct keel_scan ev = {.type = KEEL_REC_EVENT,
			       .tenant = keel_str_cstr("T"),
			       .event_source = keel_str_cstr(""),
			       .event_id = keel_str_cstr("e1")};
	got = scan_text(f.s, &ev);
	assert_string_equal(got,
			    "event \"e1\" {\"id\":\"e1\",\"t\":100000000,\"salt\":0}\n");
	free(got);
	ev.event_id = keel_str_cstr("e2");
	got = scan_text(f.s, &ev);
	assert_string_equal(got, "");
	free(got);
	events_free(&e);
	fx_close(&f);
}

struct nest {
	struct keel_store *s;
	int outer, inner;
};

static int count_inner(void *ud, const struct keel_record *r)
{
	(void)r;
	((struct nest *)ud)->inner++;
	return 0;
}

/* Scans the same statement again from inside a scan. */
static int count_outer(void *ud, const struct keel_record *r)
{
	struct nest *n = ud;
	(void)r;
	n->outer++;
	struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
	assert_int_equal(keel_store_scan(n->s, &q, count_inner, n), 0);
	return 0;
}

static int stop_at_third(void *ud, const struct keel_record *r)
{
	(void)r;
	return ++*(int *)ud == 3 ? 42 : 0;
}

static void scans_nest_and_stop(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	drive(f.s, &e, 500);
	struct nest n = {f.s, 0, 0};
	struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
	assert_int_equal(keel_store_scan(f.s, &q, count_outer, &n), 0);
	assert_int_equal(n.outer, 11);
	assert_int_equal(n.inner, 11 * 11);

	int calls = 0;
	assert_int_equal(keel_store_scan(f.s, &q, stop_at_third, &calls), 42);
	assert_int_equal(calls, 3);
	/* the statement was reset: the next scan starts from the top */
	char *got = scan_text(f.s, &q);
	assert_non_null(strstr(got, "fact \"B\""));
	assert_ptr_equal(strstr(got, "fact \"B\""), got);
	free(got);
	events_free(&e);
	fx_close(&f);
}

/* ------------------------------------------------- rollback, savepoints */

static void rollback_leaves_nothing(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	assert_int_equal(keel_store_begin(f.s), 0);
	batch_write(f.s, (struct keel_batch_event **)e.ev.items, e.ev.len,
		    keel_store_recorded_at(f.s));
	assert_int_equal(keel_store_rollback(f.s), 0);

	uint64_t counts[4];
	assert_int_equal(
	    keel_store_counts(f.s, keel_str_cstr("t"), KEEL_TIME_INF, counts), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(counts[i], 0);
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(f.s, &tenants), 0);
	assert_int_equal(tenants.len, 0);
	keel_ptrvec_free(&tenants);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sql_int(db, "SELECT (SELECT count(*) FROM fact_rows) + (SELECT "
				     "count(*) FROM relation_rows) + (SELECT count(*) "
				     "FROM events) + (SELECT count(*) FROM "
				     "entity_mentions)"),
			 0);

	/* The same batch again commits, with seqs from 1 again. */
	events_pending(&e);
	drive(f.s, &e, 500);
	assert_int_equal(sql_int(db, "SELECT min(seq) FROM fact_rows"), 1);
	assert_int_equal(sql_int(db, "SELECT min(seq) FROM events"), 1);
	struct keel_batch_event *first = e.ev.items[0];
	assert_int_equal(first->seq, 1);
	events_free(&e);
	fx_close(&f);
}

/* Several batches in one transaction, each behind its savepoint: rolling
 * back to the second's savepoint drops it alone (its rows, mentions and
 * log entries), the first and the third commit, and the ids of the
 * dropped batch are new again. */
static void savepoint_rollback_keeps_earlier_batches(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(batch_write(f.s, ev, 5, 1000), 5);
	/* the second batch, by hand, to fail it after its append */
	assert_int_equal(keel_store_savepoint(f.s), 0);
	struct keel_append_builder b;
	keel_append_builder_init(&b, false);
	for (size_t i = 5; i < 12; i++) {
		ev[i]->status = KEEL_EV_ACCEPTED;
		ev[i]->recorded_at = 2000;
		keel_append_add_event(&b, ev[i]);
	}
	struct keel_append a = keel_append_view(&b, ev + 5, 7);
	assert_int_equal(keel_store_append(f.s, &a), 0);
	assert_int_equal(keel_store_rollback_to_savepoint(f.s), 0);
	keel_append_builder_free(&b);
	for (size_t i = 5; i < 12; i++)
		ev[i]->status = KEEL_EV_PENDING;
	/* the third batch sees the second's ids as new, and takes them */
	assert_int_equal(batch_write(f.s, ev + 9, e.ev.len - 9, 3000), e.ev.len - 9);
	assert_int_equal(keel_store_commit(f.s), 0);

	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM events"), 5 + e.ev.len - 9);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM event_ids"), 5 + e.ev.len - 9);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM events WHERE id IN ('e6', "
				     "'e7', 'e8', 'e9')"),
			 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_rows WHERE recorded_at = "
				     "2000"),
			 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM entity_mentions WHERE "
				     "recorded_at = 2000"),
			 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_rows WHERE recorded_at = "
				     "1000"),
			 5);
	/* seqs stay dense and in arrival order after the dropped batch */
	assert_int_equal(sql_int(db, "SELECT max(seq) - count(*) FROM events"), 0);
	assert_int_equal(sql_int(db, "SELECT max(seq) - count(*) FROM fact_rows"), 0);
	/* a seen-ids lookup of the dropped ids finds nothing */
	for (size_t i = 5; i < 9; i++)
		ev[i]->status = KEEL_EV_PENDING;
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(keel_store_seen_ids(f.s, ev + 5, 4), 0);
	for (size_t i = 5; i < 9; i++)
		assert_int_equal(ev[i]->status, KEEL_EV_PENDING);
	assert_int_equal(keel_store_rollback(f.s), 0);
	events_free(&e);
	fx_close(&f);
}

/* A failed insert (a trigger refuses event e3 after the rows went in)
 * leaves the batch's earlier statements' rows; rolling back to the
 * savepoint takes them all, and the transaction's earlier batch stays. */
static void failed_append_rolls_back_its_batch(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER no_e3 BEFORE INSERT ON events "
				      "WHEN new.id = 'e3' BEGIN SELECT raise(FAIL, "
				      "'e3 refused'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	struct events e;
	story(&e);
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(batch_write(f.s, ev, 2, 1000), 2);
	assert_int_equal(keel_store_savepoint(f.s), 0);
	struct keel_append_builder b;
	keel_append_builder_init(&b, false);
	for (size_t i = 2; i < e.ev.len; i++) {
		ev[i]->status = KEEL_EV_ACCEPTED;
		ev[i]->recorded_at = 2000;
		keel_append_add_event(&b, ev[i]);
	}
	struct keel_append a = keel_append_view(&b, ev + 2, e.ev.len - 2);
	assert_int_equal(keel_store_append(f.s, &a), KEEL_ESTORE);
	char want[4400];
	snprintf(want, sizeof want, "sqlite \"%s\": e3 refused", f.path);
	assert_string_equal(keel_store_errmsg(f.s), want);
	assert_int_equal(keel_store_rollback_to_savepoint(f.s), 0);
	keel_append_builder_free(&b);
	assert_int_equal(keel_store_commit(f.s), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM events"), 2);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM event_ids"), 2);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_rows"), 2);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM relation_rows"), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM entity_mentions WHERE "
				     "recorded_at = 2000"),
			 0);
	events_free(&e);
	fx_close(&f);
}

/* ------------------------------------------------------ transaction time */

/* The raw rows of one scan, as the store gives them (not derived). */
static char *raw_text(struct keel_store *s, const struct keel_scan *q)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	assert_int_equal(s->ops->scan(s, q, collect_record, &b), 0);
	return b.data;
}

/* (a, p) written over three commits recorded at 1000, 2000 and 3000: the
 * late e3 arrives last. Read as known at each moment, the rows are those
 * a store given only what was recorded by then would hold. */
static void known_at_reads_what_was_recorded_by_then(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e1", 100 * SEC, "a", "p", "1");
	add_fact(&e, "t", "e2", 300 * SEC, "a", "p", "3");
	const struct op_spec kind = {KEEL_OP_ENTITY, "a", "driver", NULL, NULL};
	add_event(&e, "t", "e4", 50 * SEC, &kind, 1);
	add_fact(&e, "t", "e3", 200 * SEC, "a", "p", "2");
	drive_recorded(f.s, &e, 0, 2, 1000);
	drive_recorded(f.s, &e, 2, 3, 2000);
	drive_recorded(f.s, &e, 3, 4, 3000);

	struct keel_scan q = {.type = KEEL_REC_FACT, .tenant = keel_str_cstr("t")};
	char *got = scan_text(f.s, &q);
	assert_string_equal(
	    got, "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z 1970-01-01T00:03:20Z) "
		 "\"e1\" \"e3\"\n"
		 "fact \"a\" \"p\" 2 [1970-01-01T00:03:20Z 1970-01-01T00:05:00Z) "
		 "\"e3\" \"e2\"\n"
		 "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z null) \"e2\" null\n");
	free(got);
	q.known_at_set = true;
	q.known_at = 2999;
	got = scan_text(f.s, &q);
	assert_string_equal(
	    got, "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z 1970-01-01T00:05:00Z) "
		 "\"e1\" \"e2\"\n"
		 "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z null) \"e2\" null\n");
	free(got);
	/* at a time, as known then: the row at it and the next, raw */
	q.at_set = true;
	q.at = 250 * SEC;
	got = raw_text(f.s, &q);
	assert_string_equal(got, "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z null) \"e1\" "
				 "null\n"
				 "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z null) \"e2\" "
				 "null\n");
	free(got);
	q.known_at_set = false;
	got = raw_text(f.s, &q);
	assert_string_equal(got, "fact \"a\" \"p\" 2 [1970-01-01T00:03:20Z null) \"e3\" "
				 "null\n"
				 "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z null) \"e2\" "
				 "null\n");
	free(got);
	/* before anything was recorded: nothing */
	q.known_at_set = true;
	q.known_at = 999;
	got = raw_text(f.s, &q);
	assert_string_equal(got, "");
	free(got);

	/* entities and counts as known then */
	struct keel_scan en = {.type = KEEL_REC_ENTITY,
			       .tenant = keel_str_cstr("t"),
			       .known_at_set = true,
			       .known_at = 1000};
	got = scan_text(f.s, &en);
	assert_string_equal(got, "entity \"a\" null 1970-01-01T00:01:40Z "
				 "1970-01-01T00:05:00Z\n");
	free(got);
	en.known_at = 2000;
	got = scan_text(f.s, &en);
	assert_string_equal(got, "entity \"a\" \"driver\" 1970-01-01T00:00:50Z "
				 "1970-01-01T00:05:00Z\n");
	free(got);
	uint64_t counts[4];
	const uint64_t at1000[4] = {1, 2, 0, 2}, at2000[4] = {1, 2, 0, 3},
		       now[4] = {1, 3, 0, 4}, before[4] = {0, 0, 0, 0};
	assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), 1000, counts), 0);
	assert_memory_equal(counts, at1000, sizeof counts);
	assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), 2500, counts), 0);
	assert_memory_equal(counts, at2000, sizeof counts);
	assert_int_equal(
	    keel_store_counts(f.s, keel_str_cstr("t"), KEEL_TIME_INF, counts), 0);
	assert_memory_equal(counts, now, sizeof counts);
	assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), 999, counts), 0);
	assert_memory_equal(counts, before, sizeof counts);

	/* the log as known then, and its latest recorded_at */
	struct keel_scan ev = {.type = KEEL_REC_EVENT,
			       .tenant = keel_str_cstr("t"),
			       .known_at_set = true,
			       .known_at = 2000};
	got = scan_text(f.s, &ev);
	assert_non_null(strstr(got, "event \"e4\""));
	assert_null(strstr(got, "event \"e3\""));
	free(got);
	ev.event_source = keel_str_cstr("");
	ev.event_id = keel_str_cstr("e3");
	got = scan_text(f.s, &ev);
	assert_string_equal(got, "");
	free(got);
	int64_t last = 0;
	assert_int_equal(f.s->ops->last_recorded_at(f.s, &last), 0);
	assert_int_equal(last, 3000);
	events_free(&e);
	fx_close(&f);
}

/* Entities fold their mentions: first_seen the least, last_seen the
 * greatest, the kind of the earliest mention that gives one; at equal
 * times the later mention's. */
static void entities_fold_their_mentions(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	const struct op_spec car = {KEEL_OP_ENTITY, "x", "car", NULL, NULL};
	const struct op_spec van = {KEEL_OP_ENTITY, "x", "van", NULL, NULL};
	const struct op_spec bus = {KEEL_OP_ENTITY, "x", "bus", NULL, NULL};
	add_event(&e, "t", "e1", 200 * SEC, &car, 1);
	add_fact(&e, "t", "e2", 500 * SEC, "x", "p", "1");
	add_event(&e, "t", "e3", 100 * SEC, &van, 1);
	add_event(&e, "t", "e4", 100 * SEC, &bus, 1);
	add_fact(&e, "t", "e5", 50 * SEC, "x", "p", "0");
	drive(f.s, &e, 1);
	struct keel_scan q = {.type = KEEL_REC_ENTITY, .tenant = keel_str_cstr("t")};
	char *got = scan_text(f.s, &q);
	assert_string_equal(got, "entity \"x\" \"bus\" 1970-01-01T00:00:50Z "
				 "1970-01-01T00:08:20Z\n");
	free(got);
	assert_int_equal(
	    sql_int(keel_store_sqlite_db(f.s), "SELECT count(*) FROM entity_mentions"),
	    5);
	events_free(&e);
	fx_close(&f);
}

/* A replace deletes what its scope covers and appends the rebuilt rows
 * with the recorded_at they carry: the tenant reads the same, as known
 * at any moment; other tenants and other predicates are untouched. */
static void replace_keeps_recorded_times(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	drive_recorded(f.s, &e, 0, 8, 1000);
	drive_recorded(f.s, &e, 8, e.ev.len, 2000);
	char *before = scan_all(f.s, "t"), *before_T = scan_all(f.s, "T");
	struct keel_scan old = {.type = KEEL_REC_FACT,
				.tenant = keel_str_cstr("t"),
				.known_at_set = true,
				.known_at = 1000};
	char *before_1000 = scan_text(f.s, &old);

	/* the tenant rebuilt from its events, as a replay does */
	struct keel_append_builder b;
	keel_append_builder_init(&b, false);
	struct keel_ptrvec t_events = {0};
	for (size_t i = 0; i < e.ev.len; i++) {
		struct keel_batch_event *ev = e.ev.items[i];
		if (keel_str_eq(ev->tenant, keel_str_cstr("t")))
			keel_append_add_event(&b, ev);
	}
	struct keel_append a = keel_append_view(&b, NULL, 0);
	struct keel_buf note;
	keel_buf_init(&note);
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(keel_store_replace_tenant(f.s, keel_str_cstr("t"), NULL, &a,
						   e.ev.len - 1, &note),
			 0);
	assert_int_equal(keel_store_commit(f.s), 0);
	assert_non_null(strstr(note.data, "sqlite"));
	char *after = scan_all(f.s, "t"), *after_T = scan_all(f.s, "T");
	char *after_1000 = scan_text(f.s, &old);
	assert_string_equal(after, before);
	assert_string_equal(after_T, before_T);
	assert_string_equal(after_1000, before_1000);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	/* the rows were written again, after every other */
	assert_true(sql_int(db, "SELECT min(seq) FROM fact_rows WHERE tenant = " NAME_ID("t")) >
		    sql_int(db, "SELECT max(seq) FROM fact_rows WHERE tenant = " NAME_ID("T")));
	free(before);
	free(before_T);
	free(before_1000);
	free(after);
	free(after_T);
	free(after_1000);
	keel_buf_free(&note);
	keel_ptrvec_free(&t_events);
	keel_append_builder_free(&b);
	events_free(&e);
	fx_close(&f);
}

/* ------------------------------------------------------- current rows */

static void present_search_folds_the_rows(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct events e;
	story(&e);
	drive_recorded(f.s, &e, 0, 8, 1000); /* e1-e8: (a, p) ends at e4's 4 */
	/* the write path folds nothing */
	assert_int_equal(watermark(db), 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_current"), 0);
	char *got = candidates(f.s, "t", "p", "4", NOW);
	assert_string_equal(got, "a");
	free(got);
	assert_int_equal(watermark(db), sql_int(db, "SELECT max(seq) FROM fact_rows"));
	current_is_the_latest_row(db);
	spans_are_the_rows(db);
	/* a late row (e3) and a tie (e2, e4) left the latest; the object's
	 * and the array's timelines (e6, e7) have no current row */
	assert_int_equal(sql_int(db, "SELECT value FROM fact_current WHERE tenant = 't' "
				     "AND subject = 'a' AND predicate = 'p'"),
			 4);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_current"), 2); /* a, B */

	/* The present is read from fact_current (changed by hand here), a
	 * time before the horizon, or as known at a moment, from the rows. */
	assert_int_equal(sqlite3_exec(db, "UPDATE fact_current SET value = '5' WHERE "
					  "subject = 'a' AND predicate = 'p'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	got = candidates(f.s, "t", "p", "5", NOW);
	assert_string_equal(got, "a");
	free(got);
	got = candidates(f.s, "t", "p", "5", 299 * SEC);
	assert_string_equal(got, "");
	free(got);
	got = candidates(f.s, "t", "p", "2", 299 * SEC);
	assert_string_equal(got, "a");
	free(got);
	struct keel_candidates known = {.tenant = keel_str_cstr("t"),
					.predicate = keel_str_cstr("p"),
					.value = keel_str_cstr("5"),
					.at = NOW,
					.known_at_set = true,
					.known_at = KEEL_TIME_INF,
					.limit = 10};
	struct keel_ptrvec out = {0};
	assert_int_equal(keel_store_fact_subjects(f.s, &known, &out), 0);
	assert_int_equal(out.len, 0);
	keel_ptrvec_free(&out);
	assert_int_equal(sqlite3_exec(db, "UPDATE fact_current SET value = '4' WHERE "
					  "subject = 'a' AND predicate = 'p'",
				      NULL, NULL, NULL),
			 SQLITE_OK);

	/* A search before the horizon folds too (and reads the spans). */
	struct events more;
	events_init(&more);
	add_fact(&more, "t", "x1", 50 * SEC, "q", "p", "\"early\"");
	drive(f.s, &more, 1);
	got = candidates(f.s, "t", "p", "\"early\"", 60 * SEC);
	assert_string_equal(got, "q");
	free(got);
	int64_t mark = watermark(db);
	assert_int_equal(mark, sql_int(db, "SELECT max(seq) FROM fact_rows"));
	spans_are_the_rows(db);
	events_free(&more);

	/* Inside the handle's own transaction nothing is folded: its rows
	 * could still be rolled back. The search walks and sees them. */
	assert_int_equal(keel_store_begin(f.s), 0);
	batch_write(f.s, (struct keel_batch_event **)e.ev.items + 8, 1, 2000); /* ab */
	got = candidates(f.s, "t", "p", "true", NOW);
	assert_string_equal(got, "ab");
	free(got);
	assert_int_equal(watermark(db), mark);
	assert_int_equal(keel_store_commit(f.s), 0);

	/* The rest, then the next search folds only the rows after the
	 * watermark: the same as a fold of everything. */
	drive_recorded(f.s, &e, 9, e.ev.len, 3000);
	assert_int_equal(watermark(db), mark);
	got = candidates(f.s, "t", "p", "true", NOW);
	assert_string_equal(got, "ab");
	free(got);
	current_is_the_latest_row(db);
	spans_are_the_rows(db);
	got = candidates(f.s, "T", "p", "9", NOW);
	assert_string_equal(got, "a");
	free(got);

	/* A predicate with no row: nothing, from fact_current. */
	got = candidates(f.s, "t", "nothing", "1", NOW);
	assert_string_equal(got, "");
	free(got);
	events_free(&e);
	fx_close(&f);
}

/* A search in the past reads the spans (src/store/sqlite/spans.c): a late row, in
 * a later fold, splits the span it lands in and an unset ends one; the
 * spans are each row's, equal to a window over the history after every
 * fold; more than KEEL_SQLITE_SPANS_MOST spans holding the time make the
 * search walk instead. */
static void past_search_reads_the_spans(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e1", 100 * SEC, "a", "q", "\"x\"");
	add_fact(&e, "t", "e2", 300 * SEC, "a", "q", "\"y\"");
	add_fact(&e, "t", "e3", 100 * SEC, "b", "q", "\"x\"");
	add_fact(&e, "t", "e4", 900 * SEC, "b", "q", "\"x\"");
	drive(f.s, &e, 10);
	char *got = candidates(f.s, "t", "q", "\"x\"", 200 * SEC);
	assert_string_equal(got, "a b");
	free(got);
	spans_are_the_rows(db);

	/* Late rows in the next fold: a's x [100, 300) is split by z at 200
	 * and an unset at 250; an object at 120 does not end a span; then y
	 * at 300, w at 400 (in order) and a tie at 400 whose later arrival
	 * holds. */
	struct events late;
	events_init(&late);
	add_fact(&late, "t", "l1", 200 * SEC, "a", "q", "\"z\"");
	add_fact(&late, "t", "l2", 250 * SEC, "a", "q", NULL);
	add_fact(&late, "t", "l3", 400 * SEC, "a", "q", "\"w\"");
	add_fact(&late, "t", "l4", 120 * SEC, "a", "q", "{\"o\":1}");
	add_fact(&late, "t", "l5", 400 * SEC, "a", "q", "\"v\"");
	drive(f.s, &late, 2);
	/* At a span's end itself its row is still a candidate (valid_to >=
	 * at: the R*Tree compares the time as a double, src/store/sqlite/spans.c),
	 * which the read turns down; a microsecond later it is not (these
	 * small times are floats exactly). */
	static const struct {
		int64_t at;
		const char *value, *want;
	} cases[] = {
	    {150 * SEC, "\"x\"", "a b"}, {199 * SEC, "\"x\"", "a b"},
	    {200 * SEC, "\"x\"", "a b"}, {200 * SEC + 1, "\"x\"", "b"},
	    {220 * SEC, "\"z\"", "a"},   {250 * SEC, "\"z\"", "a"},
	    {250 * SEC + 1, "\"z\"", ""}, {260 * SEC, "\"y\"", ""},
	    {300 * SEC, "\"y\"", "a"},   {399 * SEC, "\"y\"", "a"},
	    {400 * SEC, "\"w\"", "a"},   {400 * SEC + 1, "\"w\"", ""},
	    {400 * SEC, "\"v\"", "a"},   {500 * SEC, "\"v\"", "a"},
	    {110 * SEC, "\"x\"", "a b"},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(cases); i++) {
		got = candidates(f.s, "t", "q", cases[i].value, cases[i].at);
		if (strcmp(got, cases[i].want))
			fprintf(stderr, "at %lld us %s\n", (long long)cases[i].at, cases[i].value);
		assert_string_equal(got, cases[i].want);
		free(got);
	}
	spans_are_the_rows(db);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_spans"), 7);
	/* At 150 a holds the object (l4), which the spans leave out: a is a
	 * candidate, and the search's read of it rejects it. */
	struct keel_read_options at150 = {.size = sizeof at150, .at_set = true, .at = 150 * SEC};
	char *json = NULL;
	assert_int_equal(keel_search(f.s, "t", "q", "x", NULL, &at150, &json), 0);
	assert_non_null(strstr(json, "\"subject\":\"b\""));
	assert_null(strstr(json, "\"subject\":\"a\""));
	free(json);

	/* The spans are what the search reads: a span taken away hides its
	 * holder. */
	assert_int_equal(sqlite3_exec(db,
				      "DELETE FROM fact_spans WHERE seq = (SELECT seq FROM "
				      "fact_rows WHERE subject = 'a' AND value = '\"y\"')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	got = candidates(f.s, "t", "q", "\"y\"", 350 * SEC);
	assert_string_equal(got, "");
	free(got);

	/* More spans holding the time than KEEL_SQLITE_SPANS_MOST: the
	 * search walks, and finds a again (spans that name no row make the
	 * count). */
	char sql[256];
	snprintf(sql, sizeof sql,
		 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
		 "INSERT INTO fact_spans SELECT 1000000 + i, %lld, %lld, 0, 1e18 FROM n",
		 KEEL_SQLITE_SPANS_MOST + 1,
		 (long long)keel_store_sqlite_span_key("t", "q", "\"y\""),
		 (long long)keel_store_sqlite_span_key("t", "q", "\"y\""));
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	got = candidates(f.s, "t", "q", "\"y\"", 350 * SEC);
	assert_string_equal(got, "a");
	free(got);
	events_free(&late);
	events_free(&e);
	fx_close(&f);
}

/* A replace deletes rows whose seqs the next rows may take again: the
 * watermark comes down to the last seq left, and the deleted rows'
 * current rows go with them. */
static void replace_lowers_the_watermark(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e1", 100 * SEC, "a", "p", "\"x\"");
	add_fact(&e, "u", "e2", 100 * SEC, "b", "p", "\"x\"");
	add_fact(&e, "u", "e3", 200 * SEC, "c", "p", "\"x\"");
	drive(f.s, &e, 10);
	char *got = candidates(f.s, "u", "p", "\"x\"", NOW);
	assert_string_equal(got, "b c");
	free(got);
	assert_int_equal(watermark(db), 3);

	/* u replaced by nothing: rows 2 and 3 go, the watermark to 1 */
	struct keel_append_builder b;
	keel_append_builder_init(&b, false);
	struct keel_append a = keel_append_view(&b, NULL, 0);
	struct keel_buf note;
	keel_buf_init(&note);
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(
	    keel_store_replace_tenant(f.s, keel_str_cstr("u"), NULL, &a, 0, &note), 0);
	assert_int_equal(keel_store_commit(f.s), 0);
	assert_int_equal(watermark(db), 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_current WHERE tenant = 'u'"),
			 0);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM fact_horizon WHERE tenant = 'u'"),
			 0);
	current_is_the_latest_row(db);
	spans_are_the_rows(db);

	/* the next rows take seqs 2 and 3 again, and are folded */
	struct events e2;
	events_init(&e2);
	add_fact(&e2, "u", "e4", 300 * SEC, "d", "p", "\"x\"");
	add_fact(&e2, "t", "e5", 300 * SEC, "a", "p", "\"y\"");
	drive(f.s, &e2, 10);
	assert_int_equal(sql_int(db, "SELECT max(seq) FROM fact_rows"), 3);
	got = candidates(f.s, "u", "p", "\"x\"", NOW);
	assert_string_equal(got, "d");
	free(got);
	got = candidates(f.s, "t", "p", "\"x\"", NOW);
	assert_string_equal(got, "");
	free(got);
	current_is_the_latest_row(db);
	spans_are_the_rows(db);
	keel_buf_free(&note);
	keel_append_builder_free(&b);
	events_free(&e2);
	events_free(&e);
	fx_close(&f);
}

/* ------------------------------------------------------------ seen ids */

static void seen_ids_marks_logged_events(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events logged;
	events_init(&logged);
	for (int i = 0; i < 2500; i++) {
		char id[32];
		snprintf(id, sizeof id, "id-%d", i);
		add_event(&logged, i % 2 ? "a" : "b", id, i * SEC, NULL, 0);
	}
	drive(f.s, &logged, 500);

	/* 3000 events: the 2500 logged ones (one with another envelope), 250
	 * new ids, 250 logged ids under the other tenant (new). */
	struct events again;
	events_init(&again);
	for (int i = 0; i < 3000; i++) {
		char id[32];
		snprintf(id, sizeof id, "id-%d", i < 2750 ? i : i - 2750);
		const char *tenant = i % 2 ? "a" : "b";
		if (i >= 2750)
			tenant = i % 2 ? "b" : "a";
		add_event_salted(&again, tenant, id, i * SEC, NULL, 0, i == 7 ? 1 : 0);
	}
	uint64_t before = keel_store_statements(f.s);
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(keel_store_seen_ids(f.s,
					     (struct keel_batch_event **)again.ev.items,
					     again.ev.len),
			 0);
	/* begin (with the last seqs and recorded_at) plus one lookup per
	 * thousand events */
	assert_int_equal(keel_store_statements(f.s) - before, 3 + 3);
	assert_int_equal(keel_store_rollback(f.s), 0);
	for (size_t i = 0; i < again.ev.len; i++) {
		struct keel_batch_event *ev = again.ev.items[i];
		if (i < 2500) {
			struct keel_batch_event *old = logged.ev.items[i];
			assert_int_equal(ev->status, KEEL_EV_DUPLICATE);
			assert_true(ev->stored_hash == old->hash);
			assert_true((ev->hash == old->hash) == (i != 7));
		} else {
			assert_int_equal(ev->status, KEEL_EV_PENDING);
		}
	}
	events_free(&again);
	events_free(&logged);
	fx_close(&f);
}

/* --------------------------------------------------------- statements */

static void append_is_a_handful_of_statements(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	/* Two batches of 500 events, two rows each, on 500 subjects. */
	struct events e;
	events_init(&e);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 500; i++) {
			char id[32], subj[32], obj[32];
			snprintf(id, sizeof id, "r%d-%d", round, i);
			snprintf(subj, sizeof subj, "vehicle:%d", i);
			snprintf(obj, sizeof obj, "depot:%d", i % 7);
			const struct op_spec ops[] = {
			    {KEEL_OP_FACT, subj, "odometer", NULL, round ? "2" : "1"},
			    {round ? KEEL_OP_UNLINK : KEEL_OP_LINK, subj, "based_at", obj,
			     NULL},
			};
			add_event(&e, "t", id, (round * 1000 + i) * SEC, ops, 2);
		}
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	uint64_t s0 = keel_store_statements(f.s);
	drive_recorded(f.s, &e, 0, 500, 1000);
	uint64_t s1 = keel_store_statements(f.s);
	drive_recorded(f.s, &e, 500, 1000, 2000);
	uint64_t s2 = keel_store_statements(f.s);
	/* begin (with the last seqs and recorded_at), seen ids, inserts of
	 * 500 events, their 500 ids, 500 facts, 500 relations and 507
	 * mentions in 128-row statements and their binary remainders,
	 * commit: about 45 for 2500 row writes, never one per row, and the
	 * second batch, which ends the first's rows, costs the same but for
	 * the names: the first looks up its four (tenant, predicate,
	 * relation, the events' source) in one statement and inserts each,
	 * the second finds them in its handle's cache (docs/store-sqlite.md,
	 * "Names as integers"). */
	fprintf(stderr, "statements: first batch %llu, second %llu\n",
		(unsigned long long)(s1 - s0), (unsigned long long)(s2 - s1));
	assert_true(s2 - s1 <= 45);
	assert_int_equal(s1 - s0, s2 - s1 + 1 + 4);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM facts WHERE valid_to_text = "
				     "'1970-01-01T00:16:40.000000Z' AND valid_to = "
				     "1000000000 AND closed_by = 'r1-0' AND "
				     "subject = 'vehicle:0'"),
			 1);
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM facts WHERE closed_by IS NOT NULL"), 500);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM relations WHERE closed_by IS "
				     "NOT NULL AND linked = 1 AND closed_by LIKE 'r1-%'"),
			 500);
	/* events got the seqs of their arrival */
	assert_int_equal(ev[999]->seq, 1000);
	assert_int_equal(sql_int(db, "SELECT max(seq) FROM fact_rows"), 1000);
	events_free(&e);
	fx_close(&f);
}

/* --------------------------------------------------------------- errors */

static void locked_database_names_the_store(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	sqlite3 *other;
	assert_int_equal(sqlite3_open(f.path, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_busy_timeout(keel_store_sqlite_db(f.s), 50);
	assert_int_equal(keel_store_begin(f.s), KEEL_ESTORE);
	char want[4400];
	snprintf(want, sizeof want, "sqlite \"%s\": database is locked", f.path);
	assert_string_equal(keel_store_errmsg(f.s), want);
	assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	/* and once the lock is gone the store works */
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e1", SEC, "a", "p", "1");
	drive(f.s, &e, 1);
	events_free(&e);
	fx_close(&f);
}

/* An event longer than SQLite takes is rejected alone, with its line and
 * the rule, and the rest goes in; one at the limit is stored whole (its
 * row, with the other columns, still fits). Without the rule it failed its
 * whole batch with SQLITE_TOOBIG. */
static void large_events_are_rejected_alone(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	const int limit = 65536;
	keel_store_sqlite_set_length_limit(f.s, limit);
	keel_test_large_events(
	    f.s, (size_t)limit - 4096,
	    "SQLite's length limit, less room for the rest of its row");
	fx_close(&f);
}

/* ----------------------------------------------- background checkpoints */

/* A counter from the store's metrics text; -1 when it is not there. */
static long long store_metric(struct keel_store *s, const char *name)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_store_metrics(s, &b);
	long long v = -1;
	size_t n = strlen(name);
	for (const char *p = b.data; p && (p = strstr(p, name)) != NULL; p += n)
		if ((p == b.data || p[-1] == '\n') && p[n] == ' ')
			v = strtoll(p + n + 1, NULL, 10);
	keel_buf_free(&b);
	return v;
}

/* A handle that writes to a file copies the log back on its own thread
 * (src/store/sqlite/checkpoint.c), with nothing asked of the caller: its
 * metrics count the checkpoints. */
static void file_store_checkpoints_in_the_background(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	assert_int_equal(store_metric(f.s, "keel_sqlite_checkpoints_total"), 0);
	assert_int_equal(store_metric(f.s, "keel_sqlite_checkpoint_pages_total"), 0);
	every_statement(f.s);
	long long pages = 0;
	for (int i = 0; i < 500 && pages == 0; i++) {
		const struct timespec ms10 = {0, 10 * 1000 * 1000};
		nanosleep(&ms10, NULL);
		pages = store_metric(f.s, "keel_sqlite_checkpoint_pages_total");
	}
	assert_true(pages >= 1);
	assert_true(store_metric(f.s, "keel_sqlite_checkpoints_total") >= 1);
	/* Closing stops the thread (ASan and the leak check see the rest). */
	fx_close(&f);
}

/* A handle's commits are synced only once it is made durable (keel
 * serve's writer): then each commit syncs the log once before it returns,
 * counted in its metrics; keel ingest's handles never sync there. */
static void durable_commits_sync_the_log(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	for (int i = 0; i < 6; i++) {
		char id[16];
		snprintf(id, sizeof id, "e%d", i);
		add_fact(&e, "t", id, (100 + i) * SEC, "vehicle:1", "status", "\"idle\"");
	}
	drive(f.s, &e, 2); /* three commits */
	assert_int_equal(store_metric(f.s, "keel_sqlite_commit_syncs_total"), 0);
	keel_store_durable_commits(f.s);
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	for (int i = 0; i < 3; i++) {
		for (size_t k = 0; k < e.ev.len; k++)
			ev[k]->status = KEEL_EV_PENDING;
		assert_int_equal(keel_store_begin(f.s), 0);
		assert_int_equal(keel_store_seen_ids(f.s, ev, e.ev.len), 0);
		assert_int_equal(store_metric(f.s, "keel_sqlite_commit_syncs_total"), i);
		assert_int_equal(keel_store_commit(f.s), 0);
		assert_int_equal(store_metric(f.s, "keel_sqlite_commit_syncs_total"), i + 1);
	}
	/* A rollback has nothing to sync. */
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(keel_store_rollback(f.s), 0);
	assert_int_equal(store_metric(f.s, "keel_sqlite_commit_syncs_total"), 3);
	events_free(&e);
	fx_close(&f);
}

static int secure_delete_of(struct keel_store *s)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(keel_store_sqlite_db(s), "PRAGMA secure_delete", -1,
					    &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int on = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return on;
}

/* A forget runs with secure_delete on; whether it commits or fails before
 * its scrub (here its tombstone refused by a trigger, after the redaction
 * turned it on), the handle's later transactions run with the
 * connection's own setting again (off, or FAST; Debian's default is on). */
static void forget_leaves_secure_delete_off(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct keel_test_lines *l = keel_test_lines_generate(300, 1, 5, 0.1, 0.05);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_ingest_options io = {.size = sizeof io, .cartridge = c};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(f.s, &io, &ing), 0);
	for (size_t i = 0; i < l->n; i++)
		assert_int_equal(keel_ingest_add(ing, l->lines[i], strlen(l->lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_finish(ing), 0);
	keel_ingest_free(ing);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER no_tombstone BEFORE INSERT ON tombstones "
				      "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA secure_delete = OFF", NULL, NULL, NULL),
			 SQLITE_OK);
	struct keel_forget_options o = {.size = sizeof o, .cartridge = c, .by = "test"};
	struct keel_forget_report rep;
	assert_int_equal(keel_forget(f.s, "tenant-00", "vehicle:V-0003", &o, &rep),
			 KEEL_ESTORE);
	assert_non_null(strstr(keel_store_errmsg(f.s), "injected failure"));
	assert_int_equal(secure_delete_of(f.s), 0);
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER no_tombstone", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA secure_delete = FAST", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(keel_forget(f.s, "tenant-00", "vehicle:V-0003", &o, &rep), 0);
	assert_true(rep.events > 0);
	assert_int_equal(secure_delete_of(f.s), 2);
	keel_cartridge_free(c);
	keel_test_lines_free(l);
	fx_close(&f);
}

/* sqlite::memory: has no log and no file: no checkpointer, no metrics; and
 * its state lives in its handle, like the memory store's. */
static void in_memory_database_lives_in_its_handle(void **state)
{
	(void)state;
	struct keel_store *s = NULL;
	char *err = NULL;
	assert_int_equal(keel_store_open("sqlite::memory:", &s, &err), 0);
	assert_true(keel_store_state_in_handle(s));
	every_statement(s);
	assert_int_equal(store_metric(s, "keel_sqlite_checkpoints_total"), -1);
	keel_store_close(s);

	struct fixture f;
	fx_open(&f);
	assert_false(keel_store_state_in_handle(f.s));
	fx_close(&f);
}

/* Opening to read never creates the file: a mistyped path is
 * KEEL_ENOTFOUND, and nothing is left behind. */
static void open_existing_creates_nothing(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	char url[4400], path[4300];
	snprintf(path, sizeof path, "%s/typo.db", f.dir);
	snprintf(url, sizeof url, "sqlite:%s", path);
	struct keel_store *s = (struct keel_store *)1;
	char *err = NULL;
	assert_int_equal(keel_store_open_existing(url, &s, &err), KEEL_ENOTFOUND);
	assert_null(s);
	char want[4500];
	snprintf(want, sizeof want, "store \"%s\": no such file", url);
	assert_string_equal(err, want);
	free(err);
	FILE *probe = fopen(path, "r");
	assert_null(probe);

	/* The file that is there opens, with what was written into it. */
	every_statement(f.s);
	assert_int_equal(keel_store_open_existing(f.url, &s, &err), 0);
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(s, &tenants), 0);
	assert_true(tenants.len >= 1);
	for (size_t i = 0; i < tenants.len; i++)
		free(tenants.items[i]);
	keel_ptrvec_free(&tenants);
	keel_store_close(s);

	/* Stores that always start empty open as usual. */
	assert_int_equal(keel_store_open_existing("sqlite::memory:", &s, &err), 0);
	keel_store_close(s);
	assert_int_equal(keel_store_open_existing("memory:", &s, &err), 0);
	keel_store_close(s);
	fx_close(&f);
}

/* ------------------------------------------------------------ migration */

/* A schema 1 file, as the Keel before it wrote it: rows with their
 * closures stored, entities one row each. (a, p): e1 [100, 200) closed
 * by e3, e3 [200, 300) by e2, e2 [300, 300) emptied by e4, e4 open;
 * seqs in arrival order, e3 late. */
static const char v1_file[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
    "INSERT INTO meta VALUES ('schema_version', 1);"
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT "
    "NULL, type TEXT NOT NULL, time INTEGER NOT NULL, hash INTEGER NOT NULL, "
    "envelope TEXT NOT NULL);"
    "CREATE TABLE event_ids (tenant TEXT NOT NULL, id TEXT NOT NULL, hash INTEGER "
    "NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (tenant, id)) WITHOUT ROWID;"
    "CREATE TABLE entities (tenant TEXT NOT NULL, subject TEXT NOT NULL, kind TEXT, "
    "kind_time INTEGER NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT "
    "NULL, PRIMARY KEY (tenant, subject)) WITHOUT ROWID;"
    "CREATE TABLE facts (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, subject TEXT "
    "NOT NULL, predicate TEXT NOT NULL, value TEXT, valid_from INTEGER NOT NULL, "
    "valid_to INTEGER NOT NULL, asserted_by TEXT NOT NULL, closed_by TEXT);"
    "CREATE INDEX facts_key ON facts (tenant, subject, predicate, valid_from);"
    "CREATE TABLE relations (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, subject "
    "TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL, linked INTEGER NOT "
    "NULL, valid_from INTEGER NOT NULL, valid_to INTEGER NOT NULL, asserted_by TEXT "
    "NOT NULL, closed_by TEXT);"
    "CREATE INDEX relations_key ON relations (tenant, subject, relation, object, "
    "valid_from);"
    "INSERT INTO events VALUES (1, 't', 'e1', 'x', 100000000, 11, '{\"id\":\"e1\"}'),"
    "(2, 't', 'e2', 'x', 300000000, 12, '{\"id\":\"e2\",\"source\":7}'),"
    "(3, 't', 'e3', 'x', 200000000, 13, '{\"id\":\"e3\",\"source\":\"/s\"}'),"
    "(4, 't', 'e4', 'x', 300000000, 14, '{\"id\":\"e4\"}');"
    "INSERT INTO event_ids VALUES ('t', 'e1', 11, 1), ('t', 'e2', 12, 2), "
    "('t', 'e3', 13, 3), ('t', 'e4', 14, 4);"
    "INSERT INTO entities VALUES ('t', 'a', 'driver', 300000000, 100000000, "
    "300000000), ('t', 'z', NULL, 0, 300000000, 300000000);"
    "INSERT INTO facts VALUES (1, 't', 'a', 'p', '1', 100000000, 200000000, 'e1', "
    "'e3'), (2, 't', 'a', 'p', '3', 300000000, 300000000, 'e2', 'e4'), "
    "(3, 't', 'a', 'p', '2', 200000000, 300000000, 'e3', 'e2'), "
    "(4, 't', 'a', 'p', '4', 300000000, 9223372036854775807, 'e4', NULL);"
    "INSERT INTO relations VALUES (1, 't', 'a', 'drives', 'z', 1, 300000000, "
    "9223372036854775807, 'e4', NULL);";

static void schema_1_file_is_migrated(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char path[4200], url[4300];
	snprintf(path, sizeof path, "%s/v1.db", dir);
	snprintf(url, sizeof url, "sqlite:%s", path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, v1_file, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	struct keel_store *s;
	char *err = NULL;
	assert_int_equal(keel_store_open_existing(url, &s, &err), 0);
	int was = -1, now = -1;
	assert_int_equal(keel_store_schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 1);
	assert_int_equal(now, keel_store_sqlite_schema_version());
	/* every row and its provenance, derived as they were stored */
	char *got = scan_all(s, "t");
	assert_string_equal(
	    got,
	    "entity \"a\" \"driver\" 1970-01-01T00:01:40Z 1970-01-01T00:05:00Z\n"
	    "entity \"z\" null 1970-01-01T00:05:00Z 1970-01-01T00:05:00Z\n"
	    "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z 1970-01-01T00:03:20Z) \"e1\" "
	    "\"/s\":\"e3\"\n"
	    "fact \"a\" \"p\" 2 [1970-01-01T00:03:20Z 1970-01-01T00:05:00Z) \"/s\":\"e3\" "
	    "\"e2\"\n"
	    "fact \"a\" \"p\" 3 [1970-01-01T00:05:00Z 1970-01-01T00:05:00Z) \"e2\" "
	    "\"e4\"\n"
	    "fact \"a\" \"p\" 4 [1970-01-01T00:05:00Z null) \"e4\" null\n"
	    "relation \"a\" \"drives\" \"z\" linked [1970-01-01T00:05:00Z null) \"e4\" "
	    "null\n"
	    "event \"e1\" {\"id\":\"e1\"}\n"
	    "event \"e2\" {\"id\":\"e2\",\"source\":7}\n"
	    "event \"/s\":\"e3\" {\"id\":\"e3\",\"source\":\"/s\"}\n"
	    "event \"e4\" {\"id\":\"e4\"}\n");
	free(got);
	/* what was recorded before Keel kept the time is known at 0 */
	sqlite3 *sdb = keel_store_sqlite_db(s);
	assert_int_equal(sql_int(sdb,
				 "SELECT count(*) FROM fact_rows WHERE recorded_at = "
				 "0 AND seq BETWEEN 1 AND 4"),
			 4);
	assert_int_equal(
	    sql_int(sdb, "SELECT count(*) FROM events WHERE recorded_at = 0"), 4);
	/* the views show it as stored: 0, 1970-01-01T00:00:00.000000Z */
	assert_int_equal(sql_int(sdb,
				 "SELECT count(*) FROM entities WHERE recorded_at = 0 "
				 "AND recorded_at_text = '1970-01-01T00:00:00.000000Z'"),
			 2);
	assert_int_equal(sql_int(sdb, "SELECT count(*) FROM sqlite_schema WHERE name IN "
				      "('facts_key', 'relations_key')"),
			 0);
	/* The current rows start empty; the first search at the present
	 * folds every row: (a, p) is e4's 4, after e2's 3 at the same time
	 * (both recorded at 0: by seq). */
	assert_int_equal(watermark(sdb), 0);
	assert_int_equal(sql_int(sdb, "SELECT count(*) FROM fact_current"), 0);
	got = candidates(s, "t", "p", "4", NOW);
	assert_string_equal(got, "a");
	free(got);
	current_is_the_latest_row(sdb);
	assert_int_equal(watermark(sdb), 4);
	keel_store_close(s);

	/* migrated once: the next open finds the latest schema */
	assert_int_equal(keel_store_open(url, &s, &err), 0);
	assert_int_equal(keel_store_schema_versions(s, &was, &now), 0);
	assert_int_equal(was, keel_store_sqlite_schema_version());
	assert_int_equal(now, keel_store_sqlite_schema_version());
	/* a late event appended after the migration ends e1's row */
	struct events e;
	events_init(&e);
	add_fact(&e, "t", "e5", 150 * SEC, "a", "p", "5");
	drive(s, &e, 1);
	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr("t"),
			      .subject = keel_str_cstr("a"),
			      .at_set = true,
			      .at = 120 * SEC};
	got = scan_text(s, &q);
	assert_string_equal(got, "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z "
				 "1970-01-01T00:02:30Z) \"e1\" \"e5\"\n");
	free(got);
	/* and as known before it, e1's row is what the old file said */
	q.known_at_set = true;
	q.known_at = 0;
	got = scan_text(s, &q);
	assert_string_equal(got, "fact \"a\" \"p\" 1 [1970-01-01T00:01:40Z "
				 "1970-01-01T00:03:20Z) \"e1\" \"/s\":\"e3\"\n");
	free(got);
	events_free(&e);
	keel_store_close(s);

	/* a new file reports that it was created */
	snprintf(url, sizeof url, "sqlite:%s/new.db", dir);
	assert_int_equal(keel_store_open(url, &s, &err), 0);
	assert_int_equal(keel_store_schema_versions(s, &was, &now), 0);
	assert_int_equal(was, 0);
	assert_int_equal(now, keel_store_sqlite_schema_version());
	keel_store_close(s);
	/* the memory store has no schema */
	assert_int_equal(keel_store_open("memory:", &s, &err), 0);
	assert_int_equal(keel_store_schema_versions(s, &was, &now), KEEL_EINVAL);
	keel_store_close(s);
	keel_test_rmdir(dir);
	free(dir);
}

/* ---------------------------------------------------------------- views */

/* Appends one view row as the derived scan prints it. */
static int view_row(void *ud, int n, char **v, char **cols)
{
	(void)cols;
	struct keel_buf *b = ud;
	for (int i = 0; i < n; i++)
		keel_buf_addf(b, "%s%s", i ? "|" : "", v[i] ? v[i] : "NULL");
	keel_buf_addc(b, '\n');
	return 0;
}

/* A time as the views show it as text: RFC 3339, six fraction digits
 * always (KEEL_TIME_INF: NULL). */
static void view_time(int64_t t, char out[KEEL_TIME_BUFSZ + 8])
{
	if (t == KEEL_TIME_INF) {
		strcpy(out, "NULL");
		return;
	}
	char c[KEEL_TIME_BUFSZ];
	keel_time_format(t, c);
	size_t n = strlen(c);
	if (strchr(c, '.'))
		memcpy(out, c, n + 1);
	else
		snprintf(out, KEEL_TIME_BUFSZ + 8, "%.*s.000000Z", (int)(n - 1), c);
}

/* A time as the views show it as an integer (KEEL_TIME_INF: NULL). */
static void view_micros(int64_t t, char out[24])
{
	if (t == KEEL_TIME_INF)
		strcpy(out, "NULL");
	else
		snprintf(out, 24, "%lld", (long long)t);
}

static int scan_row(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	char t1[KEEL_TIME_BUFSZ + 8], t2[KEEL_TIME_BUFSZ + 8], u1[24], u2[24];
	int64_t from = r->type == KEEL_REC_ENTITY ? r->first_seen : r->valid_from;
	int64_t to = r->type == KEEL_REC_ENTITY ? r->last_seen : r->valid_to;
	view_time(from, t1);
	view_time(to, t2);
	view_micros(from, u1);
	view_micros(to, u2);
#define S(x) (int)(x).len, (x).ptr ? (x).ptr : "NULL"
	switch (r->type) {
	case KEEL_REC_ENTITY:
		keel_buf_addf(b, "%.*s|%.*s|%.*s|%s|%s|%s|%s\n", S(r->tenant), S(r->subject),
			      r->kind.ptr ? (int)r->kind.len : 4,
			      r->kind.ptr ? r->kind.ptr : "NULL", u1, t1, u2, t2);
		break;
	case KEEL_REC_FACT:
		keel_buf_addf(b, "%.*s|%.*s|%.*s|%.*s|%s|%s|%s|%s|%.*s|%.*s|%.*s|%.*s\n",
			      S(r->tenant), S(r->subject), S(r->name),
			      r->value.ptr ? (int)r->value.len : 4,
			      r->value.ptr ? r->value.ptr : "NULL", u1, t1, u2, t2,
			      S(r->asserted_by.source), S(r->asserted_by.id),
			      r->closed_by.id.ptr ? (int)r->closed_by.source.len : 4,
			      r->closed_by.id.ptr ? r->closed_by.source.ptr : "NULL",
			      r->closed_by.id.ptr ? (int)r->closed_by.id.len : 4,
			      r->closed_by.id.ptr ? r->closed_by.id.ptr : "NULL");
		break;
	default:
		keel_buf_addf(b, "%.*s|%.*s|%.*s|%.*s|%d|%s|%s|%s|%s|%.*s|%.*s|%.*s|%.*s\n",
			      S(r->tenant), S(r->subject), S(r->name), S(r->object),
			      r->linked ? 1 : 0, u1, t1, u2, t2, S(r->asserted_by.source),
			      S(r->asserted_by.id),
			      r->closed_by.id.ptr ? (int)r->closed_by.source.len : 4,
			      r->closed_by.id.ptr ? r->closed_by.source.ptr : "NULL",
			      r->closed_by.id.ptr ? (int)r->closed_by.id.len : 4,
			      r->closed_by.id.ptr ? r->closed_by.id.ptr : "NULL");
	}
#undef S
	return 0;
}

/* The views show the derived rows, row for row what the scans (and so
 * dump) give, each time as microseconds and as text of fixed width; the
 * text sorts as the time does, so ordered by it the rows come in the
 * scans' own order (valid_from, arrival), a time with a fraction after
 * the same second without. */
static void views_show_the_derived_rows(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	add_fact(&e, "t", "e17", 100 * SEC + 250, "a", "p", "7"); /* 100.000250 s */
	add_fact(&e, "t", "e18", 100 * SEC, "a", "p", "8");       /* 100 s */
	drive(f.s, &e, 3);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	static const struct {
		enum keel_record_type type;
		const char *sql;
	} views[] = {
	    {KEEL_REC_ENTITY, "SELECT tenant, subject, kind, first_seen, first_seen_text, "
			      "last_seen, last_seen_text FROM entities WHERE tenant = 't' "
			      "ORDER BY subject"},
	    {KEEL_REC_FACT, "SELECT tenant, subject, predicate, value, valid_from, "
			    "valid_from_text, valid_to, valid_to_text, asserted_by_source, "
			    "asserted_by, closed_by_source, closed_by FROM facts WHERE tenant = "
			    "'t' ORDER BY subject, predicate, valid_from_text, seq"},
	    {KEEL_REC_RELATION,
	     "SELECT tenant, subject, relation, object, linked, valid_from, "
	     "valid_from_text, valid_to, valid_to_text, asserted_by_source, asserted_by, "
	     "closed_by_source, closed_by FROM relations WHERE tenant = 't' ORDER BY "
	     "subject, relation, object, valid_from_text, seq"},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(views); i++) {
		struct keel_buf want, got;
		keel_buf_init(&want);
		keel_buf_init(&got);
		keel_buf_adds(&want, "");
		keel_buf_adds(&got, "");
		struct keel_scan q = {.type = views[i].type,
				      .tenant = keel_str_cstr("t")};
		assert_int_equal(keel_store_scan(f.s, &q, scan_row, &want), 0);
		assert_int_equal(sqlite3_exec(db, views[i].sql, view_row, &got, NULL),
				 SQLITE_OK);
		assert_string_equal(got.data, want.data);
		keel_buf_free(&want);
		keel_buf_free(&got);
	}
	assert_int_equal(sql_int(db, "SELECT count(*) FROM facts WHERE valid_from_text = "
				     "'1970-01-01T00:01:40.000250Z' AND valid_from = "
				     "100000250 AND asserted_by = 'e17'"),
			 1);
	/* e18's row at 100 s ends where e17's at 100.000250 s begins */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM facts WHERE valid_from_text = "
				     "'1970-01-01T00:01:40.000000Z' AND valid_to_text = "
				     "'1970-01-01T00:01:40.000250Z' AND asserted_by = 'e18'"),
			 1);
	events_free(&e);
	fx_close(&f);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(schema_is_created_on_first_use),
    cmocka_unit_test(newer_schema_is_refused),
    cmocka_unit_test(foreign_database_is_refused),
    cmocka_unit_test(url_without_path_is_refused),
    cmocka_unit_test(schema_1_file_is_migrated),
    cmocka_unit_test(views_show_the_derived_rows),
    cmocka_unit_test(batch_statements_only_insert),
    cmocka_unit_test(scan_plans_use_the_key_order),
    cmocka_unit_test(reads_at_a_time_skip_the_history),
    cmocka_unit_test(reads_known_at_skip_what_came_after),
    cmocka_unit_test(append_then_scan_in_canonical_order),
    cmocka_unit_test(scans_filter),
    cmocka_unit_test(scans_nest_and_stop),
    cmocka_unit_test(rollback_leaves_nothing),
    cmocka_unit_test(savepoint_rollback_keeps_earlier_batches),
    cmocka_unit_test(failed_append_rolls_back_its_batch),
    cmocka_unit_test(known_at_reads_what_was_recorded_by_then),
    cmocka_unit_test(entities_fold_their_mentions),
    cmocka_unit_test(replace_keeps_recorded_times),
    cmocka_unit_test(present_search_folds_the_rows),
    cmocka_unit_test(replace_lowers_the_watermark),
    cmocka_unit_test(past_search_reads_the_spans),
    cmocka_unit_test(seen_ids_marks_logged_events),
    cmocka_unit_test(append_is_a_handful_of_statements),
    cmocka_unit_test(locked_database_names_the_store),
    cmocka_unit_test(large_events_are_rejected_alone),
    cmocka_unit_test(file_store_checkpoints_in_the_background),
    cmocka_unit_test(durable_commits_sync_the_log),
    cmocka_unit_test(forget_leaves_secure_delete_off),
    cmocka_unit_test(in_memory_database_lives_in_its_handle),
    cmocka_unit_test(open_existing_creates_nothing),
};
KEEL_TEST_MAIN(tests)
