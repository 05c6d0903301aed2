/*
 * overlay.c - the state of the keys one batch touches (see overlay.h).
 *
 * Timelines and entities are found through keel_maps keyed by the hash of
 * their key; keys, rows and copied strings live in the overlay's arena, the
 * per-timeline row arrays in malloc'd memory released at reset. Placement
 * reports new and dirtied rows through a sink into new_rows / dirty_rows,
 * which is exactly what a store writes back.
 */
#include "overlay.h"

#include <stdlib.h>
#include <string.h>

#include "../include/keel.h"

void keel_overlay_init(struct keel_overlay *o)
{
	memset(o, 0, sizeof *o);
	keel_arena_init(&o->arena);
	keel_map_init(&o->timeline_map);
	keel_map_init(&o->entity_map);
}

static void keel_overlay_free_timelines(struct keel_overlay *o)
{
	for (size_t i = 0; i < o->timelines.len; i++)
		keel_timeline_free_rows(o->timelines.items[i]);
}

void keel_overlay_free(struct keel_overlay *o)
{
	keel_overlay_free_timelines(o);
	keel_arena_free(&o->arena);
	keel_map_free(&o->timeline_map);
	keel_map_free(&o->entity_map);
	keel_ptrvec_free(&o->timelines);
	keel_ptrvec_free(&o->entities);
	keel_ptrvec_free(&o->new_rows);
	keel_ptrvec_free(&o->dirty_rows);
	free(o->key_hashes);
}

void keel_overlay_reset(struct keel_overlay *o)
{
	keel_overlay_free_timelines(o);
	keel_arena_reset(&o->arena);
	keel_map_clear(&o->timeline_map);
	keel_map_clear(&o->entity_map);
	o->timelines.len = 0;
	o->entities.len = 0;
	o->new_rows.len = 0;
	o->dirty_rows.len = 0;
	o->rows_closed = 0;
}

uint64_t keel_entity_hash(struct keel_str tenant, struct keel_str subject)
{
	return keel_subject_hash(keel_tenant_hash(tenant), subject);
}

/* keel_overlay_timeline with the key's hash already computed. */
static struct keel_timeline *
keel_overlay_timeline_h(struct keel_overlay *o, enum keel_row_kind kind,
			struct keel_str tenant, struct keel_str subject,
			struct keel_str name, struct keel_str object, uint64_t h)
{
	struct keel_map *m = &o->timeline_map;
	for (size_t i = keel_map_first(m, h); i != SIZE_MAX; i = keel_map_next(m, h, i)) {
		struct keel_timeline *tl = m->values[i];
		if (keel_timeline_key_eq(tl, kind, tenant, subject, name, object))
			return tl;
	}
	struct keel_timeline *tl = keel_arena_alloc(&o->arena, sizeof *tl);
	memset(tl, 0, sizeof *tl);
	tl->kind = kind;
	tl->tenant = keel_arena_str(&o->arena, tenant);
	tl->subject = keel_arena_str(&o->arena, subject);
	tl->name = keel_arena_str(&o->arena, name);
	tl->object = kind == KEEL_ROW_RELATION ? keel_arena_str(&o->arena, object)
					       : KEEL_STR_NULL;
	tl->hash = h;
	keel_map_put(m, h, tl);
	keel_ptrvec_push(&o->timelines, tl);
	return tl;
}

struct keel_timeline *keel_overlay_timeline(struct keel_overlay *o,
					    enum keel_row_kind kind,
					    struct keel_str tenant,
					    struct keel_str subject, struct keel_str name,
					    struct keel_str object)
{
	return keel_overlay_timeline_h(
	    o, kind, tenant, subject, name, object,
	    keel_timeline_hash(kind, tenant, subject, name, object));
}

/* keel_overlay_entity with the key's hash (keel_entity_hash) computed. */
static struct keel_entity *keel_overlay_entity_h(struct keel_overlay *o,
						 struct keel_str tenant,
						 struct keel_str subject, uint64_t h)
{
	struct keel_map *m = &o->entity_map;
	for (size_t i = keel_map_first(m, h); i != SIZE_MAX; i = keel_map_next(m, h, i)) {
		struct keel_entity *e = m->values[i];
		if (keel_str_eq(e->subject, subject) && keel_str_eq(e->tenant, tenant))
			return e;
	}
	struct keel_entity *e = keel_arena_alloc(&o->arena, sizeof *e);
	memset(e, 0, sizeof *e);
	e->tenant = keel_arena_str(&o->arena, tenant);
	e->subject = keel_arena_str(&o->arena, subject);
	e->hash = h;
	keel_map_put(m, h, e);
	keel_ptrvec_push(&o->entities, e);
	return e;
}

struct keel_entity *keel_overlay_entity(struct keel_overlay *o, struct keel_str tenant,
					struct keel_str subject)
{
	return keel_overlay_entity_h(o, tenant, subject,
				     keel_entity_hash(tenant, subject));
}

static void keel_timeline_add_time(struct keel_timeline *tl, int64_t t)
{
	/* Events mostly arrive in time order: skip the common repeat. */
	if (tl->ntimes && tl->times[tl->ntimes - 1] == t)
		return;
	if (tl->ntimes == tl->times_cap) {
		tl->times_cap = tl->times_cap ? tl->times_cap * 2 : 4;
		tl->times = keel_xrealloc(tl->times, tl->times_cap * sizeof *tl->times);
	}
	tl->times[tl->ntimes++] = t;
}

static bool keel_str_same(struct keel_str a, struct keel_str b)
{
	return a.len == b.len && (a.ptr == b.ptr || keel_str_eq(a, b));
}

/* What a lookup compares: an entry and the key strings copied right after
 * it (keel_overlay_timeline_h, keel_overlay_entity_h), for the usual short
 * keys. Prefetching only the entry's first line left the strings to miss. */
#define KEEL_TIMELINE_KEY_BYTES (sizeof(struct keel_timeline) + 64)
#define KEEL_ENTITY_KEY_BYTES (sizeof(struct keel_entity) + 40)

/* The hashes of one operation's keys (0 where it has none). */
struct keel_key_hashes {
	uint64_t subject, object, timeline;
};

/* Room for n key hashes; never NULL (a batch without operations still
 * walks it, and pointer arithmetic on NULL is undefined even by 0). */
static struct keel_key_hashes *keel_overlay_hash_space(struct keel_overlay *o, size_t n)
{
	if (n == 0)
		n = 1;
	if (n > o->key_hashes_cap) {
		o->key_hashes_cap = n > 2 * o->key_hashes_cap ? n : 2 * o->key_hashes_cap;
		free(o->key_hashes);
		o->key_hashes = keel_xmalloc(o->key_hashes_cap * sizeof *o->key_hashes);
	}
	return o->key_hashes;
}

/* Hashes the keys of an event's operations into hs, th being the hash of
 * its tenant. The hashes are chained (timeline.h): the tenant is hashed
 * once for a run of events of one tenant (keel_overlay_resolve), and a
 * subject once for a run of operations on it (a handler's operations
 * mostly share theirs). */
static void keel_overlay_hash_keys(const struct keel_batch_event *ev, uint64_t th,
				   struct keel_key_hashes *hs)
{
	uint64_t sh = 0;
	for (size_t i = 0; i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		if (!i || !keel_str_same(ev->ops[i - 1].subject, op->subject))
			sh = keel_subject_hash(th, op->subject);
		hs[i].subject = sh;
		hs[i].object = hs[i].timeline = 0;
		switch (op->kind) {
		case KEEL_OP_ENTITY:
			break;
		case KEEL_OP_FACT:
		case KEEL_OP_UNSET:
			hs[i].timeline = keel_timeline_hash_from(KEEL_ROW_FACT, sh,
								 op->name, KEEL_STR_NULL);
			break;
		case KEEL_OP_LINK:
		case KEEL_OP_UNLINK:
			hs[i].object = keel_subject_hash(th, op->object);
			hs[i].timeline = keel_timeline_hash_from(KEEL_ROW_RELATION, sh,
								 op->name, op->object);
			break;
		}
	}
}

/* keel_overlay_resolve with the keys' hashes computed: a run of operations
 * on one subject looks its entity up once. */
static void keel_overlay_resolve_hashed(struct keel_overlay *o,
					struct keel_batch_event *ev,
					const struct keel_key_hashes *hs)
{
	for (size_t i = 0; i < ev->nops; i++) {
		struct keel_op *op = &ev->ops[i];
		if (i && keel_str_same(ev->ops[i - 1].subject, op->subject))
			op->subject_entity = ev->ops[i - 1].subject_entity;
		else
			op->subject_entity = keel_overlay_entity_h(
			    o, ev->tenant, op->subject, hs[i].subject);
		switch (op->kind) {
		case KEEL_OP_ENTITY:
			break;
		case KEEL_OP_FACT:
		case KEEL_OP_UNSET:
			op->timeline = keel_overlay_timeline_h(
			    o, KEEL_ROW_FACT, ev->tenant, op->subject, op->name,
			    KEEL_STR_NULL, hs[i].timeline);
			if (!o->keeps_state)
				keel_timeline_add_time(op->timeline, ev->time);
			break;
		case KEEL_OP_LINK:
		case KEEL_OP_UNLINK:
			op->object_entity = keel_overlay_entity_h(
			    o, ev->tenant, op->object, hs[i].object);
			op->timeline = keel_overlay_timeline_h(
			    o, KEEL_ROW_RELATION, ev->tenant, op->subject, op->name,
			    op->object, hs[i].timeline);
			if (!o->keeps_state)
				keel_timeline_add_time(op->timeline, ev->time);
			break;
		}
	}
}

void keel_overlay_resolve(struct keel_overlay *o, struct keel_batch_event **ev, size_t n)
{
	size_t nops = 0;
	for (size_t i = 0; i < n; i++)
		nops += ev[i]->nops;
	struct keel_key_hashes *hs = keel_overlay_hash_space(o, nops);
	struct keel_key_hashes *h = hs;
	struct keel_str tenant = KEEL_STR_NULL;
	uint64_t th = 0;
	for (size_t i = 0; i < n; h += ev[i++]->nops) {
		if (!tenant.ptr || !keel_str_same(ev[i]->tenant, tenant)) {
			tenant = ev[i]->tenant;
			th = keel_tenant_hash(tenant);
		}
		keel_overlay_hash_keys(ev[i], th, h);
	}
	/* In a large state (the memory store's) nearly every lookup misses
	 * the caches, twice over: the map slot, then the entry it points to.
	 * Asking for all slots, then all entries, lets those misses overlap;
	 * the lookups below then mostly hit. A hint only. */
	for (size_t k = 0; k < nops; k++) {
		keel_map_prefetch_slot(&o->entity_map, hs[k].subject);
		if (hs[k].timeline) {
			keel_map_prefetch_slot(&o->timeline_map, hs[k].timeline);
			if (hs[k].object)
				keel_map_prefetch_slot(&o->entity_map, hs[k].object);
		}
	}
	for (size_t k = 0; k < nops; k++) {
		keel_map_prefetch_value(&o->entity_map, hs[k].subject,
					KEEL_ENTITY_KEY_BYTES);
		if (hs[k].timeline) {
			keel_map_prefetch_value(&o->timeline_map, hs[k].timeline,
						KEEL_TIMELINE_KEY_BYTES);
			if (hs[k].object)
				keel_map_prefetch_value(&o->entity_map, hs[k].object,
							KEEL_ENTITY_KEY_BYTES);
		}
	}
	h = hs;
	for (size_t i = 0; i < n; h += ev[i++]->nops)
		keel_overlay_resolve_hashed(o, ev[i], h);
}

struct keel_row *keel_overlay_add_fetched_row(struct keel_overlay *o,
					      struct keel_timeline *tl,
					      const struct keel_row *src)
{
	for (size_t i = 0; i < tl->nrows; i++)
		if (tl->rows[i]->seq == src->seq && !(tl->rows[i]->flags & KEEL_ROW_NEW))
			return tl->rows[i];
	struct keel_row *r = keel_arena_alloc(&o->arena, sizeof *r);
	*r = *src;
	r->value = keel_arena_str(&o->arena, src->value);
	r->asserted_by = keel_arena_str(&o->arena, src->asserted_by);
	r->closed_by = keel_arena_str(&o->arena, src->closed_by);
	r->flags = 0;
	keel_timeline_insert_row(tl, r);
	return r;
}

void keel_overlay_found_entity(struct keel_overlay *o, struct keel_entity *e,
			       struct keel_str kind, int64_t kind_time,
			       int64_t first_seen, int64_t last_seen)
{
	e->kind = keel_arena_str(&o->arena, kind);
	e->kind_time = kind_time;
	e->first_seen = first_seen;
	e->last_seen = last_seen;
	e->flags = KEEL_ENTITY_FOUND;
}

size_t keel_overlay_uncovered_times(const struct keel_timeline *tl, int64_t *out,
				    size_t max)
{
	const struct keel_row *open = NULL;
	for (size_t i = tl->nrows; i-- > 0;)
		if (tl->rows[i]->valid_to == KEEL_TIME_INF) {
			open = tl->rows[i];
			break;
		}
	/* A stored timeline always ends in one open row; without one the key
	 * has no rows at all and nothing else can be fetched. */
	if (!open)
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < tl->ntimes && n < max; i++)
		if (tl->times[i] < open->valid_from &&
		    !keel_timeline_containing(tl, tl->times[i]))
			out[n++] = tl->times[i];
	return n;
}

void keel_entity_mention(struct keel_entity *e, int64_t t, struct keel_str kind,
			 struct keel_arena *a)
{
	bool changed = false;
	if (!(e->flags & (KEEL_ENTITY_FOUND | KEEL_ENTITY_NEW))) {
		e->flags |= KEEL_ENTITY_NEW;
		e->first_seen = e->last_seen = t;
		e->kind = KEEL_STR_NULL;
		e->kind_time = 0;
	} else {
		if (t < e->first_seen) {
			e->first_seen = t;
			changed = true;
		}
		if (t > e->last_seen) {
			e->last_seen = t;
			changed = true;
		}
	}
	/* The earliest mention that gives a kind decides it; at equal times
	 * the later arrival wins. */
	if (kind.ptr && (!e->kind.ptr || t <= e->kind_time)) {
		/* Replaced only when it differs: an overlay that keeps a store's
		 * state holds the store's copy and must not be handed the
		 * batch's (equal) string without the entity being flagged. */
		if (!keel_str_eq(e->kind, kind)) {
			e->kind = a ? keel_arena_str(a, kind) : kind;
			changed = true;
		}
		if (e->kind_time != t) {
			e->kind_time = t;
			changed = true;
		}
	}
	if (changed && (e->flags & KEEL_ENTITY_FOUND))
		e->flags |= KEEL_ENTITY_DIRTY;
}

static void keel_overlay_created(void *ud, struct keel_row *row)
{
	struct keel_overlay *o = ud;
	keel_ptrvec_push(&o->new_rows, row);
}

static void keel_overlay_dirtied(void *ud, struct keel_row *row)
{
	struct keel_overlay *o = ud;
	keel_ptrvec_push(&o->dirty_rows, row);
}

void keel_overlay_prefetch_rows(struct keel_batch_event **ev, size_t n)
{
	/* Placement at t reads the timeline's last row (events come mostly
	 * in time order) through its row array: two dependent misses on a
	 * large state. Ask for every array's end first, then every row. */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < ev[i]->nops; k++) {
			const struct keel_timeline *tl = ev[i]->ops[k].timeline;
			if (tl && tl->nrows)
				__builtin_prefetch(&tl->rows[tl->nrows - 1]);
		}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < ev[i]->nops; k++) {
			const struct keel_timeline *tl = ev[i]->ops[k].timeline;
			if (tl && tl->nrows)
				__builtin_prefetch(tl->rows[tl->nrows - 1]);
		}
}

void keel_overlay_apply(struct keel_overlay *o, const struct keel_batch_event *ev)
{
	const struct keel_place_sink sink = {
		.created = keel_overlay_created,
		.dirtied = keel_overlay_dirtied,
		.ud = o,
	};
	for (size_t i = 0; i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		bool entity_only = op->kind == KEEL_OP_ENTITY;
		/* A store's state takes a new kind in its own arena at once (a
		 * kind rarely changes), so that settling the batch need not copy
		 * the kind of every entity the batch mentioned. */
		keel_entity_mention(op->subject_entity, ev->time,
				    entity_only ? op->name : KEEL_STR_NULL,
				    o->keeps_state ? &o->arena : NULL);
		if (entity_only)
			continue;
		if (op->object_entity)
			keel_entity_mention(op->object_entity, ev->time, KEEL_STR_NULL, NULL);
		struct keel_row *row = keel_arena_alloc(&o->arena, sizeof *row);
		memset(row, 0, sizeof *row);
		row->value = op->kind == KEEL_OP_FACT ? op->value : KEEL_STR_NULL;
		row->linked = op->kind == KEEL_OP_LINK;
		row->asserted_by = ev->id;
		if (keel_timeline_place(op->timeline, ev->time, row, &sink))
			o->rows_closed++;
	}
}
