/*
 * overlay.h - the in-memory state of the keys one batch touches.
 *
 * The flow for a batch: the ingester registers every key its operations
 * name (keel_overlay_resolve), the store's prefetch fills in what it holds
 * for those keys (keel_overlay_add_fetched_row / keel_overlay_found_entity),
 * the operations are applied in event order (keel_overlay_apply), and the
 * store writes back new_rows, dirty_rows and the changed entities.
 * Memory is bounded by the batch: only requested keys are ever held.
 */
#ifndef KEEL_OVERLAY_H
#define KEEL_OVERLAY_H

#include "batch.h"
#include "timeline.h"
#include "util.h"

enum {
	KEEL_ENTITY_FOUND = 1u << 0, /* exists in the store */
	KEEL_ENTITY_NEW = 1u << 1,   /* to insert */
	KEEL_ENTITY_DIRTY = 1u << 2, /* found and changed: to update */
};

struct keel_entity {
	struct keel_str tenant;
	struct keel_str subject;
	struct keel_str kind;	/* absent: none given yet */
	int64_t kind_time;	/* time of the mention that gave the kind */
	int64_t first_seen;
	int64_t last_seen;
	uint64_t hash;
	unsigned flags;
};

struct keel_overlay {
	struct keel_arena arena;
	struct keel_map timeline_map;
	struct keel_ptrvec timelines; /* in first-request order */
	struct keel_map entity_map;
	struct keel_ptrvec entities; /* in first-request order */
	struct keel_ptrvec new_rows;   /* creation order = insertion order */
	struct keel_ptrvec dirty_rows; /* fetched rows that were closed */
	uint64_t rows_closed;	       /* closures applied (report) */
	/* The whole state of a store (the memory store, keel_store_overlay):
	 * batches are applied in it in place, nothing is prefetched, so
	 * resolve records no event times. */
	bool keeps_state;
	struct keel_key_hashes *key_hashes; /* resolve's scratch */
	size_t key_hashes_cap;
};

void keel_overlay_init(struct keel_overlay *o);
void keel_overlay_free(struct keel_overlay *o);
void keel_overlay_reset(struct keel_overlay *o);

uint64_t keel_entity_hash(struct keel_str tenant, struct keel_str subject);

/* Find-or-create; keys are copied into the overlay's arena on creation. */
struct keel_timeline *keel_overlay_timeline(struct keel_overlay *o,
					    enum keel_row_kind kind,
					    struct keel_str tenant,
					    struct keel_str subject,
					    struct keel_str name,
					    struct keel_str object);
struct keel_entity *keel_overlay_entity(struct keel_overlay *o, struct keel_str tenant,
					struct keel_str subject);

/* Registers the keys of the operations of events ev[0..n) in order (and
 * each event's time on its timelines), resolving op->timeline and
 * op->*_entity. The lookups' cache misses are overlapped (see overlay.c). */
void keel_overlay_resolve(struct keel_overlay *o, struct keel_batch_event **ev, size_t n);

/* Prefetch fill. A row whose seq is already present is ignored. Strings are
 * copied. Returns the overlay's copy. */
struct keel_row *keel_overlay_add_fetched_row(struct keel_overlay *o,
					      struct keel_timeline *tl,
					      const struct keel_row *src);
void keel_overlay_found_entity(struct keel_overlay *o, struct keel_entity *e,
			       struct keel_str kind, int64_t kind_time,
			       int64_t first_seen, int64_t last_seen);

/* For a timeline after its open row was fetched (or found absent): the
 * batch times that the fetched rows do not cover, i.e. that need the row
 * containing them (or the first row after them) fetched. Writes up to
 * `max` times into out and returns how many; max = tl->ntimes always
 * suffices. Call it once, after the open rows are in. */
size_t keel_overlay_uncovered_times(const struct keel_timeline *tl, int64_t *out,
				    size_t max);

/* A hint before a batch's events are applied: asks for the rows their
 * placement will read, so that the cache misses overlap (see overlay.c). */
void keel_overlay_prefetch_rows(struct keel_batch_event **ev, size_t n);

/* Applies an accepted event's operations at its time (placement). */
void keel_overlay_apply(struct keel_overlay *o, const struct keel_batch_event *ev);

/* Upsert rule of docs/semantics.md for one mention of an entity at time t. */
void keel_entity_mention(struct keel_entity *e, int64_t t, struct keel_str kind,
			 struct keel_arena *a);

#endif
