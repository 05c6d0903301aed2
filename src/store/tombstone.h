/*
 * tombstone.h - forgotten subjects: the name a tombstone keeps and the
 * answer reads give (tombstone.c; docs/semantics.md, "Forgetting").
 */
#ifndef KEEL_STORE_TOMBSTONE_H
#define KEEL_STORE_TOMBSTONE_H

#include "store.h"
#include "util.h"

/* The subject's SHA-256 in lowercase hex, the one name a tombstone keeps. */
void keel_subject_sha256(struct keel_str subject, char out[KEEL_SUBJECT_HASH_LEN + 1]);

/* For a read that found no entity: KEEL_EFORGOTTEN with the message
 * saying when and by whom, when the subject was forgotten; otherwise
 * KEEL_ENOTFOUND with the message not_found (a store error as such). */
int keel_forgotten_or(struct keel_store *s, const char *tenant, const char *subject,
		      const char *not_found);

#endif
