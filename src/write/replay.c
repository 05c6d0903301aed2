/*
 * replay.c - replay (keel replay) streamed from the log with memory
 * bounded by the batch, and bulk loads (keel ingest --replay) built in
 * memory (docs/replay.md).
 *
 * Two entry points:
 *   keel_replay     rebuilds one tenant from its own event log with the
 *                   current cartridge: the log is read once, event by
 *                   event, a batch at a time; the report compares the
 *                   rows as they are with the rows the replay gives
 *                   through sorts that spill to a temporary file
 *                   (spill.h); the groups that changed are then written
 *                   from a spool of the rebuilt rows (spool.h);
 *   keel_bulk_*     loads tenants that are new to the store from an input
 *                   (KEEL_INGEST_BULK: keel ingest --replay), logging the
 *                   events too; each tenant is built in memory and
 *                   written when the input ends; its report counts events
 *                   accepted only once they are written.
 *
 * Both take the ingestion path's own pieces, not a second implementation
 * of its semantics: an envelope is parsed, validated and run through the
 * cartridge exactly as keel_ingest_add does (same rules, same messages),
 * and its operations become assertions and mentions through the same
 * builder (append.c), in arrival order, each carrying its event's
 * recorded_at, so that the graph reads as known at any moment after a
 * replay as before it. Rows are written with the store's replace_tenant
 * op inside one transaction.
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
#include "spill.h"
#include "spool.h"
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

/* ---------------------------------- a tenant in memory (bulk loads) */

struct keel_build {
	char *tenant; /* NUL-terminated */
	struct keel_append_builder ab; /* the tenant's assertions and mentions */
	/* the events to log, and their ids */
	struct keel_arena log;
	struct keel_ptrvec events;
	struct keel_map ids;
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

/* ------------------------------------------------------------ the diff */

/*
 * The report compares the tenant's rows as they are with the rows the
 * replay gives, as multisets per group (the entities, each predicate's
 * facts, each relation's relations), with memory bounded whatever the
 * tenant's size: every row is reduced to a 64-bit hash of all its dump
 * fields, and hashes are sorted through spill.h, which writes sorted runs
 * to a temporary file once its buffer fills.
 *
 * The rows as they are come from the store's scan, derived as any read
 * gives them. The rows the replay gives are derived the way a read
 * would derive them once written, without writing them: each new
 * assertion becomes a fixed-size record (its timeline's hash, valid_from,
 * arrival, the hash of its own fields and of its event), sorted by
 * (timeline, valid_from, arrival); each row then ends where the next
 * one of its timeline begins. An entity's mentions become records sorted
 * by (subject, arrival) and are folded by the upsert rule.
 */

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

#define KEEL_BY_NONE 0x6f70656e206f70ull /* an open row's closed_by */

static uint64_t keel_hash_by(struct keel_event_ref by)
{
	if (!by.id.ptr && !by.source.ptr)
		return KEEL_BY_NONE;
	return keel_hash_str(keel_hash_str(7, by.source), by.id);
}

/* A row's own fields: everything but valid_to and closed_by. */
static uint64_t keel_hash_row_base(struct keel_str subject, struct keel_str object,
				   struct keel_str value, bool linked, int64_t from,
				   struct keel_event_ref by)
{
	uint64_t h = keel_hash_str(2, subject);
	h = keel_hash_str(h, object);
	h = keel_hash_str(h, value);
	h = keel_hash_i64(h, linked);
	h = keel_hash_i64(h, from);
	return keel_hash_i64(h, (int64_t)keel_hash_by(by));
}

static uint64_t keel_hash_row(uint64_t base, int64_t to, uint64_t closed_by)
{
	return keel_hash_i64(keel_hash_i64(base, to), (int64_t)closed_by);
}

static uint64_t keel_hash_timeline(enum keel_row_kind kind, struct keel_str subject,
				   struct keel_str name, struct keel_str object)
{
	uint64_t h = keel_hash_i64(9, (int64_t)kind);
	h = keel_hash_str(h, subject);
	h = keel_hash_str(h, name);
	return keel_hash_str(h, object);
}

/* kind_time is not in the dump, but it is stored state that decides
 * later mentions' kind: an entity that differs only there has changed. */
static uint64_t keel_hash_entity(uint64_t subject, uint64_t kind, int64_t kind_time,
				 int64_t first, int64_t last)
{
	uint64_t h = keel_hash_i64(1, (int64_t)subject);
	h = keel_hash_i64(h, (int64_t)kind);
	h = keel_hash_i64(h, kind_time);
	h = keel_hash_i64(h, first);
	return keel_hash_i64(h, last);
}

/* One new assertion, to be sorted into timeline order. */
struct keel_rrow {
	uint64_t timeline;
	int64_t from;
	uint64_t arrival;
	uint64_t base; /* keel_hash_row_base */
	uint64_t by;   /* keel_hash_by of its event: the previous row's closed_by */
	uint64_t group;
};

/* One new mention (folded within a batch), to be sorted by subject. */
struct keel_rmention {
	uint64_t subject;
	uint64_t kind; /* keel_hash_str of the kind, absent or not */
	uint64_t has_kind;
	int64_t kind_time, first, last;
	uint64_t arrival;
};

/* One derived row or entity of a group, before or after. */
struct keel_rhash {
	uint64_t group;
	uint64_t hash;
};

static int keel_cmp_u64s(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static int keel_cmp_rrow(const void *pa, const void *pb)
{
	const struct keel_rrow *a = pa, *b = pb;
	int c = keel_cmp_u64s(a->timeline, b->timeline);
	if (!c)
		c = (a->from > b->from) - (a->from < b->from);
	return c ? c : keel_cmp_u64s(a->arrival, b->arrival);
}

static int keel_cmp_rmention(const void *pa, const void *pb)
{
	const struct keel_rmention *a = pa, *b = pb;
	int c = keel_cmp_u64s(a->subject, b->subject);
	return c ? c : keel_cmp_u64s(a->arrival, b->arrival);
}

static int keel_cmp_rhash(const void *pa, const void *pb)
{
	const struct keel_rhash *a = pa, *b = pb;
	int c = keel_cmp_u64s(a->group, b->group);
	return c ? c : keel_cmp_u64s(a->hash, b->hash);
}

/* The report's groups, numbered as first seen. */
struct keel_rgroup {
	int table; /* 0 entities, 1 facts, 2 relations */
	char *name;
	size_t name_len;
	uint64_t before, after, added, removed;
};

struct keel_rgroups {
	struct keel_map map; /* hash -> id + 1 */
	struct keel_ptrvec items;
	uint64_t last; /* id + 1 of the last looked up: rows come grouped */
};

static const char *const keel_diff_tables[] = {"entities", "facts", "relations"};

static bool keel_rgroup_is(const struct keel_rgroup *g, int table, struct keel_str name)
{
	return g->table == table && g->name_len == name.len &&
	       (!name.len || memcmp(g->name, name.ptr, name.len) == 0);
}

static uint64_t keel_rgroup_id(struct keel_rgroups *gs, int table, struct keel_str name)
{
	if (gs->last && keel_rgroup_is(gs->items.items[gs->last - 1], table, name))
		return gs->last - 1;
	uint64_t h = keel_hash_str((uint64_t)table + 100, name);
	for (size_t i = keel_map_first(&gs->map, h); i != SIZE_MAX;
	     i = keel_map_next(&gs->map, h, i)) {
		uint64_t id = (uint64_t)(uintptr_t)gs->map.values[i];
		if (keel_rgroup_is(gs->items.items[id - 1], table, name))
			return (gs->last = id) - 1;
	}
	struct keel_rgroup *g = keel_xcalloc(1, sizeof *g);
	g->table = table;
	g->name = keel_xstrndup(name.ptr ? name.ptr : "", name.len);
	g->name_len = name.len;
	keel_ptrvec_push(&gs->items, g);
	keel_map_put(&gs->map, h, (void *)(uintptr_t)gs->items.len);
	return (gs->last = gs->items.len) - 1;
}

static void keel_rgroups_free(struct keel_rgroups *gs)
{
	for (size_t i = 0; i < gs->items.len; i++) {
		struct keel_rgroup *g = gs->items.items[i];
		free(g->name);
		free(g);
	}
	keel_ptrvec_free(&gs->items);
	keel_map_free(&gs->map);
}

static int keel_cmp_group(const void *pa, const void *pb)
{
	const struct keel_rgroup *a = *(const struct keel_rgroup *const *)pa;
	const struct keel_rgroup *b = *(const struct keel_rgroup *const *)pb;
	if (a->table != b->table)
		return a->table - b->table;
	return keel_str_cmp(keel_str_make(a->name, a->name_len),
			    keel_str_make(b->name, b->name_len));
}

/* What the replay must rewrite: the groups whose rows changed (as the
 * report compares them, by a 64-bit hash of every stored field). The
 * rest stays as it is, seq and all (a timeline is always rewritten
 * whole, with its predicate's group). */
static size_t keel_replay_scope(const struct keel_replay_report *rep,
				struct keel_replace_scope *sc)
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
 * The replay streams the log: each event is prepared as ingest prepares
 * it and its operations go into a builder that holds one batch; a full
 * batch becomes sort records for the report (above) and, unless it is a
 * dry run, a batch of the spool (spool.h), then the builder starts over.
 * Memory is the batch, the sorts' buffers and the groups, whatever the
 * number of events.
 *
 * Reading and preparing overlap: the calling thread scans the log into
 * blocks of envelopes that a second thread prepares and batches; once
 * the log is read, the calling thread goes on to read the tenant's
 * current rows for the report while the other finishes. Each thread has
 * its own sorts and its own numbering of the groups (the build's is
 * translated into the calling thread's after the join); nothing else is
 * shared but the queue of blocks, bounded.
 */
#define KEEL_REPLAY_BATCH 4096		   /* events a batch */
#define KEEL_REPLAY_WRITE (32 * 1024)	   /* rows and mentions a write */
#define KEEL_REPLAY_SORT_ROWS (4u << 20) /* bytes of the sorts' buffers */
#define KEEL_REPLAY_SORT_OTHER (2u << 20)
#define KEEL_REPLAY_BLOCK 1024 /* envelopes a block */
#define KEEL_REPLAY_QUEUE 4    /* blocks in flight */

struct keel_replay_block {
	struct keel_buf text;
	size_t *ends;	      /* end offset of each envelope */
	int64_t *recorded_at; /* and when it was recorded */
	size_t n;
	struct keel_replay_block *next;
};

struct keel_replay_ctx {
	struct keel_store *store;
	struct keel_str tenant;
	uint64_t n; /* events read (calling thread) */
	/* the calling thread's: the current rows' groups and hashes */
	struct keel_rgroups groups;
	uint64_t entity_group; /* id + 1, 0: none yet */
	struct keel_spill old, now;
	/* the build thread's, until the join */
	struct keel_replay_prep prep;
	struct keel_report report;
	struct keel_append_builder ab; /* the batch */
	size_t inbatch;
	uint64_t placed; /* events prepared */
	uint64_t unhandled;
	uint64_t rows_seen, mentions_seen; /* arrival */
	struct keel_rgroups bgroups;
	uint64_t bentity_group;
	struct keel_spill rows, mentions;
	bool spooling;
	struct keel_spool spool;
	int build_rc;
	const char *build_failed;
	/* after the join: the build's group ids in the calling thread's */
	uint64_t *trans;
	/* the queue */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct keel_replay_block *head, *tail, *filling;
	size_t queued;
	bool done, abort;
	const char *failed; /* a temporary file's error */
};

static uint64_t keel_replay_entities(struct keel_rgroups *gs, uint64_t *slot)
{
	if (!*slot)
		*slot = keel_rgroup_id(gs, 0, keel_str_make("", 0)) + 1;
	return *slot - 1;
}

/* The batch's records for the report, its spool batch, then a new batch
 * (build thread). */
static int keel_replay_flush(struct keel_replay_ctx *c)
{
	struct keel_append_builder *ab = &c->ab;
	for (size_t i = 0; i < ab->nrows; i++) {
		const struct keel_assertion *r = &ab->rows[i];
		bool fact = r->kind == KEEL_ROW_FACT;
		struct keel_rrow x = {
		    .timeline = keel_hash_timeline(r->kind, r->subject, r->name,
						   fact ? KEEL_STR_NULL : r->object),
		    .from = r->valid_from,
		    .arrival = c->rows_seen++,
		    .base = keel_hash_row_base(r->subject, fact ? KEEL_STR_NULL : r->object,
					       fact ? r->value : KEEL_STR_NULL,
					       fact ? false : r->linked, r->valid_from,
					       r->asserted_by),
		    .by = keel_hash_by(r->asserted_by),
		    .group = keel_rgroup_id(&c->bgroups, fact ? 1 : 2, r->name),
		};
		if (keel_spill_add(&c->rows, &x)) {
			c->build_failed = c->rows.err;
			return KEEL_EIO;
		}
	}
	for (size_t i = 0; i < ab->nmentions; i++) {
		const struct keel_mention *m = &ab->mentions[i];
		struct keel_rmention x = {
		    .subject = keel_hash_str(1, m->subject),
		    .kind = keel_hash_str(3, m->kind),
		    .has_kind = m->kind.ptr != NULL,
		    .kind_time = m->kind_time,
		    .first = m->first_seen,
		    .last = m->last_seen,
		    .arrival = c->mentions_seen++,
		};
		if (keel_spill_add(&c->mentions, &x)) {
			c->build_failed = c->mentions.err;
			return KEEL_EIO;
		}
	}
	if (ab->nmentions)
		keel_replay_entities(&c->bgroups, &c->bentity_group);
	if (c->spooling) {
		struct keel_append a = keel_append_view(ab, NULL, 0);
		if (keel_spool_put(&c->spool, &a)) {
			c->build_failed = c->spool.err;
			return KEEL_EIO;
		}
	}
	keel_append_builder_reset(ab);
	c->inbatch = 0;
	return 0;
}

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

/* The log's scan (calling thread): envelopes into blocks. */
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

/* The build thread: prepares each block's events into batches. After a
 * failure it only drains the queue. */
static void *keel_replay_build_main(void *arg)
{
	struct keel_replay_ctx *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (!c->head && !c->done && !c->abort)
			pthread_cond_wait(&c->cond, &c->mu);
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
		for (size_t i = 0; i < b->n && !c->build_rc; i++) {
			c->placed++;
			struct keel_batch_event *ev =
			    keel_replay_prep_event(&c->prep, b->text.data + start,
						   b->ends[i] - start, c->placed);
			start = b->ends[i];
			if (ev) {
				ev->recorded_at = b->recorded_at[i];
				keel_append_add_event(&c->ab, ev);
				c->unhandled += ev->unhandled;
			}
			if (++c->inbatch == KEEL_REPLAY_BATCH)
				c->build_rc = keel_replay_flush(c);
		}
		keel_replay_block_free(b);
	}
	if (!c->build_rc && !c->abort && c->inbatch)
		c->build_rc = keel_replay_flush(c);
	return NULL;
}

/* Hands the last block over and lets the build thread end after it
 * (abort: at once, dropping what is queued). */
static void keel_replay_close_queue(struct keel_replay_ctx *c, bool abort)
{
	if (!abort && c->filling) {
		keel_replay_push(c, c->filling);
		c->filling = NULL;
	}
	pthread_mutex_lock(&c->mu);
	c->done = true;
	c->abort = c->abort || abort;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

static void keel_replay_join(struct keel_replay_ctx *c, pthread_t th)
{
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

/* The build's group ids in the calling thread's numbering. */
static void keel_replay_translate(struct keel_replay_ctx *c)
{
	size_t n = c->bgroups.items.len;
	c->trans = keel_xmalloc((n ? n : 1) * sizeof *c->trans);
	for (size_t i = 0; i < n; i++) {
		const struct keel_rgroup *g = c->bgroups.items.items[i];
		c->trans[i] = keel_rgroup_id(&c->groups, g->table,
					     keel_str_make(g->name, g->name_len));
	}
}

/* The rows as they are, derived as any read gives them. */
static int keel_replay_old(void *ud, const struct keel_record *r)
{
	struct keel_replay_ctx *c = ud;
	struct keel_rhash x;
	if (r->type == KEEL_REC_ENTITY) {
		x.group = keel_replay_entities(&c->groups, &c->entity_group);
		x.hash = keel_hash_entity(keel_hash_str(1, r->subject),
					  keel_hash_str(3, r->kind), r->kind_time,
					  r->first_seen, r->last_seen);
	} else {
		bool fact = r->type == KEEL_REC_FACT;
		x.group = keel_rgroup_id(&c->groups, fact ? 1 : 2, r->name);
		uint64_t base = keel_hash_row_base(r->subject, fact ? KEEL_STR_NULL : r->object,
						   fact ? r->value : KEEL_STR_NULL,
						   fact ? false : r->linked, r->valid_from,
						   r->asserted_by);
		x.hash = keel_hash_row(base, r->valid_to, keel_hash_by(r->closed_by));
	}
	if (keel_spill_add(&c->old, &x)) {
		c->failed = c->old.err;
		return KEEL_EIO;
	}
	return 0;
}

/* The new rows derived from their sorted records: each ends where the
 * next of its timeline begins, closed by that row's event. */
static int keel_replay_derive_rows(struct keel_replay_ctx *c)
{
	if (keel_spill_sort(&c->rows)) {
		c->failed = c->rows.err;
		return KEEL_EIO;
	}
	struct keel_rrow cur, nx;
	int got = keel_spill_next(&c->rows, &cur);
	while (got == 1) {
		int more = keel_spill_next(&c->rows, &nx);
		bool same = more == 1 && nx.timeline == cur.timeline;
		struct keel_rhash h = {
		    .group = c->trans[cur.group],
		    .hash = keel_hash_row(cur.base, same ? nx.from : KEEL_TIME_INF,
					  same ? nx.by : KEEL_BY_NONE),
		};
		if (keel_spill_add(&c->now, &h)) {
			c->failed = c->now.err;
			return KEEL_EIO;
		}
		cur = nx;
		got = more;
	}
	if (got < 0) {
		c->failed = c->rows.err;
		return KEEL_EIO;
	}
	return 0;
}

/* The new entities: each subject's mentions folded in arrival order by
 * the upsert rule (keel_mention_fold). */
static int keel_replay_derive_entities(struct keel_replay_ctx *c)
{
	if (keel_spill_sort(&c->mentions)) {
		c->failed = c->mentions.err;
		return KEEL_EIO;
	}
	struct keel_rmention x;
	int got = keel_spill_next(&c->mentions, &x);
	while (got == 1) {
		struct keel_rmention e = x;
		while ((got = keel_spill_next(&c->mentions, &x)) == 1 &&
		       x.subject == e.subject) {
			if (x.first < e.first)
				e.first = x.first;
			if (x.last > e.last)
				e.last = x.last;
			if (x.has_kind && (!e.has_kind || x.kind_time <= e.kind_time)) {
				e.kind = x.kind;
				e.kind_time = x.kind_time;
				e.has_kind = 1;
			}
		}
		struct keel_rhash h = {
		    .group = keel_replay_entities(&c->groups, &c->entity_group),
		    .hash = keel_hash_entity(e.subject, e.kind, e.kind_time, e.first,
					     e.last),
		};
		if (keel_spill_add(&c->now, &h)) {
			c->failed = c->now.err;
			return KEEL_EIO;
		}
	}
	if (got < 0) {
		c->failed = c->mentions.err;
		return KEEL_EIO;
	}
	return 0;
}

/* Merges the sorted hashes before and after: per group, the multiset
 * difference; then the report's changes, sorted by table and name. */
static int keel_replay_compare(struct keel_replay_ctx *c, struct keel_replay_report *rep)
{
	if (keel_spill_sort(&c->old)) {
		c->failed = c->old.err;
		return KEEL_EIO;
	}
	if (keel_spill_sort(&c->now)) {
		c->failed = c->now.err;
		return KEEL_EIO;
	}
	struct keel_rhash a, b;
	int ga = keel_spill_next(&c->old, &a), gb = keel_spill_next(&c->now, &b);
	while (ga == 1 || gb == 1) {
		int k = ga != 1 ? 1 : gb != 1 ? -1 : keel_cmp_rhash(&a, &b);
		if (k <= 0) {
			struct keel_rgroup *g = c->groups.items.items[a.group];
			g->before++;
			if (k < 0)
				g->removed++;
			ga = keel_spill_next(&c->old, &a);
		}
		if (k >= 0) {
			struct keel_rgroup *g = c->groups.items.items[b.group];
			g->after++;
			if (k > 0)
				g->added++;
			gb = keel_spill_next(&c->now, &b);
		}
	}
	if (ga < 0 || gb < 0) {
		c->failed = ga < 0 ? c->old.err : c->now.err;
		return KEEL_EIO;
	}
	struct keel_ptrvec *items = &c->groups.items;
	if (items->len > 1)
		qsort(items->items, items->len, sizeof(void *), keel_cmp_group);
	c->groups.last = 0; /* ids no longer index items */
	rep->changes = keel_xcalloc(items->len ? items->len : 1, sizeof *rep->changes);
	for (size_t i = 0; i < items->len; i++) {
		struct keel_rgroup *g = items->items[i];
		struct keel_replay_change *ch = &rep->changes[rep->nchanges++];
		ch->table = keel_diff_tables[g->table];
		ch->name = g->name;
		g->name = NULL; /* owned by the report now */
		ch->before = g->before;
		ch->after = g->after;
		ch->added = g->added;
		ch->removed = g->removed;
		rep->rows_before += g->before;
		rep->rows_after += g->after;
		rep->added += g->added;
		rep->removed += g->removed;
	}
	return 0;
}

/* Writes the changed groups from the spool, in arrival order, a bounded
 * part at a time: the first part through replace_tenant with the scope
 * (which deletes the groups' rows, and checks the log where the store
 * must), the rest appended after it (scope.more). */
static int keel_replay_write(struct keel_replay_ctx *c, const struct keel_replace_scope *sc,
			     struct keel_buf *note)
{
	struct keel_store *s = c->store;
	if (keel_spool_rewind(&c->spool)) {
		c->failed = c->spool.err;
		return KEEL_EIO;
	}
	/* rb: one spool batch as read; wb: what of it the scope covers, until
	 * a part is full (both copy their strings: only wb's are kept). */
	struct keel_append_builder rb, wb;
	keel_append_builder_init(&rb, true);
	keel_append_builder_init(&wb, true);
	struct keel_replace_scope more = {.more = true};
	struct keel_buf ignored;
	keel_buf_init(&ignored);
	bool first = true;
	int rc = 0;
	for (;;) {
		keel_append_builder_reset(&rb);
		int got = keel_spool_get(&c->spool, &rb, c->tenant);
		if (got < 0) {
			c->failed = c->spool.err;
			rc = KEEL_EIO;
			break;
		}
		for (size_t i = 0; i < rb.nrows; i++)
			if (keel_replace_scope_covers(sc, rb.rows[i].kind, rb.rows[i].name))
				keel_append_add_row(&wb, &rb.rows[i]);
		for (size_t i = 0; sc->entities && i < rb.nmentions; i++)
			keel_append_add_mention(&wb, &rb.mentions[i]);
		bool full = wb.nrows + wb.nmentions >= KEEL_REPLAY_WRITE;
		if (full || (!got && (first || wb.nrows || wb.nmentions))) {
			struct keel_append a = keel_append_view(&wb, NULL, 0);
			rc = keel_store_replace_tenant(s, c->tenant, first ? sc : &more, &a, c->n,
						       first ? note : &ignored);
			first = false;
			keel_append_builder_reset(&wb);
			if (rc)
				break;
		}
		if (!got)
			break;
	}
	keel_buf_free(&ignored);
	keel_append_builder_free(&rb);
	keel_append_builder_free(&wb);
	return rc;
}

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

/* The replay; in_tx: inside the caller's open transaction, which it
 * neither begins nor ends, nor rolls back on failure. */
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
	c.store = s;
	c.tenant = t;
	keel_replay_prep_init(&c.prep, cart, &c.report);
	c.prep.p.position_word = "event";
	c.prep.p.on_reject = o->on_reject;
	c.prep.p.reject_userdata = o->reject_userdata;
	keel_append_builder_init(&c.ab, true);
	keel_map_init(&c.groups.map);
	keel_map_init(&c.bgroups.map);
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cond, NULL);
	pthread_t th;
	bool running = false;
	keel_spill_init(&c.rows, sizeof(struct keel_rrow), keel_cmp_rrow,
			KEEL_REPLAY_SORT_ROWS);
	keel_spill_init(&c.mentions, sizeof(struct keel_rmention), keel_cmp_rmention,
			KEEL_REPLAY_SORT_OTHER);
	keel_spill_init(&c.old, sizeof(struct keel_rhash), keel_cmp_rhash,
			KEEL_REPLAY_SORT_OTHER);
	keel_spill_init(&c.now, sizeof(struct keel_rhash), keel_cmp_rhash,
			KEEL_REPLAY_SORT_OTHER);
	c.spool.fd = -1;
	struct keel_buf note;
	keel_buf_init(&note);

	/* One transaction from the first read of the log to the last row
	 * written: on SQLite it holds the write lock throughout, so the log
	 * cannot grow under the replay; stores that cannot hold it check the
	 * log's size again under a lock when they write (replace_tenant). */
	double t0 = keel_replay_clock();
	rc = in_tx ? 0 : keel_store_begin(s);
	if (rc == 0 && !o->dry_run) {
		c.spooling = true;
		if (keel_spool_open(&c.spool)) {
			c.failed = c.spool.err;
			rc = KEEL_EIO;
		}
	}
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
	if (running)
		keel_replay_close_queue(&c, rc != 0);
	double t1 = keel_replay_clock();
	/* The rows as they are, read while the build thread finishes. */
	static const enum keel_record_type tables[] = {KEEL_REC_ENTITY, KEEL_REC_FACT,
						       KEEL_REC_RELATION};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(tables); i++) {
		struct keel_scan qs = {.type = tables[i], .tenant = t};
		rc = keel_store_scan(s, &qs, keel_replay_old, &c);
	}
	if (running) {
		if (rc)
			keel_replay_close_queue(&c, true);
		keel_replay_join(&c, th);
		running = false;
		if (rc == 0 && c.build_rc) {
			rc = c.build_rc;
			c.failed = c.build_failed;
		}
	}
	double t2 = keel_replay_clock();
	if (rc == 0)
		keel_replay_translate(&c);
	if (rc == 0)
		rc = keel_replay_derive_rows(&c);
	keel_spill_free(&c.rows);
	if (rc == 0)
		rc = keel_replay_derive_entities(&c);
	keel_spill_free(&c.mentions);
	if (rc == 0)
		rc = keel_replay_compare(&c, rep);
	keel_spill_free(&c.old);
	keel_spill_free(&c.now);
	if (rc)
		goto fail;
	double t3 = keel_replay_clock();

	if (o->dry_run) {
		keel_store_rollback(s);
		snprintf(rep->method, sizeof rep->method, "dry run: nothing written");
	} else {
		struct keel_replace_scope sc;
		size_t changed = keel_replay_scope(rep, &sc);
		/* Nothing changed: nothing to write (the transaction still
		 * ends by commit, as one that wrote would). */
		if (changed)
			rc = keel_replay_write(&c, &sc, &note);
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
	rep->unhandled = c.unhandled;
	rep->rejected = c.report.rejected;
	*out = rep;
	goto done;
fail:
	if (c.failed && rc == KEEL_EIO)
		keel_store_fail(s, KEEL_EIO, "replay: %s", c.failed);
	if (!in_tx)
		keel_store_rollback(s);
	keel_replay_report_free(rep);
done:
	keel_buf_free(&note);
	keel_spill_free(&c.rows);
	keel_spill_free(&c.mentions);
	keel_spill_free(&c.old);
	keel_spill_free(&c.now);
	keel_spool_close(&c.spool);
	keel_rgroups_free(&c.groups);
	keel_rgroups_free(&c.bgroups);
	free(c.trans);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cond);
	keel_append_builder_free(&c.ab);
	keel_replay_prep_free(&c.prep);
	keel_cartridge_free(owned);
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
