/*
 * append.c - building a batch's assertions and mentions (append.h).
 */
#include "append.h"

#include <stdlib.h>
#include <string.h>

void keel_append_builder_init(struct keel_append_builder *b, bool copy_strings)
{
	memset(b, 0, sizeof *b);
	b->copy_strings = copy_strings;
	keel_arena_init(&b->arena);
	keel_map_init(&b->group_map);
}

void keel_append_builder_free(struct keel_append_builder *b)
{
	keel_arena_free(&b->arena);
	free(b->rows);
	free(b->mentions);
	keel_map_free(&b->group_map);
}

void keel_append_builder_reset(struct keel_append_builder *b)
{
	keel_arena_reset(&b->arena);
	keel_map_clear(&b->group_map);
	b->nrows = 0;
	b->nmentions = 0;
	b->group_start = 0;
	b->group_open = false;
}

static struct keel_str keep(struct keel_append_builder *b, struct keel_str s)
{
	return b->copy_strings && s.ptr ? keel_arena_str(&b->arena, s) : s;
}

void keel_mention_fold(struct keel_mention *m, int64_t t, struct keel_str kind)
{
	if (t < m->first_seen)
		m->first_seen = t;
	if (t > m->last_seen)
		m->last_seen = t;
	if (kind.ptr && (!m->kind.ptr || t <= m->kind_time)) {
		m->kind = kind;
		m->kind_time = t;
	}
}

static struct keel_mention *mention_push(struct keel_append_builder *b)
{
	if (b->nmentions == b->mentions_cap) {
		b->mentions_cap = b->mentions_cap ? 2 * b->mentions_cap : 64;
		b->mentions = keel_xrealloc(b->mentions, b->mentions_cap * sizeof *b->mentions);
	}
	return &b->mentions[b->nmentions++];
}

/* The open group's mention of (tenant, subject), or NULL; a mention with
 * another recorded_at opens a new group. */
static struct keel_mention *group_find(struct keel_append_builder *b, struct keel_str tenant,
				       struct keel_str subject, int64_t recorded_at,
				       uint64_t *hash)
{
	if (!b->group_open || recorded_at != b->group_recorded_at) {
		keel_map_clear(&b->group_map);
		b->group_start = b->nmentions;
		b->group_recorded_at = recorded_at;
		b->group_open = true;
	}
	uint64_t h = keel_subject_hash(keel_tenant_hash(tenant), subject);
	*hash = h;
	struct keel_map *map = &b->group_map;
	for (size_t k = keel_map_first(map, h); k != SIZE_MAX; k = keel_map_next(map, h, k)) {
		struct keel_mention *m = &b->mentions[(uintptr_t)map->values[k] - 1];
		if (keel_str_eq(m->subject, subject) && keel_str_eq(m->tenant, tenant))
			return m;
	}
	return NULL;
}

static void group_add(struct keel_append_builder *b, const struct keel_mention *m,
		      uint64_t hash)
{
	struct keel_mention *c = mention_push(b);
	*c = *m;
	c->tenant = keep(b, m->tenant);
	c->subject = keep(b, m->subject);
	c->kind = keep(b, m->kind);
	keel_map_put(&b->group_map, hash, (void *)(uintptr_t)b->nmentions);
}

/* Folds a later mention x into m, which it joins. */
static void fold_into(struct keel_append_builder *b, struct keel_mention *m,
		      int64_t first, int64_t last, struct keel_str kind, int64_t kind_time)
{
	keel_mention_fold(m, first, KEEL_STR_NULL);
	keel_mention_fold(m, last, KEEL_STR_NULL);
	struct keel_str before = m->kind;
	if (kind.ptr)
		keel_mention_fold(m, kind_time, kind);
	if (m->kind.ptr != before.ptr)
		m->kind = keep(b, kind);
}

static void mention(struct keel_append_builder *b, struct keel_str tenant,
		    struct keel_str subject, int64_t t, struct keel_str kind,
		    int64_t recorded_at)
{
	uint64_t h;
	struct keel_mention *m = group_find(b, tenant, subject, recorded_at, &h);
	if (m) {
		fold_into(b, m, t, t, kind, t);
		return;
	}
	struct keel_mention x = {.tenant = tenant,
				 .subject = subject,
				 .kind = kind,
				 .kind_time = kind.ptr ? t : 0,
				 .first_seen = t,
				 .last_seen = t,
				 .recorded_at = recorded_at};
	group_add(b, &x, h);
}

void keel_append_fold_mentions(struct keel_append_builder *b, const struct keel_mention *x,
			       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t h;
		struct keel_mention *m =
		    group_find(b, x[i].tenant, x[i].subject, x[i].recorded_at, &h);
		if (m)
			fold_into(b, m, x[i].first_seen, x[i].last_seen, x[i].kind,
				  x[i].kind_time);
		else
			group_add(b, &x[i], h);
	}
}

void keel_append_add_row(struct keel_append_builder *b, const struct keel_assertion *r)
{
	if (b->nrows == b->rows_cap) {
		b->rows_cap = b->rows_cap ? 2 * b->rows_cap : 256;
		b->rows = keel_xrealloc(b->rows, b->rows_cap * sizeof *b->rows);
	}
	struct keel_assertion *a = &b->rows[b->nrows++];
	*a = *r;
	a->tenant = keep(b, r->tenant);
	a->subject = keep(b, r->subject);
	a->name = keep(b, r->name);
	a->object = keep(b, r->object);
	a->value = keep(b, r->value);
	a->asserted_by.source = keep(b, r->asserted_by.source);
	a->asserted_by.id = keep(b, r->asserted_by.id);
}

void keel_append_add_mention(struct keel_append_builder *b, const struct keel_mention *m)
{
	struct keel_mention *c = mention_push(b);
	*c = *m;
	c->tenant = keep(b, m->tenant);
	c->subject = keep(b, m->subject);
	c->kind = keep(b, m->kind);
	b->group_open = false; /* a restored mention is a group of its own */
}

void keel_append_add_event(struct keel_append_builder *b, const struct keel_batch_event *ev)
{
	for (size_t i = 0; i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		if (op->kind == KEEL_OP_ENTITY) {
			mention(b, ev->tenant, op->subject, ev->time, op->name, ev->recorded_at);
			continue;
		}
		mention(b, ev->tenant, op->subject, ev->time, KEEL_STR_NULL, ev->recorded_at);
		bool relation = op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK;
		if (relation)
			mention(b, ev->tenant, op->object, ev->time, KEEL_STR_NULL,
				ev->recorded_at);
		struct keel_assertion r = {
		    .kind = relation ? KEEL_ROW_RELATION : KEEL_ROW_FACT,
		    .tenant = ev->tenant,
		    .subject = op->subject,
		    .name = op->name,
		    .object = relation ? op->object : KEEL_STR_NULL,
		    .value = op->kind == KEEL_OP_FACT ? op->value : KEEL_STR_NULL,
		    .linked = op->kind == KEEL_OP_LINK,
		    .valid_from = ev->time,
		    .asserted_by = {ev->source, ev->id},
		    .recorded_at = ev->recorded_at,
		};
		keel_append_add_row(b, &r);
	}
}

void keel_append_stamp(const struct keel_append *a, int64_t recorded_at)
{
	for (size_t i = 0; i < a->nevents; i++)
		a->events[i]->recorded_at = recorded_at;
	for (size_t i = 0; i < a->nrows; i++)
		a->rows[i].recorded_at = recorded_at;
	for (size_t i = 0; i < a->nmentions; i++)
		a->mentions[i].recorded_at = recorded_at;
}

struct keel_append keel_append_view(const struct keel_append_builder *b,
				    struct keel_batch_event **ev, size_t n)
{
	return (struct keel_append){.events = ev,
				    .nevents = n,
				    .rows = b->rows,
				    .nrows = b->nrows,
				    .mentions = b->mentions,
				    .nmentions = b->nmentions};
}
