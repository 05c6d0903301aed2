/*
 * test_util.c - the building blocks of util.h whose results outlive a run:
 * keel_hash64 is stored in the event log (docs/semantics.md), so its
 * values are pinned here, for every length that takes a different path
 * through it (whole 16-byte rounds, an 8-byte word, tails of 0-7 bytes).
 * The expected values were computed by the byte-at-a-time implementation
 * the hash had before its tail was read by words.
 *
 * Then the one UTF-8 validator (utf8.h) and the one JSON string writer
 * built on it, from a table holding every class of RFC 3629 input.
 */
#include "support.h"
#include "event/json_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/utf8.h"
#include "util.h"

static const char text[] = "{\"specversion\":\"1.0\",\"id\":\"ev-000000001\","
			   "\"tenant\":\"tenant-00\",\"type\":\"fleet.depot.opened\"}";

/* keel_hash64 of the first n bytes, from a buffer of exactly n bytes (so
 * that the sanitizers see any read past the input). */
static uint64_t hash_prefix(size_t n, uint64_t seed)
{
	char *p = malloc(n ? n : 1);
	memcpy(p, text, n);
	uint64_t h = keel_hash64(p, n, seed);
	free(p);
	return h;
}

static void hash_values_are_pinned(void **state)
{
	(void)state;
	uint64_t acc = 0;
	for (size_t n = 0; n <= 64; n++)
		acc = acc * 31 + hash_prefix(n, n);
	assert_int_equal(acc, UINT64_C(0xbaeba4c4b2c2532a));
	assert_int_equal(hash_prefix(strlen(text), 0), UINT64_C(0x377a9b4d60aeae44));
	assert_int_equal(keel_hash64("", 0, 0), UINT64_C(0x78e40dc45945fd93));
}

/* keel_bytes_eq against memcmp: every length to 40, one bit flipped at
 * every position (or none), exact-size buffers. */
static void bytes_eq_matches_memcmp(void **state)
{
	(void)state;
	for (size_t n = 0; n <= 40; n++) {
		for (size_t pos = 0; pos <= n; pos++) {
			char *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
			memcpy(a, text, n);
			memcpy(b, text, n);
			if (pos < n)
				b[pos] ^= (char)(1 << (pos % 8));
			assert_int_equal(keel_bytes_eq(a, b, n), memcmp(a, b, n) == 0);
			assert_int_equal(keel_bytes_eq(a, b, n), pos == n);
			free(a);
			free(b);
		}
	}
}

/* ------------------------------------------------------------ UTF-8 */

#define FFFD "\xef\xbf\xbd"

/* One character (or bad sequence) of the table: its bytes, the length
 * keel_utf8_len gives at its first byte (0: not UTF-8), its code point when
 * valid, and how the JSON string writer writes it (between the quotes). */
struct utf8_case {
	const char *bytes;
	size_t len;
	uint32_t cp;
	const char *json;
};

static const struct utf8_case utf8_cases[] = {
    /* valid: both ends of every length, and around the gaps */
    {"A", 1, 0x41, "A"},
    {"\x7f", 1, 0x7f, "\x7f"},
    {"\xc2\x80", 2, 0x80, "\xc2\x80"},
    {"\xdf\xbf", 2, 0x7ff, "\xdf\xbf"},
    {"\xe0\xa0\x80", 3, 0x800, "\xe0\xa0\x80"},
    {"\xed\x9f\xbf", 3, 0xd7ff, "\xed\x9f\xbf"},
    {"\xee\x80\x80", 3, 0xe000, "\xee\x80\x80"},
    {"\xef\xbf\xbf", 3, 0xffff, "\xef\xbf\xbf"},
    {"\xf0\x90\x80\x80", 4, 0x10000, "\xf0\x90\x80\x80"},
    {"\xf4\x8f\xbf\xbf", 4, 0x10ffff, "\xf4\x8f\xbf\xbf"},
    /* overlong forms */
    {"\xc0\x80", 0, 0, FFFD FFFD},
    {"\xc1\xbf", 0, 0, FFFD FFFD},
    {"\xe0\x80\xaf", 0, 0, FFFD FFFD FFFD},
    {"\xe0\x9f\xbf", 0, 0, FFFD FFFD FFFD},
    {"\xf0\x80\x80\xaf", 0, 0, FFFD FFFD FFFD FFFD},
    {"\xf0\x8f\xbf\xbf", 0, 0, FFFD FFFD FFFD FFFD},
    /* surrogates */
    {"\xed\xa0\x80", 0, 0, FFFD FFFD FFFD},
    {"\xed\xbf\xbf", 0, 0, FFFD FFFD FFFD},
    /* above U+10FFFF, and lead bytes that never occur */
    {"\xf4\x90\x80\x80", 0, 0, FFFD FFFD FFFD FFFD},
    {"\xf5\x80\x80\x80", 0, 0, FFFD FFFD FFFD FFFD},
    {"\xf8\x88\x80\x80\x80", 0, 0, FFFD FFFD FFFD FFFD FFFD},
    {"\xff", 0, 0, FFFD},
    /* stray continuation bytes */
    {"\x80", 0, 0, FFFD},
    {"\xbf", 0, 0, FFFD},
    /* cut short by the end of the text */
    {"\xc3", 0, 0, FFFD},
    {"\xe2\x82", 0, 0, FFFD FFFD},
    {"\xf0\x9f\x98", 0, 0, FFFD FFFD FFFD},
    /* cut short by a byte that is not a continuation */
    {"\xc3\x41", 0, 0, FFFD "A"},
    {"\xe2\x28\xa1", 0, 0, FFFD "(" FFFD},
    {"\xf0\x9f\x98\x22", 0, 0, FFFD FFFD FFFD "\\\""},
};

/* A malloc'd copy of prefix + bytes + suffix with no byte after it, so
 * that the sanitizers see any read past the text. */
static char *framed(const char *prefix, const char *bytes, const char *suffix, size_t *n)
{
	size_t a = strlen(prefix), b = strlen(bytes), c = strlen(suffix);
	*n = a + b + c;
	char *p = malloc(*n ? *n : 1);
	memcpy(p, prefix, a);
	memcpy(p + a, bytes, b);
	memcpy(p + a + b, suffix, c);
	return p;
}

static void utf8_len_follows_rfc3629(void **state)
{
	(void)state;
	for (size_t i = 0; i < KEEL_ARRAY_LEN(utf8_cases); i++) {
		const struct utf8_case *t = &utf8_cases[i];
		size_t n;
		char *p = framed("", t->bytes, "", &n);
		const unsigned char *u = (const unsigned char *)p;
		print_message("case %zu\n", i);
		assert_int_equal(keel_utf8_len(u, u + n), t->len);
		if (t->len) {
			assert_int_equal(t->len, n);
			assert_int_equal(keel_utf8_decode(u, t->len), t->cp);
		}
		free(p);
	}
}

/* Every case alone, and inside ASCII runs long and short enough to take
 * both the word-at-a-time and the byte-at-a-time paths on either side. */
static void utf8_valid_agrees_with_the_table(void **state)
{
	(void)state;
	static const char *const pads[] = {"", "x", "0123456", "01234567",
					   "0123456789abcdefg"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(utf8_cases); i++) {
		const struct utf8_case *t = &utf8_cases[i];
		bool valid = t->len != 0;
		for (size_t a = 0; a < KEEL_ARRAY_LEN(pads); a++) {
			for (size_t b = 0; b < KEEL_ARRAY_LEN(pads); b++) {
				size_t n;
				char *p = framed(pads[a], t->bytes, pads[b], &n);
				print_message("case %zu, pads %zu %zu\n", i, a, b);
				assert_int_equal(keel_utf8_valid(p, n), valid);
				free(p);
			}
		}
	}
	assert_true(keel_utf8_valid("", 0));
	assert_true(keel_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
}

/* What the writer puts between the quotes, for s[0..n). */
static char *json_chars(const char *s, size_t n)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_add_json_str(&b, keel_str_make(s, n));
	assert_true(b.len >= 2);
	assert_int_equal(b.data[0], '"');
	assert_int_equal(b.data[b.len - 1], '"');
	char *out = malloc(b.len - 1);
	memcpy(out, b.data + 1, b.len - 2);
	out[b.len - 2] = 0;
	keel_buf_free(&b);
	return out;
}

/* Valid characters are copied, each bad byte becomes one U+FFFD. */
static void json_writer_replaces_each_bad_byte(void **state)
{
	(void)state;
	for (size_t i = 0; i < KEEL_ARRAY_LEN(utf8_cases); i++) {
		const struct utf8_case *t = &utf8_cases[i];
		size_t n;
		char *p = framed("a", t->bytes, "z", &n);
		char *got = json_chars(p, n);
		char want[64];
		snprintf(want, sizeof want, "a%sz", t->json);
		print_message("case %zu\n", i);
		assert_string_equal(got, want);
		free(got);
		free(p);
	}
}

/* The escapes: the canonical dump's (docs/dump.md), for every control
 * character, the quote and the backslash; NULL is JSON null. */
static void json_writer_escapes(void **state)
{
	(void)state;
	static const char *const want[32] = {
	    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005",
	    "\\u0006", "\\u0007", "\\b",     "\\t",     "\\n",     "\\u000b",
	    "\\f",     "\\r",     "\\u000e", "\\u000f", "\\u0010", "\\u0011",
	    "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
	    "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d",
	    "\\u001e", "\\u001f"};
	for (int c = 0; c < 32; c++) {
		char in[3] = {'<', (char)c, '>'};
		char *got = json_chars(in, 3);
		char expect[16];
		snprintf(expect, sizeof expect, "<%s>", want[c]);
		assert_string_equal(got, expect);
		free(got);
	}
	static const char quotes[] = "say \"hi\" \\ bye/";
	char *got = json_chars(quotes, strlen(quotes));
	assert_string_equal(got, "say \\\"hi\\\" \\\\ bye/");
	free(got);
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_add_json_str(&b, KEEL_STR_NULL);
	keel_buf_add_json_str(&b, keel_str_make("", 0));
	assert_string_equal(b.data, "null\"\"");
	keel_buf_free(&b);
}

/* The public face of the same writer (what the CLI's rejects file uses). */
static void json_write_string_to_a_file(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/out", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(keel_json_write_string(f, "t\tab\xff\xc3\xa9", 7), 0);
	assert_int_equal(fclose(f), 0);
	char *got = keel_test_read_file(path, NULL);
	assert_string_equal(got, "\"t\\tab" FFFD "\xc3\xa9\"");
	free(got);
	f = fopen("/dev/full", "w");
	if (f) {
		setvbuf(f, NULL, _IONBF, 0);
		assert_int_equal(keel_json_write_string(f, "x", 1), KEEL_EIO);
		fclose(f);
	}
	keel_test_rmdir(dir);
	free(dir);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(hash_values_are_pinned),
    cmocka_unit_test(bytes_eq_matches_memcmp),
    cmocka_unit_test(utf8_len_follows_rfc3629),
    cmocka_unit_test(utf8_valid_agrees_with_the_table),
    cmocka_unit_test(json_writer_replaces_each_bad_byte),
    cmocka_unit_test(json_writer_escapes),
    cmocka_unit_test(json_write_string_to_a_file),
};

KEEL_TEST_MAIN(tests)
