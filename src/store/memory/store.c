/*
 * store.c - the memory store: the event log, the assertions and the
 * entity mentions, appended and kept in memory (docs/stores.md).
 *
 * Like every store it writes each row once (docs/semantics.md): an
 * assertion goes into its timeline's array in (valid_from, arrival)
 * order, a mention into its entity's list, an event into the log; reads
 * hand them to store.c, which derives valid_to and closed_by. A
 * transaction's appends are applied at once; rollback takes them back by
 * their counts (appends only ever add at the ends of arrays, except a
 * late row, which the transaction's undo list removes). All strings live
 * in the store's arena as long as the store.
 */
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

struct mem_event {
	struct keel_str tenant, source, id, type, envelope;
	int64_t time;
	uint64_t hash; /* mem_event_hash: 0 until asked */
	int64_t seq;
	int64_t recorded_at;
};

struct mem_row {
	struct keel_assertion a;
	int64_t seq;
};

struct mem_timeline {
	enum keel_row_kind kind;
	struct keel_str tenant, subject, name, object;
	struct keel_ptrvec rows; /* struct mem_row *, by (valid_from, seq) */
};

struct mem_entity {
	struct keel_str tenant, subject;
	struct keel_ptrvec mentions; /* struct keel_mention *, arrival order */
};

/* A tenant's recorded cartridge; a replace appends a newer one. r's
 * name, version, hash and text are those of the first record of the same
 * hash (one copy of each distinct cartridge, however many tenants). */
struct mem_cartridge {
	struct keel_str tenant;
	struct keel_cartridge_record r;
	size_t order; /* its index in cartridges: the latest of a tenant wins */
};

/* What the open transaction added, to take back on rollback. */
struct mem_undo {
	size_t events;
	size_t cartridges;
	struct keel_ptrvec rows;	/* struct mem_row * added */
	struct keel_ptrvec mentions;	/* struct mem_entity * given one */
	bool replaced;			/* a replace ran: no rollback past it */
};

struct keel_memory_store {
	struct keel_store base;
	struct keel_arena arena;
	struct keel_map event_map;
	struct keel_ptrvec events; /* arrival order */
	struct keel_map timeline_map;
	struct keel_ptrvec timelines;
	struct keel_map entity_map;
	struct keel_ptrvec entities;
	struct keel_ptrvec tenants; /* sorted, arena strings */
	struct keel_ptrvec cartridges; /* struct mem_cartridge *, in order recorded */
	struct keel_map cartridge_map; /* tenant hash -> struct mem_cartridge * */
	struct keel_ptrvec cartridge_kinds; /* struct keel_cartridge_record *, distinct hashes */
	int64_t next_seq;
	struct mem_undo undo;
	struct keel_ptrvec tombstones; /* struct keel_tombstone *, arena */
};

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
	keel_arena_init_large(&m->arena);
	keel_map_init(&m->event_map);
	keel_map_init(&m->timeline_map);
	keel_map_init(&m->entity_map);
	keel_map_init(&m->cartridge_map);
	*out = &m->base;
	return 0;
}

static void keel_memory_close(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < m->timelines.len; i++)
		keel_ptrvec_free(&((struct mem_timeline *)m->timelines.items[i])->rows);
	for (size_t i = 0; i < m->entities.len; i++)
		keel_ptrvec_free(&((struct mem_entity *)m->entities.items[i])->mentions);
	keel_ptrvec_free(&m->events);
	keel_ptrvec_free(&m->timelines);
	keel_ptrvec_free(&m->entities);
	keel_ptrvec_free(&m->tenants);
	keel_ptrvec_free(&m->tombstones);
	keel_ptrvec_free(&m->cartridges);
	keel_ptrvec_free(&m->cartridge_kinds);
	keel_map_free(&m->cartridge_map);
	keel_ptrvec_free(&m->undo.rows);
	keel_ptrvec_free(&m->undo.mentions);
	keel_map_free(&m->event_map);
	keel_map_free(&m->timeline_map);
	keel_map_free(&m->entity_map);
	keel_arena_free(&m->arena);
	keel_store_base_free(&m->base);
	free(m);
}

static void mem_undo_clear(struct keel_memory_store *m)
{
	m->undo.events = m->events.len;
	m->undo.cartridges = m->cartridges.len;
	m->undo.rows.len = 0;
	m->undo.mentions.len = 0;
	m->undo.replaced = false;
}

static int keel_memory_begin(struct keel_store *s)
{
	mem_undo_clear(keel_memory_downcast(s));
	return 0;
}

static int keel_memory_commit(struct keel_store *s)
{
	mem_undo_clear(keel_memory_downcast(s));
	return 0;
}

/* The event map has no removal: rebuilt from the log (rollback only). */
static void mem_rebuild_event_map(struct keel_memory_store *m)
{
	keel_map_clear(&m->event_map);
	for (size_t i = 0; i < m->events.len; i++) {
		struct mem_event *e = m->events.items[i];
		keel_map_put(&m->event_map, keel_event_key_hash(e->tenant, e->source, e->id), e);
	}
}

static int keel_memory_rollback(struct keel_store *s)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	if (m->undo.replaced)
		return keel_store_fail(s, KEEL_ESTORE,
				       "the memory store cannot roll back a replace");
	/* Rows: remove each added row from its timeline (the rows of a
	 * timeline are few per transaction; this is the rare path). */
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		size_t w = 0;
		for (size_t k = 0; k < tl->rows.len; k++) {
			struct mem_row *row = tl->rows.items[k];
			bool added = false;
			for (size_t u = 0; u < m->undo.rows.len && !added; u++)
				added = m->undo.rows.items[u] == row;
			if (!added)
				tl->rows.items[w++] = row;
		}
		tl->rows.len = w;
	}
	for (size_t i = 0; i < m->undo.mentions.len; i++) {
		struct mem_entity *e = m->undo.mentions.items[i];
		e->mentions.len--;
	}
	if (m->cartridges.len != m->undo.cartridges) {
		/* The map has no removal either: rebuilt. */
		m->cartridges.len = m->undo.cartridges;
		keel_map_clear(&m->cartridge_map);
		for (size_t i = 0; i < m->cartridges.len; i++) {
			struct mem_cartridge *c = m->cartridges.items[i];
			keel_map_put(&m->cartridge_map,
				     keel_hash64(c->tenant.ptr, c->tenant.len, 0), c);
		}
	}
	if (m->events.len != m->undo.events) {
		m->events.len = m->undo.events;
		mem_rebuild_event_map(m);
	}
	mem_undo_clear(m);
	return 0;
}

static uint64_t mem_event_hash(struct mem_event *e)
{
	if (!e->hash)
		e->hash = keel_hash64(e->envelope.ptr, e->envelope.len, 0);
	return e->hash;
}

/* A logged event as the scans hand it on. */
static struct keel_record mem_event_record(struct mem_event *e)
{
	return (struct keel_record){.type = KEEL_REC_EVENT,
				    .tenant = e->tenant,
				    .source = e->source,
				    .id = e->id,
				    .event_type = e->type,
				    .time = e->time,
				    .envelope = e->envelope,
				    .hash = mem_event_hash(e),
				    .seq = e->seq,
				    .recorded_at = e->recorded_at};
}

static struct mem_event *mem_find_event(struct keel_memory_store *m, struct keel_str tenant,
					struct keel_str source, struct keel_str id, uint64_t h)
{
	for (size_t i = keel_map_first(&m->event_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->event_map, h, i)) {
		struct mem_event *e = m->event_map.values[i];
		if (keel_str_eq(e->id, id) && keel_str_eq(e->source, source) &&
		    keel_str_eq(e->tenant, tenant))
			return e;
	}
	return NULL;
}

static int keel_memory_seen_ids(struct keel_store *s, struct keel_batch_event **ev,
				size_t n)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	keel_batch_key_hashes(ev, n); /* kept in each event: logging reuses them */
	for (size_t i = 0; i < n; i++) {
		struct mem_event *e = mem_find_event(m, ev[i]->tenant, ev[i]->source, ev[i]->id,
						     keel_batch_event_key_hash(ev[i]));
		if (e) {
			ev[i]->status = KEEL_EV_DUPLICATE;
			ev[i]->stored_hash = mem_event_hash(e);
			ev[i]->stored_seq = e->seq;
		}
	}
	return 0;
}

static struct keel_str mem_str(struct keel_memory_store *m, struct keel_str v)
{
	return v.ptr ? keel_arena_str(&m->arena, v) : v;
}

static void mem_add_tenant(struct keel_memory_store *m, struct keel_str t)
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
	char *copy = keel_arena_alloc(&m->arena, t.len + 1);
	memcpy(copy, t.ptr, t.len);
	copy[t.len] = '\0';
	keel_ptrvec_push(&m->tenants, NULL);
	memmove(&m->tenants.items[lo + 1], &m->tenants.items[lo],
		(m->tenants.len - 1 - lo) * sizeof *m->tenants.items);
	m->tenants.items[lo] = copy;
}

static void mem_log_event(struct keel_memory_store *m, struct keel_batch_event *ev)
{
	struct mem_event *e = keel_arena_alloc(&m->arena, sizeof *e);
	/* Runs of one tenant share the previous event's copy of its name. */
	const struct mem_event *prev =
	    m->events.len ? m->events.items[m->events.len - 1] : NULL;
	bool same = prev && keel_str_eq(prev->tenant, ev->tenant);
	e->tenant = same ? prev->tenant : mem_str(m, ev->tenant);
	e->source = mem_str(m, ev->source);
	e->id = mem_str(m, ev->id);
	e->type = mem_str(m, ev->type);
	e->envelope = mem_str(m, ev->envelope);
	e->time = ev->time;
	e->hash = ev->hash;
	e->seq = ev->seq = (int64_t)m->events.len + 1;
	e->recorded_at = ev->recorded_at;
	keel_ptrvec_push(&m->events, e);
	keel_map_put(&m->event_map, keel_batch_event_key_hash(ev), e);
	if (!same)
		mem_add_tenant(m, e->tenant);
}

static struct mem_timeline *mem_timeline(struct keel_memory_store *m,
					 const struct keel_assertion *a)
{
	uint64_t h = keel_timeline_hash(a->kind, a->tenant, a->subject, a->name, a->object);
	for (size_t i = keel_map_first(&m->timeline_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->timeline_map, h, i)) {
		struct mem_timeline *tl = m->timeline_map.values[i];
		if (tl->kind == a->kind && keel_str_eq(tl->subject, a->subject) &&
		    keel_str_eq(tl->name, a->name) && keel_str_eq(tl->tenant, a->tenant) &&
		    keel_str_eq(tl->object, a->object))
			return tl;
	}
	struct mem_timeline *tl = keel_arena_alloc(&m->arena, sizeof *tl);
	memset(tl, 0, sizeof *tl);
	tl->kind = a->kind;
	tl->tenant = mem_str(m, a->tenant);
	tl->subject = mem_str(m, a->subject);
	tl->name = mem_str(m, a->name);
	tl->object = mem_str(m, a->object);
	keel_map_put(&m->timeline_map, h, tl);
	keel_ptrvec_push(&m->timelines, tl);
	mem_add_tenant(m, tl->tenant);
	return tl;
}

/* Rows of a timeline stay in (valid_from, seq) order: a row goes after
 * every row with valid_from <= its own (it is the latest arrival). */
static void mem_insert_row(struct mem_timeline *tl, struct mem_row *row)
{
	/* In-order events land after the last row: no search, and none of
	 * its cache misses on long timelines. */
	size_t n = tl->rows.len;
	if (!n || ((struct mem_row *)tl->rows.items[n - 1])->a.valid_from <= row->a.valid_from) {
		keel_ptrvec_push(&tl->rows, row);
		return;
	}
	size_t lo = 0, hi = tl->rows.len;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mem_row *r = tl->rows.items[mid];
		if (r->a.valid_from <= row->a.valid_from)
			lo = mid + 1;
		else
			hi = mid;
	}
	keel_ptrvec_push(&tl->rows, NULL);
	memmove(&tl->rows.items[lo + 1], &tl->rows.items[lo],
		(tl->rows.len - 1 - lo) * sizeof *tl->rows.items);
	tl->rows.items[lo] = row;
}

static void mem_add_row(struct keel_memory_store *m, const struct keel_assertion *a)
{
	struct mem_timeline *tl = mem_timeline(m, a);
	struct mem_row *row = keel_arena_alloc(&m->arena, sizeof *row);
	row->a = *a;
	row->a.tenant = tl->tenant;
	row->a.subject = tl->subject;
	row->a.name = tl->name;
	row->a.object = tl->object;
	row->a.value = mem_str(m, a->value);
	row->a.asserted_by.source = mem_str(m, a->asserted_by.source);
	row->a.asserted_by.id = mem_str(m, a->asserted_by.id);
	row->seq = ++m->next_seq;
	mem_insert_row(tl, row);
	keel_ptrvec_push(&m->undo.rows, row);
}

static struct mem_entity *mem_entity(struct keel_memory_store *m, struct keel_str tenant,
				     struct keel_str subject)
{
	uint64_t h = keel_subject_hash(keel_tenant_hash(tenant), subject);
	for (size_t i = keel_map_first(&m->entity_map, h); i != SIZE_MAX;
	     i = keel_map_next(&m->entity_map, h, i)) {
		struct mem_entity *e = m->entity_map.values[i];
		if (keel_str_eq(e->subject, subject) && keel_str_eq(e->tenant, tenant))
			return e;
	}
	struct mem_entity *e = keel_arena_alloc(&m->arena, sizeof *e);
	memset(e, 0, sizeof *e);
	e->tenant = mem_str(m, tenant);
	e->subject = mem_str(m, subject);
	keel_map_put(&m->entity_map, h, e);
	keel_ptrvec_push(&m->entities, e);
	mem_add_tenant(m, e->tenant);
	return e;
}

static void mem_add_mention(struct keel_memory_store *m, const struct keel_mention *x)
{
	struct mem_entity *e = mem_entity(m, x->tenant, x->subject);
	struct keel_mention *c = keel_arena_alloc(&m->arena, sizeof *c);
	*c = *x;
	c->tenant = e->tenant;
	c->subject = e->subject;
	c->kind = mem_str(m, x->kind);
	keel_ptrvec_push(&e->mentions, c);
	keel_ptrvec_push(&m->undo.mentions, e);
}

static void mem_append(struct keel_memory_store *m, const struct keel_append *a)
{
	for (size_t i = 0; i < a->nevents; i++)
		mem_log_event(m, a->events[i]);
	for (size_t i = 0; i < a->nrows; i++)
		mem_add_row(m, &a->rows[i]);
	for (size_t i = 0; i < a->nmentions; i++)
		mem_add_mention(m, &a->mentions[i]);
}

static int keel_memory_append(struct keel_store *s, const struct keel_append *a)
{
	mem_append(keel_memory_downcast(s), a);
	return 0;
}

static int keel_memory_last_recorded_at(struct keel_store *s, int64_t *out)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	*out = m->events.len ? ((struct mem_event *)m->events.items[m->events.len - 1])->recorded_at
			     : 0;
	return 0;
}

static int keel_memory_tenants(struct keel_store *s, struct keel_ptrvec *out)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < m->tenants.len; i++)
		keel_ptrvec_push(out, keel_xstrdup(m->tenants.items[i]));
	return 0;
}

/* ------------------------------------------------------------- reading */

static bool mem_match(struct keel_str filter, struct keel_str value)
{
	return !filter.ptr || keel_str_eq(filter, value);
}

static bool mem_visible(const struct keel_scan *q, int64_t recorded_at)
{
	return !q->known_at_set || recorded_at <= q->known_at;
}

static int mem_cmp_entity(const void *pa, const void *pb)
{
	const struct mem_entity *a = *(const struct mem_entity *const *)pa;
	const struct mem_entity *b = *(const struct mem_entity *const *)pb;
	return keel_str_cmp(a->subject, b->subject);
}

static int mem_cmp_timeline(const void *pa, const void *pb)
{
	const struct mem_timeline *a = *(const struct mem_timeline *const *)pa;
	const struct mem_timeline *b = *(const struct mem_timeline *const *)pb;
	int c = keel_str_cmp(a->subject, b->subject);
	if (!c)
		c = keel_str_cmp(a->name, b->name);
	if (!c)
		c = keel_str_cmp(a->object, b->object);
	return c;
}

/* The entity as its visible mentions make it; false if none is. */
static bool mem_fold_entity(const struct mem_entity *e, const struct keel_scan *q,
			    struct keel_record *r)
{
	bool any = false;
	memset(r, 0, sizeof *r);
	r->type = KEEL_REC_ENTITY;
	r->tenant = e->tenant;
	r->subject = e->subject;
	for (size_t i = 0; i < e->mentions.len; i++) {
		const struct keel_mention *x = e->mentions.items[i];
		if (!mem_visible(q, x->recorded_at) ||
		    (q->recorded_set && x->recorded_at != q->recorded))
			continue;
		if (!any) {
			r->first_seen = x->first_seen;
			r->last_seen = x->last_seen;
		}
		if (x->first_seen < r->first_seen)
			r->first_seen = x->first_seen;
		if (x->last_seen > r->last_seen)
			r->last_seen = x->last_seen;
		if (x->kind.ptr && (!r->kind.ptr || x->kind_time <= r->kind_time)) {
			r->kind = x->kind;
			r->kind_time = x->kind_time;
		}
		if (x->recorded_at > r->recorded_at)
			r->recorded_at = x->recorded_at;
		any = true;
	}
	return any;
}

static int mem_scan_events(struct keel_memory_store *m, const struct keel_scan *q,
			   keel_scan_fn fn, void *ud)
{
	int rc = 0;
	for (size_t i = 0; i < m->events.len && !rc; i++) {
		struct mem_event *e = m->events.items[i];
		if (!keel_str_eq(e->tenant, q->tenant) || !mem_match(q->event_id, e->id) ||
		    (q->event_id.ptr && !keel_str_eq(q->event_source, e->source)) ||
		    !mem_visible(q, e->recorded_at) ||
		    (q->recorded_set && e->recorded_at != q->recorded))
			continue;
		struct keel_record r = mem_event_record(e);
		rc = fn(ud, &r);
	}
	return rc;
}

static int mem_scan_entities(struct keel_memory_store *m, const struct keel_scan *q,
			     keel_scan_fn fn, void *ud)
{
	struct keel_ptrvec hits = {0};
	int rc = 0;
	for (size_t i = 0; i < m->entities.len; i++) {
		struct mem_entity *e = m->entities.items[i];
		if (keel_str_eq(e->tenant, q->tenant) && mem_match(q->subject, e->subject))
			keel_ptrvec_push(&hits, e);
	}
	if (hits.len > 1)
		qsort(hits.items, hits.len, sizeof(void *), mem_cmp_entity);
	for (size_t i = 0; i < hits.len && !rc; i++) {
		struct keel_record r;
		if (mem_fold_entity(hits.items[i], q, &r))
			rc = fn(ud, &r);
	}
	keel_ptrvec_free(&hits);
	return rc;
}

static int mem_emit_row(const struct keel_scan *q, const struct mem_row *row,
			keel_scan_fn fn, void *ud)
{
	struct keel_record r = {.type = q->type,
				.tenant = row->a.tenant,
				.subject = row->a.subject,
				.name = row->a.name,
				.object = row->a.object,
				.value = row->a.value,
				.linked = row->a.linked,
				.valid_from = row->a.valid_from,
				.valid_to = KEEL_TIME_INF,
				.asserted_by = row->a.asserted_by,
				.seq = row->seq,
				.recorded_at = row->a.recorded_at};
	return fn(ud, &r);
}

/* One timeline's visible rows; with at_set only the last with
 * valid_from <= at and the one after it (the raw contract, store.h). */
static int mem_scan_timeline(const struct mem_timeline *tl, const struct keel_scan *q,
			     keel_scan_fn fn, void *ud)
{
	const struct mem_row *before = NULL, *after = NULL;
	for (size_t k = 0; k < tl->rows.len; k++) {
		const struct mem_row *row = tl->rows.items[k];
		if (!mem_visible(q, row->a.recorded_at))
			continue;
		if (!q->at_set) {
			int rc = mem_emit_row(q, row, fn, ud);
			if (rc)
				return rc;
		} else if (row->a.valid_from <= q->at) {
			before = row;
		} else {
			after = row;
			break;
		}
	}
	int rc = 0;
	if (before)
		rc = mem_emit_row(q, before, fn, ud);
	if (!rc && after)
		rc = mem_emit_row(q, after, fn, ud);
	return rc;
}

static int keel_memory_scan(struct keel_store *s, const struct keel_scan *q,
			    keel_scan_fn fn, void *ud)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	if (q->type == KEEL_REC_EVENT)
		return mem_scan_events(m, q, fn, ud);
	if (q->type == KEEL_REC_ENTITY)
		return mem_scan_entities(m, q, fn, ud);
	enum keel_row_kind kind = q->type == KEEL_REC_FACT ? KEEL_ROW_FACT : KEEL_ROW_RELATION;
	struct keel_ptrvec hits = {0};
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (tl->kind == kind && keel_str_eq(tl->tenant, q->tenant) &&
		    mem_match(q->subject, tl->subject) && mem_match(q->name, tl->name) &&
		    (kind == KEEL_ROW_FACT || mem_match(q->object, tl->object)))
			keel_ptrvec_push(&hits, tl);
	}
	if (hits.len > 1)
		qsort(hits.items, hits.len, sizeof(void *), mem_cmp_timeline);
	int rc = 0;
	for (size_t i = 0; i < hits.len && !rc; i++)
		rc = mem_scan_timeline(hits.items[i], q, fn, ud);
	keel_ptrvec_free(&hits);
	return rc;
}

static int keel_memory_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
			      uint64_t out[4])
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_scan q = {.tenant = tenant, .known_at_set = true, .known_at = known_at};
	memset(out, 0, 4 * sizeof *out);
	for (size_t i = 0; i < m->entities.len; i++) {
		struct mem_entity *e = m->entities.items[i];
		struct keel_record r;
		out[0] += keel_str_eq(e->tenant, tenant) && mem_fold_entity(e, &q, &r);
	}
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (!keel_str_eq(tl->tenant, tenant))
			continue;
		for (size_t k = 0; k < tl->rows.len; k++)
			out[tl->kind == KEEL_ROW_FACT ? 1 : 2] +=
			    mem_visible(&q, ((struct mem_row *)tl->rows.items[k])->a.recorded_at);
	}
	for (size_t i = 0; i < m->events.len; i++) {
		struct mem_event *e = m->events.items[i];
		out[3] += keel_str_eq(e->tenant, tenant) && mem_visible(&q, e->recorded_at);
	}
	return 0;
}

/* ------------------------------------------------------------- finding */

static int mem_cmp_subject(const void *pa, const void *pb)
{
	return keel_str_cmp(**(const struct keel_str *const *)pa,
			    **(const struct keel_str *const *)pb);
}

/* The first q->limit of the matching subjects (each matched once: an
 * entity, or a timeline of one predicate, per subject), sorted. */
static void mem_take_subjects(struct keel_ptrvec *found, const struct keel_candidates *q,
			      struct keel_ptrvec *out)
{
	if (found->len)
		qsort(found->items, found->len, sizeof *found->items, mem_cmp_subject);
	for (size_t i = 0; i < found->len && i < q->limit; i++) {
		const struct keel_str *subject = found->items[i];
		keel_ptrvec_push(out, keel_xstrndup(subject->ptr, subject->len));
	}
	keel_ptrvec_free(found);
}

static bool mem_after(const struct keel_candidates *q, struct keel_str subject)
{
	return !q->after.ptr || keel_str_cmp(subject, q->after) > 0;
}

/* A scan of every entity: the memory store has no index to range over. */
static int keel_memory_entity_subjects(struct keel_store *s,
				       const struct keel_candidates *q,
				       struct keel_ptrvec *out)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_ptrvec found = {0};
	for (size_t i = 0; i < m->entities.len; i++) {
		struct mem_entity *e = m->entities.items[i];
		if (!keel_str_eq(e->tenant, q->tenant) || !mem_after(q, e->subject))
			continue;
		if (q->prefix.ptr && (e->subject.len < q->prefix.len ||
				      (q->prefix.len && memcmp(e->subject.ptr, q->prefix.ptr,
							       q->prefix.len) != 0)))
			continue;
		bool kind = !q->kind.ptr;
		for (size_t k = 0; !kind && k < e->mentions.len; k++) {
			const struct keel_mention *x = e->mentions.items[k];
			kind = x->kind.ptr && keel_str_eq(x->kind, q->kind);
		}
		if (kind)
			keel_ptrvec_push(&found, &e->subject);
	}
	mem_take_subjects(&found, q, out);
	return 0;
}

static int keel_memory_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
				     struct keel_ptrvec *out)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_ptrvec found = {0};
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (tl->kind != KEEL_ROW_FACT || !keel_str_eq(tl->tenant, q->tenant) ||
		    !keel_str_eq(tl->name, q->predicate) || !mem_after(q, tl->subject))
			continue;
		for (size_t k = 0; k < tl->rows.len; k++) {
			const struct mem_row *row = tl->rows.items[k];
			if (row->a.value.ptr && keel_str_eq(row->a.value, q->value)) {
				keel_ptrvec_push(&found, &tl->subject);
				break;
			}
		}
	}
	mem_take_subjects(&found, q, out);
	return 0;
}

/* ------------------------------------------- replay (docs/replay.md) */

static int keel_memory_replace_tenant(struct keel_store *s, struct keel_str tenant,
				      const struct keel_replace_scope *scope,
				      const struct keel_append *a, uint64_t log_events,
				      struct keel_buf *note)
{
	(void)log_events;
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; !(scope && scope->more) && i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (keel_str_eq(tl->tenant, tenant) &&
		    keel_replace_scope_covers(scope, tl->kind, tl->name))
			tl->rows.len = 0;
	}
	if (!scope || (scope->entities && !scope->more))
		for (size_t i = 0; i < m->entities.len; i++) {
			struct mem_entity *e = m->entities.items[i];
			if (keel_str_eq(e->tenant, tenant))
				e->mentions.len = 0;
		}
	mem_append(m, a);
	m->undo.replaced = true;
	keel_buf_adds(note, "memory store: rows replaced in memory");
	return 0;
}

/* ----------------------------------- forgetting (docs/semantics.md) */

static int keel_memory_forget(struct keel_store *s, struct keel_str tenant,
			      const struct keel_redaction *r, size_t n,
			      const struct keel_tombstone *t)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < n; i++) {
		if (r[i].seq < 1 || (uint64_t)r[i].seq > m->events.len)
			return keel_store_fail(s, KEEL_ESTORE, "no event with seq %lld",
					       (long long)r[i].seq);
		struct mem_event *e = m->events.items[r[i].seq - 1];
		if (!keel_str_eq(e->tenant, tenant))
			return keel_store_fail(s, KEEL_ESTORE,
					       "event %lld is not the tenant's",
					       (long long)r[i].seq);
		/* The hash of what was received, before the envelope changes:
		 * a redelivery stays a plain duplicate. */
		mem_event_hash(e);
		e->envelope = mem_str(m, r[i].envelope);
	}
	m->undo.replaced = true; /* the envelopes cannot be taken back */
	if (!t)
		return 0;
	struct keel_tombstone *x = NULL;
	for (size_t i = 0; i < m->tombstones.len && !x; i++) {
		struct keel_tombstone *y = m->tombstones.items[i];
		if (keel_str_eq(y->tenant, t->tenant) &&
		    !strcmp(y->subject_hash, t->subject_hash))
			x = y;
	}
	if (!x) {
		x = keel_arena_alloc(&m->arena, sizeof *x);
		keel_ptrvec_push(&m->tombstones, x);
	}
	*x = *t;
	x->tenant = mem_str(m, t->tenant);
	x->forgotten_by = mem_str(m, t->forgotten_by);
	return 0;
}

/* Whether a row names subject (quoted: as a JSON string). */
static bool mem_names(const struct mem_timeline *tl, const struct mem_row *row,
		      struct keel_str subject, struct keel_str quoted)
{
	if (keel_str_eq(tl->subject, subject))
		return true;
	if (tl->kind == KEEL_ROW_RELATION)
		return keel_str_eq(tl->object, subject);
	return row->a.value.ptr && keel_str_eq(row->a.value, quoted);
}

static bool mem_type_in(struct keel_str type, const struct keel_str *types, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keel_str_eq(type, types[i]))
			return true;
	return false;
}

/* Whether f's types and span make e a candidate (struct keel_forget_find). */
static bool mem_rowless_hit(const struct keel_forget_find *f, const struct mem_event *e)
{
	static const char marker[] = "keelredacted";
	if (e->time < f->from || e->time > f->to)
		return false;
	return mem_type_in(e->type, f->always, f->nalways) ||
	       (mem_type_in(e->type, f->redacted, f->nredacted) &&
		memmem(e->envelope.ptr, e->envelope.len, marker, sizeof marker - 1));
}

static int keel_memory_forget_find(struct keel_store *s, struct keel_str tenant,
				   const struct keel_forget_find *f, keel_scan_fn fn, void *ud)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	struct keel_str subject = f->subject, quoted = f->quoted;
	/* The events that asserted a row naming it, by identity. */
	struct keel_map asserted;
	keel_map_init(&asserted);
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (!keel_str_eq(tl->tenant, tenant))
			continue;
		for (size_t k = 0; k < tl->rows.len; k++) {
			struct mem_row *row = tl->rows.items[k];
			if (mem_names(tl, row, subject, quoted))
				keel_map_put(&asserted,
					     keel_event_key_hash(tenant, row->a.asserted_by.source,
								 row->a.asserted_by.id),
					     row);
		}
	}
	int rc = 0;
	for (size_t i = 0; i < m->events.len && !rc; i++) {
		struct mem_event *e = m->events.items[i];
		if (!keel_str_eq(e->tenant, tenant))
			continue;
		bool hit = memchr(e->envelope.ptr, '\\', e->envelope.len) ||
			   memmem(e->envelope.ptr, e->envelope.len, subject.ptr, subject.len) ||
			   mem_rowless_hit(f, e);
		uint64_t h = keel_event_key_hash(tenant, e->source, e->id);
		for (size_t k = keel_map_first(&asserted, h); !hit && k != SIZE_MAX;
		     k = keel_map_next(&asserted, h, k)) {
			const struct mem_row *row = asserted.values[k];
			hit = keel_str_eq(row->a.asserted_by.source, e->source) &&
			      keel_str_eq(row->a.asserted_by.id, e->id);
		}
		if (!hit)
			continue;
		struct keel_record r = mem_event_record(e);
		rc = fn(ud, &r);
	}
	keel_map_free(&asserted);
	return rc;
}

static int keel_memory_forget_rows(struct keel_store *s, struct keel_str tenant,
				   struct keel_str subject, struct keel_str quoted,
				   const struct keel_mention_fix *fix, size_t n,
				   uint64_t *removed)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	m->undo.replaced = true; /* nothing deleted can be taken back */
	for (size_t i = 0; i < m->timelines.len; i++) {
		struct mem_timeline *tl = m->timelines.items[i];
		if (!keel_str_eq(tl->tenant, tenant))
			continue;
		size_t w = 0;
		for (size_t k = 0; k < tl->rows.len; k++) {
			struct mem_row *row = tl->rows.items[k];
			if (!mem_names(tl, row, subject, quoted))
				tl->rows.items[w++] = row;
		}
		*removed += tl->rows.len - w;
		tl->rows.len = w;
	}
	for (size_t i = 0; i < m->entities.len; i++) {
		struct mem_entity *e = m->entities.items[i];
		if (!keel_str_eq(e->tenant, tenant))
			continue;
		if (keel_str_eq(e->subject, subject)) {
			e->mentions.len = 0;
			continue;
		}
		for (size_t j = 0; j < n; j++) {
			if (!keel_str_eq(e->subject, fix[j].subject))
				continue;
			size_t w = 0;
			for (size_t k = 0; k < e->mentions.len; k++) {
				struct keel_mention *x = e->mentions.items[k];
				if (x->recorded_at == fix[j].recorded_at) {
					if (fix[j].gone)
						continue;
					x->first_seen = fix[j].first_seen;
					x->last_seen = fix[j].last_seen;
				}
				e->mentions.items[w++] = x;
			}
			e->mentions.len = w;
		}
	}
	return 0;
}

static int keel_memory_tombstone(struct keel_store *s, struct keel_str tenant,
				 const char *subject_hash, struct keel_tombstone *out,
				 struct keel_buf *buf)
{
	(void)buf;
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; i < m->tombstones.len; i++) {
		struct keel_tombstone *y = m->tombstones.items[i];
		if (keel_str_eq(y->tenant, tenant) && !strcmp(y->subject_hash, subject_hash)) {
			*out = *y;
			return 0;
		}
	}
	return KEEL_ENOTFOUND;
}

/* The latest record of the tenant (read once per tenant an ingester
 * meets: a map, since there may be many). */
static const struct mem_cartridge *mem_cartridge(struct keel_memory_store *m,
						 struct keel_str tenant)
{
	const struct mem_cartridge *latest = NULL;
	uint64_t h = keel_hash64(tenant.ptr, tenant.len, 0);
	for (size_t k = keel_map_first(&m->cartridge_map, h); k != SIZE_MAX;
	     k = keel_map_next(&m->cartridge_map, h, k)) {
		const struct mem_cartridge *c = m->cartridge_map.values[k];
		if (keel_str_eq(c->tenant, tenant) && (!latest || c->order > latest->order))
			latest = c;
	}
	return latest;
}

/* The one copy of the cartridge r records (its hash determines the rest). */
static const struct keel_cartridge_record *mem_cartridge_kind(struct keel_memory_store *m,
							      const struct keel_cartridge_record *r)
{
	for (size_t i = 0; i < m->cartridge_kinds.len; i++) {
		const struct keel_cartridge_record *k = m->cartridge_kinds.items[i];
		if (keel_str_eq(k->hash, r->hash))
			return k;
	}
	struct keel_cartridge_record *k = keel_arena_alloc(&m->arena, sizeof *k);
	*k = (struct keel_cartridge_record){
	    .name = mem_str(m, r->name),
	    .version = mem_str(m, r->version),
	    .hash = mem_str(m, r->hash),
	    .text = mem_str(m, r->text),
	};
	keel_ptrvec_push(&m->cartridge_kinds, k);
	return k;
}

static int keel_memory_cartridge_get(struct keel_store *s, struct keel_str tenant,
				     struct keel_cartridge_record *out,
				     struct keel_arena *hold)
{
	(void)hold; /* the store's own strings live as long as it */
	const struct mem_cartridge *c = mem_cartridge(keel_memory_downcast(s), tenant);
	if (!c)
		return KEEL_ENOTFOUND;
	*out = c->r;
	return 0;
}

static int keel_memory_cartridge_put(struct keel_store *s, const struct keel_str *tenants,
				     size_t n, const struct keel_cartridge_record *r,
				     bool replace)
{
	struct keel_memory_store *m = keel_memory_downcast(s);
	for (size_t i = 0; !replace && i < n; i++)
		if (mem_cartridge(m, tenants[i]))
			return keel_store_fail(s, KEEL_ESTORE,
					       "tenant \"%.*s\": a cartridge is recorded already",
					       (int)tenants[i].len, tenants[i].ptr);
	const struct keel_cartridge_record *kind = mem_cartridge_kind(m, r);
	for (size_t i = 0; i < n; i++) {
		struct mem_cartridge *c = keel_arena_alloc(&m->arena, sizeof *c);
		c->tenant = mem_str(m, tenants[i]);
		c->r = *kind;
		c->r.recorded_at = r->recorded_at;
		c->order = m->cartridges.len;
		keel_ptrvec_push(&m->cartridges, c);
		keel_map_put(&m->cartridge_map, keel_hash64(c->tenant.ptr, c->tenant.len, 0),
			     c);
	}
	return 0;
}

const struct keel_store_ops keel_store_memory_ops = {
	.scheme = "memory",
	.url_form = "memory:",
	.open = keel_memory_open,
	.close = keel_memory_close,
	.begin = keel_memory_begin,
	.commit = keel_memory_commit,
	.rollback = keel_memory_rollback,
	.last_recorded_at = keel_memory_last_recorded_at,
	.seen_ids = keel_memory_seen_ids,
	.append = keel_memory_append,
	.tenants = keel_memory_tenants,
	.scan = keel_memory_scan,
	.counts = keel_memory_counts,
	.entity_subjects = keel_memory_entity_subjects,
	.fact_subjects = keel_memory_fact_subjects,
	.replace_tenant = keel_memory_replace_tenant,
	.forget = keel_memory_forget,
	.forget_find = keel_memory_forget_find,
	.forget_rows = keel_memory_forget_rows,
	.tombstone = keel_memory_tombstone,
	.cartridge_get = keel_memory_cartridge_get,
	.cartridge_put = keel_memory_cartridge_put,
	.hashes_on_demand = true,
};
