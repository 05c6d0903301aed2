/*
 * sha256.h - SHA-256 (FIPS 180-4) and a constant-time comparison: the
 * hashes of bearer tokens (src/http/auth.c), a cartridge's recorded hash
 * and a forgotten subject's tombstone. At the root of src/ because every
 * wing may use it. Both are nettle's (sha256.c).
 */
#ifndef KEEL_SHA256_H
#define KEEL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

#define KEEL_SHA256_LEN 32

/* FIPS 180-4 SHA-256, streaming: nettle's (sha256.c says why). */
struct keel_sha256 {
	struct sha256_ctx ctx;
};

void keel_sha256_init(struct keel_sha256 *c);
void keel_sha256_update(struct keel_sha256 *c, const void *p, size_t n);
void keel_sha256_final(struct keel_sha256 *c, uint8_t out[KEEL_SHA256_LEN]);
/* One-shot digest of p[0..n). */
void keel_sha256(const void *p, size_t n, uint8_t out[KEEL_SHA256_LEN]);

/* Equality of two n-byte strings in time that depends on n only. */
bool keel_ct_equal(const void *a, const void *b, size_t n);

#endif
