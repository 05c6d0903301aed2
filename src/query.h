/*
 * query.h - what the reads share (query.c, query_changes.c, dump.c): the
 * caller's read options taken with their defaults, and the document of
 * history --changes. Not API.
 */
#ifndef KEEL_QUERY_H
#define KEEL_QUERY_H

#include "../include/keel.h"
#include "store.h"
#include "util.h"

/* Copies the caller's options (NULL: the defaults) into *o, with at set
 * to now unless given. 0, or KEEL_EINVAL with the store's message set
 * when the options struct is malformed (a bad size). */
int keel_read_options_take(struct keel_store *s, const struct keel_read_options *given,
			   struct keel_read_options *o);

/* Narrows a scan to what was recorded by the options' known_at, if set. */
void keel_scan_known_at(struct keel_scan *q, const struct keel_read_options *o);

/* Appends ,"facts":[...],"relations":[...] of the history --changes
 * document (docs/cli.md) for subject (and predicate, when not NULL):
 * every assertion of each of its timelines, in arrival order, with the
 * row it created and the row it shortened. */
int keel_query_changes(struct keel_store *s, const char *tenant, const char *subject,
		       const char *predicate, const struct keel_read_options *o,
		       struct keel_buf *b);

#endif
