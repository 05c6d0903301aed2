/*
 * test_query_text.c - keel_query_text: names keep their JSON escapes (no
 * control character reaches a terminal raw), values stay JSON text, an
 * event no longer logged is said so, and what is not a query's document
 * is refused. The layout of every document is checked through the tool in
 * tests/cli_terminal.sh.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

static char *render(enum keel_query_kind kind, const char *json)
{
	char *text = NULL;
	assert_int_equal(keel_query_text(kind, json, strlen(json), &text), 0);
	assert_non_null(text);
	return text;
}

static void names_keep_their_escapes(void **state)
{
	(void)state;
	const char *doc =
	    "{\"tenant\":\"t\",\"subject\":\"a\\u001b[2Jb\",\"at\":\"2026-01-01T00:00:00Z\","
	    "\"kind\":null,\"first_seen\":\"2026-01-01T00:00:00Z\","
	    "\"last_seen\":\"2026-01-01T00:00:00Z\","
	    "\"facts\":{\"p\\\"q\":{\"value\":\"x\\ny\",\"valid_from\":"
	    "\"2026-01-01T00:00:00Z\",\"valid_to\":null,\"asserted_by\":\"e\\u0007\"}},"
	    "\"outgoing\":[],\"incoming\":[]}";
	char *text = render(KEEL_QUERY_SHOW, doc);
	assert_null(strchr(text, '\x1b'));
	assert_null(strchr(text, '\x07'));
	assert_non_null(strstr(text, "subject:      a\\u001b[2Jb\n"));
	assert_non_null(strstr(text, "kind:         -\n"));
	/* The predicate (an object key) is escaped like every other name;
	 * the value is its JSON text, quotes and escapes included. */
	assert_non_null(strstr(text, "  p\\\"q       \"x\\ny\"  2026-01-01T00:00:00Z  -         "
				     "e\\u0007\n"));
	assert_non_null(strstr(text, "\noutgoing: none\n\nincoming: none\n"));
	free(text);
}

static void why_without_its_event_says_so(void **state)
{
	(void)state;
	const char *doc =
	    "{\"tenant\":\"t\",\"subject\":\"s\",\"predicate\":\"p\","
	    "\"at\":\"2026-01-01T00:00:00Z\",\"value\":[1,{\"a\":null}],"
	    "\"valid_from\":\"2026-01-01T00:00:00Z\",\"valid_to\":null,"
	    "\"asserted_by\":\"e1\",\"closed_by\":null,\"event\":null}";
	char *text = render(KEEL_QUERY_WHY, doc);
	assert_non_null(strstr(text, "value:        [1,{\"a\":null}]\n"));
	assert_non_null(strstr(text, "closed by:    -\n"));
	assert_non_null(strstr(text, "\nevent:        - (no longer in the log)\n"));
	assert_null(strstr(text, "envelope:"));
	free(text);
}

/* history --changes as text: one row per change, the shortened row's
 * asserter and where it ended before, "-" when it shortened none; and the
 * moment a read was known at, when it was. */
static void changes_and_known_at(void **state)
{
	(void)state;
	const char *doc =
	    "{\"tenant\":\"t\",\"subject\":\"s\",\"predicate\":\"p\","
	    "\"known_at\":\"2026-02-01T00:00:00Z\",\"facts\":["
	    "{\"predicate\":\"p\",\"recorded_at\":\"2026-01-20T00:00:00Z\",\"asserted_by\":\"e1\","
	    "\"value\":1,\"valid_from\":\"2026-01-01T00:00:00Z\",\"valid_to\":null,"
	    "\"closed_by\":null,\"shortened\":null},"
	    "{\"predicate\":\"p\",\"recorded_at\":\"2026-01-21T00:00:00Z\",\"asserted_by\":\"e2\","
	    "\"value\":\"2\",\"valid_from\":\"2025-12-01T00:00:00Z\",\"valid_to\":"
	    "\"2026-01-01T00:00:00Z\",\"closed_by\":\"e1\",\"shortened\":null},"
	    "{\"predicate\":\"p\",\"recorded_at\":\"2026-01-22T00:00:00Z\",\"asserted_by\":\"e3\","
	    "\"value\":null,\"valid_from\":\"2026-01-05T00:00:00Z\",\"valid_to\":null,"
	    "\"closed_by\":null,\"shortened\":{\"asserted_by\":\"e1\",\"valid_from\":"
	    "\"2026-01-01T00:00:00Z\",\"valid_to_before\":null,\"valid_to_after\":"
	    "\"2026-01-05T00:00:00Z\"}}],\"relations\":[]}";
	char *text = render(KEEL_QUERY_HISTORY_CHANGES, doc);
	assert_non_null(strstr(text, "known at:     2026-02-01T00:00:00Z\n"));
	assert_non_null(strstr(text, "\nfact changes:\n  PREDICATE  RECORDED AT           "
				     "ASSERTED BY  VALUE  VALID FROM            VALID TO   "
				     "           CLOSED BY  SHORTENED  WAS VALID TO\n"));
	assert_non_null(strstr(text, "  p          2026-01-22T00:00:00Z  e3           null   "
				     "2026-01-05T00:00:00Z  -                     -          e1 "
				     "        -\n"));
	assert_non_null(strstr(text, "  p          2026-01-21T00:00:00Z  e2           \"2\"    "
				     "2025-12-01T00:00:00Z  2026-01-01T00:00:00Z  e1         - "
				     "         -\n"));
	assert_non_null(strstr(text, "\nrelation changes: none\n"));
	free(text);
	/* Read now, a document has no known_at and the text no such line. */
	text = render(KEEL_QUERY_STATS,
		      "{\"known_at\":\"2026-02-01T00:00:00Z\",\"tenants\":[],\"total\":"
		      "{\"entities\":0,\"facts\":0,\"relations\":0,\"events\":0}}");
	assert_non_null(strstr(text, "known at:     2026-02-01T00:00:00Z\n\nTENANT"));
	free(text);
	/* The tenants list says the moment too, and without it nothing. */
	text = render(KEEL_QUERY_TENANTS,
		      "{\"known_at\":\"2026-02-01T00:00:00Z\",\"tenants\":[\"acme\"]}");
	assert_string_equal(text, "known at:     2026-02-01T00:00:00Z\n\ntenants:\n  TENANT\n"
				  "  acme\n");
	free(text);
	text = render(KEEL_QUERY_TENANTS, "{\"tenants\":[\"acme\"]}");
	assert_string_equal(text, "tenants:\n  TENANT\n  acme\n");
	free(text);
}

static void stats_of_an_empty_store(void **state)
{
	(void)state;
	char *text = render(KEEL_QUERY_STATS,
			    "{\"tenants\":[],\"total\":{\"entities\":0,\"facts\":0,"
			    "\"relations\":0,\"events\":0}}");
	assert_string_equal(text, "TENANT   ENTITIES  FACTS  RELATIONS  EVENTS\n"
				  "(total)         0      0          0       0\n");
	free(text);
}

static void what_is_not_a_document_is_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",
	    "not json",
	    "[]",
	    "{}",
	    "{\"tenants\":{},\"total\":{\"entities\":0,\"facts\":0,\"relations\":0,"
	    "\"events\":0}}",
	    /* show's facts must be an object keyed by predicate */
	    "{\"tenant\":\"t\",\"subject\":\"s\",\"at\":null,\"kind\":null,"
	    "\"first_seen\":null,\"last_seen\":null,\"facts\":[],\"outgoing\":[],"
	    "\"incoming\":[]}",
	};
	static const enum keel_query_kind kinds[] = {KEEL_QUERY_SHOW, KEEL_QUERY_HISTORY,
						      KEEL_QUERY_WHY, KEEL_QUERY_STATS};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			char *text = (char *)"untouched";
			assert_int_equal(
			    keel_query_text(kinds[k], bad[i], strlen(bad[i]), &text),
			    KEEL_EINVAL);
			assert_null(text);
		}
	}
	/* A good document of one query is not one of another. */
	const char *stats = "{\"tenants\":[],\"total\":{\"entities\":0,\"facts\":0,"
			    "\"relations\":0,\"events\":0}}";
	char *text = NULL;
	assert_int_equal(keel_query_text(KEEL_QUERY_SHOW, stats, strlen(stats), &text),
			 KEEL_EINVAL);
	assert_int_equal(keel_query_text(KEEL_QUERY_WHY, stats, strlen(stats), &text),
			 KEEL_EINVAL);
}

/* Terminal columns of a line: a wide character counts two, a combining
 * mark none (the same ranges keel uses; the test's text has only these). */
static size_t columns(const char *s, size_t len)
{
	size_t w = 0;
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (n == 3 && c == 0xe6) /* U+6000-U+6FFF, the CJK below */
			w += 2;
		else if (!(n == 2 && c == 0xcc)) /* U+0300-U+033F combining */
			w += 1;
		i += n;
	}
	return w;
}

/* Fitted to a width, no line is wider, wide characters counted twice;
 * a cut cell ends in U+2026 at a character boundary; what fits is whole. */
static void fitted_lines_are_no_wider(void **state)
{
	(void)state;
	const char *doc =
	    "{\"tenant\":\"t\",\"subject\":\"s\",\"at\":\"2026-01-01T00:00:00Z\","
	    "\"kind\":null,\"first_seen\":\"2026-01-01T00:00:00.123456Z\","
	    "\"last_seen\":\"2026-01-01T00:00:00Z\","
	    "\"facts\":{\"name\":{\"value\":"
	    "\"\u6f22\u6f22\u6f22\u6f22\u6f22\u6f22\u6f22\u6f22\u6f22\u6f22\","
	    "\"valid_from\":\"2026-01-01T00:00:00.123456Z\",\"valid_to\":null,"
	    "\"asserted_by\":{\"source\":\"/a/long/source/of/events\",\"id\":\"ev-17\"}},"
	    "\"note\":{\"value\":\"e\u0301te\u0301\",\"valid_from\":\"2026-01-01T00:00:"
	    "00Z\","
	    "\"valid_to\":null,\"asserted_by\":{\"source\":\"\",\"id\":\"e2\"}}},"
	    "\"outgoing\":[],\"incoming\":[]}";
	for (size_t width = 30; width <= 120; width += 5) {
		char *text = NULL;
		assert_int_equal(
		    keel_query_text_fit(KEEL_QUERY_SHOW, doc, strlen(doc), width, &text),
		    0);
		for (const char *line = text; *line;) {
			const char *nl = strchr(line, '\n');
			assert_non_null(nl);
			if (columns(line, (size_t)(nl - line)) > width)
				fail_msg("width %zu: %.*s", width, (int)(nl - line),
					 line);
			line = nl + 1;
		}
		/* the value whole, or cut between two characters */
		const char *v = strstr(text, "\"\xe6\xbc\xa2");
		assert_non_null(v);
		size_t n = strspn(v + 1, "\xe6\xbc\xa2");
		assert_int_equal(n % 3, 0);
		assert_true(strncmp(v + 1 + n, "\"", 1) == 0 ||
			    strncmp(v + 1 + n, "\xe2\x80\xa6", 3) == 0);
		free(text);
	}
	/* Wide enough, the fitted text is the unfitted one. */
	char *wide = NULL, *plain = render(KEEL_QUERY_SHOW, doc);
	assert_int_equal(
	    keel_query_text_fit(KEEL_QUERY_SHOW, doc, strlen(doc), 500, &wide), 0);
	assert_string_equal(wide, plain);
	/* The combining accents take no column: "été" is 3 columns, 5 code
	 * points, and is not cut where it fits. */
	assert_non_null(strstr(plain, "\"e\xcc\x81te\xcc\x81\""));
	free(wide);
	free(plain);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(names_keep_their_escapes),
    cmocka_unit_test(why_without_its_event_says_so),
    cmocka_unit_test(stats_of_an_empty_store),
    cmocka_unit_test(changes_and_known_at),
    cmocka_unit_test(what_is_not_a_document_is_refused),
    cmocka_unit_test(fitted_lines_are_no_wider),
};

KEEL_TEST_MAIN(tests)
