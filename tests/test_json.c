/*
 * test_json.c - the JSON parser's rules (each error with its exact message
 * and offset), the tree it builds, pointer lookup, compaction, hostile
 * inputs (deep nesting, huge objects), and the golden cases under
 * tests/data/json/ (NAME.json next to NAME.expect).
 */
#include "support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event/json.h"

/* Parses text (of n bytes) and expects success. */
static const struct keel_json *parse_ok(struct keel_json_doc *doc, const char *text,
					size_t n)
{
	struct keel_json_error err = {0, ""};
	int rc = keel_json_parse(doc, text, n, &err);
	if (rc != 0)
		fail_msg("parse of %.*s failed at %zu: %s", (int)n, text, err.offset,
			 err.msg);
	assert_non_null(doc->root);
	return doc->root;
}

#define PARSE_OK(doc, lit) parse_ok((doc), (lit), sizeof(lit) - 1)

/* Parses text and expects the error msg at offset. */
static void parse_err(const char *text, size_t n, size_t offset, const char *msg)
{
	struct keel_json_doc doc;
	struct keel_json_error err = {0, ""};
	keel_json_doc_init(&doc);
	int rc = keel_json_parse(&doc, text, n, &err);
	if (rc == 0)
		fail_msg("parse of %.*s succeeded, expected \"%s\"", (int)n, text, msg);
	assert_int_equal(rc, -1);
	assert_null(doc.root);
	assert_string_equal(err.msg, msg);
	assert_int_equal(err.offset, offset);
	keel_json_doc_free(&doc);
}

#define ERR(lit, off, msg) parse_err((lit), sizeof(lit) - 1, (off), (msg))

static void assert_str(const struct keel_json *v, const char *want, size_t want_len)
{
	assert_non_null(v);
	assert_int_equal(v->type, KEEL_JSON_STRING);
	assert_int_equal(v->len, want_len);
	assert_memory_equal(v->str, want, want_len);
	assert_int_equal(v->str[v->len], 0);
}

#define ASSERT_STR(v, lit) assert_str((v), (lit), sizeof(lit) - 1)

/* ------------------------------------------------------------ the tree */

static const char envelope[] =
    "{\"specversion\":\"1.0\",\"id\":\"t0-e-0000012345\",\"source\":\"/fleet/sim\","
    "\"type\":\"fleet.vehicle.location_reported\",\"time\":\"2026-03-01T08:15:42."
    "123456Z\","
    "\"tenant\":\"tenant-00\",\"datacontenttype\":\"application/json\",\"data\":"
    "{\"vehicle_id\":\"V-0042\",\"lat\":52.520008,\"lon\":13.404954,\"speed_kmh\":48.5,"
    "\"heading\":271}}";

static void test_envelope_tree(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	const struct keel_json *root = PARSE_OK(&doc, envelope);
	assert_int_equal(root->type, KEEL_JSON_OBJECT);
	assert_int_equal(root->len, 8);
	assert_int_equal(root->raw_off, 0);
	assert_int_equal(root->raw_len, sizeof envelope - 1);
	assert_ptr_equal(doc.text, envelope);
	assert_int_equal(doc.text_len, sizeof envelope - 1);

	/* Members in order, with keys. */
	static const char *const keys[] = {
	    "specversion", "id",     "source",		"type",
	    "time",	   "tenant", "datacontenttype", "data"};
	size_t i = 0;
	for (const struct keel_json *m = root->child; m; m = m->next, i++) {
		assert_true(i < 8);
		assert_int_equal(m->key_len, strlen(keys[i]));
		assert_memory_equal(m->key, keys[i], m->key_len);
		assert_int_equal(m->key[m->key_len], 0);
	}
	assert_int_equal(i, 8);

	const struct keel_json *id = keel_json_get(root, "id", 2);
	ASSERT_STR(id, "t0-e-0000012345");
	/* The span covers the quotes. */
	assert_int_equal(id->raw_len, 17);
	assert_memory_equal(envelope + id->raw_off, "\"t0-e-0000012345\"", 17);

	const struct keel_json *data = keel_json_get(root, "data", 4);
	assert_non_null(data);
	assert_int_equal(data->type, KEEL_JSON_OBJECT);
	assert_int_equal(data->len, 5);
	assert_int_equal(envelope[data->raw_off], '{');
	assert_int_equal(data->raw_off + data->raw_len, sizeof envelope - 2);

	const struct keel_json *lat = keel_json_get(data, "lat", 3);
	assert_non_null(lat);
	assert_int_equal(lat->type, KEEL_JSON_NUMBER);
	assert_int_equal(lat->len, 9);
	assert_string_equal(lat->str, "52.520008");
	assert_memory_equal(envelope + lat->raw_off, "52.520008", 9);
	const struct keel_json *heading = keel_json_get(data, "heading", 7);
	assert_non_null(heading);
	assert_string_equal(heading->str, "271");

	assert_null(keel_json_get(root, "lat", 3));
	assert_null(keel_json_get(root, "i", 1));
	assert_null(keel_json_get(root, "idx", 3));
	assert_null(keel_json_get(id, "id", 2)); /* not an object */
	assert_null(keel_json_get(NULL, "id", 2));
	keel_json_doc_free(&doc);
}

static void test_scalars_and_literals(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	assert_int_equal(PARSE_OK(&doc, "true")->type, KEEL_JSON_TRUE);
	assert_int_equal(PARSE_OK(&doc, " false ")->type, KEEL_JSON_FALSE);
	assert_int_equal(PARSE_OK(&doc, "\t\r\nnull\n")->type, KEEL_JSON_NULL);
	ASSERT_STR(PARSE_OK(&doc, "\"\""), "");
	const struct keel_json *a =
	    PARSE_OK(&doc, "[true,false,null,\"x\",-1.5e3,{},[]]");
	assert_int_equal(a->type, KEEL_JSON_ARRAY);
	assert_int_equal(a->len, 7);
	static const enum keel_json_type want[] = {
	    KEEL_JSON_TRUE,   KEEL_JSON_FALSE,	KEEL_JSON_NULL,	 KEEL_JSON_STRING,
	    KEEL_JSON_NUMBER, KEEL_JSON_OBJECT, KEEL_JSON_ARRAY,
	};
	size_t i = 0;
	for (const struct keel_json *m = a->child; m; m = m->next, i++) {
		assert_int_equal(m->type, want[i]);
		assert_null(m->key); /* array members have no key */
		assert_int_equal(m->key_len, 0);
	}
	assert_int_equal(i, 7);
	const struct keel_json *o = keel_json_pointer(a, "/5", 2);
	assert_non_null(o);
	assert_int_equal(o->len, 0);
	assert_null(o->child);
	assert_int_equal(o->raw_len, 2);
	keel_json_doc_free(&doc);
}

static void test_numbers_are_lexemes(void **state)
{
	(void)state;
	static const char *const ok[] = {
	    "0",
	    "-0",
	    "1",
	    "-1",
	    "10",
	    "0.0",
	    "0.5",
	    "-0.5",
	    "1e5",
	    "1E5",
	    "1e+5",
	    "1e-5",
	    "0e0",
	    "-0E-0",
	    "123456789012345678901234567890",
	    "-1234567890.1234567890e-1234567890",
	    "1.7976931348623157e309",
	};
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(ok); i++) {
		const struct keel_json *v = parse_ok(&doc, ok[i], strlen(ok[i]));
		assert_int_equal(v->type, KEEL_JSON_NUMBER);
		assert_string_equal(v->str, ok[i]);
		assert_int_equal(v->len, strlen(ok[i]));
	}
	/* The text need not end in NUL: the lexeme is still terminated. */
	char buf[8] = {'1', '2', '3', '4', '5', '6', '7', '8'};
	const struct keel_json *v = parse_ok(&doc, buf, 3);
	assert_int_equal(v->len, 3);
	assert_string_equal(v->str, "123");
	keel_json_doc_free(&doc);
}

static void test_strings_decoded(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	ASSERT_STR(PARSE_OK(&doc, "\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\""),
		   "a\"b\\c/d\be\ff\ng\rh\ti");
	ASSERT_STR(PARSE_OK(&doc, "\"\\u00e9\\u00E9\""), "\xc3\xa9\xc3\xa9");
	ASSERT_STR(PARSE_OK(&doc, "\"\\u0041\\u07ff\\u0800\\uffff\""),
		   "A\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf");
	/* A surrogate pair is one 4-byte character. */
	ASSERT_STR(PARSE_OK(&doc, "\"\\ud83d\\ude00!\""), "\xf0\x9f\x98\x80!");
	ASSERT_STR(PARSE_OK(&doc, "\"\\uDBFF\\uDFFF\""), "\xf4\x8f\xbf\xbf");
	/* \u0000 is a byte of the string, counted in len. */
	ASSERT_STR(PARSE_OK(&doc, "\"a\\u0000b\""), "a\0b");
	/* UTF-8 at every boundary of RFC 3629's table. */
	ASSERT_STR(PARSE_OK(&doc, "\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
				  "\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""),
		   "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0"
		   "\x90\x80\x80"
		   "\xf4\x8f\xbf\xbf");
	/* Long runs cross the 8-byte fast path at every alignment. */
	for (size_t n = 0; n < 40; n++) {
		char text[64], want[64];
		text[0] = '"';
		for (size_t i = 0; i < n; i++)
			text[1 + i] = want[i] = (char)('a' + i % 26);
		text[1 + n] = '"';
		const struct keel_json *v = parse_ok(&doc, text, n + 2);
		assert_str(v, want, n);
		/* And an escape right after the run. */
		text[1 + n] = '\\';
		text[2 + n] = 'n';
		text[3 + n] = '"';
		want[n] = '\n';
		assert_str(parse_ok(&doc, text, n + 4), want, n + 1);
	}
	keel_json_doc_free(&doc);
}

static void test_empty_key_and_nul_key(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	const struct keel_json *o = PARSE_OK(&doc, "{\"\":1,\"a\\u0000\":2,\"a\":3}");
	const struct keel_json *e = keel_json_get(o, "", 0);
	assert_non_null(e);
	assert_string_equal(e->str, "1");
	const struct keel_json *n = keel_json_get(o, "a\0", 2);
	assert_non_null(n);
	assert_string_equal(n->str, "2");
	const struct keel_json *a = keel_json_get(o, "a", 1);
	assert_non_null(a);
	assert_string_equal(a->str, "3");
	keel_json_doc_free(&doc);
}

static void test_doc_reuse(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	/* A big document, a failure, then small ones on the same doc. */
	struct keel_buf big;
	keel_buf_init(&big);
	keel_buf_addc(&big, '[');
	for (int i = 0; i < 20000; i++)
		keel_buf_addf(&big, "%s{\"k\":\"v%d\"}", i ? "," : "", i);
	keel_buf_addc(&big, ']');
	const struct keel_json *r = parse_ok(&doc, big.data, big.len);
	assert_int_equal(r->len, 20000);
	const struct keel_json *last = keel_json_pointer(r, "/19999/k", 8);
	ASSERT_STR(last, "v19999");
	assert_int_equal(keel_json_parse(&doc, "[1,", 3, &err), -1);
	assert_null(doc.root);
	for (int i = 0; i < 1000; i++) {
		r = PARSE_OK(&doc, envelope);
		ASSERT_STR(keel_json_get(r, "tenant", 6), "tenant-00");
	}
	keel_buf_free(&big);
	keel_json_doc_free(&doc);
	/* A freed doc can be parsed into again. */
	r = PARSE_OK(&doc, "[]");
	assert_int_equal(r->type, KEEL_JSON_ARRAY);
	keel_json_doc_free(&doc);
	/* err may be NULL. */
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, "}", 1, NULL), -1);
	keel_json_doc_free(&doc);
}

static void test_steady_state_reuses_memory(void **state)
{
	(void)state;
	/* After the first envelope, parsing more reuses the same arena chunk:
	 * no allocation per parse. */
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	PARSE_OK(&doc, envelope);
	const void *head = doc.arena.head;
	size_t bytes = doc.arena.bytes;
	assert_non_null(head);
	for (int i = 0; i < 10000; i++) {
		PARSE_OK(&doc, envelope);
		assert_ptr_equal(doc.arena.head, head);
		assert_int_equal(doc.arena.bytes, bytes);
	}
	/* Small objects never need the duplicate-key tables. */
	assert_null(doc.scratch);
	keel_json_doc_free(&doc);
}

/* --------------------------------------------------------------- rules */

static void test_err_end_of_input(void **state)
{
	(void)state;
	ERR("", 0, "unexpected end of input");
	parse_err(NULL, 0, 0, "unexpected end of input");
	ERR("   ", 3, "unexpected end of input");
	ERR("[", 1, "unexpected end of input");
	ERR("[1", 2, "unexpected end of input");
	ERR("[1,", 3, "unexpected end of input");
	ERR("{", 1, "unexpected end of input");
	ERR("{\"a\"", 4, "unexpected end of input");
	ERR("{\"a\": ", 6, "unexpected end of input");
	ERR("{\"a\":1 ", 7, "unexpected end of input");
}

static void test_err_unterminated_string(void **state)
{
	(void)state;
	ERR("\"abc", 0, "unterminated string");
	ERR("[1,\"abcdefghijklmnop", 3, "unterminated string");
	ERR("{\"ab", 1, "unterminated string");
	ERR("\"ab\\", 0, "unterminated string");
	ERR("\"ab\\u12", 0, "unterminated string");
}

static void test_err_invalid_escape(void **state)
{
	(void)state;
	ERR("\"a\\x\"", 2, "invalid escape");
	ERR("\"a\\U0041\"", 2, "invalid escape");
	ERR("\"a\\u12G4\"", 2, "invalid escape");
	ERR("\"\\u12\"", 1, "invalid escape");
	ERR("\"\\'\"", 1, "invalid escape");
	ERR("[\"ok\",\"\\ud800\\uzzzz\"]", 13, "invalid escape");
}

static void test_err_lone_surrogate(void **state)
{
	(void)state;
	ERR("\"\\ud800\"", 1, "lone surrogate in \\u escape");
	ERR("\"\\udfff\"", 1, "lone surrogate in \\u escape");
	ERR("\"x\\ud800\\n\"", 2, "lone surrogate in \\u escape");
	ERR("\"\\ud800\\u0041\"", 1, "lone surrogate in \\u escape");
	ERR("\"\\ud800\\ud800\"", 1, "lone surrogate in \\u escape");
	ERR("\"\\udc00\\ud800\"", 1, "lone surrogate in \\u escape");
}

static void test_err_control_character(void **state)
{
	(void)state;
	ERR("\"a\tb\"", 2, "control character in string");
	ERR("\"a\nb\"", 2, "control character in string");
	ERR("[\"abcdefghijk\x1f\"]", 13, "control character in string");
	ERR("\"\x7f ok but \x01\"", 10, "control character in string");
	/* A raw NUL inside a string is a control character too. */
	parse_err("\"a\0b\"", 5, 2, "control character in string");
}

static void test_err_invalid_utf8(void **state)
{
	(void)state;
	ERR("\"\x80\"", 1, "invalid UTF-8");	     /* stray continuation */
	ERR("\"ab\xff\"", 3, "invalid UTF-8");	     /* never valid */
	ERR("\"\xc0\xaf\"", 1, "invalid UTF-8");     /* overlong '/' */
	ERR("\"\xc1\xbf\"", 1, "invalid UTF-8");     /* overlong */
	ERR("\"\xe0\x80\xaf\"", 1, "invalid UTF-8"); /* overlong 3-byte */
	ERR("\"\xe0\x9f\xbf\"", 1, "invalid UTF-8"); /* overlong U+07FF */
	ERR("\"\xf0\x80\x80\xaf\"", 1, "invalid UTF-8");
	ERR("\"\xf0\x8f\xbf\xbf\"", 1, "invalid UTF-8"); /* overlong U+FFFF */
	ERR("\"\xed\xa0\x80\"", 1, "invalid UTF-8");	 /* U+D800 */
	ERR("\"\xed\xbf\xbf\"", 1, "invalid UTF-8");	 /* U+DFFF */
	ERR("\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8"); /* U+110000 */
	ERR("\"\xf5\x80\x80\x80\"", 1, "invalid UTF-8");
	ERR("\"\xf8\x88\x80\x80\x80\"", 1, "invalid UTF-8");
	ERR("\"\xc3\"", 1, "invalid UTF-8");	 /* cut by the quote */
	ERR("\"\xe2\x82\"", 1, "invalid UTF-8"); /* cut by the quote */
	ERR("\"\xe2\x82", 1, "invalid UTF-8");	 /* cut by the end */
	ERR("\"\xf0\x9f\x98", 1, "invalid UTF-8");
	ERR("\"\xc3\xa9\xc3\x28\"", 3, "invalid UTF-8");
	ERR("{\"k\xff\":1}", 3, "invalid UTF-8"); /* keys too */
	ERR("\"0123456789abcdef\xe9t\xe9\"", 17, "invalid UTF-8");
}

static void test_err_invalid_number(void **state)
{
	(void)state;
	ERR("-", 0, "invalid number");
	ERR("[-]", 1, "invalid number");
	ERR("-a", 0, "invalid number");
	ERR("01", 0, "invalid number");
	ERR("[1,-01]", 3, "invalid number");
	ERR("00", 0, "invalid number");
	ERR("1.", 0, "invalid number");
	ERR("1.e5", 0, "invalid number");
	ERR("1e", 0, "invalid number");
	ERR("1e+", 0, "invalid number");
	ERR("{\"a\":1E-}", 5, "invalid number");
	ERR("1.2.3", 0, "invalid number");
	ERR("1e5e", 0, "invalid number");
	ERR("[2-1]", 1, "invalid number");
	ERR("-.5", 0, "invalid number");
	ERR("0x10", 0, "invalid number");
	ERR("[1a]", 1, "invalid number");
	ERR("+1", 0, "expected a value");
	ERR(".5", 0, "expected a value");
}

static void test_err_literals_and_values(void **state)
{
	(void)state;
	ERR("tru", 0, "invalid literal");
	ERR("[nul]", 1, "invalid literal");
	ERR("True", 0, "expected a value");
	ERR("{\"a\":fals}", 5, "invalid literal");
	ERR("[1,x]", 3, "expected a value");
	ERR("{\"a\":}", 5, "expected a value");
	ERR("{\"a\":]", 5, "expected a value");
	ERR("]", 0, "expected a value");
	ERR("[,1]", 1, "expected a value");
	ERR("'a'", 0, "expected a value");
	ERR("\xef\xbb\xbf{}", 0, "expected a value"); /* no BOM */
}

static void test_err_structure(void **state)
{
	(void)state;
	ERR("{\"a\" 1}", 5, "expected ':'");
	ERR("{\"a\",1}", 4, "expected ':'");
	ERR("{a:1}", 1, "expected a string key");
	ERR("{1:1}", 1, "expected a string key");
	ERR("{\"a\":1,,}", 7, "expected a string key");
	ERR("{'a':1}", 1, "expected a string key");
	ERR("[1 2]", 3, "expected ',' or ']'");
	ERR("[1:2]", 2, "expected ',' or ']'");
	ERR("[1}", 2, "expected ',' or ']'");
	ERR("{\"a\":1 \"b\":2}", 7, "expected ',' or '}'");
	ERR("{\"a\":1]", 6, "expected ',' or '}'");
	ERR("[1,]", 3, "trailing comma");
	ERR("[1, ]", 4, "trailing comma");
	ERR("{\"a\":1,}", 7, "trailing comma");
	ERR("{\"a\":[1,2,],\"b\":1}", 10, "trailing comma");
}

static void test_err_trailing_characters(void **state)
{
	(void)state;
	ERR("{} x", 3, "trailing characters after the value");
	ERR("{}{}", 2, "trailing characters after the value");
	ERR("1 2", 2, "trailing characters after the value");
	ERR("[]]", 2, "trailing characters after the value");
	ERR("\"a\"\"b\"", 3, "trailing characters after the value");
	ERR("true false", 5, "trailing characters after the value");
	ERR("truex", 4, "trailing characters after the value");
	ERR("null\n\x00", 5, "trailing characters after the value");
	/* NDJSON is one value per parse: the next line is trailing. */
	ERR("{\"a\":1}\n{\"a\":2}\n", 8, "trailing characters after the value");
	/* Whitespace is fine, other control bytes are not. */
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	PARSE_OK(&doc, " \t\r\n{} \t\r\n");
	keel_json_doc_free(&doc);
	ERR("{}\f", 2, "trailing characters after the value");
}

static void test_err_duplicate_key(void **state)
{
	(void)state;
	ERR("{\"id\":1,\"id\":2}", 8, "duplicate key \"id\"");
	ERR("{\"id\":1,\"x\":{\"id\":1,\"b\":2,\"id\":3}}", 26, "duplicate key \"id\"");
	/* Keys compare decoded. */
	ERR("{\"a\":1,\"\\u0061\":2}", 7, "duplicate key \"a\"");
	ERR("{\"\\u00e9\":1,\"\xc3\xa9\":2}", 12, "duplicate key \"\xc3\xa9\"");
	ERR("{\"\":1,\"\":2}", 6, "duplicate key \"\"");
	/* The message escapes the key for display. */
	ERR("{\"a\\\"b\":1,\"a\\\"b\":2}", 10, "duplicate key \"a\\\"b\"");
	/* With the one JSON string writer's escapes (util.h): \n, else \u00XX. */
	ERR("{\"\\n\":1,\"\\n\":2}", 8, "duplicate key \"\\n\"");
	ERR("{\"\\u0001\":1,\"\\u0001\":2}", 12, "duplicate key \"\\u0001\"");
	/* Same key in different objects is fine. */
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	PARSE_OK(&doc, "{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}]}");
	/* Keys differing in one byte or by a prefix are distinct. */
	PARSE_OK(&doc, "{\"ab\":1,\"a\":2,\"abc\":3,\"aB\":4,\"a\\u0000\":5}");
	keel_json_doc_free(&doc);
}

static void test_err_duplicate_key_long_message(void **state)
{
	(void)state;
	/* A key too long for the message is cut at a character boundary. */
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "{\"");
	for (int i = 0; i < 50; i++)
		keel_buf_adds(&b, "\xc3\xa9"); /* é, 2 bytes each */
	keel_buf_adds(&b, "\":1,\"");
	size_t second = b.len - 1;
	for (int i = 0; i < 50; i++)
		keel_buf_adds(&b, "\xc3\xa9");
	keel_buf_adds(&b, "\":2}");
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, b.data, b.len, &err), -1);
	assert_int_equal(err.offset, second);
	assert_true(strncmp(err.msg, "duplicate key \"\xc3\xa9", 17) == 0);
	size_t n = strlen(err.msg);
	assert_true(n < sizeof err.msg);
	assert_string_equal(err.msg + n - 4, "...\"");
	/* Only whole characters before the dots: an even count of bytes. */
	assert_int_equal((n - 4 - 15) % 2, 0);
	keel_buf_free(&b);
	keel_json_doc_free(&doc);
}

/* An object of n keys "k0".."k{n-1}", plus dup_of >= 0 repeated last. */
static void build_object(struct keel_buf *b, int n, int dup_of)
{
	keel_buf_addc(b, '{');
	for (int i = 0; i < n; i++)
		keel_buf_addf(b, "%s\"k%d\":%d", i ? "," : "", i, i);
	if (dup_of >= 0)
		keel_buf_addf(b, ",\"k%d\":0", dup_of);
	keel_buf_addc(b, '}');
}

static void test_huge_object_duplicate_found(void **state)
{
	(void)state;
	struct keel_json_doc doc;
	struct keel_json_error err;
	struct keel_buf b;
	keel_json_doc_init(&doc);
	keel_buf_init(&b);

	/* 100k distinct keys parse; every one is found. */
	build_object(&b, 100000, -1);
	const struct keel_json *o = parse_ok(&doc, b.data, b.len);
	assert_int_equal(o->len, 100000);
	const struct keel_json *v = keel_json_pointer(o, "/k99999", 7);
	assert_non_null(v);
	assert_string_equal(v->str, "99999");

	/* A duplicate of an early key at the very end. */
	keel_buf_reset(&b);
	build_object(&b, 100000, 3);
	size_t dup_at = (size_t)(strrchr(b.data, ',') - b.data) + 1;
	assert_int_equal(keel_json_parse(&doc, b.data, b.len, &err), -1);
	assert_string_equal(err.msg, "duplicate key \"k3\"");
	assert_int_equal(err.offset, dup_at);
	/* How long these take (milliseconds with hashing, where comparing
	 * every pair would take tens of seconds) is bench_json's to measure. */

	/* Duplicates are found on both sides of the switch to hashing. */
	for (int n = 1; n < 40; n++) {
		for (int d = 0; d < n; d += 7) {
			keel_buf_reset(&b);
			build_object(&b, n, d);
			assert_int_equal(keel_json_parse(&doc, b.data, b.len, &err), -1);
			char want[32];
			snprintf(want, sizeof want, "duplicate key \"k%d\"", d);
			assert_string_equal(err.msg, want);
		}
	}
	keel_buf_free(&b);
	keel_json_doc_free(&doc);
}

static void test_hashed_objects_do_not_leak_keys(void **state)
{
	(void)state;
	/* Several large objects, siblings and nested, with the same keys:
	 * each object's table must forget the previous object's keys. */
	struct keel_json_doc doc;
	struct keel_buf b;
	keel_json_doc_init(&doc);
	keel_buf_init(&b);
	keel_buf_addc(&b, '[');
	for (int i = 0; i < 5; i++) {
		if (i)
			keel_buf_addc(&b, ',');
		keel_buf_addc(&b, '{');
		for (int k = 0; k < 20; k++)
			keel_buf_addf(&b, "\"k%d\":0,", k);
		keel_buf_adds(&b, "\"k20\":");
		build_object(&b, 40, -1); /* the same keys one level down */
		for (int k = 21; k < 40; k++)
			keel_buf_addf(&b, ",\"k%d\":0", k);
		keel_buf_addc(&b, '}');
	}
	keel_buf_addc(&b, ']');
	const struct keel_json *a = parse_ok(&doc, b.data, b.len);
	assert_int_equal(a->len, 5);
	const struct keel_json *inner = keel_json_pointer(a, "/4/k20/k39", 10);
	assert_non_null(inner);
	assert_string_equal(inner->str, "39");
	assert_int_equal(keel_json_pointer(a, "/2", 2)->len, 40);
	for (int round = 0; round < 3; round++)
		parse_ok(&doc, b.data, b.len); /* tables reused across parses */
	keel_buf_free(&b);
	keel_json_doc_free(&doc);
}

/* ------------------------------------------------------------- nesting */

static void test_deep_nesting_rejected(void **state)
{
	(void)state;
	size_t n = 100000;
	char *t = malloc(n);
	assert_non_null(t);
	memset(t, '[', n);
	parse_err(t, n, 64, "nesting deeper than 64");
	memset(t, '{', n);
	/* '{' wants a key first: "{{" is a bad key long before depth 64. */
	parse_err(t, n, 1, "expected a string key");
	/* Objects nested through keys. */
	struct keel_buf b;
	keel_buf_init(&b);
	for (int i = 0; i < 100000; i++)
		keel_buf_adds(&b, "{\"a\":");
	parse_err(b.data, b.len, 64 * 5, "nesting deeper than 64");
	keel_buf_free(&b);
	free(t);
}

static void test_depth_limit_exact(void **state)
{
	(void)state;
	char t[200];
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	/* 64 levels are accepted. */
	memset(t, '[', 64);
	memset(t + 64, ']', 64);
	const struct keel_json *v = parse_ok(&doc, t, 128);
	int depth = 0;
	for (; v; v = v->child)
		depth++;
	assert_int_equal(depth, 64);
	/* 65 are not, even when closed. */
	memset(t, '[', 65);
	memset(t + 65, ']', 65);
	parse_err(t, 130, 64, "nesting deeper than 64");
	/* Mixed arrays and objects count alike. */
	struct keel_buf b;
	keel_buf_init(&b);
	for (int i = 0; i < 32; i++)
		keel_buf_adds(&b, "[{\"k\":");
	keel_buf_adds(&b, "1");
	for (int i = 0; i < 32; i++)
		keel_buf_adds(&b, "}]");
	parse_ok(&doc, b.data, b.len);
	keel_buf_reset(&b);
	for (int i = 0; i < 32; i++)
		keel_buf_adds(&b, "[{\"k\":");
	keel_buf_adds(&b, "[1]");
	for (int i = 0; i < 32; i++)
		keel_buf_adds(&b, "}]");
	parse_err(b.data, b.len, 32 * 6, "nesting deeper than 64");
	keel_buf_free(&b);
	keel_json_doc_free(&doc);
}

/* ------------------------------------------------------------- pointer */

static void test_pointer(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"a\":{\"b\":[10,11,{\"c\":\"deep\"}]},\"m~n\":1,\"x/y\":2,\"\":3,"
	    "\"~0\":4,\"arr\":[0,1,2,3,4,5,6,7,8,9,10,11],\" \":5,\"01\":6}";
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	const struct keel_json *r = PARSE_OK(&doc, text);
#define PTR(p) keel_json_pointer(r, (p), sizeof(p) - 1)
	assert_ptr_equal(PTR(""), r);
	assert_int_equal(PTR("/a")->type, KEEL_JSON_OBJECT);
	assert_string_equal(PTR("/a/b/0")->str, "10");
	assert_string_equal(PTR("/a/b/1")->str, "11");
	ASSERT_STR(PTR("/a/b/2/c"), "deep");
	assert_string_equal(PTR("/m~0n")->str, "1");
	assert_string_equal(PTR("/x~1y")->str, "2");
	assert_string_equal(PTR("/")->str, "3");
	assert_string_equal(PTR("/~00")->str, "4");
	assert_string_equal(PTR("/arr/10")->str, "10");
	assert_string_equal(PTR("/arr/11")->str, "11");
	assert_string_equal(PTR("/ ")->str, "5");
	assert_string_equal(PTR("/01")->str, "6"); /* a key, not an index */
	/* Missing steps and malformed pointers. */
	assert_null(PTR("a"));
	assert_null(PTR("/nope"));
	assert_null(PTR("/a/b/3"));
	assert_null(PTR("/arr/12"));
	assert_null(PTR("/arr/01")); /* leading zero */
	assert_null(PTR("/arr/-"));  /* past the end */
	assert_null(PTR("/arr/-1"));
	assert_null(PTR("/arr/1a"));
	assert_null(PTR("/arr/"));
	assert_null(PTR("/arr/99999999999999999999999999"));
	assert_null(PTR("/a/b/0/x")); /* through a number */
	assert_null(PTR("/m~n"));     /* ~ must be ~0 or ~1 */
	assert_null(PTR("/m~2n"));
	assert_null(PTR("/~"));
	assert_null(PTR("/x/y"));
	assert_null(PTR("/a/"));
	assert_null(keel_json_pointer(NULL, "", 0));
	assert_null(keel_json_pointer(NULL, "/a", 2));
	/* Pointer strings need not be NUL-terminated. */
	assert_string_equal(keel_json_pointer(r, "/arr/1xyz", 6)->str, "1");
#undef PTR
	keel_json_doc_free(&doc);
}

/* ---------------------------------------------------------- compaction */

/* A document written without blanks is compacted by copying it: the parser
 * notes every blank it skips inside the root value, wherever it is. */
static void test_compact_copies_blankless_documents(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		bool compact;
		const char *want;
	} cases[] = {
	    {"{\"a\":[1,{\"b\":\" x \"}],\"c\":null}", true,
	     "{\"a\":[1,{\"b\":\" x \"}],\"c\":null}"},
	    {"  \n{\"a\":1}\t\r\n", true, "{\"a\":1}"}, /* around the root only */
	    {"{ \"a\":1}", false, "{\"a\":1}"},		 /* after '{' */
	    {"{\"a\" :1}", false, "{\"a\":1}"},		 /* before ':' */
	    {"{\"a\":\t1}", false, "{\"a\":1}"},		 /* after ':' */
	    {"{\"a\":1 }", false, "{\"a\":1}"},		 /* before '}' */
	    {"[1,\n2]", false, "[1,2]"},			 /* after ',' */
	    {"[1\r,2]", false, "[1,2]"},			 /* before ',' */
	    {"[ ]", false, "[]"},
	    {"\" a b \"", true, "\" a b \""}, /* blanks inside a string are data */
	};
	struct keel_json_doc doc;
	struct keel_buf out;
	keel_json_doc_init(&doc);
	keel_buf_init(&out);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct keel_json *r = parse_ok(&doc, cases[i].text, strlen(cases[i].text));
		assert_int_equal(doc.compact, cases[i].compact);
		keel_buf_reset(&out);
		keel_json_compact(&doc, r, &out);
		assert_string_equal(out.data, cases[i].want);
	}
	keel_buf_free(&out);
	keel_json_doc_free(&doc);
}

static void test_compact(void **state)
{
	(void)state;
	static const char text[] =
	    " {\n\t\"a b\" : [ 1 , 2.50E+03 , -0 ] ,\r\n \"s\" : \"  x\\\"  y \\\\\" , "
	    "\"u\": \"\\u00e9 \\n\" ,\"long\" : \"the quick brown fox \\\" jumps\",\n"
	    "\"e\" : { } , \"z\" :[ ] , \"t\" : true , \"n\":null } \n";
	static const char want[] =
	    "{\"a b\":[1,2.50E+03,-0],\"s\":\"  x\\\"  y \\\\\",\"u\":\"\\u00e9 \\n\","
	    "\"long\":\"the quick brown fox \\\" jumps\",\"e\":{},\"z\":[],\"t\":true,"
	    "\"n\":null}";
	struct keel_json_doc doc;
	struct keel_buf out;
	keel_json_doc_init(&doc);
	keel_buf_init(&out);
	const struct keel_json *r = PARSE_OK(&doc, text);
	keel_json_compact(&doc, r, &out);
	assert_string_equal(out.data, want);
	assert_int_equal(out.len, sizeof want - 1);

	/* A member's value alone, appended after what the buffer holds. */
	keel_buf_reset(&out);
	keel_buf_adds(&out, "v=");
	keel_json_compact(&doc, keel_json_get(r, "a b", 3), &out);
	assert_string_equal(out.data, "v=[1,2.50E+03,-0]");
	keel_buf_reset(&out);
	keel_json_compact(&doc, keel_json_get(r, "s", 1), &out);
	assert_string_equal(out.data, "\"  x\\\"  y \\\\\"");

	/* compact_text on raw text gives the same. */
	keel_buf_reset(&out);
	keel_json_compact_text(text, sizeof text - 1, &out);
	assert_string_equal(out.data, want);

	/* Compact output parses to the same structure. */
	struct keel_json_doc doc2;
	keel_json_doc_init(&doc2);
	struct keel_buf again;
	keel_buf_init(&again);
	keel_buf_reset(&out);
	keel_json_compact(&doc, r, &out);
	const struct keel_json *r2 = parse_ok(&doc2, out.data, out.len);
	keel_json_compact(&doc2, r2, &again);
	assert_string_equal(again.data, out.data);
	ASSERT_STR(keel_json_get(r2, "s", 1), "  x\"  y \\");

	/* Empty input appends nothing. */
	keel_buf_reset(&out);
	keel_json_compact_text("", 0, &out);
	assert_int_equal(out.len, 0);
	assert_string_equal(out.data, "");
	keel_json_compact_text(NULL, 0, &out);
	assert_int_equal(out.len, 0);
	keel_buf_free(&again);
	keel_json_doc_free(&doc2);
	keel_buf_free(&out);
	keel_json_doc_free(&doc);
}

/* -------------------------------------------------------------- golden */

/* Parses the expectation: "ok\n<compact>\n" or "error <offset>: <msg>\n". */
static void run_golden(const char *dir, const char *name, struct keel_json_doc *doc)
{
	char path[4096];
	size_t in_len, exp_len;
	snprintf(path, sizeof path, "%s/%s.json", dir, name);
	char *in = keel_test_read_file(path, &in_len);
	assert_non_null(in);
	snprintf(path, sizeof path, "%s/%s.expect", dir, name);
	char *exp = keel_test_read_file(path, &exp_len);
	if (!exp)
		fail_msg("%s: no .expect file", name);
	while (exp_len && exp[exp_len - 1] == '\n')
		exp[--exp_len] = 0;

	/* Copy into an exact-size buffer so that reading past the end is an
	 * ASan error rather than a read of the NUL that read_file adds. */
	char *text = malloc(in_len ? in_len : 1);
	memcpy(text, in, in_len);
	struct keel_json_error err = {0, ""};
	int rc = keel_json_parse(doc, text, in_len, &err);
	struct keel_buf got;
	keel_buf_init(&got);
	if (rc == 0) {
		keel_buf_adds(&got, "ok\n");
		keel_json_compact(doc, doc->root, &got);
	} else {
		keel_buf_addf(&got, "error %zu: %s", err.offset, err.msg);
	}
	if (got.len != exp_len || memcmp(got.data, exp, exp_len) != 0)
		fail_msg("golden %s:\n  want: %s\n  got:  %s", name, exp, got.data);
	keel_buf_free(&got);
	free(text);
	free(in);
	free(exp);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden_cases(void **state)
{
	(void)state;
	const char *dir = KEEL_TEST_DATA "/json";
	DIR *d = opendir(dir);
	assert_non_null(d);
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) {
			assert_true(n < KEEL_ARRAY_LEN(names));
			names[n++] = strndup(e->d_name, l - 5);
		}
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	/* Guards against an emptied or misnamed directory. */
	assert_true(n >= 40);
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	size_t ok = 0;
	for (size_t i = 0; i < n; i++) {
		run_golden(dir, names[i], &doc);
		ok++;
		free(names[i]);
	}
	assert_int_equal(ok, n);
	keel_json_doc_free(&doc);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_envelope_tree),
    cmocka_unit_test(test_scalars_and_literals),
    cmocka_unit_test(test_numbers_are_lexemes),
    cmocka_unit_test(test_strings_decoded),
    cmocka_unit_test(test_empty_key_and_nul_key),
    cmocka_unit_test(test_doc_reuse),
    cmocka_unit_test(test_steady_state_reuses_memory),
    cmocka_unit_test(test_err_end_of_input),
    cmocka_unit_test(test_err_unterminated_string),
    cmocka_unit_test(test_err_invalid_escape),
    cmocka_unit_test(test_err_lone_surrogate),
    cmocka_unit_test(test_err_control_character),
    cmocka_unit_test(test_err_invalid_utf8),
    cmocka_unit_test(test_err_invalid_number),
    cmocka_unit_test(test_err_literals_and_values),
    cmocka_unit_test(test_err_structure),
    cmocka_unit_test(test_err_trailing_characters),
    cmocka_unit_test(test_err_duplicate_key),
    cmocka_unit_test(test_err_duplicate_key_long_message),
    cmocka_unit_test(test_huge_object_duplicate_found),
    cmocka_unit_test(test_hashed_objects_do_not_leak_keys),
    cmocka_unit_test(test_deep_nesting_rejected),
    cmocka_unit_test(test_depth_limit_exact),
    cmocka_unit_test(test_pointer),
    cmocka_unit_test(test_compact),
    cmocka_unit_test(test_compact_copies_blankless_documents),
    cmocka_unit_test(test_golden_cases),
};

KEEL_TEST_MAIN(tests)
