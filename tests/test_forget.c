/*
 * test_forget.c - keel_forget through the library on the memory store
 * (docs/semantics.md, "Forgetting"): the subject's rows and its data in
 * the logged envelopes go, reads answer KEEL_EFORGOTTEN with when and by
 * whom, the graph is what a replay of the redacted log gives, a
 * redelivery is a plain duplicate; exactly the fields other subjects'
 * operations need are kept; an event that names the subject through
 * nothing that can be removed makes the forget fail and change nothing.
 * The SQLite and MariaDB stores are tested through the command line and
 * HTTP (tests/cli_forget.sh, tests/mysql_forget.sh).
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

static struct keel_store *open_memory(void)
{
	struct keel_store *s = NULL;
	char *err = NULL;
	if (keel_store_open("memory:", &s, &err))
		fail_msg("%s", err);
	return s;
}

static struct keel_report ingest(struct keel_store *s, const struct keel_cartridge *c,
				 char **lines, size_t n)
{
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .batch = 97};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(keel_ingest_add(ing, lines[i], strlen(lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_finish(ing), 0);
	struct keel_report r = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return r;
}

static struct keel_cartridge *compile(const char *json)
{
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	if (keel_cartridge_compile(json, strlen(json), &c, &err))
		fail_msg("%s", err);
	return c;
}

static void forget_a_vehicle(void **state)
{
	(void)state;
	struct keel_test_lines *l = keel_test_lines_generate(3000, 1, 5, 0.1, 0.05);
	struct keel_cartridge *c = keel_test_fleet_cartridge(NULL, NULL);
	struct keel_store *s = open_memory();
	ingest(s, c, l->lines, l->n);
	char *json = NULL;
	assert_int_equal(keel_show(s, "tenant-00", "vehicle:V-0003", NULL, &json), 0);
	free(json);
	char *before = keel_test_dump(s, NULL);
	assert_non_null(strstr(before, "V-0003"));

	struct keel_forget_options o = {
	    .size = sizeof o, .cartridge = c, .by = "user:test"};
	struct keel_forget_report rep;
	assert_int_equal(keel_forget(s, "tenant-00", "vehicle:V-0003", &o, &rep), 0);
	assert_true(rep.events > 0);
	assert_true(rep.rows > 0);
	assert_int_equal(strlen(rep.subject_sha256), 64);

	/* Reads say it was forgotten, when and by whom. */
	json = NULL;
	assert_int_equal(keel_show(s, "tenant-00", "vehicle:V-0003", NULL, &json),
			 KEEL_EFORGOTTEN);
	assert_null(json);
	assert_non_null(strstr(keel_store_errmsg(s), "was forgotten at 20"));
	assert_non_null(strstr(keel_store_errmsg(s), " by user:test"));
	assert_int_equal(
	    keel_why(s, "tenant-00", "vehicle:V-0003", "status", NULL, &json),
	    KEEL_EFORGOTTEN);
	assert_int_equal(
	    keel_history(s, "tenant-00", "vehicle:V-0003", NULL, NULL, &json),
	    KEEL_EFORGOTTEN);
	assert_int_equal(keel_show(s, "tenant-00", "vehicle:V-9999", NULL, &json),
			 KEEL_ENOTFOUND);

	/* Nothing names it; the graph is a replay's of the redacted log. */
	char *after = keel_test_dump(s, NULL);
	assert_null(strstr(after, "V-0003"));
	assert_non_null(strstr(after, "\"keelredacted\":true"));
	struct keel_replay_options ro = {.size = sizeof ro, .cartridge = c};
	struct keel_replay_report *rr = NULL;
	assert_int_equal(keel_replay(s, "tenant-00", &ro, &rr), 0);
	assert_int_equal(rr->added + rr->removed, 0);
	assert_int_equal(rr->rejected, 0);
	keel_replay_report_free(rr);
	char *replayed = keel_test_dump(s, NULL);
	assert_string_equal(after, replayed);

	/* A redelivery is a plain duplicate and brings nothing back. */
	struct keel_report again = ingest(s, c, l->lines, l->n);
	assert_int_equal(again.accepted, 0);
	assert_int_equal(again.conflicting, 0);
	char *redelivered = keel_test_dump(s, NULL);
	assert_string_equal(after, redelivered);

	/* Again: gone already; a subject nothing names: not found. */
	assert_int_equal(keel_forget(s, "tenant-00", "vehicle:V-0003", &o, &rep),
			 KEEL_EFORGOTTEN);
	assert_int_equal(keel_forget(s, "tenant-00", "vehicle:V-9999", &o, &rep),
			 KEEL_ENOTFOUND);
	assert_non_null(strstr(keel_store_errmsg(s), "nothing in tenant \"tenant-00\""));
	o.by = NULL;
	assert_int_equal(keel_forget(s, "tenant-00", "vehicle:V-0001", &o, &rep),
			 KEEL_EINVAL);

	free(before);
	free(after);
	free(replayed);
	free(redelivered);
	keel_store_close(s);
	keel_cartridge_free(c);
	keel_test_lines_free(l);
}

/* Two subjects in one event: forgetting one keeps exactly what the
 * other's operations read; the rest goes, the CloudEvents subject
 * attribute naming it too. */
static const char pair_cartridge[] =
    "{\"cartridge\":\"pair\",\"version\":\"1\",\"events\":{\"pair\":["
    "{\"op\":\"fact\",\"subject\":\"a:{/data/a}\",\"predicate\":\"x\","
    "\"value\":{\"from\":\"/data/ax\"}},"
    "{\"op\":\"fact\",\"subject\":\"b:{/data/b}\",\"predicate\":\"y\","
    "\"value\":{\"from\":\"/data/by\"}},"
    "{\"op\":\"link\",\"subject\":\"b:{/data/b}\",\"relation\":\"knows\","
    "\"object\":\"a:{/data/a}\"}]}}";

static void forget_keeps_what_others_need(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile(pair_cartridge);
	struct keel_store *s = open_memory();
	char e1[] =
	    "{\"specversion\":\"1.0\",\"id\":\"p-1\",\"source\":\"/s\",\"type\":\"pair\","
	    "\"time\":\"2026-01-01T00:00:00Z\",\"tenant\":\"t\",\"subject\":\"a:1\","
	    "\"data\":{\"a\":\"1\",\"ax\":\"secret\",\"b\":\"2\",\"by\":{\"k\":[1,2]},"
	    "\"note\":\"about a\"}}";
	/* An event no handler reads, naming a:1 only in its subject
	 * attribute, escaped: it mentions a:1 too. */
	char e2[] =
	    "{\"id\":\"p-2\",\"type\":\"other\",\"time\":\"2026-01-01T00:00:01Z\","
	    "\"tenant\":\"t\",\"subject\":\"a\\u003a1\",\"data\":{\"x\":\"y\"}}";
	char *lines[] = {e1, e2};
	ingest(s, c, lines, 2);
	struct keel_forget_options o = {
	    .size = sizeof o, .cartridge = c, .by = "user:test"};
	struct keel_forget_report rep;
	assert_int_equal(keel_forget(s, "t", "a:1", &o, &rep), 0);
	assert_int_equal(rep.events, 2);
	assert_int_equal(rep.rows, 3); /* a's fact, the link, a's entity */
	char *dump = keel_test_dump(s, NULL);
	assert_non_null(strstr(
	    dump,
	    "\"envelope\":{\"specversion\":\"1.0\",\"id\":\"p-1\",\"source\":\"/s\","
	    "\"type\":\"pair\",\"time\":\"2026-01-01T00:00:00Z\",\"tenant\":\"t\","
	    "\"data\":{\"b\":\"2\",\"by\":{\"k\":[1,2]}},\"keelredacted\":true}"));
	assert_non_null(strstr(dump,
			       "\"envelope\":{\"id\":\"p-2\",\"type\":\"other\",\"time\":"
			       "\"2026-01-01T00:00:01Z\",\"tenant\":\"t\",\"data\":{},"
			       "\"keelredacted\":true}"));
	assert_null(strstr(dump, "secret"));
	assert_null(strstr(dump, "a:1"));
	assert_null(strstr(dump, "u003a1"));
	assert_non_null(strstr(dump, "\"subject\":\"b:2\",\"predicate\":\"y\""));
	char *json = NULL;
	assert_int_equal(keel_show(s, "t", "b:2", NULL, &json), 0);
	free(json);
	free(dump);
	keel_store_close(s);
	keel_cartridge_free(c);
}

/* A subject an event names by a constant cannot be redacted out of it:
 * the forget fails and nothing changes. */
static void forget_refuses_a_constant_subject(void **state)
{
	(void)state;
	struct keel_cartridge *c =
	    compile("{\"cartridge\":\"k\",\"version\":\"1\",\"events\":{\"k\":["
		    "{\"op\":\"fact\",\"subject\":\"hq\",\"predicate\":\"p\",\"value\":{"
		    "\"const\":1}}]}}");
	struct keel_store *s = open_memory();
	char e1[] = "{\"id\":\"k-1\",\"type\":\"k\",\"time\":\"2026-01-01T00:00:00Z\","
		    "\"tenant\":\"t\",\"data\":{}}";
	char *lines[] = {e1};
	ingest(s, c, lines, 1);
	char *before = keel_test_dump(s, NULL);
	struct keel_forget_options o = {
	    .size = sizeof o, .cartridge = c, .by = "user:test"};
	struct keel_forget_report rep;
	assert_int_equal(keel_forget(s, "t", "hq", &o, &rep), KEEL_EINVAL);
	assert_non_null(strstr(keel_store_errmsg(s),
			       "event \"k-1\" (source \"\") names subject \"hq\""));
	char *after = keel_test_dump(s, NULL);
	assert_string_equal(before, after);
	free(before);
	free(after);
	keel_store_close(s);
	keel_cartridge_free(c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(forget_a_vehicle),
    cmocka_unit_test(forget_keeps_what_others_need),
    cmocka_unit_test(forget_refuses_a_constant_subject),
};

KEEL_TEST_MAIN(tests)
