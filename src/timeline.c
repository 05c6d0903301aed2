/*
 * timeline.c - placement of assertions on one timeline (docs/semantics.md).
 *
 * Rows live in an array sorted by valid_from; rows with equal valid_from
 * keep insertion order, so the row emptied by an equal-time assertion stays
 * in front of the row that replaced it. All lookups are binary searches
 * followed by a short walk over empty rows, so an in-order event costs
 * O(log n) and touches only the open row.
 */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "../include/keel.h"

uint64_t keel_tenant_hash(struct keel_str tenant)
{
	return keel_hash64(tenant.ptr, tenant.len, 0x9e3779b97f4a7c15ull);
}

uint64_t keel_subject_hash(uint64_t tenant_hash, struct keel_str subject)
{
	return keel_hash64(subject.ptr, subject.len, tenant_hash);
}

uint64_t keel_timeline_hash_from(enum keel_row_kind kind, uint64_t subject_hash,
				 struct keel_str name, struct keel_str object)
{
	uint64_t h = keel_hash64(name.ptr, name.len, subject_hash + (uint64_t)kind + 1);
	if (kind == KEEL_ROW_RELATION)
		h = keel_hash64(object.ptr, object.len, h);
	return h;
}

uint64_t keel_timeline_hash(enum keel_row_kind kind, struct keel_str tenant,
			    struct keel_str subject, struct keel_str name,
			    struct keel_str object)
{
	return keel_timeline_hash_from(
	    kind, keel_subject_hash(keel_tenant_hash(tenant), subject), name, object);
}

/* Index of the first row with valid_from > t. */
static size_t keel_timeline_upper(const struct keel_timeline *tl, int64_t t)
{
	/* In-order events land after the last row: no search, and none of
	 * its cache misses on the long timelines of the memory store. */
	if (tl->nrows && tl->rows[tl->nrows - 1]->valid_from <= t)
		return tl->nrows;
	size_t lo = 0, hi = tl->nrows;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tl->rows[mid]->valid_from <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool keel_row_empty(const struct keel_row *r)
{
	return r->valid_from == r->valid_to;
}

/* keel_timeline_containing with i = keel_timeline_upper(tl, t). */
static struct keel_row *keel_timeline_containing_at(const struct keel_timeline *tl,
						    size_t i, int64_t t)
{
	while (i > 0) {
		struct keel_row *r = tl->rows[--i];
		if (keel_row_empty(r))
			continue;
		return r->valid_to > t ? r : NULL;
	}
	return NULL;
}

struct keel_row *keel_timeline_containing(const struct keel_timeline *tl, int64_t t)
{
	return keel_timeline_containing_at(tl, keel_timeline_upper(tl, t), t);
}

/* keel_timeline_next_after with i = keel_timeline_upper(tl, t). */
static struct keel_row *keel_timeline_next_at(const struct keel_timeline *tl, size_t i)
{
	for (; i < tl->nrows; i++)
		if (!keel_row_empty(tl->rows[i]))
			return tl->rows[i];
	return NULL;
}

struct keel_row *keel_timeline_next_after(const struct keel_timeline *tl, int64_t t)
{
	return keel_timeline_next_at(tl, keel_timeline_upper(tl, t));
}

/* Inserts row at index i, keel_timeline_upper(tl, row->valid_from). */
static void keel_timeline_insert_at(struct keel_timeline *tl, struct keel_row *row,
				    size_t i)
{
	if (tl->nrows == tl->cap) {
		if (!tl->cap) {
			tl->rows = tl->first_rows;
			tl->cap = KEEL_ARRAY_LEN(tl->first_rows);
		} else if (tl->rows == tl->first_rows) {
			tl->rows = keel_xmalloc(4 * tl->cap * sizeof *tl->rows);
			memcpy(tl->rows, tl->first_rows, sizeof tl->first_rows);
			tl->cap *= 4;
		} else {
			tl->cap *= 2;
			tl->rows = keel_xrealloc(tl->rows, tl->cap * sizeof *tl->rows);
		}
	}
	if (i < tl->nrows) /* late: rows after it move up (in order: none) */
		memmove(tl->rows + i + 1, tl->rows + i,
			(tl->nrows - i) * sizeof *tl->rows);
	tl->rows[i] = row;
	tl->nrows++;
	row->timeline = tl;
}

void keel_timeline_insert_row(struct keel_timeline *tl, struct keel_row *row)
{
	keel_timeline_insert_at(tl, row, keel_timeline_upper(tl, row->valid_from));
}

bool keel_timeline_place(struct keel_timeline *tl, int64_t t, struct keel_row *row,
			 const struct keel_place_sink *sink)
{
	/* One search serves the lookups and the insertion: placing changes no
	 * row's valid_from, so the row goes where t would. */
	size_t i = keel_timeline_upper(tl, t);
	struct keel_row *c = keel_timeline_containing_at(tl, i, t);
	row->valid_from = t;
	row->flags |= KEEL_ROW_NEW;
	if (c) {
		/* Step 2: split C = [a, b) at t; at a == t C becomes [t, t). */
		row->valid_to = c->valid_to;
		row->closed_by = c->closed_by;
		if (!(c->flags & (KEEL_ROW_NEW | KEEL_ROW_DIRTY))) {
			c->flags |= KEEL_ROW_DIRTY;
			if (sink && sink->dirtied)
				sink->dirtied(sink->ud, c);
		}
		c->valid_to = t;
		c->closed_by = row->asserted_by;
	} else {
		/* Step 3: before the first row, or the timeline is new. */
		struct keel_row *next = keel_timeline_next_at(tl, i);
		row->valid_to = next ? next->valid_from : KEEL_TIME_INF;
		row->closed_by = next ? next->asserted_by : KEEL_STR_NULL;
	}
	keel_timeline_insert_at(tl, row, i);
	if (sink && sink->created)
		sink->created(sink->ud, row);
	return c != NULL;
}

static int keel_cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

int keel_row_cmp_canonical(const void *pa, const void *pb)
{
	const struct keel_row *a = *(const struct keel_row *const *)pa;
	const struct keel_row *b = *(const struct keel_row *const *)pb;
	const struct keel_timeline *ta = a->timeline, *tb = b->timeline;
	int c;
	if (ta != tb) {
		if ((c = (int)ta->kind - (int)tb->kind) ||
		    (c = keel_str_cmp(ta->subject, tb->subject)) ||
		    (c = keel_str_cmp(ta->name, tb->name)) ||
		    (c = keel_str_cmp(ta->object, tb->object)))
			return c;
	}
	if ((c = keel_cmp_i64(a->valid_from, b->valid_from)) ||
	    (c = keel_cmp_i64(a->valid_to, b->valid_to)) ||
	    (c = keel_str_cmp(a->asserted_by, b->asserted_by)))
		return c;
	return keel_cmp_i64(a->seq, b->seq);
}

void keel_timeline_free_rows(struct keel_timeline *tl)
{
	if (tl->rows != tl->first_rows)
		free(tl->rows);
	free(tl->times);
	tl->rows = NULL;
	tl->times = NULL;
	tl->nrows = tl->cap = 0;
	tl->ntimes = tl->times_cap = 0;
}
