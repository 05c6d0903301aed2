/*
 * append.h - what a batch writes, built from its accepted events
 * (docs/semantics.md): one assertion a fact, unset, link or unlink
 * operation, in arrival order, and one mention an entity per group of
 * events recorded together, folding that group's mentions of it
 * (first_seen, last_seen, the kind by the upsert rule).
 *
 * The ingestion path builds one per batch (strings stay views into the
 * batch's events); replay and load build a whole tenant and copy the
 * strings (copy_strings), since their events' memory is rewound.
 */
#ifndef KEEL_APPEND_H
#define KEEL_APPEND_H

#include "store/store.h"

struct keel_append_builder {
	bool copy_strings;
	struct keel_arena arena; /* copies, when copy_strings */
	struct keel_assertion *rows;
	size_t nrows, rows_cap;
	struct keel_mention *mentions;
	size_t nmentions, mentions_cap;
	/* The open group: mentions are folded within events sharing one
	 * recorded_at (a batch); group_start is its first mention. */
	struct keel_map group_map; /* entity hash -> mention index + 1 */
	size_t group_start;
	int64_t group_recorded_at;
	bool group_open;
};

void keel_append_builder_init(struct keel_append_builder *b, bool copy_strings);
void keel_append_builder_free(struct keel_append_builder *b);
void keel_append_builder_reset(struct keel_append_builder *b);

/* Adds an accepted event's operations (ev->recorded_at set). */
void keel_append_add_event(struct keel_append_builder *b, const struct keel_batch_event *ev);
/* Folds mentions x[0..n) (made by another builder, arriving after what
 * this one holds) into the open group: the transaction's mentions, built
 * batch by batch (src/write/ingest.c). */
void keel_append_fold_mentions(struct keel_append_builder *b, const struct keel_mention *x,
			       size_t n);
/* Adds one mention as it is (a load restores an entity with it). */
void keel_append_add_mention(struct keel_append_builder *b, const struct keel_mention *m);
/* Adds one assertion as it is (a load restores a row with it). */
void keel_append_add_row(struct keel_append_builder *b, const struct keel_assertion *r);

/* The append of what was built, with events ev[0..n) to log. */
struct keel_append keel_append_view(const struct keel_append_builder *b,
				    struct keel_batch_event **ev, size_t n);

/* Gives everything of a (its events, rows and mentions) one recorded_at:
 * a load's batch and a bulk load are recorded when they are written,
 * all of it at once. */
void keel_append_stamp(const struct keel_append *a, int64_t recorded_at);

/* The upsert rule of docs/semantics.md for one mention at time t:
 * first_seen and last_seen widen; the earliest mention that gives a
 * kind decides it, at equal times the later one. */
void keel_mention_fold(struct keel_mention *m, int64_t t, struct keel_str kind);

#endif
