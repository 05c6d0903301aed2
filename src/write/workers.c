/*
 * workers.c - KEEL_INGEST_WORKERS: keel ingest --workers N
 * (docs/replay.md), for stores that take concurrent writers (MySQL).
 *
 * The input is partitioned by tenant, never by subject, so no two writers
 * ever share a key. N worker threads each have their own connection
 * (keel_store_worker_init: READ COMMITTED on MySQL) and their own batcher
 * (ingest.c), so the semantics live in one place. The calling thread reads
 * each line's "tenant"; a tenant seen for the first time is given to the
 * worker with the fewest tenants (ties: the fewest lines so far), and all
 * its lines go to that worker from then on, so a tenant's events keep
 * their order and one tenant is only ever written by one worker. (A hash
 * of the name would be stable across runs but splits few tenants badly: 8
 * equal tenants hash 3/5 onto 2 workers, capping the speedup at 1.6x; the
 * assignment only has to hold for one run.)
 *
 * Lines travel in blocks (a batch of lines, or 4 MiB) through bounded
 * queues, so memory stays bounded by the queues, not the input. A flush is
 * a barrier: every worker drains its queue, commits its open batch and
 * acknowledges the flush's generation; the caller waits for all of them,
 * so that after keel_workers_flush every line offered is committed and
 * every rejection reported, and the workers' reports can be summed
 * without racing them.
 *
 * (SQLite and memory take one writer at a time. A pipeline of parse
 * threads beside one writer was measured no faster than one thread on
 * them and was removed: docs/replay.md.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "ingest.h"
#include "event/json.h"
#include "store/store.h"
#include "util.h"
#include "workers.h"

#define KEEL_WBLOCK_BYTES (4u << 20)
/* Blocks queued for one worker before the feeding thread waits. */
#define KEEL_WQUEUE_BLOCKS 4

struct keel_wline {
	uint64_t position;
	size_t off, len;
	bool too_long;
};

struct keel_wblock {
	struct keel_buf text;
	struct keel_wline *lines;
	size_t nlines, cap;
	struct keel_wblock *next;
};

struct keel_worker {
	struct keel_workers *w;
	struct keel_batcher *batcher;
	struct keel_store *store; /* its own connection */
	struct keel_wblock *head, *tail;
	size_t queued;
	struct keel_wblock *filling; /* the feeding thread's next block */
	uint64_t lines;		     /* lines handed to it */
	uint64_t flushed;	     /* the last flush generation it committed */
	pthread_t thread;
	bool started;
	struct keel_ptrvec tenants; /* names handed to it */
};

struct keel_workers {
	unsigned n;
	struct keel_ingest_options opt; /* the caller's */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_mutex_t reject_mu;
	bool failed, stopping;
	/* failed, for the feeding thread's check of every line without the
	 * mutex (set with failed, under it) */
	atomic_bool failed_flag;
	/* the failure's code (KEEL_ECARTRIDGE: a tenant refused), set before
	 * failed_flag (release), read after it (acquire) */
	int failed_rc;
	uint64_t flush_gen;
	size_t block_lines;
	size_t last_block_bytes; /* text size of the last full block */
	struct keel_buf errmsg;
	struct keel_buf method;
	struct keel_report report; /* summed at each flush */
	uint64_t offered, offered_at_flush;
	struct keel_json_doc doc; /* the feeding thread reads the tenant */
	struct keel_worker *workers;
	struct keel_map tenant_map; /* name -> struct keel_wtenant */
	struct keel_arena arena;
};

/* A tenant and the worker it was given. */
struct keel_wtenant {
	struct keel_str name; /* in the workers' arena */
	unsigned worker;
};

/* ------------------------------------------------------------- blocks */

static struct keel_wblock *keel_wblock_new(size_t lines, size_t bytes)
{
	struct keel_wblock *b = keel_xcalloc(1, sizeof *b);
	keel_buf_init(&b->text);
	/* Sized like the last block, so that filling it does not grow (and
	 * copy) its buffers line after line. */
	b->cap = lines < 4096 ? lines : 4096;
	b->lines = keel_xmalloc(b->cap * sizeof *b->lines);
	keel_buf_reserve(&b->text, bytes);
	return b;
}

static void keel_wblock_free(struct keel_wblock *b)
{
	if (!b)
		return;
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

/* Runs a block's lines through a batcher; 0 or its failure. */
static int keel_wblock_feed(struct keel_wblock *b, struct keel_batcher *bt)
{
	for (size_t i = 0; i < b->nlines; i++) {
		const struct keel_wline *l = &b->lines[i];
		const char *p = b->text.data + l->off;
		int rc = l->too_long
			     ? keel_batcher_add_too_long(bt, l->position, p, l->len)
			     : keel_batcher_add(bt, p, l->len, l->position, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

/* Under the mutex. The first failure is the one reported. */
static void keel_workers_fail(struct keel_workers *w, int rc, const char *msg)
{
	if (!w->failed) {
		keel_buf_reset(&w->errmsg);
		keel_buf_adds(&w->errmsg, msg);
		w->failed = true;
		w->failed_rc = rc;
		atomic_store_explicit(&w->failed_flag, true, memory_order_release);
	}
	pthread_cond_broadcast(&w->cond);
}

/* Workers report rejections at once, one at a time. */
static void keel_workers_reject(void *ud, uint64_t position, const char *id,
				const char *message, const char *input, size_t input_len)
{
	struct keel_workers *w = ((struct keel_worker *)ud)->w;
	if (!w->opt.on_reject)
		return;
	pthread_mutex_lock(&w->reject_mu);
	w->opt.on_reject(w->opt.reject_userdata, position, id, message, input, input_len);
	pthread_mutex_unlock(&w->reject_mu);
}

/* And conflicting duplicates, under the same lock. */
static void keel_workers_conflict(void *ud, uint64_t position, const char *source,
				  const char *id, const char *message, const char *envelope,
				  size_t envelope_len)
{
	struct keel_workers *w = ((struct keel_worker *)ud)->w;
	if (!w->opt.on_conflict)
		return;
	pthread_mutex_lock(&w->reject_mu);
	w->opt.on_conflict(w->opt.conflict_userdata, position, source, id, message,
			   envelope, envelope_len);
	pthread_mutex_unlock(&w->reject_mu);
}

/* ------------------------------------------------------------ a worker */

static void *keel_worker_main(void *arg)
{
	struct keel_worker *g = arg;
	struct keel_workers *w = g->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->failed && !g->head && !w->stopping && g->flushed == w->flush_gen)
			pthread_cond_wait(&w->cond, &w->mu);
		if (w->failed)
			break;
		int rc;
		if (g->head) {
			struct keel_wblock *b = g->head;
			g->head = b->next;
			if (!g->head)
				g->tail = NULL;
			g->queued--;
			pthread_cond_broadcast(&w->cond);
			pthread_mutex_unlock(&w->mu);
			rc = keel_wblock_feed(b, g->batcher);
			keel_wblock_free(b);
			pthread_mutex_lock(&w->mu);
		} else if (g->flushed != w->flush_gen) {
			/* Drained: every line of the flush is in the batcher. */
			uint64_t gen = w->flush_gen;
			pthread_mutex_unlock(&w->mu);
			rc = keel_batcher_flush(g->batcher);
			pthread_mutex_lock(&w->mu);
			g->flushed = gen;
			pthread_cond_broadcast(&w->cond);
		} else {
			break; /* stopping, drained and flushed */
		}
		if (rc) {
			keel_workers_fail(w, rc, keel_batcher_errmsg(g->batcher));
			break;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static unsigned keel_workers_least_loaded(const struct keel_workers *w)
{
	unsigned k = 0;
	for (unsigned i = 1; i < w->n; i++) {
		size_t ti = w->workers[i].tenants.len, tk = w->workers[k].tenants.len;
		if (ti < tk || (ti == tk && w->workers[i].lines < w->workers[k].lines))
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
	keel_ptrvec_push(&w->workers[x->worker].tenants, keel_xstrndup(name.ptr, name.len));
	return x->worker;
}

/* -------------------------------------------------------------- setup */

static int keel_worker_open(struct keel_workers *w, struct keel_worker *g,
			    const char *url, struct keel_buf *err)
{
	char *msg = NULL;
	int rc = keel_store_open(url, &g->store, &msg);
	if (rc) {
		keel_buf_adds(err, msg ? msg : keel_strerror(rc));
		free(msg);
		return rc;
	}
	struct keel_ingest_options o = w->opt;
	o.mode = KEEL_INGEST_STREAMING;
	o.on_reject = keel_workers_reject;
	o.reject_userdata = g;
	if (o.on_conflict) {
		o.on_conflict = keel_workers_conflict;
		o.conflict_userdata = g;
	}
	if ((rc = keel_store_worker_init(g->store)) ||
	    (rc = keel_batcher_new(g->store, &o, &g->batcher))) {
		keel_buf_adds(err, keel_store_errmsg(g->store));
		return rc;
	}
	return 0;
}

int keel_workers_new(const char *url, const struct keel_ingest_options *o,
		     struct keel_workers **out, struct keel_buf *err)
{
	*out = NULL;
	unsigned n = o->workers ? o->workers : 2;
	struct keel_workers *w = keel_xcalloc(1, sizeof *w);
	atomic_init(&w->failed_flag, false);
	w->n = n;
	w->opt = *o;
	w->block_lines = o->batch ? o->batch : KEEL_DEFAULT_BATCH;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_mutex_init(&w->reject_mu, NULL);
	keel_buf_init(&w->errmsg);
	keel_buf_init(&w->method);
	keel_buf_addf(&w->method, "%u workers, one connection each, each tenant on one worker",
		      n);
	keel_json_doc_init(&w->doc);
	keel_map_init(&w->tenant_map);
	keel_arena_init(&w->arena);
	w->workers = keel_xcalloc(n, sizeof *w->workers);
	for (unsigned i = 0; i < n; i++) {
		struct keel_worker *g = &w->workers[i];
		g->w = w;
		int rc = keel_worker_open(w, g, url, err);
		if (rc) {
			keel_workers_free(w);
			return rc;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (pthread_create(&w->workers[i].thread, NULL, keel_worker_main,
				   &w->workers[i]) != 0) {
			keel_buf_adds(err, "cannot start a worker thread");
			keel_workers_free(w);
			return KEEL_ESTORE;
		}
		w->workers[i].started = true;
	}
	*out = w;
	return 0;
}

/* ------------------------------------------------------------ feeding */

/* Hands a full block to worker k; waits while its queue is long. */
static int keel_workers_push(struct keel_workers *w, unsigned k)
{
	struct keel_worker *g = &w->workers[k];
	struct keel_wblock *b = g->filling;
	g->filling = NULL;
	w->last_block_bytes = b->text.len;
	pthread_mutex_lock(&w->mu);
	while (!w->failed && g->queued >= KEEL_WQUEUE_BLOCKS)
		pthread_cond_wait(&w->cond, &w->mu);
	if (!w->failed) {
		if (g->tail)
			g->tail->next = b;
		else
			g->head = b;
		g->tail = b;
		g->queued++;
		b = NULL;
		pthread_cond_broadcast(&w->cond);
	}
	int failed = w->failed ? w->failed_rc : 0;
	pthread_mutex_unlock(&w->mu);
	keel_wblock_free(b);
	return failed;
}

static int keel_workers_offer(struct keel_workers *w, const char *text, size_t len,
			      uint64_t position, bool too_long)
{
	if (atomic_load_explicit(&w->failed_flag, memory_order_acquire))
		return w->failed_rc;
	w->offered++;
	unsigned k = too_long ? keel_workers_least_loaded(w)
			      : keel_workers_route(w, text, len);
	struct keel_worker *g = &w->workers[k];
	g->lines++;
	if (!g->filling)
		g->filling = keel_wblock_new(w->block_lines, w->last_block_bytes);
	keel_wblock_add(g->filling, text, len, position, too_long);
	if (g->filling->nlines < w->block_lines && g->filling->text.len < KEEL_WBLOCK_BYTES)
		return 0;
	return keel_workers_push(w, k);
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

/* With every worker idle: waiting after a flush, or joined. */
static void keel_workers_sum(struct keel_workers *w)
{
	struct keel_report *r = &w->report;
	memset(r, 0, sizeof *r);
	for (unsigned i = 0; i < w->n; i++) {
		keel_report_add(r, keel_batcher_report(w->workers[i].batcher));
		r->statements += keel_store_statements(w->workers[i].store);
	}
	r->read = w->offered;
}

static void keel_workers_join(struct keel_workers *w)
{
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->n; i++)
		if (w->workers[i].started) {
			pthread_join(w->workers[i].thread, NULL);
			w->workers[i].started = false;
		}
}

/* After a failure the workers stop (they see failed); once they have, the
 * report counts what they committed before it. */
int keel_workers_flush(struct keel_workers *w)
{
	for (unsigned k = 0; k < w->n; k++)
		if (w->workers[k].filling && keel_workers_push(w, k))
			break;
	pthread_mutex_lock(&w->mu);
	uint64_t gen = ++w->flush_gen;
	pthread_cond_broadcast(&w->cond);
	for (unsigned k = 0; k < w->n; k++)
		while (!w->failed && w->workers[k].flushed != gen)
			pthread_cond_wait(&w->cond, &w->mu);
	int failed = w->failed ? w->failed_rc : 0;
	pthread_mutex_unlock(&w->mu);
	if (failed)
		keel_workers_join(w);
	keel_workers_sum(w);
	w->offered_at_flush = w->offered;
	return failed;
}

int keel_workers_finish(struct keel_workers *w)
{
	int rc = keel_workers_flush(w);
	keel_workers_join(w);
	return rc;
}

size_t keel_workers_pending(const struct keel_workers *w)
{
	return (size_t)(w->offered - w->offered_at_flush);
}

const struct keel_report *keel_workers_report(struct keel_workers *w)
{
	w->report.read = w->offered;
	return &w->report;
}

const char *keel_workers_errmsg(const struct keel_workers *w)
{
	return w->errmsg.len ? w->errmsg.data : "";
}

const char *keel_workers_method(const struct keel_workers *w)
{
	return w->method.data;
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
	for (unsigned i = 0; i < w->n; i++) {
		struct keel_worker *g = &w->workers[i];
		keel_wblock_free(g->filling);
		while (g->head) {
			struct keel_wblock *b = g->head;
			g->head = b->next;
			keel_wblock_free(b);
		}
		keel_batcher_free(g->batcher);
		keel_store_close(g->store);
		for (size_t t = 0; t < g->tenants.len; t++)
			free(g->tenants.items[t]);
		keel_ptrvec_free(&g->tenants);
	}
	free(w->workers);
	keel_json_doc_free(&w->doc);
	keel_map_free(&w->tenant_map);
	keel_arena_free(&w->arena);
	keel_buf_free(&w->errmsg);
	keel_buf_free(&w->method);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->reject_mu);
	free(w);
}

/* ---------------------------------------------------------- for tests */

size_t keel_workers_count(const struct keel_workers *w)
{
	return w->n;
}

const struct keel_ptrvec *keel_workers_tenants_of(const struct keel_workers *w, size_t i)
{
	return &w->workers[i].tenants;
}
