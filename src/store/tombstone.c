/*
 * tombstone.c - what a forgotten subject leaves (docs/semantics.md,
 * "Forgetting"): the one name its tombstone keeps, and the answer a read
 * gives when it asks for the subject afterwards. keel forget
 * (src/write/forget.c) writes tombstones; reads ask them here.
 */
#include "tombstone.h"

#include "keel.h"
#include "sha256.h"

void keel_subject_sha256(struct keel_str subject, char out[KEEL_SUBJECT_HASH_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t h[KEEL_SHA256_LEN];
	keel_sha256(subject.ptr, subject.len, h);
	for (size_t i = 0; i < KEEL_SHA256_LEN; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[KEEL_SUBJECT_HASH_LEN] = 0;
}

int keel_forgotten_or(struct keel_store *s, const char *tenant, const char *subject,
		      const char *not_found)
{
	char hash[KEEL_SUBJECT_HASH_LEN + 1];
	keel_subject_sha256(keel_str_cstr(subject), hash);
	struct keel_tombstone t;
	struct keel_buf by;
	keel_buf_init(&by);
	int rc = keel_store_tombstone(s, keel_str_cstr(tenant), hash, &t, &by);
	if (rc == 0) {
		char tb[KEEL_TIME_BUFSZ];
		keel_time_format(t.forgotten_at, tb);
		rc = keel_store_fail(
		    s, KEEL_EFORGOTTEN,
		    "entity \"%s\" in tenant \"%s\" was forgotten at %s by "
		    "%.*s",
		    subject, tenant, tb, (int)t.forgotten_by.len, t.forgotten_by.ptr);
	} else if (rc == KEEL_ENOTFOUND) {
		rc = keel_store_fail(s, KEEL_ENOTFOUND, "%s", not_found);
	}
	keel_buf_free(&by);
	return rc;
}
