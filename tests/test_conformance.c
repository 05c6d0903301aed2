/*
 * test_conformance.c - the invariants of docs/semantics.md, on generated fleet
 * streams with late events and duplicates, against every store: memory,
 * SQLite, and MySQL/MariaDB when KEEL_TEST_MYSQL_URL names a server (the
 * suite's MariaDB fixture sets it).
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define STREAM_EVENTS 6000

struct stream {
	char *text;
	char **lines;
	size_t n;
};

static struct stream *stream_generate(uint64_t events, uint32_t tenants, uint64_t seed,
				      double late, double duplicates)
{
	struct stream *s = calloc(1, sizeof *s);
	size_t len = 0;
	FILE *f = open_memstream(&s->text, &len);
	const struct keel_generate_options o = {
		.events = events, .tenants = tenants, .seed = seed,
		.late = late, .duplicates = duplicates,
	};
	assert_int_equal(keel_generate_fleet(&o, f), 0);
	fclose(f);
	size_t cap = 1024;
	s->lines = malloc(cap * sizeof *s->lines);
	for (char *p = s->text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = 0;
		if (s->n == cap)
			s->lines = realloc(s->lines, (cap *= 2) * sizeof *s->lines);
		s->lines[s->n++] = p;
	}
	assert_int_equal(s->n, events);
	return s;
}

static void stream_free(struct stream *s)
{
	free(s->lines);
	free(s->text);
	free(s);
}

struct store_case {
	char url[4096];
	char *dir;
};

/* A fresh, empty store of the given kind ("memory", "sqlite", "mysql"). */
static bool store_url(const char *kind, struct store_case *c)
{
	c->dir = NULL;
	if (!strcmp(kind, "memory")) {
		snprintf(c->url, sizeof c->url, "memory:");
		return true;
	}
	if (!strcmp(kind, "sqlite")) {
		c->dir = keel_test_tmpdir();
		snprintf(c->url, sizeof c->url, "sqlite:%s/keel.db", c->dir);
		return true;
	}
	const char *base = getenv("KEEL_TEST_MYSQL_URL");
	if (!base || !*base)
		return false;
	/* The fixture hands out a fresh database per call through a script. */
	const char *fresh = getenv("KEEL_TEST_MYSQL_FRESH");
	if (!fresh)
		return false;
	FILE *p = popen(fresh, "r");
	assert_non_null(p);
	assert_non_null(fgets(c->url, sizeof c->url, p));
	c->url[strcspn(c->url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
	return true;
}

static void store_case_done(struct store_case *c)
{
	keel_test_rmdir(c->dir);
	free(c->dir);
}

static const struct keel_cartridge *fleet(void)
{
	static struct keel_cartridge *c;
	if (!c) {
		char *err = NULL;
		assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	}
	return c;
}

/* Ingests lines[order[i]] (or lines[i]) in batches; returns the dump. */
static char *ingest_into(struct keel_store *s, const struct stream *st, const size_t *order,
			 size_t batch, struct keel_report *out)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.cartridge = fleet(), .batch = batch};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < st->n; i++) {
		size_t k = order ? order[i] : i;
		int rc = keel_ingest_add(ing, st->lines[k], strlen(st->lines[k]), k + 1);
		if (rc)
			fail_msg("ingest: %s", keel_ingest_errmsg(ing));
	}
	assert_int_equal(keel_ingest_flush(ing), 0);
	if (out)
		*out = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return keel_test_dump(s, NULL);
}

static char *ingest_fresh(const char *kind, const struct stream *st, const size_t *order,
			  size_t batch, struct keel_report *out)
{
	struct store_case c;
	if (!store_url(kind, &c))
		return NULL;
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open(c.url, &s, &err))
		fail_msg("open %s: %s", c.url, err);
	char *dump = ingest_into(s, st, order, batch, out);
	keel_store_close(s);
	store_case_done(&c);
	return dump;
}

static struct stream *standard_stream(void)
{
	static struct stream *s;
	if (!s)
		s = stream_generate(STREAM_EVENTS, 3, 42, 0.05, 0.05);
	return s;
}

static void check_batch_sizes(const char *kind)
{
	const size_t sizes[] = {1, 7, 500, 5000};
	char *reference = NULL;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct keel_report r;
		char *dump = ingest_fresh(kind, standard_stream(), NULL, sizes[i], &r);
		if (!dump)
			skip();
		assert_true(r.accepted > 0);
		assert_true(r.duplicates > 0); /* the stream has re-sent events */
		assert_int_equal(r.rejected, 0);
		if (!reference) {
			reference = dump;
		} else {
			assert_string_equal(dump, reference);
			free(dump);
		}
	}
	free(reference);
}

static void batch_sizes_give_identical_dumps_memory(void **state)
{
	(void)state;
	check_batch_sizes("memory");
}

static void batch_sizes_give_identical_dumps_sqlite(void **state)
{
	(void)state;
	check_batch_sizes("sqlite");
}

static void batch_sizes_give_identical_dumps_mysql(void **state)
{
	(void)state;
	check_batch_sizes("mysql");
}

static void stores_give_identical_dumps(void **state)
{
	(void)state;
	char *mem = ingest_fresh("memory", standard_stream(), NULL, 500, NULL);
	char *lite = ingest_fresh("sqlite", standard_stream(), NULL, 500, NULL);
	assert_true(strlen(mem) > 1000);
	assert_string_equal(lite, mem);
	char *my = ingest_fresh("mysql", standard_stream(), NULL, 500, NULL);
	if (my) {
		assert_string_equal(my, mem);
		free(my);
	}
	free(mem);
	free(lite);
}

/* The dump without its event records (whose order is arrival order). */
static char *state_only(char *dump)
{
	struct keel_buf b;
	keel_buf_init(&b);
	for (char *p = dump; *p;) {
		char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
		if (strncmp(p, "{\"type\":\"event\"", 15) != 0)
			keel_buf_add(&b, p, len);
		p += len;
	}
	free(dump);
	return b.data ? b.data : strdup("");
}

static void permutations_give_same_timelines(void **state)
{
	(void)state;
	/* No late events here: the generator never gives two events of one
	 * tenant the same time, so any order must give the same state. */
	struct stream *st = stream_generate(3000, 2, 7, 0.0, 0.02);
	char *reference = state_only(ingest_fresh("memory", st, NULL, 100, NULL));
	assert_true(strlen(reference) > 1000);
	size_t *order = malloc(st->n * sizeof *order);
	uint64_t seed = 12345;
	for (int round = 0; round < 6; round++) {
		for (size_t i = 0; i < st->n; i++)
			order[i] = i;
		for (size_t i = st->n - 1; i > 0; i--) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t j = (size_t)(seed >> 33) % (i + 1);
			size_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		const char *kind = round % 2 ? "sqlite" : "memory";
		size_t batch = round < 2 ? 1 : (round < 4 ? 33 : 1000);
		char *got = state_only(ingest_fresh(kind, st, order, batch, NULL));
		assert_string_equal(got, reference);
		free(got);
	}
	free(order);
	stream_free(st);
	free(reference);
}

static void check_twice(const char *kind)
{
	struct store_case c;
	if (!store_url(kind, &c))
		skip();
	struct keel_store *s;
	assert_int_equal(keel_store_open(c.url, &s, NULL), 0);
	struct keel_report first, second;
	char *once = ingest_into(s, standard_stream(), NULL, 500, &first);
	char *twice = ingest_into(s, standard_stream(), NULL, 500, &second);
	assert_string_equal(twice, once);
	assert_int_equal(second.accepted, 0);
	assert_int_equal(second.duplicates, standard_stream()->n);
	assert_int_equal(second.conflicting, 0);
	assert_int_equal(second.rows_inserted, 0);
	free(once);
	free(twice);
	keel_store_close(s);
	store_case_done(&c);
}

static void ingesting_twice_changes_nothing_memory(void **state)
{
	(void)state;
	check_twice("memory");
}

static void ingesting_twice_changes_nothing_sqlite(void **state)
{
	(void)state;
	check_twice("sqlite");
}

static void ingesting_twice_changes_nothing_mysql(void **state)
{
	(void)state;
	check_twice("mysql");
}

static void check_dump_load(const char *from, const char *to)
{
	char *dump = ingest_fresh(from, standard_stream(), NULL, 500, NULL);
	if (!dump)
		skip();
	struct store_case c;
	if (!store_url(to, &c)) {
		free(dump);
		skip();
	}
	struct keel_store *s;
	assert_int_equal(keel_store_open(c.url, &s, NULL), 0);
	FILE *f = fmemopen(dump, strlen(dump), "r");
	assert_int_equal(keel_load(s, f), 0);
	fclose(f);
	char *again = keel_test_dump(s, NULL);
	assert_string_equal(again, dump);
	keel_store_close(s);
	store_case_done(&c);
	free(dump);
	free(again);
}

static void dump_load_dump_is_identical_memory(void **state)
{
	(void)state;
	check_dump_load("memory", "memory");
}

static void dump_load_dump_is_identical_sqlite(void **state)
{
	(void)state;
	check_dump_load("memory", "sqlite");
	check_dump_load("sqlite", "memory");
}

static void dump_load_dump_is_identical_mysql(void **state)
{
	(void)state;
	check_dump_load("sqlite", "mysql");
}

static void conflicting_duplicate_is_skipped_and_counted(void **state)
{
	(void)state;
	const char *a = "{\"id\":\"x1\",\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
			"\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"idle\",\"reason\":\"r\"}}";
	const char *b = "{\"id\":\"x1\",\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
			"\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"moving\",\"reason\":\"r\"}}";
	const char *a_spaced = "{ \"id\": \"x1\", \"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
			       "\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"idle\",\"reason\":\"r\"} }";
	const char *kinds[] = {"memory", "sqlite"};
	for (size_t k = 0; k < 2; k++) {
		struct store_case c;
		assert_true(store_url(kinds[k], &c));
		struct keel_store *s;
		assert_int_equal(keel_store_open(c.url, &s, NULL), 0);
		struct keel_ingest *ing;
		const struct keel_ingest_options o = {.cartridge = fleet(), .batch = 2};
		assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
		assert_int_equal(keel_ingest_add(ing, a, strlen(a), 1), 0);
		assert_int_equal(keel_ingest_add(ing, b, strlen(b), 2), 0); /* same batch */
		assert_int_equal(keel_ingest_add(ing, b, strlen(b), 3), 0);
		assert_int_equal(keel_ingest_add(ing, a_spaced, strlen(a_spaced), 4), 0);
		assert_int_equal(keel_ingest_flush(ing), 0);
		const struct keel_report *r = keel_ingest_report(ing);
		assert_int_equal(r->accepted, 1);
		assert_int_equal(r->duplicates, 3);
		/* b twice conflicts; a with other whitespace is the same event */
		assert_int_equal(r->conflicting, 2);
		keel_ingest_free(ing);
		char *dump = keel_test_dump(s, "t");
		assert_non_null(strstr(dump, "\"value\":\"idle\""));
		assert_null(strstr(dump, "moving"));
		free(dump);
		keel_store_close(s);
		store_case_done(&c);
	}
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(batch_sizes_give_identical_dumps_memory),
	cmocka_unit_test(batch_sizes_give_identical_dumps_sqlite),
	cmocka_unit_test(batch_sizes_give_identical_dumps_mysql),
	cmocka_unit_test(stores_give_identical_dumps),
	cmocka_unit_test(permutations_give_same_timelines),
	cmocka_unit_test(ingesting_twice_changes_nothing_memory),
	cmocka_unit_test(ingesting_twice_changes_nothing_sqlite),
	cmocka_unit_test(ingesting_twice_changes_nothing_mysql),
	cmocka_unit_test(dump_load_dump_is_identical_memory),
	cmocka_unit_test(dump_load_dump_is_identical_sqlite),
	cmocka_unit_test(dump_load_dump_is_identical_mysql),
	cmocka_unit_test(conflicting_duplicate_is_skipped_and_counted),
};
KEEL_TEST_MAIN(tests)
