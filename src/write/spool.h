/*
 * spool.h - a replay's rebuilt rows and mentions kept in arrival order
 * in a temporary file, batch by batch (docs/replay.md): the replay reads
 * the log once, decides what changed, then writes the changed groups
 * from here, a bounded part at a time. The log cannot be read again
 * instead: a MySQL or PostgreSQL connection streaming a scan cannot
 * write until the scan ends.
 */
#ifndef KEEL_SPOOL_H
#define KEEL_SPOOL_H

#include "append.h"

struct keel_spool {
	int fd;
	FILE *f;
	struct keel_buf blob; /* one batch, as written or read */
	char err[160];
};

/* 0, or -1 with err set. */
int keel_spool_open(struct keel_spool *sp);
void keel_spool_close(struct keel_spool *sp);
/* Appends a's rows and mentions (not its events, not their tenant). */
int keel_spool_put(struct keel_spool *sp, const struct keel_append *a);
/* Ends the writing; reading starts from the first batch. */
int keel_spool_rewind(struct keel_spool *sp);
/* Reads the next batch into rows and mentions appended to b (strings
 * copied into its arena), with tenant as their tenant: 1, 0 at the end,
 * -1 on an error. */
int keel_spool_get(struct keel_spool *sp, struct keel_append_builder *b,
		   struct keel_str tenant);

#endif
