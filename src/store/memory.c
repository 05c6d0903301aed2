/*
 * memory.c - the memory store: its whole state is one overlay indexed by
 * key, plus the event log.
 *
 * The ingester resolves and applies each batch directly in that overlay
 * (keel_store_overlay): there is nothing to prefetch, and write_back only
 * makes the batch's changes permanent - it copies the batch's events into
 * the store's arena (their envelopes hold most strings the new rows borrow:
 * ids, values, which then point into the copies), numbers the new rows,
 * copies what else they borrow, clears the rows' per-batch flags and logs
 * the events. Neither it nor commit can fail, so a batch applied in place
 * never needs rolling back.
 *
 * Other writers hand in an overlay of their own: a load (all rows new) and
 * replay (replace_tenant). Those are staged and copied in at commit, so
 * rollback is forgetting the stage. All strings live in the state's arena
 * as long as the store.
 */
#include <stdlib.h>
#include <string.h>

#include "../store.h"

struct keel_mem_event {
	struct keel_str tenant, id, type, envelope;
	int64_t time;
	uint64_t hash; /* keel_memory_event_hash: 0 until asked */
	int64_t seq;
};

struct keel_id_fwd {
	const char *from;	   /* a batch event's id */
	struct keel_str envelope;  /* the batch event's envelope */
	struct keel_mem_event *to; /* the event's copy in the store */
};

struct keel_memory_store {
	struct keel_store base;
	struct keel_overlay state; /* timelines, entities; its arena holds everything */
	struct keel_map event_map;
	struct keel_ptrvec events; /* arrival order */
	struct keel_ptrvec tenants; /* sorted, arena strings */
	int64_t next_seq;
	/* A foreign overlay (a load), staged by write_back until commit. */
	struct keel_overlay *staged;
	struct keel_batch_event **staged_events;
	size_t staged_n;
	/* staged by replace_tenant (replay, bulk loads), applied by commit */
	struct keel_ptrvec staged_replaces;
	/* settle: the batch's events in order, each with the store's copy,
	 * found by the address of the batch's id through fwd_map */
	struct keel_id_fwd *fwd;
	size_t fwd_cap;
	struct keel_map fwd_map;
	struct keel_mem_event *last_copied; /* its tenant is shared with the next */
};

static void keel_memory_drop_replaces(struct keel_memory_store *m);
static void keel_memory_apply_replaces(struct keel_memory_store *m);

static struct keel_memory_store *keel_memory_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_memory_ops)
		abort();
	return (struct keel_memory_store *)s;
}

/* existing changes nothing: a memory store always starts empty, so
 * opening one to read creates nothing a mistyped URL could leave behind. */
static int keel_memory_open(const char *url, bool existing, struct keel_store **out,
			    struct keel_buf *err)
{
	(void)existing;
	if (strcmp(url, "memory:") != 0) {
		keel_buf_addf(err, "store \"%s\": the memory store takes no path (use \"memory:\")",
			      url);
		return KEEL_EURL;
	}
	struct keel_memory_store *m = keel_xcalloc(1, sizeof *m);
	keel_store_base_init(&m->base, &keel_store_memory_ops, url);
	m->base.state_in_handle = true;
	keel_overlay_init(&m->state);
	keel_arena_free(&m->state.arena);
	keel_arena_init_large(&m->state.arena);
	m->state.keeps_state = true;
	keel_map_init(&m->event_map);
	keel_map_init(&m->fwd_map);
	*out = &m->base;
	return 0;
}

static void keel_memory_close(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	keel_overlay_free(&m->state);
	keel_ptrvec_free(&m->events);
	keel_ptrvec_free(&m->tenants);
	keel_memory_drop_replaces(m);
	keel_ptrvec_free(&m->staged_replaces);
	keel_map_free(&m->event_map);
	free(m->fwd);
	keel_map_free(&m->fwd_map);
	keel_store_base_free(&m->base);
	free(m);
}

static struct keel_overlay *keel_memory_overlay(struct keel_store *s)
{
	return &keel_memory_downcast(s)->state;
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

/* ------------------------------------------------------------- the log */

/* The hash of a logged envelope. The store hashes on demand
 * (hashes_on_demand): an event ingested into it comes unhashed, and only a
 * repeat of its id or a scan needs the hash, computed then and kept. */
static uint64_t keel_memory_event_hash(struct keel_mem_event *e)
{
	if (!e->hash)
		e->hash = keel_hash64(e->envelope.ptr, e->envelope.len, 0);
	return e->hash;
}

/* The log is keyed by keel_batch_event_key_hash: every lookup and every
 * insertion comes with a batch event, whose hash is computed once. */
static struct keel_mem_event *keel_memory_find_event(struct keel_memory_store *m,
						     struct keel_batch_event *ev)
{
	uint64_t h = keel_batch_event_key_hash(ev);
	for (size_t i = keel_map_first(&m->event_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->event_map, h, i)) {
		struct keel_mem_event *e = m->event_map.values[i];
		if (keel_str_eq(e->id, ev->id) && keel_str_eq(e->tenant, ev->tenant))
			return e;
	}
	return NULL;
}

static int keel_memory_seen_ids(struct keel_store *s, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	keel_batch_key_hashes(ev, n);
	/* The log's map outgrows the caches: ask for every event's slot
	 * first, so that the misses overlap instead of coming one by one. */
	if (m->event_map.cap)
		for (size_t i = 0; i < n; i++)
			__builtin_prefetch(
			    &m->event_map.hashes[keel_batch_event_key_hash(ev[i]) &
						 (m->event_map.cap - 1)]);
	for (size_t i = 0; i < n; i++) {
		struct keel_mem_event *e = keel_memory_find_event(m, ev[i]);
		if (e) {
			ev[i]->status = KEEL_EV_DUPLICATE;
			ev[i]->stored_hash = keel_memory_event_hash(e);
		}
	}
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
	char *copy = keel_arena_alloc(&m->state.arena, t.len + 1);
	memcpy(copy, t.ptr, t.len);
	copy[t.len] = 0;
	m->tenants.items[lo] = copy;
}

/* A field of a batch event (tenant, id, type) in the store: a view into
 * the store's copy of the envelope where the batch's is one into the
 * batch's envelope (prepare.c), else a copy. */
static struct keel_str keel_memory_field(struct keel_arena *a, struct keel_str v,
					 struct keel_str batch_env, struct keel_str env)
{
	uintptr_t p = (uintptr_t)v.ptr, b = (uintptr_t)batch_env.ptr;
	if (v.ptr && p >= b && p - b <= batch_env.len && v.len <= batch_env.len - (p - b))
		return keel_str_make(env.ptr + (p - b), v.len);
	return keel_arena_str(a, v);
}

/* The store's copy of an accepted event, not yet in the log. The previous
 * event's tenant is usually this one's: its copy is shared. */
static struct keel_mem_event *keel_memory_copy_event(struct keel_memory_store *m,
						     const struct keel_batch_event *ev)
{
	struct keel_arena *a = &m->state.arena;
	struct keel_mem_event *e = keel_arena_alloc(a, sizeof *e);
	struct keel_mem_event *prev = m->last_copied;
	e->envelope = keel_arena_str(a, ev->envelope);
	if (prev && keel_str_eq(prev->tenant, ev->tenant)) {
		e->tenant = prev->tenant;
	} else {
		e->tenant = keel_memory_field(a, ev->tenant, ev->envelope, e->envelope);
		keel_memory_add_tenant(m, e->tenant);
	}
	e->id = keel_memory_field(a, ev->id, ev->envelope, e->envelope);
	e->type = keel_memory_field(a, ev->type, ev->envelope, e->envelope);
	e->time = ev->time;
	e->hash = ev->hash;
	m->last_copied = e;
	return e;
}

/* Appends an event copied by keel_memory_copy_event to the log. */
static void keel_memory_log_event(struct keel_memory_store *m,
				  struct keel_batch_event *ev, struct keel_mem_event *e)
{
	e->seq = ev->seq = ++m->next_seq;
	keel_map_put(&m->event_map, keel_batch_event_key_hash(ev), e);
	keel_ptrvec_push(&m->events, e);
}

/* ---------------------------------------------------- batches in place */

/* The key of a batch event's id in fwd_map: its address, mixed so that
 * the low bits the map indexes by depend on all of it. */
static uint64_t keel_memory_fwd_hash(const char *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 32);
}

/* Copies the batch's events into the store (not yet logged): m->fwd[i] is
 * ev[i] and its copy, found by the address of ev[i]'s id (the map is
 * rebuilt per batch). */
static void keel_memory_copy_events(struct keel_memory_store *m,
				    struct keel_batch_event **ev, size_t n)
{
	if (n > m->fwd_cap) {
		free(m->fwd);
		m->fwd_cap = n > 2 * m->fwd_cap ? n : 2 * m->fwd_cap;
		m->fwd = keel_xmalloc(m->fwd_cap * sizeof *m->fwd);
	}
	keel_map_clear(&m->fwd_map);
	for (size_t i = 0; i < n; i++) {
		m->fwd[i].from = ev[i]->id.ptr;
		m->fwd[i].envelope = ev[i]->envelope;
		m->fwd[i].to = keel_memory_copy_event(m, ev[i]);
		keel_map_put(&m->fwd_map, keel_memory_fwd_hash(ev[i]->id.ptr), &m->fwd[i]);
	}
}

/* The entry of the batch's event whose id is at p, or NULL. */
static const struct keel_id_fwd *keel_memory_fwd_find(const struct keel_memory_store *m,
						      const char *p)
{
	uint64_t h = keel_memory_fwd_hash(p);
	for (size_t i = keel_map_first(&m->fwd_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->fwd_map, h, i)) {
		const struct keel_id_fwd *f = m->fwd_map.values[i];
		if (f->from == p)
			return f;
	}
	return NULL;
}

/* keel_memory_fwd_find for a new row's event, looked for first at *j
 * and the few entries after it: new rows come in the order of their
 * events, so from one row to the next the walk takes a step or none (an
 * event without rows is skipped over, a longer gap asks the map). *j is
 * left at the entry found. */
static const struct keel_id_fwd *keel_memory_fwd_near(const struct keel_memory_store *m,
						      size_t n, size_t *j, const char *p)
{
	for (size_t k = *j; k < n && k < *j + 4; k++)
		if (m->fwd[k].from == p) {
			*j = k;
			return &m->fwd[k];
		}
	const struct keel_id_fwd *f = keel_memory_fwd_find(m, p);
	if (f)
		*j = (size_t)(f - m->fwd);
	return f;
}

/* The store's copy of an event id a row of the batch holds. Every
 * asserted_by and closed_by is an event id: this batch's (applied, so
 * accepted and copied by keel_memory_copy_events), or already the store's
 * copy, which is kept - ids are copied once per event, not per row. */
static struct keel_str keel_memory_fwd(const struct keel_memory_store *m,
				       struct keel_str s)
{
	if (!s.ptr)
		return s;
	const struct keel_id_fwd *f = keel_memory_fwd_find(m, s.ptr);
	return f ? f->to->id : s;
}

/* The batch applied in m->state becomes the store's: new rows get their
 * seq (in creation order), every string a row borrows from the batch is
 * copied or replaced by the store's copy, row flags are cleared for the
 * next batch, events logged. Entities need nothing: placement in the
 * state gives them the state's copy of a new kind (overlay.c), and of
 * their flags only "exists" (FOUND or NEW) means anything in the state -
 * NEW and DIRTY say what a store with a write-back must write, and this
 * one has none - so they keep what placement set. */
static void keel_memory_settle(struct keel_memory_store *m, struct keel_batch_event **ev,
			       size_t n)
{
	struct keel_overlay *o = &m->state;
	struct keel_arena *a = &o->arena;
	keel_memory_copy_events(m, ev, n);
	size_t j = 0;
	for (size_t i = 0; i < o->new_rows.len; i++) {
		struct keel_row *r = o->new_rows.items[i];
		/* A new row's event is this batch's; its value is mostly a view
		 * into the event's envelope (cartridge.c), and so becomes one
		 * into the store's copy of it. */
		const struct keel_id_fwd *f =
		    keel_memory_fwd_near(m, n, &j, r->asserted_by.ptr);
		if (f) {
			r->value =
			    keel_memory_field(a, r->value, f->envelope, f->to->envelope);
			r->asserted_by = f->to->id;
		} else {
			r->value = keel_arena_str(a, r->value);
		}
		r->closed_by = keel_memory_fwd(m, r->closed_by);
		r->flags = 0;
		r->seq = ++m->next_seq;
	}
	for (size_t i = 0; i < o->dirty_rows.len; i++) {
		struct keel_row *r = o->dirty_rows.items[i];
		r->closed_by = keel_memory_fwd(m, r->closed_by);
		r->flags = 0;
	}
	for (size_t i = 0; i < n; i++)
		keel_memory_log_event(m, ev[i], m->fwd[i].to);
	o->new_rows.len = 0;
	o->dirty_rows.len = 0;
	o->rows_closed = 0;
}

static int keel_memory_write_back(struct keel_store *s, struct keel_overlay *o,
				  struct keel_batch_event **ev, size_t n)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	if (o == &m->state) {
		keel_memory_settle(m, ev, n);
		return 0;
	}
	m->staged = o;
	m->staged_events = ev;
	m->staged_n = n;
	return 0;
}

/* ------------------------------------------------ copying overlays in */

/* Copies a row of another overlay into the store's timeline st and gives
 * it the next seq, which the source row learns too. */
static void keel_memory_copy_row(struct keel_memory_store *m, struct keel_timeline *st,
				 struct keel_row *r)
{
	struct keel_arena *a = &m->state.arena;
	struct keel_row *sr = keel_arena_alloc(a, sizeof *sr);
	*sr = *r;
	sr->value = keel_arena_str(a, r->value);
	sr->asserted_by = keel_arena_str(a, r->asserted_by);
	sr->closed_by = keel_arena_str(a, r->closed_by);
	sr->flags = 0;
	sr->timeline = st;
	sr->seq = r->seq = ++m->next_seq;
	keel_timeline_insert_row(st, sr);
}

/* Copies another overlay's entities and (all new) rows in, then logs the
 * events: a load's batch, or a replayed tenant after its old state went. */
static void keel_memory_copy_in(struct keel_memory_store *m, struct keel_overlay *o,
				struct keel_batch_event **ev, size_t n)
{
	struct keel_arena *a = &m->state.arena;
	for (size_t i = 0; i < o->entities.len; i++) {
		const struct keel_entity *e = o->entities.items[i];
		if (!(e->flags & (KEEL_ENTITY_NEW | KEEL_ENTITY_DIRTY)))
			continue;
		struct keel_entity *se = keel_overlay_entity(&m->state, e->tenant, e->subject);
		se->kind = keel_arena_str(a, e->kind);
		se->kind_time = e->kind_time;
		se->first_seen = e->first_seen;
		se->last_seen = e->last_seen;
		se->flags = KEEL_ENTITY_FOUND;
	}
	struct keel_timeline *st = NULL;
	for (size_t i = 0; i < o->new_rows.len; i++) {
		struct keel_row *r = o->new_rows.items[i];
		/* Rows mostly come grouped by timeline: look each one up once. */
		const struct keel_timeline *tl = r->timeline;
		if (i == 0 || tl != ((struct keel_row *)o->new_rows.items[i - 1])->timeline)
			st = keel_overlay_timeline(&m->state, tl->kind, tl->tenant, tl->subject,
						   tl->name, tl->object);
		keel_memory_copy_row(m, st, r);
	}
	for (size_t i = 0; i < n; i++)
		keel_memory_log_event(m, ev[i], keel_memory_copy_event(m, ev[i]));
}

static int keel_memory_commit(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_overlay *o = m->staged;
	m->staged = NULL;
	keel_memory_apply_replaces(m);
	if (o)
		keel_memory_copy_in(m, o, m->staged_events, m->staged_n);
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

static int keel_memory_cmp_entity(const void *pa, const void *pb)
{
	const struct keel_entity *a = *(const struct keel_entity *const *)pa;
	const struct keel_entity *b = *(const struct keel_entity *const *)pb;
	return keel_str_cmp(a->subject, b->subject);
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
			r.hash = keel_memory_event_hash(e);
			r.seq = e->seq;
			rc = fn(ud, &r);
		}
		return rc;
	}
	if (q->type == KEEL_REC_ENTITY) {
		for (size_t i = 0; i < m->state.entities.len; i++) {
			struct keel_entity *e = m->state.entities.items[i];
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
	for (size_t i = 0; i < m->state.timelines.len; i++) {
		struct keel_timeline *tl = m->state.timelines.items[i];
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
		qsort(hits.items, hits.len, sizeof(void *), keel_row_cmp_canonical);
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
	for (size_t i = 0; i < m->state.entities.len; i++)
		out[0] += keel_str_eq(((struct keel_entity *)m->state.entities.items[i])->tenant, tenant);
	for (size_t i = 0; i < m->state.timelines.len; i++) {
		struct keel_timeline *tl = m->state.timelines.items[i];
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
	const struct keel_replace_scope *scope;
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
				      const struct keel_replace_scope *scope,
				      struct keel_overlay *o, struct keel_batch_event **ev,
				      size_t n, uint64_t log_events, struct keel_buf *note)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	(void)log_events; /* one thread owns a memory store: the log cannot move */
	struct keel_memory_replace *r = keel_xmalloc(sizeof *r);
	*r = (struct keel_memory_replace){tenant, scope, o, ev, n};
	keel_ptrvec_push(&m->staged_replaces, r);
	keel_buf_adds(note, "memory store: rows replaced in memory");
	return 0;
}

/* Drops the tenant's entities and rows that the scope covers (timelines
 * stay, empty, which is invisible), then copies the new ones in and logs
 * the events. */
static void keel_memory_apply_replace(struct keel_memory_store *m,
				      const struct keel_memory_replace *rp)
{
	struct keel_overlay *st = &m->state;
	size_t kept = st->entities.len;
	if (!rp->scope || rp->scope->entities) {
		kept = 0;
		for (size_t i = 0; i < st->entities.len; i++) {
			struct keel_entity *e = st->entities.items[i];
			if (!keel_str_eq(e->tenant, rp->tenant))
				st->entities.items[kept++] = e;
		}
	}
	if (kept != st->entities.len) {
		st->entities.len = kept;
		keel_map_clear(&st->entity_map);
		for (size_t i = 0; i < kept; i++) {
			struct keel_entity *e = st->entities.items[i];
			keel_map_put(&st->entity_map, e->hash, e);
		}
	}
	for (size_t i = 0; i < st->timelines.len; i++) {
		struct keel_timeline *tl = st->timelines.items[i];
		if (keel_str_eq(tl->tenant, rp->tenant) &&
		    keel_replace_scope_covers(rp->scope, tl->kind, tl->name))
			keel_timeline_free_rows(tl);
	}
	keel_memory_copy_in(m, rp->o, rp->ev, rp->n);
}

static void keel_memory_apply_replaces(struct keel_memory_store *m)
{
	for (size_t i = 0; i < m->staged_replaces.len; i++)
		keel_memory_apply_replace(m, m->staged_replaces.items[i]);
	keel_memory_drop_replaces(m);
}

const struct keel_store_ops keel_store_memory_ops = {
	.scheme = "memory",
	.url_form = "memory:",
	.open = keel_memory_open,
	.close = keel_memory_close,
	.begin = keel_memory_begin,
	.commit = keel_memory_commit,
	.rollback = keel_memory_rollback,
	.seen_ids = keel_memory_seen_ids,
	.overlay = keel_memory_overlay,
	.write_back = keel_memory_write_back,
	.tenants = keel_memory_tenants,
	.scan = keel_memory_scan,
	.counts = keel_memory_counts,
	.replace_tenant = keel_memory_replace_tenant,
	.hashes_on_demand = true,
};
