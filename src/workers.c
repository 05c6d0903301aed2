/*
 * workers.c - keel ingest --workers N
 * (docs/replay.md).
 *
 * The input is partitioned by tenant, never by subject, so no two writers
 * ever share a key. Two shapes, chosen by the store:
 *
 *   tenants   (stores with concurrent_writers: MySQL) N worker threads, each
 *             with its own connection (worker_init: READ COMMITTED) and its
 *             own keel_ingest. The calling thread reads each line's
 *             "tenant"; a tenant seen for the first time is given to the
 *             worker with the fewest tenants (ties: the fewest lines so
 *             far), and all its lines go to that worker from then on, so
 *             a tenant's
 *             events keep their order and one tenant is only ever written
 *             by one worker. (A hash of the name would be stable across
 *             runs but splits few tenants badly: 8 equal tenants hash 3/5
 *             onto 2 workers, capping the speedup at 1.6x; the assignment
 *             only has to hold for one run.)
 *   pipeline  (single-writer stores: SQLite, memory) N - 1 threads prepare
 *             blocks of lines (parse, validate, cartridge: keel_ingest_add
 *             on an ingester of their own, which never flushes by itself)
 *             and one writer thread commits the prepared blocks in input
 *             order with keel_ingest_flush. The batches are those of one
 *             worker, in the same order; rejections are buffered with their
 *             block and reported by the writer, in input order too.
 *
 * Both reuse keel_ingest unchanged: the semantics live in one place. Lines
 * travel in blocks (a batch of lines, or 4 MiB) through bounded queues, so
 * memory stays bounded by the queues, not the input.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../include/keel.h"
#include "json.h"
#include "store.h"
#include "util.h"
#include "workers.h"

#define KEEL_WBLOCK_BYTES (4u << 20)

struct keel_wline {
	uint64_t position;
	size_t off, len;
	bool too_long;
};

struct keel_wreject {
	uint64_t position;
	char *id;
	char *message;
	char *input;
	size_t input_len;
};

struct keel_wblock {
	struct keel_buf text;
	struct keel_wline *lines;
	size_t nlines, cap;
	uint64_t ticket;
	struct keel_wing *wing; /* pipeline: the ingester that prepared it */
	struct keel_wreject *rejects;
	size_t nrejects, rejects_cap;
	struct keel_wblock *next;
};

/* An ingester and what its callbacks need. */
struct keel_wing {
	struct keel_workers *w;
	struct keel_ingest *ing;
	struct keel_store *store;  /* tenants: its own connection */
	struct keel_wblock *block; /* pipeline: the block being prepared */
	struct keel_wing *next_free;
	/* tenants: the worker's queue and thread */
	struct keel_wblock *head, *tail;
	size_t queued;
	pthread_t thread;
	bool started;
	struct keel_ptrvec tenants; /* names handed to this worker */
};

struct keel_workers {
	enum keel_workers_mode mode;
	unsigned n;
	struct keel_ingest_options opt; /* the caller's */
	char *url;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_mutex_t reject_mu;
	bool failed, stopping;
	/* failed, for the feeding thread's check of every line without the
	 * mutex (set with failed, under it) */
	atomic_bool failed_flag;
	size_t last_block_bytes; /* feeding: text size of the last full block */
	struct keel_buf errmsg;
	struct keel_report report;
	uint64_t offered;
	/* the block being filled (pipeline) or per worker (tenants) */
	struct keel_wblock **filling;
	size_t block_lines;
	struct keel_json_doc doc; /* dispatcher: reads the tenant */
	/* tenants */
	struct keel_wing *wings;
	size_t nwings;
	struct keel_map tenant_map; /* name -> struct keel_wtenant */
	struct keel_arena arena;
	uint64_t *loads; /* lines handed to each worker */
	/* pipeline */
	struct keel_store *store;
	struct keel_wblock *in_head, *in_tail; /* to prepare, FIFO */
	size_t in_queued;
	struct keel_wblock *ready; /* prepared, any order */
	struct keel_wing *free_wings;
	uint64_t next_ticket, write_ticket;
	pthread_t *threads;
	size_t nthreads;
	pthread_t writer;
	bool writer_started;
};

/* A tenant and the worker it was given. */
struct keel_wtenant {
	struct keel_str name; /* in the workers' arena */
	unsigned worker;
};

/* ------------------------------------------------------------- blocks */

static struct keel_wblock *keel_wblock_new(void)
{
	struct keel_wblock *b = keel_xcalloc(1, sizeof *b);
	keel_buf_init(&b->text);
	return b;
}

static void keel_wblock_free(struct keel_wblock *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nrejects; i++) {
		free(b->rejects[i].id);
		free(b->rejects[i].message);
		free(b->rejects[i].input);
	}
	free(b->rejects);
	free(b->lines);
	keel_buf_free(&b->text);
	free(b);
}

static void keel_wblock_add(struct keel_wblock *b, const char *text, size_t len,
			    uint64_t position, bool too_long)
{
	if (b->nlines == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->lines = keel_xrealloc(b->lines, b->cap * sizeof *b->lines);
	}
	b->lines[b->nlines++] = (struct keel_wline){position, b->text.len, len, too_long};
	keel_buf_add(&b->text, text, len);
}

static bool keel_wblock_full(const struct keel_workers *w, const struct keel_wblock *b)
{
	return b->nlines >= w->block_lines || b->text.len >= KEEL_WBLOCK_BYTES;
}

/* Runs a block's lines through an ingester; 0 or its failure. */
static int keel_wblock_feed(struct keel_wblock *b, struct keel_ingest *ing)
{
	for (size_t i = 0; i < b->nlines; i++) {
		const struct keel_wline *l = &b->lines[i];
		const char *p = b->text.data + l->off;
		int rc = l->too_long
			     ? keel_ingest_add_too_long(ing, l->position, p, l->len)
			     : keel_ingest_add(ing, p, l->len, l->position);
		if (rc)
			return rc;
	}
	return 0;
}

static void keel_workers_fail(struct keel_workers *w, const char *msg)
{
	/* The first failure is the one reported. */
	if (!w->failed) {
		keel_buf_reset(&w->errmsg);
		keel_buf_adds(&w->errmsg, msg);
		w->failed = true;
		atomic_store_explicit(&w->failed_flag, true, memory_order_relaxed);
	}
	pthread_cond_broadcast(&w->cond);
}

/* ----------------------------------------------------------- rejects */

/* tenants: workers report at once, one at a time. */
static void keel_workers_reject_locked(void *ud, uint64_t position, const char *id,
				       const char *message, const char *input,
				       size_t input_len)
{
	struct keel_wing *g = ud;
	struct keel_workers *w = g->w;
	if (!w->opt.on_reject)
		return;
	pthread_mutex_lock(&w->reject_mu);
	w->opt.on_reject(w->opt.reject_userdata, position, id, message, input, input_len);
	pthread_mutex_unlock(&w->reject_mu);
}

/* pipeline: kept with the block, reported by the writer in order. */
static void keel_workers_reject_buffered(void *ud, uint64_t position, const char *id,
					 const char *message, const char *input,
					 size_t input_len)
{
	struct keel_wing *g = ud;
	struct keel_wblock *b = g->block;
	if (!g->w->opt.on_reject || !b)
		return;
	if (b->nrejects == b->rejects_cap) {
		b->rejects_cap = b->rejects_cap ? 2 * b->rejects_cap : 8;
		b->rejects =
		    keel_xrealloc(b->rejects, b->rejects_cap * sizeof *b->rejects);
	}
	struct keel_wreject *r = &b->rejects[b->nrejects++];
	r->position = position;
	r->id = id ? keel_xstrdup(id) : NULL;
	r->message = keel_xstrdup(message);
	r->input = keel_xmalloc(input_len + 1);
	memcpy(r->input, input, input_len);
	r->input[input_len] = 0;
	r->input_len = input_len;
}

/* ---------------------------------------------------------- pipeline */

/* Whether a block waits to be prepared and an ingester is free for it. */
static bool keel_workers_can_prepare(const struct keel_workers *w)
{
	return w->in_head && w->free_wings;
}

/* Takes the first waiting block and a free ingester and prepares it (w->mu
 * is held on entry and on return, released meanwhile). */
static void keel_workers_prepare_one(struct keel_workers *w)
{
	struct keel_wblock *b = w->in_head;
	w->in_head = b->next;
	if (!w->in_head)
		w->in_tail = NULL;
	w->in_queued--;
	struct keel_wing *g = w->free_wings;
	w->free_wings = g->next_free;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);

	g->block = b;
	int rc = keel_wblock_feed(b, g->ing);
	g->block = NULL;
	b->wing = g;

	pthread_mutex_lock(&w->mu);
	if (rc)
		keel_workers_fail(w, keel_ingest_errmsg(g->ing));
	b->next = w->ready;
	w->ready = b;
	pthread_cond_broadcast(&w->cond);
}

static void *keel_workers_prepare_main(void *arg)
{
	struct keel_workers *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		/* An ingester and a block together, so that the block the
		 * writer waits for is always being prepared or ready. */
		while (!w->failed && !keel_workers_can_prepare(w) &&
		       !(w->stopping && !w->in_head))
			pthread_cond_wait(&w->cond, &w->mu);
		if (w->failed || (w->stopping && !w->in_head))
			break;
		keel_workers_prepare_one(w);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void *keel_workers_write_main(void *arg)
{
	struct keel_workers *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct keel_wblock *b = NULL, **pp = NULL;
		for (;;) {
			for (pp = &w->ready; *pp; pp = &(*pp)->next)
				if ((*pp)->ticket == w->write_ticket)
					break;
			b = *pp;
			if (b || w->failed ||
			    (w->stopping && w->write_ticket == w->next_ticket))
				break;
			/* Rather than wait, prepare a block too: when parsing is
			 * the slower side (a re-send, the memory store), both
			 * cores parse. This delays nothing: the queue is in
			 * ticket order, so the block the writer needs next is
			 * already being prepared, or is the one it takes. */
			if (keel_workers_can_prepare(w)) {
				keel_workers_prepare_one(w);
				continue;
			}
			pthread_cond_wait(&w->cond, &w->mu);
		}
		if (!b || w->failed)
			break;
		*pp = b->next;
		pthread_mutex_unlock(&w->mu);

		struct keel_wing *g = b->wing;
		if (w->opt.on_reject)
			for (size_t i = 0; i < b->nrejects; i++) {
				const struct keel_wreject *r = &b->rejects[i];
				w->opt.on_reject(w->opt.reject_userdata, r->position,
						 r->id, r->message, r->input,
						 r->input_len);
			}
		int rc = keel_ingest_flush(g->ing);
		keel_wblock_free(b);

		pthread_mutex_lock(&w->mu);
		if (rc)
			keel_workers_fail(w, keel_ingest_errmsg(g->ing));
		g->next_free = w->free_wings;
		w->free_wings = g;
		w->write_ticket++;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ------------------------------------------------------------ tenants */

static void *keel_workers_tenant_main(void *arg)
{
	struct keel_wing *g = arg;
	struct keel_workers *w = g->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->failed && !g->head && !w->stopping)
			pthread_cond_wait(&w->cond, &w->mu);
		if (w->failed)
			break;
		struct keel_wblock *b = g->head;
		if (!b) /* stopping and drained */
			break;
		g->head = b->next;
		if (!g->head)
			g->tail = NULL;
		g->queued--;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->mu);
		int rc = keel_wblock_feed(b, g->ing);
		keel_wblock_free(b);
		pthread_mutex_lock(&w->mu);
		if (rc) {
			keel_workers_fail(w, keel_ingest_errmsg(g->ing));
			break;
		}
	}
	bool flush = !w->failed;
	pthread_mutex_unlock(&w->mu);
	if (flush && keel_ingest_flush(g->ing)) {
		pthread_mutex_lock(&w->mu);
		keel_workers_fail(w, keel_ingest_errmsg(g->ing));
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

static unsigned keel_workers_least_loaded(const struct keel_workers *w)
{
	unsigned k = 0;
	for (unsigned i = 1; i < w->n; i++) {
		size_t ti = w->wings[i].tenants.len, tk = w->wings[k].tenants.len;
		if (ti < tk || (ti == tk && w->loads[i] < w->loads[k]))
			k = i;
	}
	return k;
}

/* The worker of a line: its tenant's, or for a tenant seen for the first
 * time the least loaded one. Lines whose tenant cannot be read go to the
 * least loaded worker, which rejects them with the usual message. */
static unsigned keel_workers_route(struct keel_workers *w, const char *text, size_t len)
{
	struct keel_json_error jerr;
	const struct keel_json *t = NULL;
	if (keel_json_parse(&w->doc, text, len, &jerr) == 0 && w->doc.root &&
	    w->doc.root->type == KEEL_JSON_OBJECT)
		t = keel_json_get(w->doc.root, "tenant", 6);
	if (!t || t->type != KEEL_JSON_STRING)
		return keel_workers_least_loaded(w);
	struct keel_str name = keel_str_make(t->str, t->len);
	uint64_t h = keel_hash64(name.ptr, name.len, 1);
	for (size_t i = keel_map_first(&w->tenant_map, h); i != SIZE_MAX;
	     i = keel_map_next(&w->tenant_map, h, i)) {
		const struct keel_wtenant *x = w->tenant_map.values[i];
		if (keel_str_eq(x->name, name))
			return x->worker;
	}
	struct keel_wtenant *x = keel_arena_alloc(&w->arena, sizeof *x);
	x->name = keel_arena_str(&w->arena, name);
	x->worker = keel_workers_least_loaded(w);
	keel_map_put(&w->tenant_map, h, x);
	keel_ptrvec_push(&w->wings[x->worker].tenants, keel_xstrndup(name.ptr, name.len));
	return x->worker;
}

/* -------------------------------------------------------------- setup */

static int keel_workers_new_ingest(struct keel_workers *w, struct keel_wing *g,
				   struct keel_store *s, bool buffered)
{
	struct keel_ingest_options o = w->opt;
	o.on_reject =
	    buffered ? keel_workers_reject_buffered : keel_workers_reject_locked;
	o.reject_userdata = g;
	if (buffered)
		o.batch = SIZE_MAX; /* the writer flushes, never keel_ingest_add */
	g->w = w;
	return keel_ingest_new(s, &o, &g->ing);
}

static int keel_workers_setup_error(char **errmsg, const char *msg)
{
	if (errmsg)
		*errmsg = keel_xstrdup(msg);
	return KEEL_ESTORE;
}

int keel_workers_new(const char *store_url, const struct keel_ingest_options *o,
		     unsigned workers, enum keel_workers_mode mode,
		     struct keel_workers **out, char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (!o || !o->cartridge || workers < 1)
		return KEEL_EINVAL;
	struct keel_store *first = NULL;
	int rc = keel_store_open(store_url, &first, errmsg);
	if (rc)
		return rc;
	if (mode == KEEL_WORKERS_AUTO)
		mode = first->ops->concurrent_writers ? KEEL_WORKERS_TENANTS
						      : KEEL_WORKERS_PIPELINE;

	struct keel_workers *w = keel_xcalloc(1, sizeof *w);
	atomic_init(&w->failed_flag, false);
	w->mode = mode;
	w->n = workers;
	w->opt = *o;
	w->url = store_url ? keel_xstrdup(store_url) : NULL;
	w->block_lines = o->batch ? o->batch : 500;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_mutex_init(&w->reject_mu, NULL);
	keel_buf_init(&w->errmsg);
	keel_json_doc_init(&w->doc);
	keel_map_init(&w->tenant_map);
	keel_arena_init(&w->arena);
	w->loads = keel_xcalloc(workers, sizeof *w->loads);
	*out = w;

	if (mode == KEEL_WORKERS_TENANTS) {
		w->nwings = workers;
		w->wings = keel_xcalloc(workers, sizeof *w->wings);
		w->filling = keel_xcalloc(workers, sizeof *w->filling);
		for (unsigned i = 0; i < workers; i++) {
			struct keel_wing *g = &w->wings[i];
			if (i == 0) {
				g->store = first;
			} else if ((rc = keel_store_open(store_url, &g->store, errmsg))) {
				keel_workers_free(w);
				*out = NULL;
				return rc;
			}
			if ((rc = keel_store_worker_init(g->store)) ||
			    (rc = keel_workers_new_ingest(w, g, g->store, false))) {
				keel_workers_setup_error(errmsg,
							 keel_store_errmsg(g->store));
				keel_workers_free(w);
				*out = NULL;
				return rc;
			}
		}
		for (unsigned i = 0; i < workers; i++) {
			if (pthread_create(&w->wings[i].thread, NULL,
					   keel_workers_tenant_main, &w->wings[i]) != 0) {
				keel_workers_free(w);
				*out = NULL;
				return keel_workers_setup_error(
				    errmsg, "cannot start a worker thread");
			}
			w->wings[i].started = true;
		}
		return 0;
	}

	/* pipeline: N - 1 preparers (at least one) and a writer that
	 * prepares too while it would wait; two ingesters per preparer, so
	 * each can prepare while the writer writes what it prepared before,
	 * and one for the writer's own preparing. */
	w->store = first;
	size_t preparers = workers > 1 ? workers - 1 : 1;
	w->nwings = 2 * preparers + 1;
	w->wings = keel_xcalloc(w->nwings, sizeof *w->wings);
	w->filling = keel_xcalloc(1, sizeof *w->filling);
	for (size_t i = 0; i < w->nwings; i++) {
		struct keel_wing *g = &w->wings[i];
		if ((rc = keel_workers_new_ingest(w, g, first, true))) {
			keel_workers_free(w);
			*out = NULL;
			return rc;
		}
		g->next_free = w->free_wings;
		w->free_wings = g;
	}
	w->threads = keel_xcalloc(preparers, sizeof *w->threads);
	for (size_t i = 0; i < preparers; i++) {
		if (pthread_create(&w->threads[i], NULL, keel_workers_prepare_main, w) !=
		    0) {
			keel_workers_free(w);
			*out = NULL;
			return keel_workers_setup_error(errmsg,
							"cannot start a worker thread");
		}
		w->nthreads = i + 1;
	}
	if (pthread_create(&w->writer, NULL, keel_workers_write_main, w) != 0) {
		keel_workers_free(w);
		*out = NULL;
		return keel_workers_setup_error(errmsg, "cannot start the writer thread");
	}
	w->writer_started = true;
	return 0;
}

/* ------------------------------------------------------------ feeding */

/* Hands a full block on; waits while the queue is long. */
static int keel_workers_push(struct keel_workers *w, struct keel_wblock *b,
			     unsigned worker)
{
	pthread_mutex_lock(&w->mu);
	if (w->mode == KEEL_WORKERS_TENANTS) {
		struct keel_wing *g = &w->wings[worker];
		while (!w->failed && g->queued >= 4)
			pthread_cond_wait(&w->cond, &w->mu);
		if (!w->failed) {
			if (g->tail)
				g->tail->next = b;
			else
				g->head = b;
			g->tail = b;
			g->queued++;
			b = NULL;
		}
	} else {
		while (!w->failed && w->in_queued >= 2 * w->nthreads + 2)
			pthread_cond_wait(&w->cond, &w->mu);
		if (!w->failed) {
			b->ticket = w->next_ticket++;
			if (w->in_tail)
				w->in_tail->next = b;
			else
				w->in_head = b;
			w->in_tail = b;
			w->in_queued++;
			b = NULL;
		}
	}
	bool failed = w->failed;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	keel_wblock_free(b);
	return failed ? KEEL_ESTORE : 0;
}

static int keel_workers_offer(struct keel_workers *w, const char *text, size_t len,
			      uint64_t position, bool too_long)
{
	if (atomic_load_explicit(&w->failed_flag, memory_order_relaxed))
		return KEEL_ESTORE;
	w->offered++;
	unsigned k = 0;
	if (w->mode == KEEL_WORKERS_TENANTS) {
		k = too_long ? keel_workers_least_loaded(w)
			     : keel_workers_route(w, text, len);
		w->loads[k]++;
	}
	struct keel_wblock **slot = &w->filling[w->mode == KEEL_WORKERS_TENANTS ? k : 0];
	if (!*slot) {
		/* Sized like the last block, so that filling it does not grow
		 * (and copy) its buffers line after line. */
		*slot = keel_wblock_new();
		(*slot)->cap = w->block_lines < 4096 ? w->block_lines : 4096;
		(*slot)->lines = keel_xmalloc((*slot)->cap * sizeof *(*slot)->lines);
		keel_buf_reserve(&(*slot)->text, w->last_block_bytes);
	}
	keel_wblock_add(*slot, text, len, position, too_long);
	if (!keel_wblock_full(w, *slot))
		return 0;
	struct keel_wblock *b = *slot;
	*slot = NULL;
	w->last_block_bytes = b->text.len;
	return keel_workers_push(w, b, k);
}

int keel_workers_add(struct keel_workers *w, const char *text, size_t len,
		     uint64_t position)
{
	return keel_workers_offer(w, text, len, position, false);
}

int keel_workers_add_too_long(struct keel_workers *w, uint64_t position, const char *head,
			      size_t head_len)
{
	return keel_workers_offer(w, head, head_len, position, true);
}

static void keel_workers_join(struct keel_workers *w)
{
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	if (w->mode == KEEL_WORKERS_TENANTS) {
		for (size_t i = 0; i < w->nwings; i++)
			if (w->wings[i].started) {
				pthread_join(w->wings[i].thread, NULL);
				w->wings[i].started = false;
			}
		return;
	}
	for (size_t i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	w->nthreads = 0;
	if (w->writer_started) {
		pthread_join(w->writer, NULL);
		w->writer_started = false;
	}
}

static void keel_workers_sum(struct keel_workers *w)
{
	struct keel_report *r = &w->report;
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < w->nwings; i++) {
		if (!w->wings[i].ing)
			continue;
		const struct keel_report *x = keel_ingest_report(w->wings[i].ing);
		r->read += x->read;
		r->accepted += x->accepted;
		r->duplicates += x->duplicates;
		r->conflicting += x->conflicting;
		r->unhandled += x->unhandled;
		r->rejected += x->rejected;
		r->rows_inserted += x->rows_inserted;
		r->rows_closed += x->rows_closed;
		r->batches += x->batches;
		if (w->mode == KEEL_WORKERS_TENANTS)
			r->statements += keel_store_statements(w->wings[i].store);
	}
	if (w->mode == KEEL_WORKERS_PIPELINE)
		r->statements = keel_store_statements(w->store);
}

int keel_workers_finish(struct keel_workers *w)
{
	size_t nslots = w->mode == KEEL_WORKERS_TENANTS ? w->n : 1;
	int rc = 0;
	for (size_t k = 0; k < nslots; k++) {
		struct keel_wblock *b = w->filling[k];
		w->filling[k] = NULL;
		if (b && !rc)
			rc = keel_workers_push(w, b, (unsigned)k);
		else
			keel_wblock_free(b);
	}
	keel_workers_join(w);
	keel_workers_sum(w);
	return w->failed ? KEEL_ESTORE : rc;
}

const struct keel_report *keel_workers_report(struct keel_workers *w)
{
	if (w->report.read < w->offered && !w->stopping)
		w->report.read = w->offered;
	return &w->report;
}

const char *keel_workers_errmsg(const struct keel_workers *w)
{
	return w->errmsg.len ? w->errmsg.data : "";
}

enum keel_workers_mode keel_workers_mode(const struct keel_workers *w)
{
	return w->mode;
}

void keel_workers_free(struct keel_workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if (!w->stopping)
		w->failed = true; /* not finished: discard what is open */
	pthread_mutex_unlock(&w->mu);
	keel_workers_join(w);
	size_t nslots = w->mode == KEEL_WORKERS_TENANTS ? w->n : 1;
	for (size_t k = 0; w->filling && k < nslots; k++)
		keel_wblock_free(w->filling[k]);
	free(w->filling);
	while (w->in_head) {
		struct keel_wblock *b = w->in_head;
		w->in_head = b->next;
		keel_wblock_free(b);
	}
	while (w->ready) {
		struct keel_wblock *b = w->ready;
		w->ready = b->next;
		keel_wblock_free(b);
	}
	for (size_t i = 0; i < w->nwings; i++) {
		struct keel_wing *g = &w->wings[i];
		while (g->head) {
			struct keel_wblock *b = g->head;
			g->head = b->next;
			keel_wblock_free(b);
		}
		keel_ingest_free(g->ing);
		if (w->mode == KEEL_WORKERS_TENANTS)
			keel_store_close(g->store);
		for (size_t t = 0; t < g->tenants.len; t++)
			free(g->tenants.items[t]);
		keel_ptrvec_free(&g->tenants);
	}
	free(w->wings);
	free(w->threads);
	if (w->mode == KEEL_WORKERS_PIPELINE)
		keel_store_close(w->store);
	keel_json_doc_free(&w->doc);
	keel_map_free(&w->tenant_map);
	keel_arena_free(&w->arena);
	free(w->loads);
	keel_buf_free(&w->errmsg);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->reject_mu);
	free(w->url);
	free(w);
}

/* ---------------------------------------------------------- for tests */

size_t keel_workers_count(const struct keel_workers *w)
{
	return w->mode == KEEL_WORKERS_TENANTS ? w->nwings : 1;
}

const struct keel_ptrvec *keel_workers_tenants_of(const struct keel_workers *w, size_t i)
{
	return &w->wings[i].tenants;
}
