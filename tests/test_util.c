/*
 * test_util.c - the building blocks of util.h whose results outlive a run:
 * keel_hash64 is stored in the event log (docs/semantics.md), so its
 * values are pinned here, for every length that takes a different path
 * through it (whole 16-byte rounds, an 8-byte word, tails of 0-7 bytes).
 * The expected values were computed by the byte-at-a-time implementation
 * the hash had before its tail was read by words.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

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

const struct CMUnitTest tests[] = {
    cmocka_unit_test(hash_values_are_pinned),
    cmocka_unit_test(bytes_eq_matches_memcmp),
};

KEEL_TEST_MAIN(tests)
