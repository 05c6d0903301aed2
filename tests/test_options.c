/*
 * test_options.c - options structs that grow (keel.h, "Options structs"):
 * a caller built against an older, smaller struct gets the defaults for
 * the fields it did not know, whatever its memory holds past its size; a
 * size of 0 or one larger than the library knows is refused; and
 * keel_version() answers the library's version.
 */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static char *generate(const struct keel_generate_options *o)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	assert_non_null(f);
	assert_int_equal(keel_generate_fleet(o, f), 0);
	fclose(f);
	return buf;
}

/* A caller whose struct ended before `duplicates` gets no duplicates,
 * though the bytes after its struct say 0.4. */
static void generate_older_struct_takes_defaults(void **state)
{
	(void)state;
	struct keel_generate_options full = {
	    .size = sizeof full, .events = 300, .tenants = 2, .seed = 5, .late = 0.2,
	    .duplicates = 0.4};
	struct keel_generate_options older = full;
	older.size = offsetof(struct keel_generate_options, duplicates);
	struct keel_generate_options no_dups = full;
	no_dups.duplicates = 0;
	char *a = generate(&older), *b = generate(&no_dups), *c = generate(&full);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	free(a);
	free(b);
	free(c);
}

static void count_outcome(void *userdata, uint64_t position, size_t seq,
			  enum keel_ingest_outcome outcome)
{
	(void)position;
	(void)seq;
	(void)outcome;
	++*(int *)userdata;
}

static const char EVENT[] =
    "{\"specversion\":\"1.0\",\"id\":\"e1\",\"source\":\"t\",\"type\":"
    "\"vehicle.registered\",\"tenant\":\"t1\",\"time\":\"2026-01-05T06:00:00Z\","
    "\"data\":{\"vehicle_id\":\"V-1\",\"vin\":\"X\",\"model\":\"M\"}}";

/* Ingests EVENT with o; returns how often on_outcome was called. */
static int ingest_one(struct keel_ingest_options o)
{
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	int calls = 0;
	o.on_outcome = count_outcome;
	o.outcome_userdata = &calls;
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	assert_int_equal(keel_ingest_add(ing, EVENT, strlen(EVENT), 1), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->accepted, 1);
	keel_ingest_free(ing);
	keel_store_close(s);
	return calls;
}

/* An ingester built for a struct that ended before on_outcome never calls
 * the function the bytes past it point at; with the whole struct it does. */
static void ingest_older_struct_takes_defaults(void **state)
{
	(void)state;
	struct keel_cartridge *c = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, NULL), 0);
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c};
	assert_int_equal(ingest_one(o), 1);
	o.size = offsetof(struct keel_ingest_options, on_outcome);
	assert_int_equal(ingest_one(o), 0);
	keel_cartridge_free(c);
}

/* A caller that left .size unset, or whose struct is larger than the
 * library's, is told so by every function taking options. */
static void zero_or_larger_size_is_refused(void **state)
{
	(void)state;
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	struct keel_cartridge *c = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, NULL), 0);

	struct {
		struct keel_ingest_options o;
		char newer_fields[16];
	} big = {.o = {.cartridge = c}};
	big.o.size = sizeof big;
	struct keel_ingest_options zero = {.cartridge = c};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &zero, &ing), KEEL_EINVAL);
	assert_null(ing);
	assert_non_null(strstr(keel_store_errmsg(s), "keel_ingest_options: size is 0"));
	assert_int_equal(keel_ingest_new(s, &big.o, &ing), KEEL_EINVAL);
	assert_null(ing);
	assert_non_null(strstr(keel_store_errmsg(s), "size is larger than this library"));

	struct keel_replay_options ro = {.cartridge = c};
	struct keel_replay_report *rep = NULL;
	assert_int_equal(keel_replay(s, "t1", &ro, &rep), KEEL_EINVAL);
	assert_null(rep);
	assert_non_null(strstr(keel_store_errmsg(s), "keel_replay_options: size is 0"));

	struct keel_export_options eo = {.format = KEEL_EXPORT_NDJSON, .out = stdout};
	assert_int_equal(keel_export(s, &eo), KEEL_EINVAL);
	assert_non_null(strstr(keel_store_errmsg(s), "keel_export_options: size is 0"));

	struct keel_read_options rdo = {.known_at_set = true};
	char *json = NULL;
	assert_int_equal(keel_show(s, "t1", "vehicle:V-1", &rdo, &json), KEEL_EINVAL);
	assert_null(json);
	assert_non_null(strstr(keel_store_errmsg(s), "keel_read_options: size is 0"));
	assert_int_equal(keel_stats(s, NULL, &rdo, &json), KEEL_EINVAL);
	assert_null(json);
	assert_int_equal(keel_dump(s, NULL, &rdo, stdout), KEEL_EINVAL);
	assert_non_null(strstr(keel_store_errmsg(s), "keel_read_options: size is 0"));

	struct keel_generate_options go = {.events = 1};
	assert_int_equal(keel_generate_fleet(&go, stdout), KEEL_EINVAL);

	struct keel_server_options so = {.listen = "127.0.0.1:0", .store_url = "memory:"};
	struct keel_server *srv = NULL;
	char *err = NULL;
	assert_int_equal(keel_server_start(&so, &srv, &err), KEEL_EINVAL);
	assert_null(srv);
	assert_non_null(err);
	assert_non_null(strstr(err, "keel_server_options: size is 0"));
	free(err);

	keel_cartridge_free(c);
	keel_store_close(s);
}

/* The version the library was built as is the header's. */
static void version_answers_at_run_time(void **state)
{
	(void)state;
	assert_non_null(keel_version());
	assert_string_equal(keel_version(), KEEL_VERSION);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(generate_older_struct_takes_defaults),
    cmocka_unit_test(ingest_older_struct_takes_defaults),
    cmocka_unit_test(zero_or_larger_size_is_refused),
    cmocka_unit_test(version_answers_at_run_time),
};

KEEL_TEST_MAIN(tests)
