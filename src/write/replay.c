/*
 * replay.c - replay: a tenant built in memory, then written
 * in bulk (docs/replay.md).
 *
 * Two entry points share everything below the first section:
 *   keel_replay     rebuilds one tenant from its own event log with the
 *                   current cartridge (keel replay);
 *   keel_bulk_*     loads tenants that are new to the store from an input
 *                   (KEEL_INGEST_BULK: keel ingest --replay), logging the
 *                   events too; its report counts events accepted only
 *                   once they are written.
 *
 * Both take the ingestion path's own pieces, not a second implementation
 * of its semantics: an envelope is parsed, validated and run through the
 * cartridge exactly as keel_ingest_add does (same rules, same messages),
 * and its operations become assertions and mentions through the same
 * builder (append.c), in arrival order, each carrying its event's
 * recorded_at, so that the graph reads as known at any moment after a
 * replay as before it. One builder holds the whole tenant; its strings are
 * copied into the builder's arena, which lives as long as the build; the
 * per-event operations live in a scratch arena rewound after each event.
 *
 * The assertions are handed, in arrival order, to the store's
 * replace_tenant op inside one transaction: delete the tenant's rows and
 * mentions, append the new ones in bulk.
 *
 * The report compares the derived rows before and after as multisets per
 * predicate and relation: each row is reduced to a 64-bit hash of all its
 * dump fields, the hashes of each group are sorted and merged.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keel.h"
#include "options.h"
#include "event/batch.h"
#include "cartridge/cartridge.h"
#include "event/envelope.h"
#include "ingest.h"
#include "event/json.h"
#include "append.h"
#include "prepare.h"
#include "store/store.h"
#include "cartridge/tenant.h"
#include "store/timeline.h"
#include "util.h"

/* --------------------------------------------------------------- scope */

bool keel_replace_scope_covers(const struct keel_replace_scope *scope,
			       enum keel_row_kind kind, struct keel_str name)
{
	if (!scope)
		return true;
	for (size_t i = 0; i < scope->nnames[kind]; i++)
		if (keel_str_eq(scope->names[kind][i], name))
			return true;
	return false;
}

static double keel_replay_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------- preparing an event */

/* Events are prepared as the ingester prepares them (prepare.c), each in a
 * scratch arena that lives until the next one. */
struct keel_replay_prep {
	struct keel_prep p;
	struct keel_arena scratch;
};

static void keel_replay_prep_init(struct keel_replay_prep *rp,
				  const struct keel_cartridge *c,
				  struct keel_report *report)
{
	keel_prep_init(&rp->p, c, report);
	keel_arena_init(&rp->scratch);
}

static void keel_replay_prep_free(struct keel_replay_prep *rp)
{
	keel_prep_free(&rp->p);
	keel_arena_free(&rp->scratch);
}

/* Returns the event (valid until the next call) or NULL when rejected. */
static struct keel_batch_event *keel_replay_prep_event(struct keel_replay_prep *rp,
							const char *text, size_t len,
							uint64_t position)
{
	keel_arena_reset(&rp->scratch);
	struct keel_batch_event *ev = keel_prep_event(&rp->p, &rp->scratch, text, len,
						      position);
	if (ev)
		ev->status = KEEL_EV_ACCEPTED;
	return ev;
}

/* ------------------------------------------------- a tenant in memory */

struct keel_build {
	char *tenant; /* NUL-terminated */
	struct keel_append_builder ab; /* the tenant's assertions and mentions */
	/* bulk loads only: the events to log, and their ids */
	struct keel_arena log;
	struct keel_ptrvec events;
	struct keel_map ids;
	uint64_t log_events; /* replay: events read from the log */
	uint64_t unhandled;
};

static struct keel_build *keel_build_new(struct keel_str tenant)
{
	struct keel_build *b = keel_xcalloc(1, sizeof *b);
	b->tenant = keel_xstrndup(tenant.ptr, tenant.len);
	keel_append_builder_init(&b->ab, true);
	keel_arena_init(&b->log);
	keel_map_init(&b->ids);
	return b;
}

static void keel_build_free(struct keel_build *b)
{
	if (!b)
		return;
	keel_append_builder_free(&b->ab);
	keel_arena_free(&b->log);
	keel_ptrvec_free(&b->events);
	keel_map_free(&b->ids);
	free(b->tenant);
	free(b);
}

/* One accepted event's assertions and mentions (ev->recorded_at set). */
static void keel_build_apply(struct keel_build *b, struct keel_batch_event *ev)
{
	keel_append_add_event(&b->ab, ev);
	b->unhandled += ev->unhandled;
}

/* Sorting the build's rows into timeline order, (valid_from, arrival)
 * within each, to derive them as a store's scan would be derived. */
static const struct keel_assertion *keel_sort_rows;

static int keel_build_cmp_row(const void *pa, const void *pb)
{
	const struct keel_assertion *a = &keel_sort_rows[*(const size_t *)pa];
	const struct keel_assertion *b = &keel_sort_rows[*(const size_t *)pb];
	int c;
	if ((c = (int)a->kind - (int)b->kind) || (c = keel_str_cmp(a->subject, b->subject)) ||
	    (c = keel_str_cmp(a->name, b->name)) || (c = keel_str_cmp(a->object, b->object)))
		return c;
	if (a->valid_from != b->valid_from)
		return a->valid_from < b->valid_from ? -1 : 1;
	return (*(const size_t *)pa > *(const size_t *)pb) - (*(const size_t *)pa < *(const size_t *)pb);
}

static const struct keel_mention *keel_sort_mentions;

static int keel_build_cmp_mention(const void *pa, const void *pb)
{
	const struct keel_mention *a = &keel_sort_mentions[*(const size_t *)pa];
	const struct keel_mention *b = &keel_sort_mentions[*(const size_t *)pb];
	int c = keel_str_cmp(a->subject, b->subject);
	if (c)
		return c;
	return (*(const size_t *)pa > *(const size_t *)pb) - (*(const size_t *)pa < *(const size_t *)pb);
}

/* ------------------------------------------------------------ the diff */

static uint64_t keel_hash_str(uint64_t h, struct keel_str s)
{
	if (!s.ptr)
		return keel_hash64("\xff", 1, h ^ 0x6e756c6cu);
	uint64_t n = s.len;
	h = keel_hash64(&n, sizeof n, h);
	return keel_hash64(s.ptr, s.len, h);
}

static uint64_t keel_hash_i64(uint64_t h, int64_t v)
{
	return keel_hash64(&v, sizeof v, h);
}

/* kind_time is not in the dump, but it is stored state that decides
 * later mentions' kind: an entity that differs only there has changed. */
static uint64_t keel_hash_entity(struct keel_str subject, struct keel_str kind,
				 int64_t kind_time, int64_t first, int64_t last)
{
	uint64_t h = keel_hash_str(1, subject);
	h = keel_hash_str(h, kind);
	h = keel_hash_i64(h, kind_time);
	h = keel_hash_i64(h, first);
	return keel_hash_i64(h, last);
}

static uint64_t keel_hash_row(struct keel_str subject, struct keel_str object,
			      struct keel_str value, bool linked, int64_t from,
			      int64_t to, struct keel_event_ref asserted_by,
			      struct keel_event_ref closed_by)
{
	uint64_t h = keel_hash_str(2, subject);
	h = keel_hash_str(h, object);
	h = keel_hash_str(h, value);
	h = keel_hash_i64(h, linked);
	h = keel_hash_i64(h, from);
	h = keel_hash_i64(h, to);
	h = keel_hash_str(h, asserted_by.source);
	h = keel_hash_str(h, asserted_by.id);
	h = keel_hash_str(h, closed_by.source);
	return keel_hash_str(h, closed_by.id);
}

struct keel_u64vec {
	uint64_t *v;
	size_t len, cap;
};

static void keel_u64vec_push(struct keel_u64vec *u, uint64_t x)
{
	if (u->len == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 16;
		u->v = keel_xrealloc(u->v, u->cap * sizeof *u->v);
	}
	u->v[u->len++] = x;
}

/* One table/name: the hashes of its rows before and after. */
struct keel_diff_group {
	int table; /* 0 entities, 1 facts, 2 relations */
	char *name;
	size_t name_len;
	struct keel_u64vec side[2]; /* 0 before, 1 after */
	bool after_sorted;
};

struct keel_diff {
	struct keel_map map;
	struct keel_ptrvec groups;
	struct keel_diff_group *last; /* scans come grouped: skip the lookup */
};

static const char *const keel_diff_tables[] = {"entities", "facts", "relations"};

static struct keel_diff_group *keel_diff_group(struct keel_diff *d, int table,
					       struct keel_str name)
{
	if (d->last && d->last->table == table && d->last->name_len == name.len &&
	    (!name.len || memcmp(d->last->name, name.ptr, name.len) == 0))
		return d->last;
	uint64_t h = keel_hash_str((uint64_t)table + 100, name);
	for (size_t i = keel_map_first(&d->map, h); i != SIZE_MAX;
	     i = keel_map_next(&d->map, h, i)) {
		struct keel_diff_group *g = d->map.values[i];
		if (g->table == table && g->name_len == name.len &&
		    (!name.len || memcmp(g->name, name.ptr, name.len) == 0))
			return d->last = g;
	}
	struct keel_diff_group *g = keel_xcalloc(1, sizeof *g);
	g->table = table;
	g->name = keel_xstrndup(name.ptr ? name.ptr : "", name.len);
	g->name_len = name.len;
	keel_map_put(&d->map, h, g);
	keel_ptrvec_push(&d->groups, g);
	return d->last = g;
}

static void keel_diff_free(struct keel_diff *d)
{
	for (size_t i = 0; i < d->groups.len; i++) {
		struct keel_diff_group *g = d->groups.items[i];
		free(g->name);
		free(g->side[0].v);
		free(g->side[1].v);
		free(g);
	}
	keel_ptrvec_free(&d->groups);
	keel_map_free(&d->map);
}

static int keel_diff_scan_record(void *ud, const struct keel_record *r)
{
	struct keel_diff *d = ud;
	if (r->type == KEEL_REC_ENTITY) {
		struct keel_diff_group *g = keel_diff_group(d, 0, keel_str_make("", 0));
		keel_u64vec_push(
		    &g->side[0],
		    keel_hash_entity(r->subject, r->kind, r->kind_time, r->first_seen,
				     r->last_seen));
		return 0;
	}
	bool fact = r->type == KEEL_REC_FACT;
	struct keel_diff_group *g = keel_diff_group(d, fact ? 1 : 2, r->name);
	keel_u64vec_push(&g->side[0],
			 keel_hash_row(r->subject, fact ? KEEL_STR_NULL : r->object,
				       fact ? r->value : KEEL_STR_NULL,
				       fact ? false : r->linked, r->valid_from,
				       r->valid_to, r->asserted_by, r->closed_by));
	return 0;
}

/* The build's side of the diff: its entities folded from their mentions,
 * its rows derived (valid_to and closed_by from the next assertion of the
 * timeline), as a scan of the store would give them once written. Runs on
 * the build thread only (the sort's comparators read one static). */
static void keel_diff_build(struct keel_diff *d, const struct keel_build *b)
{
	const struct keel_append_builder *ab = &b->ab;
	size_t n = ab->nmentions > ab->nrows ? ab->nmentions : ab->nrows;
	size_t *order = keel_xmalloc((n ? n : 1) * sizeof *order);
	for (size_t i = 0; i < ab->nmentions; i++)
		order[i] = i;
	keel_sort_mentions = ab->mentions;
	qsort(order, ab->nmentions, sizeof *order, keel_build_cmp_mention);
	for (size_t i = 0; i < ab->nmentions;) {
		struct keel_mention e = ab->mentions[order[i]];
		size_t k = i + 1;
		for (; k < ab->nmentions && keel_str_eq(ab->mentions[order[k]].subject, e.subject);
		     k++) {
			const struct keel_mention *x = &ab->mentions[order[k]];
			keel_mention_fold(&e, x->first_seen, KEEL_STR_NULL);
			keel_mention_fold(&e, x->last_seen, KEEL_STR_NULL);
			if (x->kind.ptr)
				keel_mention_fold(&e, x->kind_time, x->kind);
		}
		struct keel_diff_group *g = keel_diff_group(d, 0, keel_str_make("", 0));
		keel_u64vec_push(&g->side[1], keel_hash_entity(e.subject, e.kind, e.kind_time,
							       e.first_seen, e.last_seen));
		i = k;
	}
	for (size_t i = 0; i < ab->nrows; i++)
		order[i] = i;
	keel_sort_rows = ab->rows;
	qsort(order, ab->nrows, sizeof *order, keel_build_cmp_row);
	for (size_t i = 0; i < ab->nrows; i++) {
		const struct keel_assertion *r = &ab->rows[order[i]];
		const struct keel_assertion *next =
		    i + 1 < ab->nrows ? &ab->rows[order[i + 1]] : NULL;
		if (next && (next->kind != r->kind || !keel_str_eq(next->subject, r->subject) ||
			     !keel_str_eq(next->name, r->name) ||
			     !keel_str_eq(next->object, r->object)))
			next = NULL;
		bool fact = r->kind == KEEL_ROW_FACT;
		struct keel_diff_group *g = keel_diff_group(d, fact ? 1 : 2, r->name);
		keel_u64vec_push(
		    &g->side[1],
		    keel_hash_row(r->subject, fact ? KEEL_STR_NULL : r->object,
				  fact ? r->value : KEEL_STR_NULL, fact ? false : r->linked,
				  r->valid_from, next ? next->valid_from : KEEL_TIME_INF,
				  r->asserted_by, next ? next->asserted_by : KEEL_EVENT_REF_NONE));
	}
	free(order);
}

static int keel_cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return (a > b) - (a < b);
}

static int keel_cmp_group(const void *pa, const void *pb)
{
	const struct keel_diff_group *a = *(const struct keel_diff_group *const *)pa;
	const struct keel_diff_group *b = *(const struct keel_diff_group *const *)pb;
	if (a->table != b->table)
		return a->table - b->table;
	return keel_str_cmp(keel_str_make(a->name, a->name_len),
			    keel_str_make(b->name, b->name_len));
}

/* The build thread hashes and sorts the new rows into a diff of its own
 * while the calling thread is still reading the old ones; this moves its
 * groups' "after" sides into d. */
static void keel_diff_take_after(struct keel_diff *d, struct keel_diff *from)
{
	for (size_t i = 0; i < from->groups.len; i++) {
		struct keel_diff_group *src = from->groups.items[i];
		struct keel_diff_group *g = keel_diff_group(
		    d, src->table, keel_str_make(src->name, src->name_len));
		free(g->side[1].v);
		g->side[1] = src->side[1];
		g->after_sorted = true;
		memset(&src->side[1], 0, sizeof src->side[1]);
	}
}

static void keel_diff_sort_after(struct keel_diff *d)
{
	for (size_t i = 0; i < d->groups.len; i++) {
		struct keel_u64vec *v =
		    &((struct keel_diff_group *)d->groups.items[i])->side[1];
		if (v->len > 1)
			qsort(v->v, v->len, sizeof *v->v, keel_cmp_u64);
	}
}

/* Fills the report's changes: per group, the multiset difference. */
static void keel_diff_report(struct keel_diff *d, struct keel_replay_report *rep)
{
	if (d->groups.len > 1)
		qsort(d->groups.items, d->groups.len, sizeof(void *), keel_cmp_group);
	rep->changes =
	    keel_xcalloc(d->groups.len ? d->groups.len : 1, sizeof *rep->changes);
	/* The names live in one block after the array would complicate
	 * freeing; each is its own allocation instead. */
	for (size_t i = 0; i < d->groups.len; i++) {
		struct keel_diff_group *g = d->groups.items[i];
		struct keel_u64vec *old = &g->side[0], *now = &g->side[1];
		if (old->len > 1)
			qsort(old->v, old->len, sizeof *old->v, keel_cmp_u64);
		if (now->len > 1 && !g->after_sorted)
			qsort(now->v, now->len, sizeof *now->v, keel_cmp_u64);
		uint64_t added = 0, removed = 0;
		size_t x = 0, y = 0;
		while (x < old->len || y < now->len) {
			if (y == now->len || (x < old->len && old->v[x] < now->v[y])) {
				removed++;
				x++;
			} else if (x == old->len || now->v[y] < old->v[x]) {
				added++;
				y++;
			} else {
				x++;
				y++;
			}
		}
		struct keel_replay_change *c = &rep->changes[rep->nchanges++];
		c->table = keel_diff_tables[g->table];
		c->name = g->name;
		g->name = NULL; /* owned by the report now */
		c->before = old->len;
		c->after = now->len;
		c->added = added;
		c->removed = removed;
		rep->rows_before += old->len;
		rep->rows_after += now->len;
		rep->added += added;
		rep->removed += removed;
	}
}

/* What the replay must rewrite: the groups whose rows changed (as the
 * report compares them, by a 64-bit hash of every stored field). The
 * build keeps only those groups' mentions and rows, so the store deletes
 * and inserts nothing else; unchanged rows stay as they are, seq and all
 * (a timeline is always rewritten whole, with its predicate's group). */
static size_t keel_replay_scope(const struct keel_replay_report *rep,
				struct keel_replace_scope *sc, struct keel_append_builder *ab)
{
	size_t changed = 0;
	memset(sc, 0, sizeof *sc);
	for (int k = 0; k < 2; k++)
		sc->names[k] = keel_xcalloc(rep->nchanges + 1, sizeof *sc->names[k]);
	for (size_t i = 0; i < rep->nchanges; i++) {
		const struct keel_replay_change *c = &rep->changes[i];
		if (!c->added && !c->removed)
			continue;
		changed++;
		if (strcmp(c->table, "entities") == 0) {
			sc->entities = true;
			continue;
		}
		int k = strcmp(c->table, "facts") == 0 ? KEEL_ROW_FACT : KEEL_ROW_RELATION;
		sc->names[k][sc->nnames[k]++] = keel_str_cstr(c->name);
	}
	if (!sc->entities)
		ab->nmentions = 0;
	size_t kept = 0;
	for (size_t i = 0; i < ab->nrows; i++)
		if (keel_replace_scope_covers(sc, ab->rows[i].kind, ab->rows[i].name))
			ab->rows[kept++] = ab->rows[i];
	ab->nrows = kept;
	return changed;
}

void keel_replay_report_free(struct keel_replay_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nchanges; i++)
		free((void *)(uintptr_t)r->changes[i].name);
	free(r->changes);
	free(r);
}

/* --------------------------------------------------------------- replay */

/*
 * The replay reads on the calling thread and builds on a second one: the
 * log is scanned into blocks of envelopes handed to the build thread, and
 * while it parses and places them the calling thread goes on to read the
 * tenant's current rows for the report. Reading (store I/O) and building
 * (CPU) overlap; nothing is shared but the queue.
 */
#define KEEL_REPLAY_BLOCK 2048 /* envelopes per block */
#define KEEL_REPLAY_QUEUE 8    /* blocks in flight */

struct keel_replay_block {
	struct keel_buf text;
	size_t *ends;	      /* end offset of each envelope */
	int64_t *recorded_at; /* and when it was recorded */
	size_t n;
	struct keel_replay_block *next;
};

struct keel_replay_ctx {
	struct keel_replay_prep prep;
	struct keel_build *build;
	struct keel_report report;
	uint64_t n;	 /* envelopes read (reading thread) */
	uint64_t placed; /* envelopes built (build thread) */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct keel_replay_block *head, *tail, *filling;
	size_t queued;
	bool done, abort;
	struct keel_diff after; /* the new rows' hashes, by the build thread */
};

static void keel_replay_block_free(struct keel_replay_block *b)
{
	if (!b)
		return;
	keel_buf_free(&b->text);
	free(b->ends);
	free(b->recorded_at);
	free(b);
}

static void keel_replay_push(struct keel_replay_ctx *c, struct keel_replay_block *b)
{
	pthread_mutex_lock(&c->mu);
	while (c->queued >= KEEL_REPLAY_QUEUE && !c->abort)
		pthread_cond_wait(&c->cond, &c->mu);
	if (c->tail)
		c->tail->next = b;
	else
		c->head = b;
	c->tail = b;
	c->queued++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

static int keel_replay_event(void *ud, const struct keel_record *r)
{
	struct keel_replay_ctx *c = ud;
	c->n++;
	struct keel_replay_block *b = c->filling;
	if (!b) {
		b = c->filling = keel_xcalloc(1, sizeof *b);
		keel_buf_init(&b->text);
		b->ends = keel_xmalloc(KEEL_REPLAY_BLOCK * sizeof *b->ends);
		b->recorded_at = keel_xmalloc(KEEL_REPLAY_BLOCK * sizeof *b->recorded_at);
	}
	keel_buf_add(&b->text, r->envelope.ptr, r->envelope.len);
	b->recorded_at[b->n] = r->recorded_at;
	b->ends[b->n++] = b->text.len;
	if (b->n == KEEL_REPLAY_BLOCK) {
		c->filling = NULL;
		keel_replay_push(c, b);
	}
	return 0;
}

static void *keel_replay_build_main(void *arg)
{
	struct keel_replay_ctx *c = arg;
	bool aborted = false;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (!c->head && !c->done && !c->abort)
			pthread_cond_wait(&c->cond, &c->mu);
		aborted = c->abort;
		struct keel_replay_block *b = c->abort ? NULL : c->head;
		if (b) {
			c->head = b->next;
			if (!c->head)
				c->tail = NULL;
			c->queued--;
			pthread_cond_broadcast(&c->cond);
		}
		pthread_mutex_unlock(&c->mu);
		if (!b)
			break;
		size_t start = 0;
		for (size_t i = 0; i < b->n; i++) {
			c->placed++;
			struct keel_batch_event *ev =
			    keel_replay_prep_event(&c->prep, b->text.data + start,
					    b->ends[i] - start, c->placed);
			start = b->ends[i];
			if (!ev)
				continue;
			ev->recorded_at = b->recorded_at[i];
			keel_build_apply(c->build, ev);
		}
		keel_replay_block_free(b);
	}
	/* Finishing the build is the build's work too: derive the rows and
	 * hash them while the calling thread may still be reading. */
	if (!aborted) {
		keel_diff_build(&c->after, c->build);
		keel_diff_sort_after(&c->after);
	}
	return NULL;
}

/* Ends the build thread: after the last block (abort: at once). */
static void keel_replay_join(struct keel_replay_ctx *c, pthread_t th, bool abort)
{
	if (!abort && c->filling) {
		keel_replay_push(c, c->filling);
		c->filling = NULL;
	}
	pthread_mutex_lock(&c->mu);
	c->done = true;
	c->abort = abort;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	pthread_join(th, NULL);
	keel_replay_block_free(c->filling);
	c->filling = NULL;
	while (c->head) {
		struct keel_replay_block *b = c->head;
		c->head = b->next;
		keel_replay_block_free(b);
	}
	c->tail = NULL;
}

/* The cartridge a replay of tenant runs (docs/replay.md): the given one,
 * if it is the tenant's recorded one, or the tenant has none, or
 * change_cartridge (or a dry run) allows another; without one, the
 * recorded one, compiled from its text into *owned. *record: the replay
 * records the given one when it writes. */
static int keel_replay_cartridge(struct keel_store *s, struct keel_str t,
				 const struct keel_replay_options *o,
				 const struct keel_cartridge **cart,
				 struct keel_cartridge **owned, bool *record)
{
	struct keel_arena hold;
	keel_arena_init(&hold);
	struct keel_cartridge_record r;
	struct keel_buf why;
	keel_buf_init(&why);
	int rc = keel_store_cartridge_get(s, t, &r, &hold);
	if (rc == KEEL_ENOTFOUND) {
		uint64_t counts[4] = {0};
		rc = keel_store_counts(s, t, KEEL_TIME_INF, counts);
		/* A tenant the store does not know: every command's answer. */
		if (rc == 0 && !(counts[0] || counts[1] || counts[2] || counts[3]))
			rc = keel_store_tenant_known(s, t, KEEL_TIME_INF);
		if (rc == 0 && !counts[3])
			rc = keel_store_fail(s, KEEL_ENOTFOUND,
					     "tenant \"%.*s\" has no events to replay",
					     (int)t.len, t.ptr);
		else if (rc == 0 && !*cart)
			keel_buf_addf(&why,
				      "tenant \"%.*s\" has no recorded cartridge: name one "
				      "with --cartridge (the built-in " KEEL_BUILTIN_CARTRIDGE
				      " runs only when named: --cartridge "
				      KEEL_BUILTIN_CARTRIDGE ")",
				      (int)t.len, t.ptr);
		*record = rc == 0 && !o->dry_run;
	} else if (rc == 0 && *cart && !keel_tc_matches(*cart, &r)) {
		if (o->change_cartridge || o->dry_run) {
			*record = !o->dry_run;
		} else {
			keel_tc_describe_other(&why, t, &r, *cart);
			keel_buf_adds(&why, ": add --change-cartridge to rebuild it with the "
					    "new one and record it (--dry-run shows what "
					    "would change)");
		}
	} else if (rc == 0 && !*cart && !r.text.ptr) {
		keel_buf_addf(&why, "tenant \"%.*s\" is recorded with the shared-object "
				    "cartridge ", (int)t.len, t.ptr);
		keel_tc_describe(&why, r.name, r.version, r.hash);
		keel_buf_adds(&why, ", whose code a store does not keep: name it with "
				    "--cartridge");
	} else if (rc == 0 && !*cart) {
		char *err = NULL;
		if (keel_cartridge_compile(r.text.ptr, r.text.len, owned, &err) == 0) {
			*cart = *owned;
		} else {
			keel_buf_addf(&why, "tenant \"%.*s\": its recorded cartridge does "
					    "not compile (%s): name one with --cartridge",
				      (int)t.len, t.ptr, err ? err : "no message");
			free(err);
		}
	}
	if (why.len)
		rc = keel_store_fail(s, KEEL_ECARTRIDGE, "%s", why.data);
	keel_buf_free(&why);
	keel_arena_free(&hold);
	return rc;
}

/* The replay; in_tx: inside the caller's open transaction (keel forget),
 * which it neither begins nor ends, nor rolls back on failure. */
static int keel_replay_run(struct keel_store *s, const char *tenant,
			   const struct keel_replay_options *o,
			   struct keel_replay_report **out, bool in_tx)
{
	struct keel_str t = keel_str_cstr(tenant);
	struct keel_cartridge *owned = NULL;
	const struct keel_cartridge *cart = o->cartridge;
	bool record = false;
	int rc = keel_replay_cartridge(s, t, o, &cart, &owned, &record);
	if (rc)
		return rc;
	struct keel_replay_report *rep = keel_xcalloc(1, sizeof *rep);
	struct keel_replay_ctx c;
	memset(&c, 0, sizeof c);
	keel_replay_prep_init(&c.prep, cart, &c.report);
	c.prep.p.position_word = "event";
	c.prep.p.on_reject = o->on_reject;
	c.prep.p.reject_userdata = o->reject_userdata;
	c.build = keel_build_new(t);
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cond, NULL);
	keel_map_init(&c.after.map);
	struct keel_diff d;
	memset(&d, 0, sizeof d);
	keel_map_init(&d.map);
	struct keel_buf note;
	keel_buf_init(&note);
	pthread_t th;
	bool running = false;

	/* One transaction from the first read of the log to the last row
	 * written: on SQLite it holds the write lock throughout, so the log
	 * cannot grow under the replay; stores that cannot hold it check the
	 * log's size again under a lock when they write (replace_tenant). */
	double t0 = keel_replay_clock();
	rc = in_tx ? 0 : keel_store_begin(s);
	if (rc == 0 && pthread_create(&th, NULL, keel_replay_build_main, &c) != 0)
		rc = keel_store_fail(s, KEEL_EINVAL,
				     "cannot start the replay's build thread");
	running = rc == 0;
	struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = t};
	if (rc == 0)
		rc = keel_store_scan(s, &q, keel_replay_event, &c);
	if (rc == 0 && c.n == 0)
		rc = keel_store_fail(s, KEEL_ENOTFOUND,
				     "tenant \"%s\" has no events to replay", tenant);
	if (rc == 0 && c.filling) {
		keel_replay_push(&c, c.filling);
		c.filling = NULL;
	}
	/* The rows as they are, read while the build thread works. */
	static const enum keel_record_type tables[] = {KEEL_REC_ENTITY, KEEL_REC_FACT,
						       KEEL_REC_RELATION};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(tables); i++) {
		struct keel_scan qs = {.type = tables[i], .tenant = t};
		rc = keel_store_scan(s, &qs, keel_diff_scan_record, &d);
	}
	double t1 = keel_replay_clock();
	if (running)
		keel_replay_join(&c, th, rc != 0);
	running = false;
	if (rc)
		goto fail;
	double t2 = keel_replay_clock();
	keel_diff_take_after(&d, &c.after);
	keel_diff_report(&d, rep);
	double t3 = keel_replay_clock();

	if (o->dry_run) {
		keel_store_rollback(s);
		snprintf(rep->method, sizeof rep->method, "dry run: nothing written");
	} else {
		struct keel_replace_scope sc;
		size_t changed = keel_replay_scope(rep, &sc, &c.build->ab);
		struct keel_append a = keel_append_view(&c.build->ab, NULL, 0);
		/* Nothing changed: nothing to write (the transaction still
		 * ends by commit, as one that wrote would). */
		if (changed)
			rc = keel_store_replace_tenant(s, t, &sc, &a, c.n, &note);
		if (rc == 0 && record) {
			struct keel_cartridge_record r =
			    keel_tc_record_of(cart, keel_store_recorded_at(s));
			rc = keel_store_cartridge_put(s, &t, 1, &r, true);
		}
		if (rc == 0 && !in_tx)
			rc = keel_store_commit(s);
		free(sc.names[0]); /* the store may use the scope until commit */
		free(sc.names[1]);
		if (rc)
			goto fail;
		snprintf(rep->method, sizeof rep->method,
			 "%s%s%zu of %zu groups changed, the rest kept as they were",
			 note.len ? note.data : "", note.len ? "; " : "", changed,
			 rep->nchanges);
	}
	rep->read_seconds = t1 - t0;
	rep->build_seconds = t2 - t0;
	rep->compare_seconds = t3 - t2;
	rep->write_seconds = keel_replay_clock() - t3;
	rep->events = c.n;
	rep->unhandled = c.build->unhandled;
	rep->rejected = c.report.rejected;
	*out = rep;
	goto done;
fail:
	if (!in_tx)
		keel_store_rollback(s);
	keel_replay_report_free(rep);
done:
	keel_buf_free(&note);
	keel_diff_free(&d);
	keel_diff_free(&c.after);
	keel_build_free(c.build);
	keel_replay_prep_free(&c.prep);
	keel_cartridge_free(owned);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cond);
	return rc;
}

int keel_replay(struct keel_store *s, const char *tenant,
		const struct keel_replay_options *given, struct keel_replay_report **out)
{
	*out = NULL;
	if (!s || !tenant || !given)
		return KEEL_EINVAL;
	struct keel_replay_options opt;
	const char *why = keel_options_copy(&opt, sizeof opt, given);
	if (why)
		return keel_store_fail(s, KEEL_EINVAL, "keel_replay_options: %s", why);
	return keel_replay_run(s, tenant, &opt, out, false);
}

int keel_replay_in_tx(struct keel_store *s, const char *tenant,
		      const struct keel_cartridge *c, struct keel_replay_report **out)
{
	struct keel_replay_options o = {.size = sizeof o, .cartridge = c};
	*out = NULL;
	return keel_replay_run(s, tenant, &o, out, true);
}

/* ------------------------------------------------------------ bulk load */

struct keel_bulk {
	struct keel_store *store;
	struct keel_replay_prep prep;
	struct keel_tenant_cartridges tenants; /* each tenant's cartridge */
	struct keel_map tenant_map;
	struct keel_ptrvec builds; /* first-seen order */
	struct keel_build *last;
	struct keel_report report;
	/* built, counted into report once written */
	uint64_t accepted, duplicates, conflicting;
	struct keel_buf errmsg;
	struct keel_buf method;
	bool failed;
};

int keel_bulk_new(struct keel_store *s, const struct keel_ingest_options *o,
		  struct keel_bulk **out)
{
	*out = NULL;
	struct keel_bulk *b = keel_xcalloc(1, sizeof *b);
	b->store = s;
	keel_tc_init(&b->tenants, s, o->cartridge);
	keel_replay_prep_init(&b->prep, o->cartridge, &b->report);
	b->prep.p.tenants = &b->tenants;
	b->prep.p.position_word = o->position_word ? o->position_word : "line";
	b->prep.p.max_line = o->max_line ? o->max_line : KEEL_DEFAULT_MAX_LINE;
	b->prep.p.max_envelope = s->max_envelope;
	b->prep.p.max_envelope_why = s->max_envelope_why;
	b->prep.p.on_reject = o->on_reject;
	b->prep.p.on_conflict = o->on_conflict;
	b->prep.p.conflict_userdata = o->conflict_userdata;
	b->prep.p.reject_userdata = o->reject_userdata;
	keel_map_init(&b->tenant_map);
	keel_buf_init(&b->errmsg);
	keel_buf_init(&b->method);
	*out = b;
	return 0;
}

void keel_bulk_free(struct keel_bulk *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->builds.len; i++)
		keel_build_free(b->builds.items[i]);
	keel_ptrvec_free(&b->builds);
	keel_map_free(&b->tenant_map);
	keel_replay_prep_free(&b->prep);
	keel_tc_free(&b->tenants);
	keel_buf_free(&b->errmsg);
	keel_buf_free(&b->method);
	free(b);
}

const struct keel_report *keel_bulk_report(const struct keel_bulk *b)
{
	return &b->report;
}

const char *keel_bulk_errmsg(const struct keel_bulk *b)
{
	return b->errmsg.len ? b->errmsg.data : "";
}

const char *keel_bulk_method(const struct keel_bulk *b)
{
	return b->method.len ? b->method.data : "";
}

static int keel_bulk_fail(struct keel_bulk *b, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int keel_bulk_fail(struct keel_bulk *b, int rc, const char *fmt, ...)
{
	va_list ap;
	keel_buf_reset(&b->errmsg);
	va_start(ap, fmt);
	keel_buf_vaddf(&b->errmsg, fmt, ap);
	va_end(ap);
	b->failed = true;
	return rc;
}

/* The tenant's build; a tenant seen for the first time must have no events
 * in the store yet. */
static int keel_bulk_build(struct keel_bulk *b, struct keel_str tenant,
			   struct keel_build **out)
{
	if (b->last && strlen(b->last->tenant) == tenant.len &&
	    memcmp(b->last->tenant, tenant.ptr, tenant.len) == 0) {
		*out = b->last;
		return 0;
	}
	uint64_t h = keel_hash64(tenant.ptr, tenant.len, 5);
	for (size_t i = keel_map_first(&b->tenant_map, h); i != SIZE_MAX;
	     i = keel_map_next(&b->tenant_map, h, i)) {
		struct keel_build *x = b->tenant_map.values[i];
		if (keel_str_eq(keel_str_cstr(x->tenant), tenant)) {
			*out = b->last = x;
			return 0;
		}
	}
	uint64_t counts[4];
	int rc = keel_store_counts(b->store, tenant, KEEL_TIME_INF, counts);
	if (rc)
		return keel_bulk_fail(b, rc, "%s", keel_store_errmsg(b->store));
	if (counts[3])
		return keel_bulk_fail(
		    b, KEEL_EINVAL,
		    "tenant \"%.*s\" already has %llu events in the store: "
		    "--replay loads only new tenants (ingest without "
		    "--replay adds to a tenant)",
		    (int)tenant.len, tenant.ptr, (unsigned long long)counts[3]);
	struct keel_build *x = keel_build_new(tenant);
	keel_map_put(&b->tenant_map, h, x);
	keel_ptrvec_push(&b->builds, x);
	*out = b->last = x;
	return 0;
}

int keel_bulk_add(struct keel_bulk *b, const char *text, size_t len, uint64_t position)
{
	if (b->failed)
		return KEEL_EINVAL;
	struct keel_batch_event *ev = keel_replay_prep_event(&b->prep, text, len, position);
	if (!ev && b->prep.p.refused) {
		/* its tenant has no cartridge here: rejected, and said */
		keel_buf_reset(&b->errmsg);
		keel_buf_addf(&b->errmsg, "%s %llu: ", b->prep.p.position_word,
			      (unsigned long long)position);
		keel_buf_add(&b->errmsg, b->prep.p.msg.data, b->prep.p.msg.len);
		return b->prep.p.refused;
	}
	if (!ev)
		return 0;
	struct keel_build *x = NULL;
	int rc = keel_bulk_build(b, ev->tenant, &x);
	if (rc)
		return rc;
	/* Repeats inside the input: the first copy counts, as in a batch. */
	uint64_t h = keel_batch_event_key_hash(ev);
	for (size_t i = keel_map_first(&x->ids, h); i != SIZE_MAX;
	     i = keel_map_next(&x->ids, h, i)) {
		struct keel_batch_event *first = x->ids.values[i];
		if (keel_batch_event_same(first, ev)) {
			b->duplicates++;
			if (first->hash != ev->hash) {
				b->conflicting++;
				keel_prep_conflict(&b->prep.p, ev, true, first->position, 0);
			}
			return 0;
		}
	}
	/* The logged copy; its source and id are also the rows' asserted_by. */
	struct keel_arena *a = &x->log;
	struct keel_batch_event *logged = keel_arena_alloc(a, sizeof *logged);
	*logged = *ev;
	logged->tenant = keel_str_make(x->tenant, ev->tenant.len);
	logged->source = keel_arena_str(a, ev->source);
	logged->id = keel_arena_str(a, ev->id);
	logged->type = keel_arena_str(a, ev->type);
	logged->envelope = keel_arena_str(a, ev->envelope);
	logged->ops = NULL;
	logged->nops = 0;
	keel_map_put(&x->ids, h, logged);
	keel_ptrvec_push(&x->events, logged);
	keel_build_apply(x, ev); /* recorded_at: set when written */
	b->accepted++;
	return 0;
}

int keel_bulk_add_too_long(struct keel_bulk *b, uint64_t position, const char *head,
			   size_t head_len)
{
	keel_prep_too_long(&b->prep.p, position, head, head_len);
	return 0;
}

static int keel_bulk_cmp_build(const void *pa, const void *pb)
{
	const struct keel_build *a = *(const struct keel_build *const *)pa;
	const struct keel_build *b = *(const struct keel_build *const *)pb;
	return strcmp(a->tenant, b->tenant);
}

int keel_bulk_finish(struct keel_bulk *b)
{
	if (b->failed)
		return KEEL_EINVAL;
	if (!b->builds.len)
		return 0; /* no event was accepted (nor, then, repeated) */
	if (b->builds.len > 1)
		qsort(b->builds.items, b->builds.len, sizeof(void *),
		      keel_bulk_cmp_build);
	struct keel_store *s = b->store;
	int rc = keel_store_begin(s);
	if (rc)
		return keel_bulk_fail(b, rc, "%s", keel_store_errmsg(s));
	uint64_t unhandled = 0, rows_inserted = 0;
	int64_t recorded_at = keel_store_recorded_at(s);
	for (size_t i = 0; i < b->builds.len; i++) {
		struct keel_build *x = b->builds.items[i];
		keel_buf_reset(&b->method);
		struct keel_append a = keel_append_view(
		    &x->ab, (struct keel_batch_event **)x->events.items, x->events.len);
		keel_append_stamp(&a, recorded_at);
		rc = keel_store_replace_tenant(s, keel_str_cstr(x->tenant), NULL, &a, 0,
					       &b->method);
		if (rc) {
			keel_bulk_fail(b, rc, "writing tenant \"%s\": %s", x->tenant,
				       keel_store_errmsg(s));
			keel_store_rollback(s);
			keel_buf_reset(&b->method); /* nothing was written */
			return rc;
		}
		unhandled += x->unhandled;
		rows_inserted += x->ab.nrows;
		keel_tc_logged(&b->tenants, (struct keel_batch_event *const *)x->events.items,
			       x->events.len);
	}
	/* the new tenants' cartridges, with their events */
	rc = keel_tc_record(&b->tenants, recorded_at);
	if (rc == 0)
		rc = keel_store_commit(s);
	keel_tc_ended(&b->tenants, rc == 0);
	if (rc) {
		keel_bulk_fail(b, rc, "commit: %s", keel_store_errmsg(s));
		keel_store_rollback(s);
		keel_buf_reset(&b->method);
		return rc;
	}
	/* Written: now they count. */
	struct keel_report *r = &b->report;
	r->accepted += b->accepted;
	r->duplicates += b->duplicates;
	r->conflicting += b->conflicting;
	r->unhandled += unhandled;
	r->rows_inserted += rows_inserted;
	b->accepted = b->duplicates = b->conflicting = 0;
	r->batches = 1;
	r->commits = 1;
	b->report.statements = keel_store_statements(s);
	b->failed = true; /* finished: nothing more may be added */
	return 0;
}
