/*
 * derive.h - valid_to and closed_by, derived when rows are read
 * (docs/semantics.md, "History is never rewritten").
 *
 * A store writes each assertion once. A row ends where the next
 * assertion on its timeline begins, in (valid_from, arrival) order, and
 * is closed by that assertion's event; the last row of a timeline is
 * open. A deriver takes a timeline-contiguous stream of such rows (the
 * raw contract of keel_scan, src/store/store.h), fills both in, and hands the
 * rows on in canonical dump order: within one valid_from the emptied rows
 * [t, t) come first, by asserted_by (docs/dump.md), then the row that
 * won. With at_set it hands on only the rows valid at `at`.
 *
 * Memory is one row plus the emptied rows of one valid_from: bounded by
 * a run of equal times, never by the timeline.
 */
#ifndef KEEL_DERIVE_H
#define KEEL_DERIVE_H

#include "store.h"

struct keel_deriver {
	keel_scan_fn fn;
	void *ud;
	bool at_set;
	int64_t at;
	bool held;		  /* row holds the last row given */
	struct keel_record row;	  /* its strings in arena */
	struct keel_ptrvec empties; /* emptied rows of row's valid_from */
	struct keel_arena arena;
};

void keel_deriver_init(struct keel_deriver *d, const struct keel_scan *q, keel_scan_fn fn,
		       void *ud);
/* Takes the next raw row (a fact or relation record); returns what fn
 * returned, non-zero to stop. */
int keel_deriver_push(struct keel_deriver *d, const struct keel_record *r);
/* Hands on what is held (the last row, open); then frees. */
int keel_deriver_finish(struct keel_deriver *d);
void keel_deriver_free(struct keel_deriver *d);

#endif
