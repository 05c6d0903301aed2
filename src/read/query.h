/*
 * query.h - the document of history --changes (changes.c), which
 * keel history (query.c) writes. Not API.
 */
#ifndef KEEL_QUERY_H
#define KEEL_QUERY_H

#include "keel.h"
#include "store/store.h"
#include "util.h"

/* Appends ,"facts":[...],"relations":[...] of the history --changes
 * document (docs/cli.md) for subject (and predicate, when not NULL):
 * every assertion of each of its timelines, in arrival order, with the
 * row it created and the row it shortened. */
int keel_query_changes(struct keel_store *s, const char *tenant, const char *subject,
		       const char *predicate, const struct keel_read_options *o,
		       struct keel_buf *b);

#endif
