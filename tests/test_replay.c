/*
 * test_replay.c - keel_replay and the bulk and workers modes of keel_ingest
 * through the library (docs/replay.md): replay keeps the dump; a changed
 * cartridge gives the dump of a fresh ingest with it and the report counts
 * the rows per predicate; dry runs write nothing; a replay that fails
 * midway (an SQLite trigger refuses a row) leaves the store as it was;
 * bulk loads equal ingest and count events only once written; workers are
 * refused by stores that take one writer.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/sqlite/internal.h"
#include "util.h"

#define EVENTS 4000

struct lines {
	char *text;
	char **v;
	size_t n;
};

static struct lines *lines_generate(uint32_t tenants, uint64_t seed)
{
	struct lines *l = calloc(1, sizeof *l);
	size_t len = 0;
	FILE *f = open_memstream(&l->text, &len);
	const struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = EVENTS,
	    .tenants = tenants,
	    .seed = seed,
	    .late = 0.1,
	    .duplicates = 0.05,
	};
	assert_int_equal(keel_generate_fleet(&o, f), 0);
	fclose(f);
	l->v = malloc((EVENTS + 8) * sizeof *l->v);
	for (char *p = l->text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		*nl = 0;
		l->v[l->n++] = p;
	}
	return l;
}

static void lines_free(struct lines *l)
{
	free(l->v);
	free(l->text);
	free(l);
}

static struct keel_store *open_store(const char *url)
{
	struct keel_store *s = NULL;
	char *err = NULL;
	int rc = keel_store_open(url, &s, &err);
	if (rc)
		fail_msg("%s", err);
	return s;
}

struct reject_log {
	uint64_t positions[64];
	size_t n;
};

static void on_reject(void *ud, uint64_t position, const char *id, const char *message,
		      const char *input, size_t input_len)
{
	(void)id;
	(void)message;
	(void)input;
	(void)input_len;
	struct reject_log *r = ud;
	if (r && r->n < 64)
		r->positions[r->n++] = position;
}

static void ingest_all(struct keel_store *s, const struct keel_cartridge *c,
		       const struct lines *l, size_t batch)
{
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .batch = batch};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < l->n; i++)
		assert_int_equal(keel_ingest_add(ing, l->v[i], strlen(l->v[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	keel_ingest_free(ing);
}

static const struct keel_replay_change *change(const struct keel_replay_report *r,
					       const char *table, const char *name)
{
	for (size_t i = 0; i < r->nchanges; i++)
		if (!strcmp(r->changes[i].table, table) &&
		    !strcmp(r->changes[i].name, name))
			return &r->changes[i];
	return NULL;
}

static void replay_memory_keeps_dump(void **state)
{
	(void)state;
	struct lines *l = lines_generate(3, 5);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_store *s = open_store("memory:");
	ingest_all(s, c, l, 37);
	char *before = keel_test_dump(s, NULL);
	const char *tenants[] = {"tenant-00", "tenant-01", "tenant-02"};
	for (size_t i = 0; i < 3; i++) {
		struct keel_replay_options o = {.size = sizeof o, .cartridge = c};
		struct keel_replay_report *r = NULL;
		assert_int_equal(keel_replay(s, tenants[i], &o, &r), 0);
		assert_true(r->events > 1000);
		assert_true(r->rows_before > 0);
		assert_int_equal(r->rows_before, r->rows_after);
		assert_int_equal(r->added, 0);
		assert_int_equal(r->removed, 0);
		assert_non_null(change(r, "facts", "status"));
		assert_non_null(change(r, "relations", "drives"));
		/* Nothing changed, so nothing was rewritten. */
		assert_non_null(strstr(r->method, "0 of "));
		assert_null(strstr(r->method, "memory"));
		keel_replay_report_free(r);
	}
	char *after = keel_test_dump(s, NULL);
	assert_string_equal(before, after);
	free(before);
	free(after);
	keel_store_close(s);
	keel_cartridge_free(c);
	lines_free(l);
}

/* Every stored seq of one predicate's facts, in dump order. */
static int collect_seq(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	keel_buf_addf(b, "%lld ", (long long)r->seq);
	return 0;
}

static char *fact_seqs(struct keel_store *s, const char *tenant, const char *predicate)
{
	struct keel_buf b;
	keel_buf_init(&b);
	struct keel_scan q = {.type = KEEL_REC_FACT,
			      .tenant = keel_str_cstr(tenant),
			      .name = keel_str_cstr(predicate)};
	assert_int_equal(keel_store_scan(s, &q, collect_seq, &b), 0);
	keel_buf_addc(&b, 0);
	return b.data;
}

static void changed_cartridge_on(const char *url)
{
	struct lines *l = lines_generate(2, 8);
	struct keel_cartridge *c1 = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_cartridge *c2 = keel_test_fleet_cartridge("\"predicate\": \"status\"",
							      "\"predicate\": \"state\"");
	struct keel_store *s = open_store(url);
	struct keel_store *fresh = open_store("memory:");
	ingest_all(s, c1, l, 500);
	ingest_all(fresh, c2, l, 500);
	char *before = keel_test_dump(s, "tenant-00");

	/* Dry run first: the report, and nothing written. */
	struct keel_replay_options o = {.size = sizeof o, .cartridge = c2, .dry_run = true};
	struct keel_replay_report *r = NULL;
	assert_int_equal(keel_replay(s, "tenant-00", &o, &r), 0);
	const struct keel_replay_change *st = change(r, "facts", "status");
	const struct keel_replay_change *nw = change(r, "facts", "state");
	const struct keel_replay_change *mk = change(r, "facts", "make");
	assert_non_null(st);
	assert_non_null(nw);
	assert_non_null(mk);
	assert_true(st->before > 0);
	assert_int_equal(st->after, 0);
	assert_int_equal(st->removed, st->before);
	assert_int_equal(nw->before, 0);
	assert_int_equal(nw->added, st->before);
	assert_int_equal(mk->added + mk->removed, 0);
	assert_int_equal(r->added, nw->added);
	assert_int_equal(r->removed, st->removed);
	keel_replay_report_free(r);
	char *dry = keel_test_dump(s, "tenant-00");
	assert_string_equal(before, dry);

	/* Only the changed groups are rewritten: "status" went, "state"
	 * came, every other row stays as it was, seq and all. */
	o.dry_run = false;
	o.change_cartridge = true; /* c2 is not the tenants' recorded c1 */
	char *make_before = fact_seqs(s, "tenant-00", "make");
	assert_true(strlen(make_before) > 0);
	assert_int_equal(keel_replay(s, "tenant-00", &o, &r), 0);
	assert_non_null(strstr(r->method, "; 2 of "));
	keel_replay_report_free(r);
	char *make_after = fact_seqs(s, "tenant-00", "make");
	assert_string_equal(make_before, make_after);
	assert_int_equal(keel_replay(s, "tenant-01", &o, &r), 0);
	keel_replay_report_free(r);
	free(make_before);
	free(make_after);
	char *got = keel_test_dump(s, NULL);
	char *want = keel_test_dump(fresh, NULL);
	assert_string_equal(got, want);
	assert_string_not_equal(got, before);

	free(before);
	free(dry);
	free(got);
	free(want);
	keel_store_close(s);
	keel_store_close(fresh);
	keel_cartridge_free(c1);
	keel_cartridge_free(c2);
	lines_free(l);
}

static void replay_changed_cartridge_equals_fresh_ingest(void **state)
{
	(void)state;
	changed_cartridge_on("memory:");
	char *dir = keel_test_tmpdir();
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s/c.db", dir);
	changed_cartridge_on(url);
	keel_test_rmdir(dir);
	free(dir);
}

static void replay_unknown_tenant_is_not_found(void **state)
{
	(void)state;
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_store *s = open_store("memory:");
	struct keel_replay_options o = {.size = sizeof o, .cartridge = c};
	struct keel_replay_report *r = NULL;
	assert_int_equal(keel_replay(s, "nobody", &o, &r), KEEL_ENOTFOUND);
	assert_null(r);
	assert_string_equal(keel_store_errmsg(s), "tenant \"nobody\" not found");
	keel_store_close(s);
	keel_cartridge_free(c);
}

/* A trigger refuses one of the facts the changed cartridge rewrites for
 * tenant-01: the replay has deleted the tenant's old "status" facts by
 * then. */
static void replay_failing_midway_changes_nothing(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s/r.db", dir);
	struct lines *l = lines_generate(2, 13);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_cartridge *c2 = keel_test_fleet_cartridge("\"predicate\": \"status\"",
							      "\"predicate\": \"state\"");
	struct keel_store *s = open_store(url);
	ingest_all(s, c, l, 500);
	char *before = keel_test_dump(s, NULL);
	sqlite3 *db = keel_store_sqlite_db(s);
	assert_int_equal(
	    sqlite3_exec(db,
			 "CREATE TRIGGER refuse BEFORE INSERT ON fact_rows "
			 "WHEN NEW.tenant = (SELECT id FROM names WHERE name = 'tenant-01') AND "
			 "NEW.predicate = (SELECT id FROM names WHERE name = 'state') "
			 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	struct keel_replay_options o = {.size = sizeof o, .cartridge = c2,
					.change_cartridge = true};
	struct keel_replay_report *r = NULL;
	assert_int_equal(keel_replay(s, "tenant-01", &o, &r), KEEL_ESTORE);
	assert_null(r);
	assert_non_null(strstr(keel_store_errmsg(s), "refused by the test"));
	char *after = keel_test_dump(s, NULL);
	assert_string_equal(before, after);
	/* The store is usable again, and the other tenant was never touched. */
	assert_int_equal(keel_replay(s, "tenant-00", &o, &r), 0);
	assert_true(r->added > 0);
	keel_replay_report_free(r);
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER refuse", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(keel_replay(s, "tenant-01", &o, &r), 0);
	keel_replay_report_free(r);
	char *replayed = keel_test_dump(s, NULL);
	assert_string_not_equal(replayed, before);
	free(before);
	free(after);
	free(replayed);
	keel_store_close(s);
	keel_cartridge_free(c);
	keel_cartridge_free(c2);
	lines_free(l);
	keel_test_rmdir(dir);
	free(dir);
}

static void bulk_equals_ingest(void **state)
{
	(void)state;
	struct lines *l = lines_generate(3, 17);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_store *a = open_store("memory:");
	ingest_all(a, c, l, 500);
	struct keel_store *b = open_store("memory:");
	struct reject_log rl = {0};
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c,
					.on_reject = on_reject,
					.reject_userdata = &rl,
					.mode = KEEL_INGEST_BULK};
	struct keel_ingest *bulk = NULL;
	assert_int_equal(keel_ingest_new(b, &o, &bulk), 0);
	const char *bad = "{\"id\":\"x\"}";
	assert_int_equal(keel_ingest_add(bulk, bad, strlen(bad), 1), 0);
	for (size_t i = 0; i < l->n; i++)
		assert_int_equal(keel_ingest_add(bulk, l->v[i], strlen(l->v[i]), i + 2), 0);
	/* Nothing is written, nor counted as accepted, before finish. */
	assert_int_equal(keel_ingest_flush(bulk), 0);
	assert_int_equal(keel_ingest_pending(bulk), 0);
	const struct keel_report *rep = keel_ingest_report(bulk);
	assert_int_equal(rep->accepted, 0);
	assert_int_equal(rep->duplicates, 0);
	char *empty = keel_test_dump(b, NULL);
	assert_string_equal(empty, "");
	free(empty);
	assert_int_equal(keel_ingest_finish(bulk), 0);
	assert_int_equal(rep->read, l->n + 1);
	assert_int_equal(rep->rejected, 1);
	assert_int_equal(rl.n, 1);
	assert_int_equal(rl.positions[0], 1);
	assert_true(rep->duplicates > 0);
	assert_int_equal(rep->accepted + rep->duplicates + rep->rejected, rep->read);
	assert_true(*keel_ingest_method(bulk) != 0);
	char *da = keel_test_dump(a, NULL);
	char *db = keel_test_dump(b, NULL);
	assert_string_equal(da, db);
	keel_ingest_free(bulk);

	/* A second load of tenants that now exist is refused, nothing written
	 * and nothing counted as accepted. */
	assert_int_equal(keel_ingest_new(b, &o, &bulk), 0);
	assert_int_equal(keel_ingest_add(bulk, l->v[0], strlen(l->v[0]), 1), KEEL_EINVAL);
	assert_non_null(strstr(keel_ingest_errmsg(bulk), "already has"));
	assert_int_not_equal(keel_ingest_finish(bulk), 0);
	assert_int_equal(keel_ingest_report(bulk)->accepted, 0);
	assert_string_equal(keel_ingest_method(bulk), "");
	keel_ingest_free(bulk);
	char *db2 = keel_test_dump(b, NULL);
	assert_string_equal(db, db2);
	free(da);
	free(db);
	free(db2);
	keel_store_close(a);
	keel_store_close(b);
	keel_cartridge_free(c);
	lines_free(l);
}

/* A bulk load whose write fails (a trigger refuses a row) counts nothing
 * as accepted: nothing was written. */
static void failed_bulk_write_counts_nothing_accepted(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s/bulk.db", dir);
	struct lines *l = lines_generate(2, 31);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_store *s = open_store(url);
	sqlite3 *db = keel_store_sqlite_db(s);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TRIGGER refuse BEFORE INSERT ON fact_rows "
				      "BEGIN SELECT RAISE(ABORT, 'refused'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .mode = KEEL_INGEST_BULK};
	struct keel_ingest *bulk = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &bulk), 0);
	for (size_t i = 0; i < l->n; i++)
		assert_int_equal(keel_ingest_add(bulk, l->v[i], strlen(l->v[i]), i + 1), 0);
	assert_int_not_equal(keel_ingest_finish(bulk), 0);
	assert_non_null(strstr(keel_ingest_errmsg(bulk), "refused"));
	const struct keel_report *rep = keel_ingest_report(bulk);
	assert_int_equal(rep->read, l->n);
	assert_int_equal(rep->accepted, 0);
	assert_int_equal(rep->duplicates, 0);
	assert_int_equal(rep->rows_inserted, 0);
	assert_string_equal(keel_ingest_method(bulk), "");
	keel_ingest_free(bulk);
	char *d = keel_test_dump(s, NULL);
	assert_string_equal(d, "");
	free(d);
	keel_store_close(s);
	keel_cartridge_free(c);
	lines_free(l);
	keel_test_rmdir(dir);
	free(dir);
}

/* Workers need a store that takes concurrent writers (their partitioning
 * is tested on MySQL, test_store_mysql.c); SQLite and memory refuse them
 * with a message, and take every event through the streaming mode. */
static void workers_need_concurrent_writers(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s/w.db", dir);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	const char *urls[] = {"memory:", url};
	for (size_t i = 0; i < 2; i++) {
		struct keel_store *s = open_store(urls[i]);
		struct keel_ingest_options o = {.size = sizeof o, 
		    .cartridge = c, .mode = KEEL_INGEST_WORKERS, .workers = 2};
		struct keel_ingest *ing = NULL;
		assert_int_equal(keel_ingest_new(s, &o, &ing), KEEL_EINVAL);
		assert_null(ing);
		assert_non_null(strstr(keel_store_errmsg(s), "takes one writer at a time"));
		keel_store_close(s);
	}
	keel_cartridge_free(c);
	keel_test_rmdir(dir);
	free(dir);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(replay_memory_keeps_dump),
    cmocka_unit_test(replay_changed_cartridge_equals_fresh_ingest),
    cmocka_unit_test(replay_unknown_tenant_is_not_found),
    cmocka_unit_test(replay_failing_midway_changes_nothing),
    cmocka_unit_test(bulk_equals_ingest),
    cmocka_unit_test(failed_bulk_write_counts_nothing_accepted),
    cmocka_unit_test(workers_need_concurrent_writers),
};
KEEL_TEST_MAIN(tests)
