/*
 * sha256.c - SHA-256 (FIPS 180-4) and a constant-time comparison, used to
 * keep bearer tokens only as hashes, to name cartridges by their bytes and
 * to record forgotten subjects.
 *
 * Both come from nettle, the crypto library GnuTLS is built on: the
 * libmicrohttpd Keel serves with links GnuTLS, so nettle is in the process
 * already, and a well-reviewed implementation (with the processor's SHA
 * instructions where there are any) costs no new dependency.
 * tests/test_sha256.c checks the digests against the FIPS 180-4 example
 * vectors; tests/linked_crypto.sh that no SHA-256 of Keel's own comes back.
 */
#include "sha256.h"

#include <nettle/memops.h>

void keel_sha256_init(struct keel_sha256 *c)
{
	sha256_init(&c->ctx);
}

void keel_sha256_update(struct keel_sha256 *c, const void *p, size_t n)
{
	sha256_update(&c->ctx, n, p);
}

void keel_sha256_final(struct keel_sha256 *c, uint8_t out[KEEL_SHA256_LEN])
{
	sha256_digest(&c->ctx, KEEL_SHA256_LEN, out);
}

void keel_sha256(const void *p, size_t n, uint8_t out[KEEL_SHA256_LEN])
{
	struct keel_sha256 c;
	keel_sha256_init(&c);
	keel_sha256_update(&c, p, n);
	keel_sha256_final(&c, out);
}

bool keel_ct_equal(const void *a, const void *b, size_t n)
{
	/* nettle's memeql_sec reads every byte whatever it finds, so the time
	 * depends on n only. */
	return memeql_sec(a, b, n) != 0;
}
