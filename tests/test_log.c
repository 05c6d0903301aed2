/*
 * test_log.c - what of the log a producer that is not Keel must compute
 * the same way (docs/log.md): the partition of a tenant, pinned by the
 * test vectors the docs give (computed apart from this code, by the
 * definition: FNV-1a 32 of the UTF-8 bytes, modulo P), the Nats-Msg-Id of
 * an event, and the description a stream records its partition in.
 */
#include "support.h"

#include <string.h>

#include "keel.h"
#include "log/names.h"

struct vector {
	const char *tenant;
	uint32_t hash; /* keel_log_partition(tenant, 2^32 - 1) is hash mod 2^32-1 */
	uint32_t mod4, mod8, mod16;
};

static const struct vector vectors[] = {
    {"", 0x811c9dc5u, 1, 5, 5},
    {"a", 0xe40c292cu, 0, 4, 12},
    {"tenant-00", 0xfdc791d8u, 0, 0, 8},
    {"tenant-01", 0xfec7936bu, 3, 3, 11},
    {"tenant-02", 0xffc794feu, 2, 6, 14},
    {"acme", 0x45fd71afu, 3, 7, 15},
    {"Z\xc3\xbcrich", 0xd7007f20u, 0, 0, 0},
};

static void partition_matches_the_documented_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
		const struct vector *v = &vectors[i];
		size_t n = strlen(v->tenant);
		assert_int_equal(keel_log_partition(v->tenant, n, 4), v->mod4);
		assert_int_equal(keel_log_partition(v->tenant, n, 8), v->mod8);
		assert_int_equal(keel_log_partition(v->tenant, n, 16), v->mod16);
		assert_int_equal(keel_log_partition(v->tenant, n, UINT32_MAX),
				 v->hash % UINT32_MAX);
		assert_int_equal(keel_log_partition(v->tenant, n, 1), 0);
	}
}

static void msg_id_percent_encodes_each_part(void **state)
{
	(void)state;
	struct keel_buf b;
	keel_buf_init(&b);
	keel_log_msg_id(&b, keel_str_cstr("t-1"), keel_str_cstr("/fleet/a b"),
			keel_str_cstr("ev_1.~x%"));
	assert_string_equal(b.data, "t-1/%2Ffleet%2Fa%20b/ev_1.~x%25");
	keel_log_msg_id(&b, keel_str_cstr("Z\xc3\xbc"), keel_str_cstr(""),
			keel_str_cstr("7"));
	assert_string_equal(b.data, "Z%C3%BC//7");
	keel_buf_free(&b);
}

static void description_records_the_partition(void **state)
{
	(void)state;
	struct keel_buf b;
	keel_buf_init(&b);
	keel_log_description(&b, "ev", 3, 8);
	uint32_t p = 0, n = 0;
	assert_true(keel_log_description_parse(b.data, &p, &n));
	assert_int_equal(p, 3);
	assert_int_equal(n, 8);
	assert_false(keel_log_description_parse("keel log ev: partition 8 of 8", &p, &n));
	assert_false(keel_log_description_parse("orders stream", &p, &n));
	assert_false(keel_log_description_parse(NULL, &p, &n));
	keel_buf_free(&b);
	assert_true(keel_log_name_ok("ev_1-x"));
	assert_false(keel_log_name_ok("ev.1"));
	assert_false(keel_log_name_ok(""));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(partition_matches_the_documented_vectors),
    cmocka_unit_test(msg_id_percent_encodes_each_part),
    cmocka_unit_test(description_records_the_partition),
};

KEEL_TEST_MAIN(tests)
