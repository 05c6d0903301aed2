/*
 * test_store_sqlite.c - the SQLite store: schema creation, versions and
 * URLs; the plans of the very statements the store prepared (no table
 * scan, no sort); a prefetch that does not grow with a timeline's closed
 * rows; write-back then scan in canonical order; rollback; seen ids; lock
 * errors.
 *
 * Batches are driven here directly through the store interface with
 * hand-built events and the overlay (the same steps as the ingester), so
 * that every key, time and order is chosen by the test.
 */
#include "support.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "overlay.h"
#include "store.h"
#include "store/sqlite_internal.h"
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

/* One batch through the store, as the ingester does it, up to write-back. */
static void batch_write(struct keel_store *s, struct keel_overlay *o,
			struct keel_batch_event **ev, size_t n, struct keel_ptrvec *acc)
{
	/* As the ingester does: the memory store takes batches in place. */
	struct keel_overlay *own = keel_store_overlay(s);
	if (own)
		o = own;
	assert_int_equal(keel_store_begin(s), 0);
	assert_int_equal(keel_store_seen_ids(s, ev, n), 0);
	acc->len = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i]->status != KEEL_EV_PENDING)
			continue;
		ev[i]->status = KEEL_EV_ACCEPTED;
		keel_ptrvec_push(acc, ev[i]);
		keel_overlay_resolve(o, &ev[i], 1);
	}
	if (!acc->len)
		return;
	if (!own)
		assert_int_equal(keel_store_prefetch(s, o), 0);
	for (size_t i = 0; i < acc->len; i++)
		keel_overlay_apply(o, acc->items[i]);
	int rc =
	    keel_store_write_back(s, o, (struct keel_batch_event **)acc->items, acc->len);
	if (rc)
		fprintf(stderr, "write_back: %s\n", keel_store_errmsg(s));
	assert_int_equal(rc, 0);
}

/* All events through the store in batches of `batch`, each committed. */
static void drive(struct keel_store *s, struct events *e, size_t batch)
{
	struct keel_overlay o;
	struct keel_ptrvec acc = {0};
	keel_overlay_init(&o);
	struct keel_batch_event **ev = (struct keel_batch_event **)e->ev.items;
	for (size_t i = 0; i < e->ev.len; i += batch) {
		size_t m = e->ev.len - i < batch ? e->ev.len - i : batch;
		batch_write(s, &o, ev + i, m, &acc);
		assert_int_equal(keel_store_commit(s), 0);
		keel_overlay_reset(&o);
	}
	keel_overlay_free(&o);
	keel_ptrvec_free(&acc);
}

/* ------------------------------------------------------- scan helpers */

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
		keel_buf_add_json_str(b, r->asserted_by);
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, r->closed_by);
		keel_buf_addc(b, '\n');
		break;
	case KEEL_REC_EVENT:
		keel_buf_adds(b, "event ");
		keel_buf_add_json_str(b, r->id);
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
	assert_int_equal(keel_store_sqlite_schema_version(), 1);
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
			"AND name IN ('meta', 'events', 'event_ids', 'entities', "
			"'facts', 'relations')"),
	    6);
	/* One secondary index per row table (docs/store-sqlite.md), none other. */
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
			"AND sql IS NOT NULL"),
	    2);
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
				      "UPDATE meta SET value = 7 WHERE key = "
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
		 "store \"%s\": schema version 7 is newer than this keel supports (1)",
		 f.url);
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
	assert_int_equal(keel_store_counts(s, keel_str_cstr("t"), counts), 0);
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

/* A batch that makes the store prepare every batch statement: entities,
 * open and late rows of facts and relations, seen ids, closures. */
static void every_batch_statement(struct keel_store *s)
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
}

static void batch_statements_search_an_index(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	every_batch_statement(f.s);

	/* The exact statements the store prepared, read off its connection. */
	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct keel_ptrvec sqls = {0};
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st;
	     st = sqlite3_next_stmt(db, st))
		keel_ptrvec_push(&sqls, keel_xstrdup(sqlite3_sql(st)));

	static const char *const kinds[] = {
	    "CROSS JOIN event_ids",
	    "CROSS JOIN entities",
	    "CROSS JOIN facts AS f ON f.seq = (SELECT",
	    "CROSS JOIN facts AS f ON f.seq = coalesce(",
	    "CROSS JOIN relations AS r ON r.seq = (SELECT",
	    "CROSS JOIN relations AS r ON r.seq = coalesce(",
	    "UPDATE facts SET",
	    "UPDATE relations SET",
	};
	size_t seen[KEEL_ARRAY_LEN(kinds)] = {0};
	for (size_t i = 0; i < sqls.len; i++) {
		const char *sql = sqls.items[i];
		size_t k = 0;
		while (k < KEEL_ARRAY_LEN(kinds) && !strstr(sql, kinds[k]))
			k++;
		if (k == KEEL_ARRAY_LEN(kinds))
			continue;
		seen[k]++;
		char *plan = query_plan(db, sql);
		if (plan_scans_a_table(plan) || strstr(plan, "TEMP B-TREE") ||
		    !strstr(plan, "SEARCH "))
			fprintf(stderr, "bad plan for %.200s...:\n%s", sql, plan);
		assert_false(plan_scans_a_table(plan));
		assert_null(strstr(plan, "TEMP B-TREE"));
		/* each table is reached by a seek */
		assert_non_null(strstr(plan, "SEARCH "));
		/* the open row is found in the index alone */
		if (strstr(sql, "seq = (SELECT"))
			assert_non_null(strstr(plan, "USING COVERING INDEX"));
		if (strstr(sql, "UPDATE"))
			assert_non_null(
			    strstr(plan, "USING INTEGER PRIMARY KEY (rowid=?)"));
		else if (strstr(sql, "CROSS JOIN event_ids")) {
			/* seen ids read the narrow id b-tree alone, never the
			 * event rows that hold the envelopes */
			assert_non_null(strstr(plan, "SEARCH e USING PRIMARY KEY "
						     "(tenant=? AND id=?)"));
			assert_null(strstr(plan, "events"));
		} else if (strstr(sql, "CROSS JOIN entities"))
			assert_non_null(strstr(plan, "USING PRIMARY KEY (tenant=? AND "
						     "subject=?)"));
		else if (strstr(sql, "CROSS JOIN facts"))
			assert_non_null(strstr(plan, "INDEX facts_key (tenant=? AND "
						     "subject=? AND predicate=?"));
		else
			assert_non_null(strstr(plan,
					       "INDEX relations_key (tenant=? AND "
					       "subject=? AND relation=? AND object=?"));
		free(plan);
	}
	for (size_t k = 0; k < KEEL_ARRAY_LEN(kinds); k++) {
		if (!seen[k])
			fprintf(stderr, "no statement \"%s\" prepared\n", kinds[k]);
		assert_true(seen[k] > 0);
	}
	/* The detector itself: a plain scan is caught. */
	char *plan = query_plan(db, "SELECT * FROM facts WHERE value = '1'");
	assert_true(plan_scans_a_table(plan));
	free(plan);
	/* Why the store joins and does not use row-value IN (docs). */
	plan = query_plan(db, "SELECT * FROM facts WHERE (tenant, subject, predicate) IN "
			      "(VALUES ('t', 'a', 'p'), ('t', 'b', 'p'))");
	assert_true(plan_scans_a_table(plan));
	free(plan);

	for (size_t i = 0; i < sqls.len; i++)
		free(sqls.items[i]);
	keel_ptrvec_free(&sqls);
	fx_close(&f);
}

/* Dump scans use the key index and sort only within a timeline. */
static void scan_plans_use_the_key_order(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	every_batch_statement(f.s);
	for (int t = KEEL_REC_ENTITY; t <= KEEL_REC_EVENT; t++) {
		struct keel_scan q = {.type = (enum keel_record_type)t,
				      .tenant = keel_str_cstr("t")};
		free(scan_text(f.s, &q));
	}
	struct keel_scan by_id = {.type = KEEL_REC_EVENT,
				  .tenant = keel_str_cstr("t"),
				  .event_id = keel_str_cstr("e3")};
	char *one = scan_text(f.s, &by_id);
	assert_non_null(strstr(one, "event \"e3\""));
	free(one);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	int checked = 0;
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st;
	     st = sqlite3_next_stmt(db, st)) {
		const char *sql = sqlite3_sql(st);
		if (strncmp(sql, "SELECT tenant,", 14) != 0)
			continue;
		char *plan = query_plan(db, sql);
		if (strstr(sql, "FROM entities")) {
			assert_non_null(
			    strstr(plan, "SEARCH entities USING PRIMARY KEY (tenant=?)"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		} else if (strstr(sql, "FROM facts")) {
			assert_non_null(strstr(
			    plan, "SEARCH facts USING INDEX facts_key (tenant=?)"));
			assert_non_null(
			    strstr(plan, "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"));
		} else if (strstr(sql, "FROM relations")) {
			assert_non_null(
			    strstr(plan, "SEARCH relations USING INDEX relations_key "
					 "(tenant=?)"));
			assert_non_null(
			    strstr(plan, "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"));
		} else if (strstr(sql, "event_ids")) {
			/* one event by id: a seek in event_ids, then its row */
			assert_non_null(strstr(plan, "SEARCH events USING INTEGER "
						     "PRIMARY KEY (rowid=?)"));
			assert_non_null(strstr(plan, "SEARCH event_ids USING PRIMARY "
						     "KEY (tenant=? AND id=?)"));
			assert_false(plan_scans_a_table(plan));
		} else {
			/* the log streams in arrival order, no sort */
			assert_non_null(strstr(plan, "SCAN events"));
			assert_null(strstr(plan, "TEMP B-TREE"));
		}
		free(plan);
		checked++;
	}
	assert_int_equal(checked, 5);
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

/* A timeline of nrows rows on (t, vehicle:1, status), at 1..nrows s, then
 * one prefetch for an in-order and a late assertion; returns the VM steps
 * of the prefetch and checks what it fetched. */
static int64_t prefetch_steps(size_t nrows)
{
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	for (size_t i = 1; i <= nrows; i++) {
		char id[32], v[32];
		snprintf(id, sizeof id, "e%zu", i);
		snprintf(v, sizeof v, "%zu", i);
		add_fact(&e, "t", id, (int64_t)i * SEC, "vehicle:1", "status", v);
	}
	drive(f.s, &e, 500);
	uint64_t counts[4];
	assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), counts), 0);
	assert_int_equal(counts[1], nrows);

	struct events late;
	events_init(&late);
	int64_t late_t = (int64_t)(nrows / 2) * SEC + SEC / 2;
	add_fact(&late, "t", "now", (int64_t)(nrows + 1) * SEC, "vehicle:1", "status",
		 "\"new\"");
	add_fact(&late, "t", "late", late_t, "vehicle:1", "status", "\"late\"");

	sqlite3 *db = keel_store_sqlite_db(f.s);
	struct keel_overlay o;
	keel_overlay_init(&o);
	/* This is about the read: set aside the last row the store remembers
	 * from writing the timeline. */
	keel_store_sqlite_open_rows(f.s, true, NULL, NULL);
	assert_int_equal(keel_store_begin(f.s), 0);
	for (size_t i = 0; i < late.ev.len; i++) {
		struct keel_batch_event *ev = late.ev.items[i];
		keel_overlay_resolve(&o, &ev, 1);
	}
	int64_t vm, fullscan;
	stmt_steps(db, &vm, &fullscan);
	uint64_t before = keel_store_statements(f.s);
	assert_int_equal(keel_store_prefetch(f.s, &o), 0);
	stmt_steps(db, &vm, &fullscan);
	/* entities, open rows of facts, late rows of facts */
	assert_int_equal(keel_store_statements(f.s) - before, 3);
	assert_int_equal(fullscan, 0);

	/* Exactly the open row and the row containing the late time. */
	assert_int_equal(o.timelines.len, 1);
	struct keel_timeline *tl = o.timelines.items[0];
	assert_int_equal(tl->nrows, 2);
	assert_int_equal(tl->rows[0]->valid_from, (int64_t)(nrows / 2) * SEC);
	assert_int_equal(tl->rows[0]->valid_to, (int64_t)(nrows / 2 + 1) * SEC);
	assert_int_equal(tl->rows[1]->valid_from, (int64_t)nrows * SEC);
	assert_int_equal(tl->rows[1]->valid_to, KEEL_TIME_INF);
	assert_int_equal(keel_store_rollback(f.s), 0);
	keel_overlay_free(&o);
	events_free(&late);
	events_free(&e);
	fx_close(&f);
	return vm;
}

/* The store remembers the last rows of the timelines it wrote, so a later
 * batch on them reads none; once another connection has written, it reads
 * them all again, and the result is what one writer would have made. */
static void remembered_last_rows_yield_to_another_writer(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	events_init(&e);
	/* 4 batches of 3 on the same 3 timelines; then another connection
	 * writes on one of them; then 2 more batches of this one. */
	static const char *const subjects[] = {"vehicle:1", "vehicle:2", "vehicle:3"};
	for (int i = 0; i < 18; i++) {
		char id[32], v[32];
		snprintf(id, sizeof id, "e%d", i);
		snprintf(v, sizeof v, "%d", i);
		add_fact(&e, "t", id, (int64_t)(i + 1) * SEC, subjects[i % 3], "status", v);
	}
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	struct events first, other, last;
	events_init(&first);
	events_init(&other);
	events_init(&last);
	for (int i = 0; i < 12; i++)
		keel_ptrvec_push(&first.ev, ev[i]);
	for (int i = 12; i < 15; i++)
		keel_ptrvec_push(&other.ev, ev[i]);
	for (int i = 15; i < 18; i++)
		keel_ptrvec_push(&last.ev, ev[i]);

	uint64_t hits, misses;
	drive(f.s, &first, 3);
	keel_store_sqlite_open_rows(f.s, false, &hits, &misses);
	assert_int_equal(misses, 3); /* the first batch only */
	assert_int_equal(hits, 9);

	struct keel_store *b;
	assert_int_equal(keel_store_open(f.url, &b, NULL), 0);
	drive(b, &other, 3);
	keel_store_close(b);

	drive(f.s, &last, 3);
	keel_store_sqlite_open_rows(f.s, false, &hits, &misses);
	assert_int_equal(misses, 6); /* read again after the other writer */
	assert_int_equal(hits, 9);

	/* The same events through one memory store: the same rows. */
	struct keel_store *mem;
	assert_int_equal(keel_store_open("memory:", &mem, NULL), 0);
	events_pending(&e);
	drive(mem, &e, 3);
	char *want = scan_all(mem, "t"), *got = scan_all(f.s, "t");
	assert_string_equal(got, want);
	free(want);
	free(got);
	keel_store_close(mem);
	events_free(&first); /* views of e's events */
	events_free(&other);
	events_free(&last);
	events_free(&e);
	fx_close(&f);
}

static void prefetch_does_not_visit_closed_rows(void **state)
{
	(void)state;
	int64_t small = prefetch_steps(10);
	int64_t big = prefetch_steps(10001); /* 10 000 closed rows */
	/* A scan of the closed rows would cost at least one step per row. The
	 * two prefetches may differ by a few steps (a deeper b-tree), never by
	 * anything that grows with the rows. */
	if (big - small > 50)
		fprintf(stderr, "prefetch steps: %lld with 10 rows, %lld with 10001\n",
			(long long)small, (long long)big);
	assert_true(big - small <= 50);
	assert_true(big < 1000);
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

static void write_back_then_scan_in_canonical_order(void **state)
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
		assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), counts), 0);
		assert_int_equal(counts[0], 5);
		assert_int_equal(counts[1], 11);
		assert_int_equal(counts[2], 4);
		assert_int_equal(counts[3], 16);

		/* "no value" is NULL, never the JSON text null */
		sqlite3 *db = keel_store_sqlite_db(f.s);
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM facts WHERE value IS NULL"), 1);
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM facts WHERE value = 'null'"), 0);
		assert_int_equal(
		    sql_int(db, "SELECT count(*) FROM facts WHERE tenant = 't' AND "
				"valid_to = 9223372036854775807 AND closed_by IS NULL"),
		    7);
		/* seqs follow insertion order within each table */
		assert_int_equal(sql_int(db, "SELECT max(seq) FROM events"), 17);
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

/* ------------------------------------------------------------ rollback */

static void rollback_leaves_nothing(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	struct events e;
	story(&e);
	struct keel_overlay o;
	struct keel_ptrvec acc = {0};
	keel_overlay_init(&o);
	batch_write(f.s, &o, (struct keel_batch_event **)e.ev.items, e.ev.len, &acc);
	assert_int_equal(keel_store_rollback(f.s), 0);
	keel_overlay_reset(&o);

	uint64_t counts[4];
	assert_int_equal(keel_store_counts(f.s, keel_str_cstr("t"), counts), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(counts[i], 0);
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(f.s, &tenants), 0);
	assert_int_equal(tenants.len, 0);
	keel_ptrvec_free(&tenants);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sql_int(db,
				 "SELECT (SELECT count(*) FROM facts) + (SELECT count(*) "
				 "FROM relations) + (SELECT count(*) FROM events) + "
				 "(SELECT count(*) FROM entities)"),
			 0);

	/* The same batch again commits, with seqs from 1 again. */
	events_pending(&e);
	drive(f.s, &e, 500);
	assert_int_equal(sql_int(db, "SELECT min(seq) FROM facts"), 1);
	assert_int_equal(sql_int(db, "SELECT min(seq) FROM events"), 1);
	struct keel_batch_event *first = e.ev.items[0];
	assert_int_equal(first->seq, 1);
	keel_overlay_free(&o);
	keel_ptrvec_free(&acc);
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
	/* begin plus one lookup per thousand events */
	assert_int_equal(keel_store_statements(f.s) - before, 1 + 3);
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

static void write_back_is_a_handful_of_statements(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	/* Two batches of 500 events, two rows each, on 500 subjects: the
	 * second closes the 1000 rows of the first. */
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
	uint64_t s0 = keel_store_statements(f.s);
	struct keel_overlay o;
	struct keel_ptrvec acc = {0};
	keel_overlay_init(&o);
	struct keel_batch_event **ev = (struct keel_batch_event **)e.ev.items;
	batch_write(f.s, &o, ev, 500, &acc);
	assert_int_equal(keel_store_commit(f.s), 0);
	assert_int_equal(o.new_rows.len, 1000);
	keel_overlay_reset(&o);
	uint64_t s1 = keel_store_statements(f.s);
	batch_write(f.s, &o, ev + 500, 500, &acc);
	assert_int_equal(keel_store_commit(f.s), 0);
	assert_int_equal(o.dirty_rows.len, 1000);
	uint64_t s2 = keel_store_statements(f.s);
	/* begin, seen, 3 prefetch reads, max seq, inserts of 500 facts, 500
	 * relations, 500+ entities, 500 events and their 500 ids in 128-row
	 * statements and their binary remainders, closures, commit: about 45
	 * for 3000 row writes, never one per row. */
	fprintf(stderr, "statements: first batch %llu, second %llu\n",
		(unsigned long long)(s1 - s0), (unsigned long long)(s2 - s1));
	assert_true(s1 - s0 <= 48);
	assert_true(s2 - s1 <= 50);
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sql_int(db,
				 "SELECT count(*) FROM facts WHERE valid_to = 1000000000 "
				 "AND closed_by = 'r1-0' AND subject = 'vehicle:0'"),
			 1);
	assert_int_equal(
	    sql_int(db, "SELECT count(*) FROM facts WHERE closed_by IS NOT NULL"), 500);
	assert_int_equal(sql_int(db,
				 "SELECT count(*) FROM relations WHERE closed_by IS NOT "
				 "NULL AND linked = 1 AND closed_by LIKE 'r1-%'"),
			 500);
	/* new rows got the seqs of their insertion order */
	struct keel_row *last = o.new_rows.items[o.new_rows.len - 1];
	assert_int_equal(last->seq, last->timeline->kind == KEEL_ROW_FACT
					? sql_int(db, "SELECT max(seq) FROM facts")
					: sql_int(db, "SELECT max(seq) FROM relations"));
	keel_overlay_free(&o);
	keel_ptrvec_free(&acc);
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
	keel_test_large_events(f.s, (size_t)limit - 4096,
			       "SQLite's length limit, less room for the rest of its row");
	fx_close(&f);
}

static void failed_write_rolls_back_whole(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	/* An event id logged behind the store's back makes the log insert
	 * fail after the rows went in: the batch must leave nothing. */
	sqlite3 *db = keel_store_sqlite_db(f.s);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER no_e3 BEFORE INSERT ON events "
				      "WHEN new.id = 'e3' BEGIN SELECT raise(ABORT, "
				      "'e3 refused'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	struct events e;
	story(&e);
	struct keel_overlay o;
	struct keel_ptrvec acc = {0};
	keel_overlay_init(&o);
	assert_int_equal(keel_store_begin(f.s), 0);
	assert_int_equal(
	    keel_store_seen_ids(f.s, (struct keel_batch_event **)e.ev.items, e.ev.len),
	    0);
	for (size_t i = 0; i < e.ev.len; i++) {
		struct keel_batch_event *ev = e.ev.items[i];
		ev->status = KEEL_EV_ACCEPTED;
		keel_overlay_resolve(&o, &ev, 1);
	}
	assert_int_equal(keel_store_prefetch(f.s, &o), 0);
	for (size_t i = 0; i < e.ev.len; i++)
		keel_overlay_apply(&o, e.ev.items[i]);
	assert_int_equal(keel_store_write_back(
			     f.s, &o, (struct keel_batch_event **)e.ev.items, e.ev.len),
			 KEEL_ESTORE);
	char want[4400];
	snprintf(want, sizeof want, "sqlite \"%s\": e3 refused", f.path);
	assert_string_equal(keel_store_errmsg(f.s), want);
	assert_int_equal(keel_store_rollback(f.s), 0);
	assert_int_equal(sql_int(db,
				 "SELECT (SELECT count(*) FROM facts) + (SELECT count(*) "
				 "FROM relations) + (SELECT count(*) FROM events) + "
				 "(SELECT count(*) FROM entities)"),
			 0);
	keel_overlay_free(&o);
	keel_ptrvec_free(&acc);
	events_free(&e);
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
 * (src/store/sqlite_checkpoint.c), with nothing asked of the caller: its
 * metrics count the checkpoints. */
static void file_store_checkpoints_in_the_background(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f);
	assert_int_equal(store_metric(f.s, "keel_sqlite_checkpoints_total"), 0);
	assert_int_equal(store_metric(f.s, "keel_sqlite_checkpoint_pages_total"), 0);
	every_batch_statement(f.s);
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

/* sqlite::memory: has no log and no file: no checkpointer, no metrics; and
 * its state lives in its handle, like the memory store's. */
static void in_memory_database_lives_in_its_handle(void **state)
{
	(void)state;
	struct keel_store *s = NULL;
	char *err = NULL;
	assert_int_equal(keel_store_open("sqlite::memory:", &s, &err), 0);
	assert_true(keel_store_state_in_handle(s));
	every_batch_statement(s);
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
	every_batch_statement(f.s);
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

const struct CMUnitTest tests[] = {
    cmocka_unit_test(schema_is_created_on_first_use),
    cmocka_unit_test(newer_schema_is_refused),
    cmocka_unit_test(foreign_database_is_refused),
    cmocka_unit_test(url_without_path_is_refused),
    cmocka_unit_test(batch_statements_search_an_index),
    cmocka_unit_test(scan_plans_use_the_key_order),
    cmocka_unit_test(prefetch_does_not_visit_closed_rows),
    cmocka_unit_test(write_back_then_scan_in_canonical_order),
    cmocka_unit_test(remembered_last_rows_yield_to_another_writer),
    cmocka_unit_test(scans_filter),
    cmocka_unit_test(scans_nest_and_stop),
    cmocka_unit_test(rollback_leaves_nothing),
    cmocka_unit_test(seen_ids_marks_logged_events),
    cmocka_unit_test(write_back_is_a_handful_of_statements),
    cmocka_unit_test(locked_database_names_the_store),
    cmocka_unit_test(failed_write_rolls_back_whole),
    cmocka_unit_test(large_events_are_rejected_alone),
    cmocka_unit_test(file_store_checkpoints_in_the_background),
    cmocka_unit_test(in_memory_database_lives_in_its_handle),
    cmocka_unit_test(open_existing_creates_nothing),
};
KEEL_TEST_MAIN(tests)
