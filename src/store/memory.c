/*
 * memory.c - the memory store: the whole state held as one overlay-like set
 * of timelines and entities indexed by key, plus the event log.
 *
 * It follows the same path as the SQL stores: prefetch copies the rows a
 * batch can touch into the batch's overlay, write_back stages the overlay,
 * and commit applies it (so rollback is simply forgetting the stage). All
 * strings are copied into the store's arena and live as long as the store.
 */
#include <stdlib.h>
#include <string.h>

#include "../store.h"

struct keel_mem_event {
	struct keel_str tenant, id, type, envelope;
	int64_t time;
	uint64_t hash;
	int64_t seq;
};

struct keel_memory_store {
	struct keel_store base;
	struct keel_arena arena;
	struct keel_map timeline_map;
	struct keel_ptrvec timelines;
	struct keel_map entity_map;
	struct keel_ptrvec entities;
	struct keel_map event_map;
	struct keel_ptrvec events; /* arrival order */
	struct keel_ptrvec tenants; /* sorted, arena strings */
	int64_t next_seq;
	/* staged by write_back, applied by commit */
	struct keel_overlay *staged;
	struct keel_batch_event **staged_events;
	size_t staged_n;
	/* staged by replace_tenant (replay, bulk loads), applied by commit */
	struct keel_ptrvec staged_replaces;
};

static void keel_memory_drop_replaces(struct keel_memory_store *m);
static void keel_memory_apply_replaces(struct keel_memory_store *m);

static struct keel_memory_store *keel_memory_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_memory_ops)
		abort();
	return (struct keel_memory_store *)s;
}

static int keel_memory_open(const char *url, struct keel_store **out, struct keel_buf *err)
{
	if (strcmp(url, "memory:") != 0) {
		keel_buf_addf(err, "store \"%s\": the memory store takes no path (use \"memory:\")",
			      url);
		return KEEL_EURL;
	}
	struct keel_memory_store *m = keel_xcalloc(1, sizeof *m);
	keel_store_base_init(&m->base, &keel_store_memory_ops);
	keel_arena_init_large(&m->arena);
	*out = &m->base;
	return 0;
}

static void keel_memory_close(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < m->timelines.len; i++)
		keel_timeline_free_rows(m->timelines.items[i]);
	keel_ptrvec_free(&m->timelines);
	keel_ptrvec_free(&m->entities);
	keel_ptrvec_free(&m->events);
	keel_ptrvec_free(&m->tenants);
	keel_memory_drop_replaces(m);
	keel_ptrvec_free(&m->staged_replaces);
	keel_map_free(&m->timeline_map);
	keel_map_free(&m->entity_map);
	keel_map_free(&m->event_map);
	keel_arena_free(&m->arena);
	keel_store_base_free(&m->base);
	free(m);
}

static int keel_memory_begin(struct keel_store *s)
{
	keel_memory_downcast(s)->staged = NULL;
	keel_memory_drop_replaces(keel_memory_downcast(s));
	return 0;
}

static int keel_memory_rollback(struct keel_store *s)
{
	keel_memory_downcast(s)->staged = NULL;
	keel_memory_drop_replaces(keel_memory_downcast(s));
	return 0;
}

/* ------------------------------------------------------------- lookups */

static uint64_t keel_event_key_hash(struct keel_str tenant, struct keel_str id)
{
	return keel_hash64(id.ptr, id.len, keel_hash64(tenant.ptr, tenant.len, 7));
}

static struct keel_mem_event *keel_memory_find_event(struct keel_memory_store *m,
						     struct keel_str tenant,
						     struct keel_str id)
{
	uint64_t h = keel_event_key_hash(tenant, id);
	for (size_t i = keel_map_first(&m->event_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->event_map, h, i)) {
		struct keel_mem_event *e = m->event_map.values[i];
		if (keel_str_eq(e->id, id) && keel_str_eq(e->tenant, tenant))
			return e;
	}
	return NULL;
}

static struct keel_timeline *keel_memory_find_timeline(struct keel_memory_store *m,
							const struct keel_timeline *key,
							bool create)
{
	struct keel_map *map = &m->timeline_map;
	for (size_t i = keel_map_first(map, key->hash); i != SIZE_MAX;
	     i = keel_map_next(map, key->hash, i)) {
		struct keel_timeline *tl = map->values[i];
		if (keel_timeline_key_eq(tl, key->kind, key->tenant, key->subject, key->name,
					 key->object))
			return tl;
	}
	if (!create)
		return NULL;
	struct keel_timeline *tl = keel_arena_alloc(&m->arena, sizeof *tl);
	memset(tl, 0, sizeof *tl);
	tl->kind = key->kind;
	tl->tenant = keel_arena_str(&m->arena, key->tenant);
	tl->subject = keel_arena_str(&m->arena, key->subject);
	tl->name = keel_arena_str(&m->arena, key->name);
	tl->object = keel_arena_str(&m->arena, key->object);
	tl->hash = key->hash;
	keel_map_put(map, tl->hash, tl);
	keel_ptrvec_push(&m->timelines, tl);
	return tl;
}

static struct keel_entity *keel_memory_find_entity(struct keel_memory_store *m,
						   struct keel_str tenant,
						   struct keel_str subject, uint64_t h)
{
	for (size_t i = keel_map_first(&m->entity_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->entity_map, h, i)) {
		struct keel_entity *e = m->entity_map.values[i];
		if (keel_str_eq(e->subject, subject) && keel_str_eq(e->tenant, tenant))
			return e;
	}
	return NULL;
}

/* --------------------------------------------------------------- batch */

static int keel_memory_seen_ids(struct keel_store *s, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < n; i++) {
		struct keel_mem_event *e = keel_memory_find_event(m, ev[i]->tenant, ev[i]->id);
		if (e) {
			ev[i]->status = KEEL_EV_DUPLICATE;
			ev[i]->stored_hash = e->hash;
		}
	}
	return 0;
}

static void keel_memory_fetch_row(struct keel_overlay *o, struct keel_timeline *tl,
				  struct keel_row *stored)
{
	struct keel_row copy = *stored;
	copy.store_ref = stored;
	keel_overlay_add_fetched_row(o, tl, &copy);
}

static int keel_memory_prefetch(struct keel_store *s, struct keel_overlay *o)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		struct keel_entity *se = keel_memory_find_entity(m, e->tenant, e->subject, e->hash);
		if (se) {
			keel_overlay_found_entity(o, e, se->kind, se->kind_time, se->first_seen,
						  se->last_seen);
			e->store_ref = se;
		}
	}
	for (size_t i = 0; i < o->timelines.len; i++) {
		struct keel_timeline *tl = o->timelines.items[i];
		/* Created here if new (an empty timeline is invisible), so
		 * that commit needs no second lookup. */
		struct keel_timeline *st = keel_memory_find_timeline(m, tl, true);
		tl->store_ref = st;
		if (!st->nrows)
			continue;
		for (size_t k = st->nrows; k-- > 0;)
			if (st->rows[k]->valid_to == KEEL_TIME_INF) {
				keel_memory_fetch_row(o, tl, st->rows[k]);
				break;
			}
		int64_t *times = keel_xmalloc(tl->ntimes * sizeof *times);
		size_t n = keel_overlay_uncovered_times(tl, times, tl->ntimes);
		for (size_t k = 0; k < n; k++) {
			struct keel_row *r = keel_timeline_containing(st, times[k]);
			if (!r)
				r = keel_timeline_next_after(st, times[k]);
			if (r)
				keel_memory_fetch_row(o, tl, r);
		}
		free(times);
	}
	return 0;
}

static int keel_memory_write_back(struct keel_store *s, struct keel_overlay *o,
				  struct keel_batch_event **ev, size_t n)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	m->staged = o;
	m->staged_events = ev;
	m->staged_n = n;
	return 0;
}

static void keel_memory_add_tenant(struct keel_memory_store *m, struct keel_str t)
{
	size_t lo = 0, hi = m->tenants.len;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = keel_str_cmp(keel_str_cstr(m->tenants.items[mid]), t);
		if (c == 0)
			return;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	keel_ptrvec_push(&m->tenants, NULL);
	memmove(m->tenants.items + lo + 1, m->tenants.items + lo,
		(m->tenants.len - 1 - lo) * sizeof(void *));
	char *copy = keel_arena_alloc(&m->arena, t.len + 1);
	memcpy(copy, t.ptr, t.len);
	copy[t.len] = 0;
	m->tenants.items[lo] = copy;
}

/* Copies a committed row into the store (strings into its arena) and
 * gives it the next seq, which the overlay's row learns too. */
static void keel_memory_store_row(struct keel_memory_store *m, struct keel_timeline *st,
				  struct keel_row *r)
{
	struct keel_arena *a = &m->arena;
	struct keel_row *sr = keel_arena_alloc(a, sizeof *sr);
	*sr = *r;
	sr->value = keel_arena_str(a, r->value);
	sr->asserted_by = keel_arena_str(a, r->asserted_by);
	sr->closed_by = keel_arena_str(a, r->closed_by);
	sr->flags = 0;
	sr->store_ref = NULL;
	sr->seq = r->seq = ++m->next_seq;
	keel_timeline_insert_row(st, sr);
}

/* Appends an accepted event to the log. */
static void keel_memory_log_event(struct keel_memory_store *m, struct keel_batch_event *ev)
{
	struct keel_arena *a = &m->arena;
	struct keel_mem_event *e = keel_arena_alloc(a, sizeof *e);
	e->tenant = keel_arena_str(a, ev->tenant);
	e->id = keel_arena_str(a, ev->id);
	e->type = keel_arena_str(a, ev->type);
	e->envelope = keel_arena_str(a, ev->envelope);
	e->time = ev->time;
	e->hash = ev->hash;
	e->seq = ev->seq = ++m->next_seq;
	keel_map_put(&m->event_map, keel_event_key_hash(e->tenant, e->id), e);
	keel_ptrvec_push(&m->events, e);
	keel_memory_add_tenant(m, e->tenant);
}

static int keel_memory_commit(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_overlay *o = m->staged;
	m->staged = NULL;
	keel_memory_apply_replaces(m);
	if (!o)
		return 0;
	struct keel_arena *a = &m->arena;
	for (size_t i = 0; i < o->entities.len; i++) {
		struct keel_entity *e = o->entities.items[i];
		struct keel_entity *se = e->store_ref;
		if (e->flags & KEEL_ENTITY_NEW) {
			se = keel_arena_alloc(a, sizeof *se);
			memset(se, 0, sizeof *se);
			se->tenant = keel_arena_str(a, e->tenant);
			se->subject = keel_arena_str(a, e->subject);
			se->hash = e->hash;
			keel_map_put(&m->entity_map, se->hash, se);
			keel_ptrvec_push(&m->entities, se);
		} else if (!(e->flags & KEEL_ENTITY_DIRTY)) {
			continue;
		}
		if (!keel_str_eq(se->kind, e->kind))
			se->kind = keel_arena_str(a, e->kind);
		se->kind_time = e->kind_time;
		se->first_seen = e->first_seen;
		se->last_seen = e->last_seen;
	}
	for (size_t i = 0; i < o->dirty_rows.len; i++) {
		struct keel_row *r = o->dirty_rows.items[i];
		struct keel_row *sr = r->store_ref;
		sr->valid_to = r->valid_to;
		sr->closed_by = keel_arena_str(a, r->closed_by);
	}
	for (size_t i = 0; i < o->new_rows.len; i++) {
		struct keel_row *r = o->new_rows.items[i];
		struct keel_timeline *st = r->timeline->store_ref;
		if (!st)
			st = keel_memory_find_timeline(m, r->timeline, true);
		keel_memory_store_row(m, st, r);
	}
	for (size_t i = 0; i < m->staged_n; i++) {
		keel_memory_log_event(m, m->staged_events[i]);
	}
	return 0;
}

/* ------------------------------------------------------------- reading */

static int keel_memory_tenants(struct keel_store *s, struct keel_ptrvec *out)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < m->tenants.len; i++)
		keel_ptrvec_push(out, keel_xstrdup(m->tenants.items[i]));
	return 0;
}

static int keel_cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int keel_memory_cmp_entity(const void *pa, const void *pb)
{
	const struct keel_entity *a = *(const struct keel_entity *const *)pa;
	const struct keel_entity *b = *(const struct keel_entity *const *)pb;
	return keel_str_cmp(a->subject, b->subject);
}

static int keel_memory_cmp_row(const void *pa, const void *pb)
{
	const struct keel_row *a = *(const struct keel_row *const *)pa;
	const struct keel_row *b = *(const struct keel_row *const *)pb;
	const struct keel_timeline *ta = a->timeline, *tb = b->timeline;
	int c;
	if ((c = keel_str_cmp(ta->subject, tb->subject)) || (c = keel_str_cmp(ta->name, tb->name)))
		return c;
	if (ta->kind == KEEL_ROW_RELATION && (c = keel_str_cmp(ta->object, tb->object)))
		return c;
	if ((c = keel_cmp_i64(a->valid_from, b->valid_from)) ||
	    (c = keel_cmp_i64(a->valid_to, b->valid_to)) ||
	    (c = keel_str_cmp(a->asserted_by, b->asserted_by)))
		return c;
	return keel_cmp_i64(a->seq, b->seq);
}

static bool keel_memory_match(struct keel_str filter, struct keel_str value)
{
	return !filter.ptr || keel_str_eq(filter, value);
}

static int keel_memory_scan(struct keel_store *s, const struct keel_scan *q,
			    keel_scan_fn fn, void *ud)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_ptrvec hits = {0};
	struct keel_record r;
	int rc = 0;
	if (q->type == KEEL_REC_EVENT) {
		for (size_t i = 0; i < m->events.len && !rc; i++) {
			struct keel_mem_event *e = m->events.items[i];
			if (!keel_str_eq(e->tenant, q->tenant) || !keel_memory_match(q->event_id, e->id))
				continue;
			memset(&r, 0, sizeof r);
			r.type = KEEL_REC_EVENT;
			r.tenant = e->tenant;
			r.id = e->id;
			r.event_type = e->type;
			r.time = e->time;
			r.envelope = e->envelope;
			r.hash = e->hash;
			r.seq = e->seq;
			rc = fn(ud, &r);
		}
		return rc;
	}
	if (q->type == KEEL_REC_ENTITY) {
		for (size_t i = 0; i < m->entities.len; i++) {
			struct keel_entity *e = m->entities.items[i];
			if (keel_str_eq(e->tenant, q->tenant) && keel_memory_match(q->subject, e->subject))
				keel_ptrvec_push(&hits, e);
		}
		if (hits.len)
			qsort(hits.items, hits.len, sizeof(void *), keel_memory_cmp_entity);
		for (size_t i = 0; i < hits.len && !rc; i++) {
			struct keel_entity *e = hits.items[i];
			memset(&r, 0, sizeof r);
			r.type = KEEL_REC_ENTITY;
			r.tenant = e->tenant;
			r.subject = e->subject;
			r.kind = e->kind;
			r.kind_time = e->kind_time;
			r.first_seen = e->first_seen;
			r.last_seen = e->last_seen;
			rc = fn(ud, &r);
		}
		keel_ptrvec_free(&hits);
		return rc;
	}
	enum keel_row_kind kind = q->type == KEEL_REC_FACT ? KEEL_ROW_FACT : KEEL_ROW_RELATION;
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct keel_timeline *tl = m->timelines.items[i];
		if (tl->kind != kind || !keel_str_eq(tl->tenant, q->tenant) ||
		    !keel_memory_match(q->subject, tl->subject) ||
		    !keel_memory_match(q->name, tl->name) ||
		    (kind == KEEL_ROW_RELATION && !keel_memory_match(q->object, tl->object)))
			continue;
		for (size_t k = 0; k < tl->nrows; k++) {
			struct keel_row *row = tl->rows[k];
			if (q->at_set && !(row->valid_from <= q->at && q->at < row->valid_to))
				continue;
			keel_ptrvec_push(&hits, row);
		}
	}
	if (hits.len)
		qsort(hits.items, hits.len, sizeof(void *), keel_memory_cmp_row);
	for (size_t i = 0; i < hits.len && !rc; i++) {
		struct keel_row *row = hits.items[i];
		memset(&r, 0, sizeof r);
		r.type = q->type;
		r.tenant = row->timeline->tenant;
		r.subject = row->timeline->subject;
		r.name = row->timeline->name;
		r.object = row->timeline->object;
		r.value = row->value;
		r.linked = row->linked;
		r.valid_from = row->valid_from;
		r.valid_to = row->valid_to;
		r.asserted_by = row->asserted_by;
		r.closed_by = row->closed_by;
		r.seq = row->seq;
		rc = fn(ud, &r);
	}
	keel_ptrvec_free(&hits);
	return rc;
}

static int keel_memory_counts(struct keel_store *s, struct keel_str tenant, uint64_t out[4])
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	memset(out, 0, 4 * sizeof *out);
	for (size_t i = 0; i < m->entities.len; i++)
		out[0] += keel_str_eq(((struct keel_entity *)m->entities.items[i])->tenant, tenant);
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct keel_timeline *tl = m->timelines.items[i];
		if (keel_str_eq(tl->tenant, tenant))
			out[tl->kind == KEEL_ROW_FACT ? 1 : 2] += tl->nrows;
	}
	for (size_t i = 0; i < m->events.len; i++)
		out[3] += keel_str_eq(((struct keel_mem_event *)m->events.items[i])->tenant, tenant);
	return 0;
}

/* ------------------------------------------- replay (docs/replay.md) */

/* A tenant's new state, staged until commit like a write-back. */
struct keel_memory_replace {
	struct keel_str tenant;
	struct keel_overlay *o;
	struct keel_batch_event **ev;
	size_t n;
};

static void keel_memory_drop_replaces(struct keel_memory_store *m)
{
	for (size_t i = 0; i < m->staged_replaces.len; i++)
		free(m->staged_replaces.items[i]);
	m->staged_replaces.len = 0;
}

static int keel_memory_replace_tenant(struct keel_store *s, struct keel_str tenant,
				      struct keel_overlay *o, struct keel_batch_event **ev,
				      size_t n, uint64_t log_events, struct keel_buf *note)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	(void)log_events; /* one thread owns a memory store: the log cannot move */
	struct keel_memory_replace *r = keel_xmalloc(sizeof *r);
	*r = (struct keel_memory_replace){tenant, o, ev, n};
	keel_ptrvec_push(&m->staged_replaces, r);
	keel_buf_adds(note, "memory store: rows replaced in memory");
	return 0;
}

/* Drops the tenant's entities and rows (timelines stay, empty, which is
 * invisible), then adds the new ones and logs the events. */
static void keel_memory_apply_replace(struct keel_memory_store *m,
				      const struct keel_memory_replace *rp)
{
	struct keel_arena *a = &m->arena;
	size_t kept = 0;
	for (size_t i = 0; i < m->entities.len; i++) {
		struct keel_entity *e = m->entities.items[i];
		if (!keel_str_eq(e->tenant, rp->tenant))
			m->entities.items[kept++] = e;
	}
	if (kept != m->entities.len) {
		m->entities.len = kept;
		keel_map_clear(&m->entity_map);
		for (size_t i = 0; i < kept; i++) {
			struct keel_entity *e = m->entities.items[i];
			keel_map_put(&m->entity_map, e->hash, e);
		}
	}
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct keel_timeline *tl = m->timelines.items[i];
		if (keel_str_eq(tl->tenant, rp->tenant))
			keel_timeline_free_rows(tl);
	}
	for (size_t i = 0; i < rp->o->entities.len; i++) {
		const struct keel_entity *e = rp->o->entities.items[i];
		struct keel_entity *se = keel_arena_alloc(a, sizeof *se);
		memset(se, 0, sizeof *se);
		se->tenant = keel_arena_str(a, e->tenant);
		se->subject = keel_arena_str(a, e->subject);
		se->kind = keel_arena_str(a, e->kind);
		se->kind_time = e->kind_time;
		se->first_seen = e->first_seen;
		se->last_seen = e->last_seen;
		se->hash = e->hash;
		keel_map_put(&m->entity_map, se->hash, se);
		keel_ptrvec_push(&m->entities, se);
	}
	struct keel_timeline *st = NULL;
	for (size_t i = 0; i < rp->o->new_rows.len; i++) {
		struct keel_row *r = rp->o->new_rows.items[i];
		/* Rows come grouped by timeline: look each one up once. */
		if (i == 0 || r->timeline != ((struct keel_row *)rp->o->new_rows.items[i - 1])->timeline)
			st = keel_memory_find_timeline(m, r->timeline, true);
		keel_memory_store_row(m, st, r);
	}
	for (size_t i = 0; i < rp->n; i++) {
		keel_memory_log_event(m, rp->ev[i]);
	}
}

static void keel_memory_apply_replaces(struct keel_memory_store *m)
{
	for (size_t i = 0; i < m->staged_replaces.len; i++)
		keel_memory_apply_replace(m, m->staged_replaces.items[i]);
	keel_memory_drop_replaces(m);
}

const struct keel_store_ops keel_store_memory_ops = {
	.scheme = "memory",
	.open = keel_memory_open,
	.close = keel_memory_close,
	.begin = keel_memory_begin,
	.commit = keel_memory_commit,
	.rollback = keel_memory_rollback,
	.seen_ids = keel_memory_seen_ids,
	.prefetch = keel_memory_prefetch,
	.write_back = keel_memory_write_back,
	.tenants = keel_memory_tenants,
	.scan = keel_memory_scan,
	.counts = keel_memory_counts,
	.replace_tenant = keel_memory_replace_tenant,
};
