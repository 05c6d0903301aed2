/*
 * hand_batch.h - batches made by hand, without JSON or a cartridge, to
 * drive a store's operations one by one in the SQL stores' tests: events
 * of tenant "t" that each assert one fact, relation rows and entity
 * mentions; and a store's raw scans as text, one line a record.
 */
#ifndef KEEL_TEST_HAND_BATCH_H
#define KEEL_TEST_HAND_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "util.h"

struct hbatch {
	struct keel_arena arena;
	struct keel_ptrvec events;
	struct keel_assertion rows[64];
	size_t nrows;
	struct keel_mention mentions[16];
	size_t nmentions;
	int64_t recorded_at;
};

void hb_init(struct hbatch *b, int64_t recorded_at);
void hb_free(struct hbatch *b);
/* s copied into the batch's arena */
struct keel_str hb_str(struct hbatch *b, const char *s);
/* An event `id` of tenant "t" asserting subject's predicate = value (JSON;
 * NULL: unset) at time t. */
void hb_fact(struct hbatch *b, const char *id, int64_t t, const char *subject,
	     const char *predicate, const char *value);
/* A relation row of event id: subject -relation-> object, linked or not. */
void hb_link(struct hbatch *b, const char *id, int64_t t, const char *subject,
	     const char *relation, const char *object, bool linked);
void hb_mention(struct hbatch *b, const char *subject, const char *kind,
		int64_t kind_time, int64_t first, int64_t last);
/* The batch appended (keel_store_append); its status. */
int hb_append(struct keel_store *s, struct hbatch *b);
/* One batch, committed alone; fails the test on an error. */
void hb_run(struct keel_store *s, struct hbatch *b);

/* A raw scan (the store's op itself, no derivation) as text, a line a
 * record: "subject name object value from asserted_by recorded_at"
 * (malloc'd). */
char *raw_scan(struct keel_store *s, const struct keel_scan *q);
/* An entity scan as text: "subject kind first_seen last_seen recorded_at". */
char *entity_scan(struct keel_store *s, const struct keel_scan *q);

#endif
