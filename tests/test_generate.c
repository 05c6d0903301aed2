/*
 * test_generate.c - the fleet stream generator: profile 1 pinned by digest,
 * determinism, line sizes, the late and duplicate fractions, unique ids and
 * times, and a stream that the fleet cartridge handles whole.
 */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cartridge/cartridge.h"
#include "event/envelope.h"

/* ------------------------------------------------------------- helpers */

static char *generate(const struct keel_generate_options *o, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	assert_non_null(f);
	assert_int_equal(keel_generate_fleet(o, f), 0);
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

struct line {
	const char *text;
	size_t len;
	char tenant[65];
	char id[257];
	char type[64];
	char subject_ids[4][32]; /* vehicle, driver, depot, trip ids ("" if none) */
	int64_t time;
	size_t index;
};

static void copy_str(char *dst, size_t size, const struct keel_json *v)
{
	dst[0] = 0;
	if (v && v->type == KEEL_JSON_STRING && v->len < size) {
		memcpy(dst, v->str, v->len);
		dst[v->len] = 0;
	}
}

/* Splits the stream into lines and parses the fields the tests look at. */
static struct line *parse_lines(const char *text, size_t len, size_t *count)
{
	size_t cap = 1024, n = 0;
	struct line *lines = malloc(cap * sizeof *lines);
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	for (size_t off = 0; off < len;) {
		const char *nl = memchr(text + off, '\n', len - off);
		assert_non_null(nl); /* every line ends in a newline */
		if (n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof *lines);
		struct line *l = &lines[n];
		memset(l, 0, sizeof *l);
		l->text = text + off;
		l->len = (size_t)(nl - l->text);
		l->index = n;
		struct keel_json_error err;
		if (keel_json_parse(&doc, l->text, l->len, &err) != 0)
			fail_msg("line %zu: %s: %.*s", n + 1, err.msg, (int)l->len,
				 l->text);
		copy_str(l->tenant, sizeof l->tenant,
			 keel_json_get(doc.root, "tenant", 6));
		copy_str(l->id, sizeof l->id, keel_json_get(doc.root, "id", 2));
		copy_str(l->type, sizeof l->type, keel_json_get(doc.root, "type", 4));
		const struct keel_json *t = keel_json_get(doc.root, "time", 4);
		assert_non_null(t);
		assert_int_equal(keel_time_parse(t->str, t->len, &l->time, NULL), 0);
		const struct keel_json *data = keel_json_get(doc.root, "data", 4);
		static const char *const keys[] = {"vehicle_id", "driver_id", "depot_id",
						   "trip_id"};
		for (size_t k = 0; k < 4; k++)
			copy_str(l->subject_ids[k], sizeof l->subject_ids[k],
				 keel_json_get(data, keys[k], strlen(keys[k])));
		n++;
		off = (size_t)(nl - text) + 1;
	}
	keel_json_doc_free(&doc);
	*count = n;
	return lines;
}

static int by_tenant_id(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	int c = strcmp(x->tenant, y->tenant);
	if (!c)
		c = strcmp(x->id, y->id);
	if (!c)
		c = x->index < y->index ? -1 : x->index > y->index;
	return c;
}

static int by_tenant_time(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	int c = strcmp(x->tenant, y->tenant);
	if (!c)
		c = x->time < y->time ? -1 : x->time > y->time;
	return c;
}

struct stats {
	size_t lines, duplicates, distinct, late;
};

/* Duplicates are lines whose (tenant, id) came before, and each must be a
 * byte copy of the first; distinct events must have distinct times within a
 * tenant; a distinct event is late if an earlier line has a later time. */
static struct stats measure(const struct line *lines, size_t n)
{
	struct stats s = {n, 0, 0, 0};
	struct line *sorted = malloc((n ? n : 1) * sizeof *sorted);
	memcpy(sorted, lines, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, by_tenant_id);
	bool *dup = calloc(n ? n : 1, sizeof *dup);
	size_t ndistinct = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(sorted[i].tenant, sorted[i - 1].tenant) == 0 &&
		    strcmp(sorted[i].id, sorted[i - 1].id) == 0) {
			/* sorted[i - 1] is an earlier line with the same key. */
			const struct line *first = &sorted[i - 1];
			if (first->len != sorted[i].len ||
			    memcmp(first->text, sorted[i].text, first->len) != 0)
				fail_msg("id %s of %s re-used by a different line",
					 sorted[i].id, sorted[i].tenant);
			dup[sorted[i].index] = true;
			s.duplicates++;
		} else {
			sorted[ndistinct++] = sorted[i];
		}
	}
	s.distinct = ndistinct;
	qsort(sorted, ndistinct, sizeof *sorted, by_tenant_time);
	for (size_t i = 1; i < ndistinct; i++)
		if (strcmp(sorted[i].tenant, sorted[i - 1].tenant) == 0 &&
		    sorted[i].time == sorted[i - 1].time)
			fail_msg("two events of %s share a time", sorted[i].tenant);
	int64_t max = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (dup[i])
			continue;
		if (lines[i].time < max)
			s.late++;
		else
			max = lines[i].time;
	}
	free(dup);
	free(sorted);
	return s;
}

static void sha256_is(const char *text, size_t len, const char *hex)
{
	char *dir = keel_test_tmpdir();
	char path[4096];
	snprintf(path, sizeof path, "%s/stream.ndjson", dir);
	keel_test_write_file(path, text, len);
	int rc = keel_test_sh("echo '%s  %s' | sha256sum --check --status", hex, path);
	if (rc != 0) {
		keel_test_sh("sha256sum '%s' >&2", path);
		fail_msg("sha256 of the stream is not %s", hex);
	}
	keel_test_rmdir(dir);
	free(dir);
}

/* --------------------------------------------------------------- tests */

/* Profile 1 never changes: these digests were recorded when it was
 * released, and `keel generate fleet --events 1000 --seed 7` prints the
 * first stream. A failure here means the generator changed: make a new
 * profile instead. */
static void test_profile1_pinned(void **state)
{
	(void)state;
	struct keel_generate_options o = {.size = sizeof o, .events = 1000, .seed = 7};
	size_t len;
	char *text = generate(&o, &len);
	sha256_is(text, len,
		  "ff107ab93894a32b65af671ab10382bb304254a422d7109cbe54a0559494ab12");
	free(text);

	o = (struct keel_generate_options){.size = sizeof(struct keel_generate_options), .events = 5000,
					   .tenants = 7,
					   .seed = 20260105,
					   .late = 0.05,
					   .duplicates = 0.02};
	text = generate(&o, &len);
	sha256_is(text, len,
		  "da8831de6b16e838db38af1819743a63103cf6d5adcf69e7ae805fbb7ab1219b");
	free(text);
}

static void test_deterministic(void **state)
{
	(void)state;
	struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = 3000, .tenants = 4, .seed = 99, .late = 0.1, .duplicates = 0.1};
	size_t n1, n2, n3;
	char *a = generate(&o, &n1);
	char *b = generate(&o, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(a, b, n1);
	o.seed = 100;
	char *c = generate(&o, &n3);
	assert_false(n1 == n3 && memcmp(a, c, n1) == 0);
	free(c);
	/* Seed 0 is seed 1 (zero-initialised options give the CLI default). */
	struct keel_generate_options z = {.size = sizeof z, .events = 50};
	struct keel_generate_options one = {.size = sizeof one, .events = 50, .seed = 1};
	c = generate(&z, &n3);
	char *d = generate(&one, &n2);
	assert_int_equal(n2, n3);
	assert_memory_equal(c, d, n2);
	/* A shorter run is a prefix of a longer one when nothing is held. */
	struct keel_generate_options shorter = {.size = sizeof shorter, .events = 20, .seed = 1};
	char *e = generate(&shorter, &n1);
	assert_true(n1 < n2);
	assert_memory_equal(c, e, n1);
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
}

static void test_sizes_and_count(void **state)
{
	(void)state;
	struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = 20000, .tenants = 12, .seed = 3, .late = 0.05, .duplicates = 0.02};
	size_t len, n;
	char *text = generate(&o, &len);
	struct line *lines = parse_lines(text, len, &n);
	assert_int_equal(n, 20000);
	size_t min = SIZE_MAX, max = 0;
	for (size_t i = 0; i < n; i++) {
		min = lines[i].len < min ? lines[i].len : min;
		max = lines[i].len > max ? lines[i].len : max;
	}
	double avg = (double)len / (double)n;
	print_message("line bytes: min %zu, avg %.1f, max %zu\n", min, avg, max);
	assert_true(min >= 250);
	assert_true(max <= 400);
	assert_true(avg >= 280.0 && avg <= 340.0);
	free(lines);
	free(text);

	/* Exactly --events lines, whatever is held back or repeated. */
	const struct keel_generate_options edge[] = {
	    {.size = sizeof edge[0], .events = 1},
	    {.size = sizeof edge[0], .events = 7, .late = 1.0},
	    {.size = sizeof edge[0], .events = 500, .tenants = 3, .late = 1.0, .duplicates = 0.5},
	    {.size = sizeof edge[0], .events = 300, .duplicates = 1.0},
	    {.size = sizeof edge[0], .events = 1000, .tenants = 1000},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(edge); i++) {
		text = generate(&edge[i], &len);
		lines = parse_lines(text, len, &n);
		assert_int_equal(n, edge[i].events);
		free(lines);
		free(text);
	}
	struct keel_generate_options none = {.size = sizeof none, .events = 0};
	text = generate(&none, &len);
	assert_int_equal(len, 0);
	free(text);
}

static void test_late_and_duplicates(void **state)
{
	(void)state;
	const struct {
		double late, dup;
	} cases[] = {{0.0, 0.0}, {0.1, 0.05}, {0.02, 0.2}, {0.3, 0.0}};
	for (size_t k = 0; k < KEEL_ARRAY_LEN(cases); k++) {
		struct keel_generate_options o = {.size = sizeof o, .events = 20000,
						  .tenants = 5,
						  .seed = 11 + k,
						  .late = cases[k].late,
						  .duplicates = cases[k].dup};
		size_t len, n;
		char *text = generate(&o, &len);
		struct line *lines = parse_lines(text, len, &n);
		struct stats s = measure(lines, n);
		double dup = (double)s.duplicates / (double)s.lines;
		double late = (double)s.late / (double)s.distinct;
		print_message("late %.3f -> %.4f, duplicates %.3f -> %.4f\n",
			      cases[k].late, late, cases[k].dup, dup);
		/* Five standard deviations of a binomial at n = 20000 is at
		 * most 0.016. */
		assert_true(fabs(dup - cases[k].dup) < 0.016);
		assert_true(fabs(late - cases[k].late) < 0.016);
		if (cases[k].late == 0.0) {
			assert_int_equal(s.late, 0);
		}
		if (cases[k].dup == 0.0) {
			assert_int_equal(s.duplicates, 0);
		}
		free(lines);
		free(text);
	}
}

/* In a stream without late events, everything an event names was
 * introduced before it, and nothing is reported about a retired vehicle. */
static void test_stream_makes_sense(void **state)
{
	(void)state;
	struct keel_generate_options o = {.size = sizeof o, .events = 30000, .tenants = 3, .seed = 5};
	size_t len, n;
	char *text = generate(&o, &len);
	struct line *lines = parse_lines(text, len, &n);
	/* Names seen so far, keyed by hash of "tenant|kind|id": 1 known,
	 * 2 a retired vehicle. */
	struct keel_map known;
	keel_map_init(&known);
	enum { VEHICLE, DRIVER, DEPOT, TRIP };
	static const char *const introduces[] = {
	    "fleet.vehicle.registered", "fleet.driver.hired", "fleet.depot.opened",
	    "fleet.trip.started"};
	size_t retired = 0;
	for (size_t i = 0; i < n; i++) {
		const struct line *l = &lines[i];
		for (size_t k = 0; k < 4; k++) {
			if (!l->subject_ids[k][0])
				continue;
			char key[160];
			snprintf(key, sizeof key, "%s|%zu|%s", l->tenant, k,
				 l->subject_ids[k]);
			uint64_t h = keel_hash64(key, strlen(key), 0);
			size_t slot = keel_map_first(&known, h);
			if (strcmp(l->type, introduces[k]) == 0) {
				if (slot != SIZE_MAX)
					fail_msg("line %zu introduces %s twice", i + 1,
						 key);
				keel_map_put(&known, h, (void *)1);
			} else if (slot == SIZE_MAX) {
				fail_msg("line %zu (%s) names %s before it exists", i + 1,
					 l->type, key);
			} else if (k == VEHICLE && known.values[slot] == (void *)2) {
				fail_msg("line %zu (%s) names retired %s", i + 1, l->type,
					 key);
			}
			if (k == VEHICLE &&
			    strcmp(l->type, "fleet.vehicle.retired") == 0) {
				known.values[slot] = (void *)2;
				retired++;
			}
		}
	}
	assert_true(retired > 0);
	keel_map_free(&known);
	free(lines);
	free(text);
}

/* Every line is a valid envelope that the fleet cartridge handles; the
 * mix is dominated by reports; a typical event costs about four row
 * writes (an entity op upserts one row, a timeline op inserts one and
 * closes the one before). */
static void test_fleet_cartridge_handles_all(void **state)
{
	(void)state;
	struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = 20000, .tenants = 4, .seed = 8, .late = 0.05, .duplicates = 0.02};
	size_t len, n;
	char *text = generate(&o, &len);
	struct line *lines = parse_lines(text, len, &n);
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_arena arena;
	keel_arena_init(&arena);
	struct keel_buf msg;
	keel_buf_init(&msg);
	size_t reports = 0, writes = 0;
	static const char *const report_types[] = {
	    "fleet.vehicle.location_reported", "fleet.vehicle.status_changed",
	    "fleet.vehicle.odometer_reported", "fleet.vehicle.fuel_reported"};
	for (size_t i = 0; i < n; i++) {
		struct keel_json_error jerr;
		struct keel_envelope env;
		assert_int_equal(
		    keel_json_parse(&doc, lines[i].text, lines[i].len, &jerr), 0);
		if (keel_envelope_read(&doc, &env, &msg) != 0)
			fail_msg("line %zu: %s", i + 1, msg.data);
		struct keel_op *ops;
		size_t nops;
		enum keel_run_result r =
		    keel_cartridge_run(c, &doc, &env, &arena, &ops, &nops, &msg);
		if (r != KEEL_RUN_OK)
			fail_msg("line %zu: %s: %s", i + 1,
				 r == KEEL_RUN_UNHANDLED ? "unhandled" : "rejected",
				 msg.data);
		for (size_t k = 0; k < nops; k++)
			writes += ops[k].kind == KEEL_OP_ENTITY ? 1 : 2;
		for (size_t k = 0; k < KEEL_ARRAY_LEN(report_types); k++)
			reports += strcmp(lines[i].type, report_types[k]) == 0;
		keel_arena_reset(&arena);
	}
	double per_event = (double)writes / (double)n;
	print_message("reports %.3f of events, %.2f row writes an event\n",
		      (double)reports / (double)n, per_event);
	assert_true(reports > n * 3 / 4);
	assert_true(per_event >= 3.0 && per_event <= 5.0);
	keel_buf_free(&msg);
	keel_arena_free(&arena);
	keel_json_doc_free(&doc);
	keel_cartridge_free(c);
	free(lines);
	free(text);
}

static void test_tenant_names(void **state)
{
	(void)state;
	const struct {
		uint32_t tenants;
		const char *first, *last;
	} cases[] = {
	    {0, "tenant-00", "tenant-00"},
	    {3, "tenant-00", "tenant-02"},
	    {100, "tenant-00", "tenant-99"},
	    {150, "tenant-000", "tenant-149"},
	};
	for (size_t k = 0; k < KEEL_ARRAY_LEN(cases); k++) {
		struct keel_generate_options o = {.size = sizeof o, .events = 20000,
						  .tenants = cases[k].tenants};
		size_t len, n;
		char *text = generate(&o, &len);
		struct line *lines = parse_lines(text, len, &n);
		const char *lo = NULL, *hi = NULL;
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(strlen(lines[i].tenant), strlen(cases[k].first));
			if (!lo || strcmp(lines[i].tenant, lo) < 0)
				lo = lines[i].tenant;
			if (!hi || strcmp(lines[i].tenant, hi) > 0)
				hi = lines[i].tenant;
		}
		assert_string_equal(lo, cases[k].first);
		assert_string_equal(hi, cases[k].last);
		free(lines);
		free(text);
	}
}

static void test_bad_options(void **state)
{
	(void)state;
	const double bad[] = {-0.01, 1.01, NAN, INFINITY};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(bad); i++) {
		struct keel_generate_options o = {.size = sizeof o, .events = 10, .late = bad[i]};
		assert_int_equal(keel_generate_fleet(&o, stdout), KEEL_EINVAL);
		o.late = 0;
		o.duplicates = bad[i];
		assert_int_equal(keel_generate_fleet(&o, stdout), KEEL_EINVAL);
	}
	assert_int_equal(keel_generate_fleet(NULL, stdout), KEEL_EINVAL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_profile1_pinned),
    cmocka_unit_test(test_deterministic),
    cmocka_unit_test(test_sizes_and_count),
    cmocka_unit_test(test_late_and_duplicates),
    cmocka_unit_test(test_stream_makes_sense),
    cmocka_unit_test(test_fleet_cartridge_handles_all),
    cmocka_unit_test(test_tenant_names),
    cmocka_unit_test(test_bad_options),
};

KEEL_TEST_MAIN(tests)
