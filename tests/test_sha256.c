/*
 * test_sha256.c - SHA-256 against the FIPS 180-4 example vectors (and
 * lengths around the padding boundary), the constant-time comparison, the
 * token file format and token generation (src/sha256.c, auth.c).
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "http/http.h"

static void hexdigest(const void *p, size_t n, char out[65])
{
	uint8_t d[KEEL_SHA256_LEN];
	keel_sha256(p, n, d);
	for (size_t i = 0; i < KEEL_SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check(const char *msg, size_t n, const char *want)
{
	char got[65];
	hexdigest(msg, n, got);
	assert_string_equal(got, want);
}

/* FIPS 180-4 / NIST CSRC examples: "abc" (one block), the 448-bit message
 * (padding spills into a second block), the empty message. */
static void sha256_fips_short(void **state)
{
	(void)state;
	check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	check(two, strlen(two),
	      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
			   "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	check(four, strlen(four),
	      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

/* One million "a", fed in uneven pieces through the streaming interface. */
static void sha256_fips_million_a(void **state)
{
	(void)state;
	char *a = malloc(1000000);
	memset(a, 'a', 1000000);
	struct keel_sha256 c;
	keel_sha256_init(&c);
	size_t off = 0, step = 1;
	while (off < 1000000) {
		size_t n = step < 1000000 - off ? step : 1000000 - off;
		keel_sha256_update(&c, a + off, n);
		off += n;
		step = step * 7 % 1000 + 1;
	}
	uint8_t d[KEEL_SHA256_LEN];
	keel_sha256_final(&c, d);
	char got[65];
	for (size_t i = 0; i < KEEL_SHA256_LEN; i++)
		snprintf(got + 2 * i, 3, "%02x", d[i]);
	assert_string_equal(got,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

/* Lengths where the length field just fits, just does not, and block
 * edges (digests from an independent implementation, coreutils sha256sum). */
static void sha256_padding_boundaries(void **state)
{
	(void)state;
	static const struct {
		size_t n;
		const char *hex;
	} cases[] = {
		{55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
		{56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
		{63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
		{64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
		{65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
		{119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
	};
	char x[128];
	memset(x, 'x', sizeof x);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check(x, cases[i].n, cases[i].hex);
}

/* Splitting the input at any point gives the one-shot digest. */
static void sha256_split_anywhere(void **state)
{
	(void)state;
	char msg[200];
	for (size_t i = 0; i < sizeof msg; i++)
		msg[i] = (char)(i * 31 + 7);
	uint8_t whole[KEEL_SHA256_LEN];
	keel_sha256(msg, sizeof msg, whole);
	for (size_t cut = 0; cut <= sizeof msg; cut++) {
		struct keel_sha256 c;
		uint8_t d[KEEL_SHA256_LEN];
		keel_sha256_init(&c);
		keel_sha256_update(&c, msg, cut);
		keel_sha256_update(&c, msg + cut, sizeof msg - cut);
		keel_sha256_final(&c, d);
		assert_memory_equal(d, whole, sizeof d);
	}
}

static void ct_equal_compares_every_byte(void **state)
{
	(void)state;
	uint8_t a[32], b[32];
	memset(a, 0x5a, sizeof a);
	memcpy(b, a, sizeof b);
	assert_true(keel_ct_equal(a, b, sizeof a));
	for (size_t i = 0; i < sizeof a; i++) {
		b[i] ^= 1;
		assert_false(keel_ct_equal(a, b, sizeof a));
		b[i] ^= 1;
	}
	assert_true(keel_ct_equal(a, b, 0));
}

static const char *H1 = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

static void token_file_parses_scopes(void **state)
{
	(void)state;
	struct keel_buf err;
	keel_buf_init(&err);
	struct keel_tokens t;
	char text[1024];
	/* H1 is sha256("abc"); the second is sha256(""). */
	snprintf(text, sizeof text,
		 "# tokens\n"
		 "\n"
		 "  %s  tenant-a,tenant_b.2 # the producer\n"
		 "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 *\r\n",
		 H1);
	assert_int_equal(keel_tokens_parse(text, strlen(text), &t, &err), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.v[0].line, 3);
	assert_false(t.v[0].all);
	assert_int_equal(t.v[0].ntenants, 2);
	assert_string_equal(t.v[0].tenants[1], "tenant_b.2");
	assert_true(t.v[1].all);

	const struct keel_token_entry *e = keel_tokens_find(&t, "abc", 3);
	assert_ptr_equal(e, &t.v[0]);
	assert_true(keel_token_allows(e, "tenant-a", 8));
	assert_true(keel_token_allows(e, "tenant_b.2", 10));
	assert_false(keel_token_allows(e, "tenant-", 7));
	assert_false(keel_token_allows(e, "tenant-ab", 9));
	assert_ptr_equal(keel_tokens_find(&t, "", 0), &t.v[1]);
	assert_true(keel_token_allows(&t.v[1], "anything", 8));
	assert_null(keel_tokens_find(&t, "abd", 3));
	assert_null(keel_tokens_find(&t, "ab", 2));
	assert_false(t.v[0].forget);
	assert_false(t.v[1].forget);
	keel_tokens_free(&t);

	/* The forget right, after the scope (a comment may follow). */
	snprintf(text, sizeof text,
		 "%s tenant-a forget # may forget\n"
		 "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 * forget\n",
		 H1);
	assert_int_equal(keel_tokens_parse(text, strlen(text), &t, &err), 0);
	assert_int_equal(t.n, 2);
	assert_true(t.v[0].forget);
	assert_int_equal(t.v[0].ntenants, 1);
	assert_string_equal(t.v[0].tenants[0], "tenant-a");
	assert_true(t.v[1].forget);
	assert_true(t.v[1].all);
	keel_tokens_free(&t);
	keel_buf_free(&err);
}

static void expect_error(const char *text, const char *want)
{
	struct keel_buf err;
	keel_buf_init(&err);
	struct keel_tokens t;
	assert_int_equal(keel_tokens_parse(text, strlen(text), &t, &err), KEEL_EINVAL);
	assert_int_equal(t.n, 0);
	assert_non_null(err.data);
	assert_string_equal(err.data, want);
	keel_buf_free(&err);
}

static void token_file_errors_name_the_line(void **state)
{
	(void)state;
	char text[512];
	expect_error("# nothing\n", "no tokens in the token file");
	expect_error("keel_abc tenant-a\n", "line 1: expected \"sha256:<64 hex digits>\"");
	expect_error("\nsha256:abcd tenant-a\n", "line 2: hash: not 64 hex digits");
	snprintf(text, sizeof text, "%s\n", H1);
	expect_error(text, "line 1: missing scope (\"*\" or tenant names)");
	snprintf(text, sizeof text, "%s a,,b\n", H1);
	expect_error(text, "line 1: tenant \"\": not 1-64 bytes of [A-Za-z0-9._-]");
	snprintf(text, sizeof text, "%s a/b\n", H1);
	expect_error(text, "line 1: tenant \"a/b\": not 1-64 bytes of [A-Za-z0-9._-]");
	snprintf(text, sizeof text, "%s a b\n", H1);
	expect_error(text, "line 1: unknown right \"b\" after the scope (the one right is "
			   "\"forget\")");
	snprintf(text, sizeof text, "%s a forget forget\n", H1);
	expect_error(text, "line 1: unexpected text after the right");
	snprintf(text, sizeof text, "%s a\n%s *\n", H1, H1);
	expect_error(text, "line 2: hash already given on line 1");
}

static void token_new_is_random_and_hashes(void **state)
{
	(void)state;
	char t1[KEEL_TOKEN_BUFSZ], h1[KEEL_TOKEN_BUFSZ];
	char t2[KEEL_TOKEN_BUFSZ], h2[KEEL_TOKEN_BUFSZ];
	assert_int_equal(keel_token_new(t1, h1), 0);
	assert_int_equal(keel_token_new(t2, h2), 0);
	assert_int_equal(strlen(t1), 5 + 64);
	assert_memory_equal(t1, "keel_", 5);
	assert_int_equal(strspn(t1 + 5, "0123456789abcdef"), 64);
	assert_string_not_equal(t1, t2);
	assert_string_not_equal(h1, h2);
	/* The printed hash line is what the token file accepts for it. */
	char line[256];
	snprintf(line, sizeof line, "%s tenant-a\n", h1);
	struct keel_buf err;
	keel_buf_init(&err);
	struct keel_tokens t;
	assert_int_equal(keel_tokens_parse(line, strlen(line), &t, &err), 0);
	assert_non_null(keel_tokens_find(&t, t1, strlen(t1)));
	assert_null(keel_tokens_find(&t, t2, strlen(t2)));
	keel_tokens_free(&t);
	keel_buf_free(&err);
	char h3[KEEL_TOKEN_BUFSZ];
	assert_int_equal(keel_token_hash("abc", 3, h3), 0);
	assert_string_equal(h3, H1);
}

const struct CMUnitTest tests[] = {
	cmocka_unit_test(sha256_fips_short),
	cmocka_unit_test(sha256_fips_million_a),
	cmocka_unit_test(sha256_padding_boundaries),
	cmocka_unit_test(sha256_split_anywhere),
	cmocka_unit_test(ct_equal_compares_every_byte),
	cmocka_unit_test(token_file_parses_scopes),
	cmocka_unit_test(token_file_errors_name_the_line),
	cmocka_unit_test(token_new_is_random_and_hashes),
};

KEEL_TEST_MAIN(tests)
