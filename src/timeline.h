/*
 * timeline.h - rows of one timeline and placement (docs/semantics.md). Pure:
 * no I/O, no store; the overlay and the memory store both use it.
 *
 * A timeline's rows are kept sorted by valid_from, rows with equal
 * valid_from in insertion order (so an emptied row [t, t) precedes the row
 * that replaced it). A timeline in an overlay may hold only part of the
 * store's rows: placement at t is correct as long as the row containing t,
 * or when there is none the first non-empty row after t, is present.
 */
#ifndef KEEL_TIMELINE_H
#define KEEL_TIMELINE_H

#include "util.h"

enum keel_row_kind { KEEL_ROW_FACT, KEEL_ROW_RELATION };

enum {
	KEEL_ROW_NEW = 1u << 0,   /* created in this batch: to insert */
	KEEL_ROW_DIRTY = 1u << 1, /* fetched and then closed: to update */
};

struct keel_timeline;

struct keel_row {
	int64_t valid_from;
	int64_t valid_to; /* KEEL_TIME_INF while open */
	struct keel_str value; /* fact: compact JSON; ptr NULL = no value */
	struct keel_str asserted_by;
	struct keel_str closed_by; /* ptr NULL while open */
	int64_t seq;		   /* the store's row id; 0 until written */
	unsigned flags;
	bool linked; /* relation: true for link, false for unlink (beside flags:
		      * no padding of its own, 88 bytes a row, not 96) */
	struct keel_timeline *timeline; /* owner, for the key columns */
};

struct keel_timeline {
	enum keel_row_kind kind;
	struct keel_str tenant;
	struct keel_str subject;
	struct keel_str name;   /* predicate or relation */
	struct keel_str object; /* relations only */
	uint64_t hash;
	struct keel_row **rows; /* first_rows, then malloc'd once they outgrow it */
	size_t nrows;
	size_t cap;
	/* Most timelines keep one or two rows: their array is this, which
	 * spares a malloc per key (insert_row starts here when cap is 0). */
	struct keel_row *first_rows[2];
	/* Event times this batch asserts on the timeline (overlay use). */
	int64_t *times;
	size_t ntimes;
	size_t times_cap;
};

/* Hash of a timeline key; the same function everywhere. It is chained
 * (the tenant's hash, the subject's within it - an entity's key - then the
 * timeline's from its subject's) so that a caller resolving many keys of
 * one event hashes each part once. In memory only, never stored. */
uint64_t keel_timeline_hash(enum keel_row_kind kind, struct keel_str tenant,
			    struct keel_str subject, struct keel_str name,
			    struct keel_str object);
uint64_t keel_tenant_hash(struct keel_str tenant);
uint64_t keel_subject_hash(uint64_t tenant_hash, struct keel_str subject);
uint64_t keel_timeline_hash_from(enum keel_row_kind kind, uint64_t subject_hash,
				 struct keel_str name, struct keel_str object);
/* Inline: every operation of a batch looks its timeline up. */
static inline bool keel_timeline_key_eq(const struct keel_timeline *tl,
					enum keel_row_kind kind, struct keel_str tenant,
					struct keel_str subject, struct keel_str name,
					struct keel_str object)
{
	return tl->kind == kind && keel_str_eq(tl->subject, subject) &&
	       keel_str_eq(tl->name, name) && keel_str_eq(tl->tenant, tenant) &&
	       (kind == KEEL_ROW_FACT || keel_str_eq(tl->object, object));
}

/* The non-empty row containing t (valid_from <= t < valid_to), or NULL. */
struct keel_row *keel_timeline_containing(const struct keel_timeline *tl, int64_t t);
/* The first non-empty row starting after t, or NULL. */
struct keel_row *keel_timeline_next_after(const struct keel_timeline *tl, int64_t t);

/* Adds an existing row in sorted position (used when loading state). Rows
 * with equal valid_from must be added in their original insertion order. */
void keel_timeline_insert_row(struct keel_timeline *tl, struct keel_row *row);

/* Callbacks through which placement reports what it changed. */
struct keel_place_sink {
	/* a fetched row (not NEW) was modified for the first time */
	void (*dirtied)(void *ud, struct keel_row *row);
	/* a new row was created */
	void (*created)(void *ud, struct keel_row *row);
	void *ud;
};

/* Places an assertion (docs/semantics.md): `row` is a caller-allocated row holding
 * the asserted value, linked flag and asserted_by; placement sets its
 * interval and closed_by, inserts it and closes the row it splits.
 * Returns true when it closed (shortened) an existing row. */
bool keel_timeline_place(struct keel_timeline *tl, int64_t t, struct keel_row *row,
			 const struct keel_place_sink *sink);

void keel_timeline_free_rows(struct keel_timeline *tl);

/* qsort comparator over struct keel_row *: the canonical dump order of
 * docs/dump.md - kind, subject, predicate or relation, object, valid_from,
 * valid_to, asserted_by - then seq, so that rows equal in all of it keep
 * their insertion order. */
int keel_row_cmp_canonical(const void *pa, const void *pb);

#endif
