/*
 * open_rows.c - see open_rows.h.
 *
 * What is cached for a timeline is what the store's open-row read would
 * return: its last row by (valid_from, seq), open or (after an unset)
 * closed. After a batch the overlay holds that row for every timeline the
 * batch touched: the read fetched the last row before the batch, and every
 * row the batch added has a later seq, so the greatest (valid_from, seq)
 * among the overlay's rows is the stored timeline's last row.
 */
#include "open_rows.h"

#include <stdlib.h>
#include <string.h>

#include "../../include/keel.h"

/* Unused entries are swept out every this many batches (or at once when
 * the cache holds more than its max): a sweep walks every entry and builds
 * the map anew, which every batch was too often for a cache of 65 536. */
#define KEEL_OPEN_ROWS_SWEEP 8

struct keel_open_entry {
	enum keel_row_kind kind;
	uint64_t hash;
	struct keel_str tenant, subject, name, object; /* in keys */
	char *keys;
	bool known;	     /* row is the timeline's last row */
	struct keel_row row; /* its strings in vals */
	char *vals;
	size_t vals_cap; /* bytes vals holds: reused while the row's fit */
	uint64_t used;	 /* batch number */
};

void keel_open_rows_init(struct keel_open_rows *c, size_t max, uint64_t age,
			 bool open_only)
{
	memset(c, 0, sizeof *c);
	keel_map_init(&c->map);
	c->max = max;
	c->age = age;
	c->open_only = open_only;
}

static void keel_open_entry_free(struct keel_open_entry *e)
{
	free(e->keys);
	free(e->vals);
	free(e);
}

void keel_open_rows_clear(struct keel_open_rows *c)
{
	for (size_t i = 0; i < c->entries.len; i++)
		keel_open_entry_free(c->entries.items[i]);
	c->entries.len = 0;
	keel_map_clear(&c->map);
}

void keel_open_rows_free(struct keel_open_rows *c)
{
	keel_open_rows_clear(c);
	keel_ptrvec_free(&c->entries);
	keel_map_free(&c->map);
}

/* The bytes keel_open_rows_pack needs for strings in. */
static size_t keel_open_rows_size(const struct keel_str *in, size_t n)
{
	size_t size = 1;
	for (size_t i = 0; i < n; i++)
		size += in[i].len + 1;
	return size;
}

/* Copies strings into block, which holds keel_open_rows_size of them: each
 * view in `in` becomes a view of the block in `out` (absent stays absent). */
static void keel_open_rows_pack(const struct keel_str *in, struct keel_str *out, size_t n,
				char *block)
{
	char *p = block;
	for (size_t i = 0; i < n; i++) {
		if (!in[i].ptr) {
			out[i] = KEEL_STR_NULL;
			continue;
		}
		memcpy(p, in[i].ptr, in[i].len);
		p[in[i].len] = 0;
		out[i] = keel_str_make(p, in[i].len);
		p += in[i].len + 1;
	}
}

static struct keel_open_entry *keel_open_rows_find(const struct keel_open_rows *c,
						   const struct keel_timeline *tl)
{
	for (size_t i = keel_map_first(&c->map, tl->hash); i != SIZE_MAX;
	     i = keel_map_next(&c->map, tl->hash, i)) {
		struct keel_open_entry *e = c->map.values[i];
		if (e->kind == tl->kind && keel_str_eq(e->subject, tl->subject) &&
		    keel_str_eq(e->name, tl->name) && keel_str_eq(e->tenant, tl->tenant) &&
		    (tl->kind == KEEL_ROW_FACT || keel_str_eq(e->object, tl->object)))
			return e;
	}
	return NULL;
}

const struct keel_row *keel_open_rows_get(struct keel_open_rows *c,
					  const struct keel_timeline *tl)
{
	struct keel_open_entry *e = keel_open_rows_find(c, tl);
	if (!e || !e->known) {
		c->misses++;
		return NULL;
	}
	e->used = c->batch;
	c->hits++;
	return &e->row;
}

/* The row the store's open-row read would return now, or NULL if the
 * overlay cannot tell (no rows, or a row without its seq yet). */
static const struct keel_row *keel_open_rows_last(const struct keel_timeline *tl)
{
	const struct keel_row *last = NULL;
	for (size_t i = 0; i < tl->nrows; i++) {
		const struct keel_row *r = tl->rows[i];
		if (r->seq <= 0)
			return NULL;
		if (!last || r->valid_from > last->valid_from ||
		    (r->valid_from == last->valid_from && r->seq > last->seq))
			last = r;
	}
	return last;
}

static void keel_open_rows_set(struct keel_open_rows *c, const struct keel_timeline *tl,
			       const struct keel_row *r)
{
	struct keel_open_entry *e = keel_open_rows_find(c, tl);
	if (!e) {
		if (!r)
			return;
		e = keel_xcalloc(1, sizeof *e);
		e->kind = tl->kind;
		e->hash = tl->hash;
		const struct keel_str keys[] = {tl->tenant, tl->subject, tl->name,
						tl->kind == KEEL_ROW_RELATION ? tl->object
									      : KEEL_STR_NULL};
		struct keel_str views[4];
		e->keys = keel_xmalloc(keel_open_rows_size(keys, 4));
		keel_open_rows_pack(keys, views, 4, e->keys);
		e->tenant = views[0];
		e->subject = views[1];
		e->name = views[2];
		e->object = views[3];
		keel_map_put(&c->map, e->hash, e);
		keel_ptrvec_push(&c->entries, e);
	}
	e->used = c->batch;
	e->known = r != NULL;
	if (!r)
		return;
	e->row = *r;
	const struct keel_str vals[] = {r->value, r->asserted_by, r->closed_by};
	struct keel_str views[3];
	size_t size = keel_open_rows_size(vals, 3);
	if (size > e->vals_cap) {
		free(e->vals);
		e->vals_cap = size < 64 ? 64 : size;
		e->vals = keel_xmalloc(e->vals_cap);
	}
	keel_open_rows_pack(vals, views, 3, e->vals);
	e->row.value = views[0];
	e->row.asserted_by = views[1];
	e->row.closed_by = views[2];
	e->row.flags = 0;
	e->row.timeline = NULL;
}

/* Drops the entries not used in the last `age` batches, and if that is not
 * enough, everything (a batch that touched more than max timelines). Run
 * every KEEL_OPEN_ROWS_SWEEP batches, so an unused entry may stay that
 * many batches longer than `age`. */
static void keel_open_rows_evict(struct keel_open_rows *c)
{
	size_t kept = 0;
	for (size_t i = 0; i < c->entries.len; i++) {
		struct keel_open_entry *e = c->entries.items[i];
		if (e->used + c->age > c->batch)
			c->entries.items[kept++] = e;
		else
			keel_open_entry_free(e);
	}
	if (kept > c->max) {
		for (size_t i = 0; i < kept; i++)
			keel_open_entry_free(c->entries.items[i]);
		kept = 0;
	}
	if (kept == c->entries.len)
		return;
	c->entries.len = kept;
	keel_map_clear(&c->map);
	for (size_t i = 0; i < kept; i++) {
		struct keel_open_entry *e = c->entries.items[i];
		keel_map_put(&c->map, e->hash, e);
	}
}

void keel_open_rows_learn(struct keel_open_rows *c, const struct keel_ptrvec *timelines)
{
	for (size_t i = 0; i < timelines->len; i++) {
		const struct keel_timeline *tl = timelines->items[i];
		const struct keel_row *last = keel_open_rows_last(tl);
		if (c->open_only && last && last->valid_to != KEEL_TIME_INF)
			last = NULL;
		keel_open_rows_set(c, tl, last);
	}
	c->batch++;
	if (c->batch % KEEL_OPEN_ROWS_SWEEP == 0 || c->entries.len > c->max)
		keel_open_rows_evict(c);
}
