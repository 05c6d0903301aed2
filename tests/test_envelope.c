/*
 * test_envelope.c - the envelope rules (src/event/envelope.c).
 *
 * Most rules are golden cases in tests/data/envelope/cases.txt (input line,
 * expected outcome); the cases here cover what a text file states badly:
 * exact length boundaries, multi-byte text, the views the envelope hands
 * out, and the agreement of every time message with keel_time_parse.
 */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/envelope.h"

struct outcome {
	int rc;
	struct keel_envelope env;
	struct keel_buf msg;
	struct keel_json_doc doc;
};

/* Parses text (which must be valid JSON) and reads it as an envelope. */
static void read_env(struct outcome *o, const char *text, size_t len)
{
	struct keel_json_error jerr;
	keel_json_doc_init(&o->doc);
	keel_buf_init(&o->msg);
	if (keel_json_parse(&o->doc, text, len, &jerr) != 0)
		fail_msg("test input is not JSON (%s at %zu): %.*s", jerr.msg,
			 jerr.offset, (int)len, text);
	o->rc = keel_envelope_read(&o->doc, &o->env, &o->msg);
}

static void outcome_free(struct outcome *o)
{
	keel_buf_free(&o->msg);
	keel_json_doc_free(&o->doc);
}

/* The outcome as the golden file writes it. */
static void describe(const struct outcome *o, struct keel_buf *out)
{
	keel_buf_reset(out);
	if (o->rc == 0) {
		char t[KEEL_TIME_BUFSZ];
		keel_time_format(o->env.time, t);
		keel_buf_addf(out, "ok %s", t);
		return;
	}
	assert_int_equal(o->rc, -1);
	if (o->env.id.ptr) {
		keel_buf_adds(out, "event \"");
		keel_buf_addstr(out, o->env.id);
		keel_buf_adds(out, "\": ");
	}
	keel_buf_addstr(out, keel_str_make(o->msg.data, o->msg.len));
}

static void test_golden_cases(void **state)
{
	(void)state;
	const char *path = KEEL_TEST_DATA "/envelope/cases.txt";
	size_t size;
	char *text = keel_test_read_file(path, &size);
	assert_non_null(text);

	struct keel_buf got;
	keel_buf_init(&got);
	char *input = NULL;
	size_t input_len = 0;
	int input_line = 0, lineno = 0, cases = 0, failures = 0, ok_cases = 0;
	for (char *p = text, *nl; p < text + size; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(text + size - p));
		if (!nl)
			nl = text + size;
		size_t n = (size_t)(nl - p);
		lineno++;
		if (n == 0 || p[0] == '#')
			continue;
		if (n < 3 || memcmp(p, "=> ", 3) != 0) {
			if (input)
				fail_msg("%s:%d: input without an expected outcome", path,
					 input_line);
			input = p;
			input_len = n;
			input_line = lineno;
			continue;
		}
		if (!input)
			fail_msg("%s:%d: outcome without an input", path, lineno);
		struct outcome o;
		read_env(&o, input, input_len);
		describe(&o, &got);
		if (got.len != n - 3 || memcmp(got.data, p + 3, n - 3) != 0) {
			print_error("%s:%d: expected\n  %.*s\ngot\n  %s\n", path,
				    input_line, (int)(n - 3), p + 3, got.data);
			failures++;
		}
		ok_cases += o.rc == 0;
		outcome_free(&o);
		input = NULL;
		cases++;
	}
	if (input)
		fail_msg("%s:%d: input without an expected outcome", path, input_line);
	keel_buf_free(&got);
	free(text);
	assert_int_equal(failures, 0);
	/* The file really was read: guard against an empty or misparsed file. */
	assert_true(cases >= 70);
	assert_true(ok_cases >= 8 && ok_cases < cases);
}

/* An envelope with one field replaced by raw JSON text. */
static char *envelope_with(const char *field, const char *json)
{
	const char *names[] = {"id", "tenant", "type", "time", "data"};
	const char *values[] = {"\"e-1\"", "\"acme\"", "\"t\"",
				"\"2024-01-01T00:00:00Z\"", "{}"};
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addc(&b, '{');
	for (size_t i = 0; i < 5; i++)
		keel_buf_addf(&b, "%s\"%s\":%s", i ? "," : "", names[i],
			      strcmp(names[i], field) == 0 ? json : values[i]);
	keel_buf_addc(&b, '}');
	return b.data;
}

static char *string_of(const char *unit, size_t repeat)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addc(&b, '"');
	for (size_t i = 0; i < repeat; i++)
		keel_buf_adds(&b, unit);
	keel_buf_addc(&b, '"');
	return b.data;
}

static void expect_field(const char *field, const char *json, const char *expected)
{
	char *text = envelope_with(field, json);
	struct outcome o;
	read_env(&o, text, strlen(text));
	struct keel_buf got;
	keel_buf_init(&got);
	describe(&o, &got);
	assert_string_equal(got.data, expected);
	keel_buf_free(&got);
	outcome_free(&o);
	free(text);
}

static void test_length_boundaries(void **state)
{
	(void)state;
	struct {
		const char *field;
		size_t max;
		const char *prefix; /* of a rejection */
	} cases[] = {
	    {"id", 256, ""},
	    {"tenant", 64, "event \"e-1\": "},
	    {"type", 256, "event \"e-1\": "},
	};
	char want[256];
	for (size_t i = 0; i < 3; i++) {
		char *s = string_of("a", cases[i].max);
		expect_field(cases[i].field, s, "ok 2024-01-01T00:00:00Z");
		free(s);
		s = string_of("a", cases[i].max + 1);
		snprintf(want, sizeof want,
			 "%sfield \"%s\": must be 1-%zu bytes (got %zu)", cases[i].prefix,
			 cases[i].field, cases[i].max, cases[i].max + 1);
		expect_field(cases[i].field, s, want);
		free(s);
		s = string_of("a", 1);
		expect_field(cases[i].field, s, "ok 2024-01-01T00:00:00Z");
		free(s);
	}
	/* Lengths are bytes, not characters: 128 two-byte characters fit in
	 * 256 bytes, 129 do not; escapes count as the bytes they decode to. */
	char *s = string_of("\xc3\xa9", 128);
	expect_field("id", s, "ok 2024-01-01T00:00:00Z");
	free(s);
	s = string_of("\xc3\xa9", 129);
	expect_field("id", s, "field \"id\": must be 1-256 bytes (got 258)");
	free(s);
	s = string_of("\\u00e9", 128);
	expect_field("type", s, "ok 2024-01-01T00:00:00Z");
	free(s);
	s = string_of("\\u00e9", 129);
	expect_field("type", s,
		     "event \"e-1\": field \"type\": must be 1-256 bytes (got 258)");
	free(s);
	/* 256 bytes written as 1536 bytes of escapes still fit. */
	s = string_of("\\u0061", 256);
	expect_field("id", s, "ok 2024-01-01T00:00:00Z");
	free(s);
}

static void test_tenant_alphabet(void **state)
{
	(void)state;
	char json[16], want[128];
	/* Every byte value, alone as the tenant. */
	for (int c = 1; c < 256; c++) {
		bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
			snprintf(json, sizeof json, "\"\\u%04x\"", c); /* valid JSON */
		else
			snprintf(json, sizeof json, "\"%c\"", c);
		snprintf(want, sizeof want, "%s",
			 allowed
			     ? "ok 2024-01-01T00:00:00Z"
			     : "event \"e-1\": field \"tenant\": must be 1-64 bytes of "
			       "[A-Za-z0-9._-]");
		expect_field("tenant", json, want);
	}
	/* Every byte value inside a tenant of the same length right after that
	 * tenant passed (the reader keeps the last tenant that passed: it must
	 * compare all its bytes, not the length). */
	char inner[32];
	for (int c = 1; c < 256; c++) {
		bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
			snprintf(inner, sizeof inner, "\"ab\\u%04xcd\"", c);
		else
			snprintf(inner, sizeof inner, "\"ab%ccd\"", c);
		expect_field("tenant", "\"ab-cd\"", "ok 2024-01-01T00:00:00Z");
		expect_field("tenant", inner,
			     allowed ? "ok 2024-01-01T00:00:00Z"
				     : "event \"e-1\": field \"tenant\": must be 1-64 "
				       "bytes of [A-Za-z0-9._-]");
	}
}

static void test_views_into_document(void **state)
{
	(void)state;
	const char text[] =
	    "{\"time\":\"2024-05-06T07:08:09.25-01:00\",\"type\":\"fleet.x\","
	    "\"id\":\"a\\u0062c\",\"tenant\":\"acme\",\"data\":{\"k\":[1]},"
	    "\"specversion\":\"1.0\"}";
	struct outcome o;
	read_env(&o, text, strlen(text));
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.msg.len, 0);
	assert_int_equal(o.env.id.len, 3);
	assert_memory_equal(o.env.id.ptr, "abc", 3);
	assert_int_equal(o.env.tenant.len, 4);
	assert_memory_equal(o.env.tenant.ptr, "acme", 4);
	assert_int_equal(o.env.type.len, 7);
	assert_memory_equal(o.env.type.ptr, "fleet.x", 7);
	int64_t want;
	assert_int_equal(keel_time_parse("2024-05-06T08:08:09.25Z", 23, &want, NULL), 0);
	assert_int_equal(o.env.time, want);
	assert_ptr_equal(o.env.root, o.doc.root);
	assert_ptr_equal(o.env.data, keel_json_get(o.doc.root, "data", 4));
	assert_int_equal(o.env.data->type, KEEL_JSON_OBJECT);
	outcome_free(&o);
}

static void test_id_kept_on_later_failure(void **state)
{
	(void)state;
	struct outcome o;
	const char bad_time[] = "{\"id\":\"e-9\",\"tenant\":\"t\",\"type\":\"x\","
				"\"time\":\"2024-02-30T00:00:00Z\","
				"\"data\":{}}";
	read_env(&o, bad_time, strlen(bad_time));
	assert_int_equal(o.rc, -1);
	assert_int_equal(o.env.id.len, 3);
	assert_memory_equal(o.env.id.ptr, "e-9", 3);
	assert_string_equal(o.msg.data,
			    "field \"time\": day 30 out of range for 2024-02 (01-29)");
	outcome_free(&o);

	/* An invalid id is never handed out, even when it is a string. */
	const char long_id[] = "{\"id\":\"\",\"tenant\":\"t\"}";
	read_env(&o, long_id, strlen(long_id));
	assert_int_equal(o.rc, -1);
	assert_null(o.env.id.ptr);
	outcome_free(&o);

	/* Nothing from an earlier envelope survives into the next read. */
	const char good[] = "{\"id\":\"e-1\",\"tenant\":\"t\",\"type\":\"x\","
			    "\"time\":\"2024-01-01T00:00:00Z\",\"data\":{}}";
	read_env(&o, good, strlen(good));
	assert_int_equal(o.rc, 0);
	assert_int_equal(keel_json_parse(&o.doc, "[1]", 3, &(struct keel_json_error){0}),
			 0);
	assert_int_equal(keel_envelope_read(&o.doc, &o.env, &o.msg), -1);
	assert_null(o.env.id.ptr);
	assert_null(o.env.tenant.ptr);
	assert_null(o.env.data);
	assert_string_equal(o.msg.data, "envelope is not a JSON object");
	outcome_free(&o);
}

static void test_message_appended(void **state)
{
	(void)state;
	/* The caller may have put a position in msg already. */
	struct outcome o;
	keel_json_doc_init(&o.doc);
	keel_buf_init(&o.msg);
	keel_buf_adds(&o.msg, "line 7: ");
	const char text[] = "{\"id\":\"e-1\"}";
	struct keel_json_error jerr;
	assert_int_equal(keel_json_parse(&o.doc, text, strlen(text), &jerr), 0);
	assert_int_equal(keel_envelope_read(&o.doc, &o.env, &o.msg), -1);
	assert_string_equal(o.msg.data, "line 7: field \"tenant\": missing");
	/* A document that failed to parse has no root. */
	keel_json_parse(&o.doc, "{", 1, &jerr);
	keel_buf_reset(&o.msg);
	assert_int_equal(keel_envelope_read(&o.doc, &o.env, &o.msg), -1);
	assert_string_equal(o.msg.data, "envelope is not a JSON object");
	outcome_free(&o);
}

/* Every way a time can be wrong reaches the message as
 * `field "time": <the parser's reason>`. */
static void test_time_messages_match_parser(void **state)
{
	(void)state;
	const char *times[] = {
	    "",
	    "x",
	    "2024-01-01",
	    "2024-01-01 00:00:00Z",
	    "2024-01-01T00:00:00",
	    "2024-01-01T00:00:00.Z",
	    "2024-01-01T00:00:00+01",
	    "2024-01-01T00:00:00+01:60",
	    "2024-01-01T00:00:00Zx",
	    "0000-01-01T00:00:00Z",
	    "2024-00-01T00:00:00Z",
	    "2024-02-30T00:00:00Z",
	    "2024-01-01T25:00:00Z",
	    "2024-01-01T00:61:00Z",
	    "2024-01-01T00:00:60Z",
	    "2024-01-01T00:00:70Z",
	    "9999-12-31T23:59:59-01:00",
	};
	char json[128], want[256];
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		int64_t t;
		const char *why = NULL;
		assert_int_equal(keel_time_parse(times[i], strlen(times[i]), &t, &why),
				 KEEL_EINVAL);
		snprintf(json, sizeof json, "\"%s\"", times[i]);
		snprintf(want, sizeof want, "event \"e-1\": field \"time\": %s", why);
		expect_field("time", json, want);
	}
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_golden_cases),
    cmocka_unit_test(test_length_boundaries),
    cmocka_unit_test(test_tenant_alphabet),
    cmocka_unit_test(test_views_into_document),
    cmocka_unit_test(test_id_kept_on_later_failure),
    cmocka_unit_test(test_message_appended),
    cmocka_unit_test(test_time_messages_match_parser),
};

KEEL_TEST_MAIN(tests)
