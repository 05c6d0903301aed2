/*
 * test_query.c - keel_show, keel_history, keel_why and keel_stats: the
 * exact JSON documents (docs/cli.md) for a small fleet story ingested
 * through the fleet cartridge into the memory store.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#define EV(id, type, time, data)                                                         \
	"{\"specversion\":\"1.0\",\"id\":\"" id "\",\"source\":\"/fleet\",\"tenant\":\"acme\"," \
	"\"type\":"                                                                    \
	"\"fleet." type "\",\"time\":\"2026-01-05T" time "Z\",\"data\":" data "}"

/* A depot, a vehicle and a driver; the vehicle goes into service, loses
 * its driver and is retired. */
static const char *const story[] = {
    EV("e1", "depot.opened", "06:00:00",
       "{\"depot_id\":\"D-1\",\"name\":\"North\",\"city\":\"Porto\","
       "\"location\":{\"lat\":41.1, \"lon\":-8.6}}"),
    EV("e2", "vehicle.registered", "06:10:00",
       "{\"vehicle_id\":\"V-1\",\"depot_id\":\"D-1\",\"make\":\"DAF\","
       "\"model\":\"LF\",\"year\":2019}"),
    EV("e3", "driver.hired", "06:20:00",
       "{\"driver_id\":\"DR-1\",\"depot_id\":\"D-1\",\"name\":\"Ana \\\"A\\\"\","
       "\"license_class\":\"C\"}"),
    EV("e4", "driver.assigned", "07:00:00",
       "{\"driver_id\":\"DR-1\",\"vehicle_id\":\"V-1\"}"),
    EV("e5", "vehicle.status_changed", "08:00:00.25",
       "{\"vehicle_id\":\"V-1\",\"status\":\"in_service\",\"reason\":\"trip\"}"),
    EV("e6", "driver.unassigned", "09:00:00",
       "{\"driver_id\":\"DR-1\",\"vehicle_id\":\"V-1\"}"),
    EV("e7", "vehicle.retired", "10:00:00",
       "{\"vehicle_id\":\"V-1\",\"depot_id\":\"D-1\",\"reason\":\"old\"}"),
};

static int setup(void **state)
{
	struct keel_store *s = NULL;
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .batch = 3};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < sizeof story / sizeof story[0]; i++)
		assert_int_equal(keel_ingest_add(ing, story[i], strlen(story[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->accepted, 7);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	keel_store_close(*state);
	return 0;
}

static int64_t T(const char *s)
{
	int64_t t;
	const char *why;
	assert_int_equal(keel_time_parse(s, strlen(s), &t, &why), 0);
	return t;
}

#define AT(s) KEEL_TEST_AT(T(s))

static void show_in_service(void **state)
{
	char *json = NULL;
	assert_int_equal(
	    keel_show(*state, "acme", "vehicle:V-1", AT("2026-01-05T08:30:00Z"), &json),
	    0);
	assert_string_equal(
	    json, "{\"tenant\":\"acme\",\"subject\":\"vehicle:V-1\",\"at\":\"2026-01-"
		  "05T08:30:00Z\","
		  "\"kind\":\"vehicle\",\"first_seen\":\"2026-01-05T06:10:00Z\","
		  "\"last_seen\":\"2026-01-05T10:00:00Z\",\"facts\":{"
		  "\"make\":{\"value\":\"DAF\",\"valid_from\":\"2026-01-05T06:10:00Z\","
		  "\"valid_to\":null,\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e2\"}},"
		  "\"model\":{\"value\":\"LF\",\"valid_from\":\"2026-01-05T06:10:00Z\","
		  "\"valid_to\":null,\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e2\"}},"
		  "\"status\":{\"value\":\"in_service\",\"valid_from\":\"2026-01-05T08:"
		  "00:00.250000Z\","
		  "\"valid_to\":\"2026-01-05T10:00:00Z\",\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e5\"}},"
		  "\"status_reason\":{\"value\":\"trip\",\"valid_from\":\"2026-01-05T08:"
		  "00:00.250000Z\","
		  "\"valid_to\":null,\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e5\"}},"
		  "\"year\":{\"value\":2019,\"valid_from\":\"2026-01-05T06:10:00Z\","
		  "\"valid_to\":null,\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e2\"}}},"
		  "\"outgoing\":[{\"relation\":\"based_at\",\"object\":\"depot:D-1\","
		  "\"valid_from\":\"2026-01-05T06:10:00Z\",\"valid_to\":\"2026-01-05T10:"
		  "00:00Z\","
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e2\"}}],"
		  "\"incoming\":[{\"subject\":\"driver:DR-1\",\"relation\":\"drives\","
		  "\"valid_from\":\"2026-01-05T07:00:00Z\",\"valid_to\":\"2026-01-05T09:"
		  "00:00Z\","
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e4\"}}]}");
	free(json);
}

/* After retirement: unset facts and unlinked relations are not shown. */
static void show_after_retirement(void **state)
{
	char *json = NULL;
	assert_int_equal(
	    keel_show(*state, "acme", "vehicle:V-1", AT("2026-01-05T11:00:00Z"), &json),
	    0);
	assert_null(strstr(json, "\"status\""));
	assert_null(strstr(json, "based_at"));
	assert_null(strstr(json, "drives"));
	assert_non_null(strstr(json, "\"retired_reason\":{\"value\":\"old\","));
	assert_non_null(strstr(json, "\"outgoing\":[],\"incoming\":[]}"));
	free(json);
}

static void show_escapes_and_raw_values(void **state)
{
	char *json = NULL;
	assert_int_equal(
	    keel_show(*state, "acme", "depot:D-1", AT("2026-01-05T06:30:00Z"), &json), 0);
	/* The value keeps the event's own text, compacted. */
	assert_non_null(
	    strstr(json, "\"location\":{\"value\":{\"lat\":41.1,\"lon\":-8.6},"));
	/* Incoming from two subjects, in subject order. */
	assert_non_null(strstr(json,
			       "\"incoming\":[{\"subject\":\"driver:DR-1\",\"relation\":"
			       "\"works_at\""));
	assert_non_null(
	    strstr(json, "{\"subject\":\"vehicle:V-1\",\"relation\":\"based_at\""));
	free(json);
	assert_int_equal(
	    keel_show(*state, "acme", "driver:DR-1", AT("2026-01-05T06:30:00Z"), &json),
	    0);
	assert_non_null(strstr(json, "\"name\":{\"value\":\"Ana \\\"A\\\"\","));
	free(json);
}

static void show_unknown_entity_is_not_found(void **state)
{
	char *json = NULL;
	assert_int_equal(
	    keel_show(*state, "acme", "vehicle:V-9", AT("2026-01-05T08:30:00Z"), &json),
	    KEEL_ENOTFOUND);
	assert_null(json);
	assert_string_equal(keel_store_errmsg(*state),
			    "entity \"vehicle:V-9\" not found in tenant \"acme\"");
	assert_int_equal(
	    keel_show(*state, "other", "vehicle:V-1", AT("2026-01-05T08:30:00Z"), &json),
	    KEEL_ENOTFOUND);
}

static void show_before_first_seen_is_not_found(void **state)
{
	char *json = NULL;
	assert_int_equal(
	    keel_show(*state, "acme", "vehicle:V-1", AT("2026-01-05T06:09:59.999999Z"), &json),
	    KEEL_ENOTFOUND);
	assert_null(json);
	assert_string_equal(keel_store_errmsg(*state),
			    "entity \"vehicle:V-1\" did not exist in tenant \"acme\" at "
			    "2026-01-05T06:09:59.999999Z (first seen 2026-01-05T06:10:00Z)");
	/* From its first moment on it exists. */
	assert_int_equal(
	    keel_show(*state, "acme", "vehicle:V-1", AT("2026-01-05T06:10:00Z"), &json), 0);
	assert_non_null(strstr(json, "\"status\":{\"value\":\"available\""));
	free(json);
}

static void history_of_one_predicate(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_history(*state, "acme", "vehicle:V-1", "status", NULL, &json), 0);
	assert_string_equal(
	    json,
	    "{\"tenant\":\"acme\",\"subject\":\"vehicle:V-1\",\"predicate\":\"status\","
	    "\"facts\":["
	    "{\"predicate\":\"status\",\"value\":\"available\","
	    "\"valid_from\":\"2026-01-05T06:10:00Z\",\"valid_to\":\"2026-01-05T08:00:00."
	    "250000Z\","
	    "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e2\"},\"closed_by\":{\"source\":\"/fleet\",\"id\":\"e5\"}},"
	    "{\"predicate\":\"status\",\"value\":\"in_service\","
	    "\"valid_from\":\"2026-01-05T08:00:00.250000Z\",\"valid_to\":\"2026-01-05T10:"
	    "00:00Z\","
	    "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e5\"},\"closed_by\":{\"source\":\"/fleet\",\"id\":\"e7\"}},"
	    "{\"predicate\":\"status\",\"value\":null,"
	    "\"valid_from\":\"2026-01-05T10:00:00Z\",\"valid_to\":null,"
	    "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e7\"},\"closed_by\":null}],"
	    "\"relations\":[]}");
	free(json);
}

/* A predicate asked for that is not UTF-8 is echoed with each bad byte as
 * U+FFFD (util.h's one JSON string writer): the answer stays JSON. */
static void history_echoes_bad_utf8_as_replacement(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_history(*state, "acme", "vehicle:V-1", "sta\xffus\xc3", NULL, &json),
			 0);
	assert_string_equal(json, "{\"tenant\":\"acme\",\"subject\":\"vehicle:V-1\","
				  "\"predicate\":\"sta\xef\xbf\xbdus\xef\xbf\xbd\","
				  "\"facts\":[],\"relations\":[]}");
	free(json);
}

static void history_of_everything(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_history(*state, "acme", "driver:DR-1", NULL, NULL, &json), 0);
	assert_string_equal(
	    json, "{\"tenant\":\"acme\",\"subject\":\"driver:DR-1\",\"predicate\":null,"
		  "\"facts\":["
		  "{\"predicate\":\"license_class\",\"value\":\"C\","
		  "\"valid_from\":\"2026-01-05T06:20:00Z\",\"valid_to\":null,"
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e3\"},\"closed_by\":null},"
		  "{\"predicate\":\"name\",\"value\":\"Ana \\\"A\\\"\","
		  "\"valid_from\":\"2026-01-05T06:20:00Z\",\"valid_to\":null,"
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e3\"},\"closed_by\":null}],"
		  "\"relations\":["
		  "{\"relation\":\"drives\",\"object\":\"vehicle:V-1\",\"linked\":true,"
		  "\"valid_from\":\"2026-01-05T07:00:00Z\",\"valid_to\":\"2026-01-05T09:"
		  "00:00Z\","
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e4\"},\"closed_by\":{\"source\":\"/fleet\",\"id\":\"e6\"}},"
		  "{\"relation\":\"drives\",\"object\":\"vehicle:V-1\",\"linked\":false,"
		  "\"valid_from\":\"2026-01-05T09:00:00Z\",\"valid_to\":null,"
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e6\"},\"closed_by\":null},"
		  "{\"relation\":\"works_at\",\"object\":\"depot:D-1\",\"linked\":true,"
		  "\"valid_from\":\"2026-01-05T06:20:00Z\",\"valid_to\":null,"
		  "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e3\"},\"closed_by\":null}]}");
	free(json);
	/* A name narrows relations too. */
	assert_int_equal(keel_history(*state, "acme", "driver:DR-1", "works_at", NULL, &json),
			 0);
	assert_non_null(
	    strstr(json, "\"facts\":[],\"relations\":[{\"relation\":\"works_at\""));
	assert_null(strstr(json, "drives"));
	free(json);
}

static void why_names_the_event(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_why(*state, "acme", "vehicle:V-1", "status",
				  AT("2026-01-05T09:00:00Z"), &json),
			 0);
	assert_string_equal(json,
			    "{\"tenant\":\"acme\",\"subject\":\"vehicle:V-1\","
			    "\"predicate\":\"status\","
			    "\"at\":\"2026-01-05T09:00:00Z\",\"value\":\"in_service\","
			    "\"valid_from\":\"2026-01-05T08:00:00.250000Z\",\"valid_to\":"
			    "\"2026-01-05T10:00:00Z\","
			    "\"asserted_by\":{\"source\":\"/fleet\",\"id\":\"e5\"},\"closed_by\":{\"source\":\"/fleet\",\"id\":\"e7\"},"
			    "\"event\":{\"source\":\"/fleet\",\"id\":\"e5\",\"event_type\":\"fleet.vehicle."
			    "status_changed\","
			    "\"time\":\"2026-01-05T08:00:00.250000Z\",\"envelope\":" EV(
				"e5", "vehicle.status_changed", "08:00:00.25",
				"{\"vehicle_id\":\"V-1\",\"status\":\"in_service\","
				"\"reason\":\"trip\"}") "}}");
	free(json);
}

static void why_after_unset_names_the_unsetting_event(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_why(*state, "acme", "vehicle:V-1", "status",
				  AT("2026-01-05T12:00:00Z"), &json),
			 0);
	assert_non_null(strstr(json, "\"value\":null,"));
	assert_non_null(strstr(
	    json, "\"event\":{\"source\":\"/fleet\",\"id\":\"e7\",\"event_type\":\"fleet.vehicle.retired\""));
	free(json);
}

static void why_without_a_row_is_not_found(void **state)
{
	char *json = NULL;
	assert_int_equal(keel_why(*state, "acme", "vehicle:V-1", "status",
				  AT("2026-01-05T06:00:00Z"), &json),
			 KEEL_ENOTFOUND);
	assert_string_equal(
	    keel_store_errmsg(*state),
	    "entity \"vehicle:V-1\" in tenant \"acme\" has no \"status\" at "
	    "2026-01-05T06:00:00Z");
	assert_int_equal(keel_why(*state, "acme", "vehicle:V-1", "colour",
				  AT("2026-01-05T09:00:00Z"), &json),
			 KEEL_ENOTFOUND);
	assert_int_equal(keel_why(*state, "acme", "nobody", "status",
				  AT("2026-01-05T09:00:00Z"), &json),
			 KEEL_ENOTFOUND);
	assert_null(json);
}

static void stats_counts_rows(void **state)
{
	char *json = NULL;
	/* Facts: depot 3, vehicle make/model/year 3, status 3 rows,
	 * status_reason, location (the unset), retired_reason, driver 2.
	 * Relations: based_at 2 rows, works_at 1, drives 2. */
	const char *acme = "{\"tenant\":\"acme\",\"entities\":3,\"facts\":14,"
			   "\"relations\":5,\"events\":7}";
	assert_int_equal(keel_stats(*state, NULL, NULL, &json), 0);
	char expect[512];
	snprintf(expect, sizeof expect,
		 "{\"tenants\":[%s],\"total\":{\"entities\":3,\"facts\":14,"
		 "\"relations\":5,\"events\":7}}",
		 acme);
	assert_string_equal(json, expect);
	free(json);
	assert_int_equal(keel_stats(*state, "acme", NULL, &json), 0);
	assert_string_equal(json, expect);
	free(json);
	json = NULL;
	assert_int_equal(keel_stats(*state, "nobody", NULL, &json), KEEL_ENOTFOUND);
	assert_null(json);
	assert_string_equal(keel_store_errmsg(*state), "tenant \"nobody\" not found");
}

static void stats_of_empty_store(void **state)
{
	(void)state;
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	char *json = NULL;
	assert_int_equal(keel_stats(s, NULL, NULL, &json), 0);
	assert_string_equal(json, "{\"tenants\":[],\"total\":{\"entities\":0,\"facts\":0,"
				  "\"relations\":0,\"events\":0}}");
	free(json);
	keel_store_close(s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(show_in_service, setup, teardown),
    cmocka_unit_test_setup_teardown(show_after_retirement, setup, teardown),
    cmocka_unit_test_setup_teardown(show_escapes_and_raw_values, setup, teardown),
    cmocka_unit_test_setup_teardown(show_unknown_entity_is_not_found, setup, teardown),
    cmocka_unit_test_setup_teardown(show_before_first_seen_is_not_found, setup, teardown),
    cmocka_unit_test_setup_teardown(history_of_one_predicate, setup, teardown),
    cmocka_unit_test_setup_teardown(history_of_everything, setup, teardown),
    cmocka_unit_test_setup_teardown(history_echoes_bad_utf8_as_replacement, setup,
				    teardown),
    cmocka_unit_test_setup_teardown(why_names_the_event, setup, teardown),
    cmocka_unit_test_setup_teardown(why_after_unset_names_the_unsetting_event, setup,
				    teardown),
    cmocka_unit_test_setup_teardown(why_without_a_row_is_not_found, setup, teardown),
    cmocka_unit_test_setup_teardown(stats_counts_rows, setup, teardown),
    cmocka_unit_test(stats_of_empty_store),
};

KEEL_TEST_MAIN(tests)
