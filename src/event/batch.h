/*
 * batch.h - the events of one batch and the operations their handlers
 * produced. Everything here lives in the batch's arena.
 */
#ifndef KEEL_BATCH_H
#define KEEL_BATCH_H

#include "util.h"

enum keel_op_kind {
	KEEL_OP_ENTITY, /* name = kind (absent: none given) */
	KEEL_OP_FACT,   /* name = predicate, value = JSON (absent: no value) */
	KEEL_OP_UNSET,  /* name = predicate */
	KEEL_OP_LINK,   /* name = relation, object */
	KEEL_OP_UNLINK, /* name = relation, object */
};

struct keel_op {
	enum keel_op_kind kind;
	struct keel_str subject;
	struct keel_str name;
	struct keel_str object;
	struct keel_str value;
};

enum keel_event_status {
	KEEL_EV_PENDING,
	KEEL_EV_DUPLICATE,  /* logged before with the same envelope */
	KEEL_EV_CONFLICT,   /* logged before with a different envelope */
	KEEL_EV_ACCEPTED,
};

/* An event as provenance names it: its source and id (within a tenant,
 * the event's identity, docs/semantics.md). ptr NULL in both: none (an
 * open row's closed_by). */
struct keel_event_ref {
	struct keel_str source;
	struct keel_str id;
};

#define KEEL_EVENT_REF_NONE ((struct keel_event_ref){KEEL_STR_NULL, KEEL_STR_NULL})

/* The order of references in the dump: by source, then id, bytewise. */
static inline int keel_event_ref_cmp(struct keel_event_ref a, struct keel_event_ref b)
{
	int c = keel_str_cmp(a.source, b.source);
	return c ? c : keel_str_cmp(a.id, b.id);
}

static inline bool keel_event_ref_eq(struct keel_event_ref a, struct keel_event_ref b)
{
	return keel_str_eq(a.id, b.id) && keel_str_eq(a.source, b.source);
}

/* tenant, source, id and type may be views into envelope (prepare.c), so none of
 * them is NUL-terminated. */
struct keel_batch_event {
	struct keel_str tenant;
	struct keel_str source; /* "" when the envelope has none */
	struct keel_str id;
	struct keel_str type;
	int64_t time;
	struct keel_str envelope; /* compacted */
	uint64_t hash;		  /* keel_batch_event_hash: read it through that */
	uint64_t position;	  /* input line or index */
	uint64_t key_hash;	  /* keel_batch_event_key_hash; 0 until asked */
	enum keel_event_status status;
	uint64_t stored_hash; /* set by the store's seen_ids on duplicates */
	int64_t stored_seq;   /* seen_ids: the logged event's seq */
	/* A repeat within the batch: the batch's first event of its
	 * identity (keel_batcher_mark_repeats); NULL otherwise. */
	const struct keel_batch_event *first;
	size_t tx_seq; /* its on_outcome seq, once its batch is written */
	/* Whose it is, as keel_ingest_add_owned was told (keel serve: the
	 * POST it came in), for on_outcome; NULL otherwise. */
	void *owner;
	bool unhandled;	      /* no handler for its type */
	struct keel_op *ops;
	size_t nops;
	int64_t seq;	     /* set by the store when logged */
	int64_t recorded_at; /* the store's clock when logged (keel_store_recorded_at) */
};

/* Event seq of the batch an ingester is committing, for its on_outcome
 * callback (src/write/ingest.c): valid only during that callback. */
struct keel_ingest;
const struct keel_batch_event *keel_ingest_batch_event(const struct keel_ingest *ing,
						       size_t seq);
/* keel_ingest_add, the event's owner kept with it: on_outcome finds it
 * in keel_ingest_batch_event(ing, seq)->owner, so that a caller feeding
 * several sources into one batch answers each event's own source.
 * KEEL_INGEST_STREAMING only (other modes keep no owner). */
int keel_ingest_add_owned(struct keel_ingest *ing, const char *text, size_t len,
			  uint64_t position, void *owner);

/* Hash of an event's identity (tenant, source, id), for the maps that
 * find logged events (the batch's repeats, the memory store's log). Computed on first
 * use and kept, so each event's id is hashed once however many maps see
 * it; 0 means not yet computed (a computed hash is never 0). */
static inline uint64_t keel_event_key_hash(struct keel_str tenant, struct keel_str source,
					   struct keel_str id)
{
	uint64_t seed = keel_hash64(tenant.ptr, tenant.len, 3);
	return keel_hash64(id.ptr, id.len, keel_hash64(source.ptr, source.len, seed)) | 1;
}

/* Whether two events have the same identity. */
static inline bool keel_batch_event_same(const struct keel_batch_event *a,
					 const struct keel_batch_event *b)
{
	return keel_str_eq(a->id, b->id) && keel_str_eq(a->source, b->source) &&
	       keel_str_eq(a->tenant, b->tenant);
}

static inline uint64_t keel_batch_event_key_hash(struct keel_batch_event *ev)
{
	if (!ev->key_hash)
		ev->key_hash = keel_event_key_hash(ev->tenant, ev->source, ev->id);
	return ev->key_hash;
}

/* keel_batch_event_key_hash of events ev[0..n) at once: a batch's events
 * mostly share a tenant, whose name is then hashed once for a run of
 * them instead of once an event. */
static inline void keel_batch_key_hashes(struct keel_batch_event **ev, size_t n)
{
	struct keel_str tenant = KEEL_STR_NULL;
	uint64_t seed = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i]->key_hash)
			continue;
		if (!tenant.ptr || !keel_str_eq(ev[i]->tenant, tenant)) {
			tenant = ev[i]->tenant;
			seed = keel_hash64(tenant.ptr, tenant.len, 3);
		}
		uint64_t h = keel_hash64(ev[i]->source.ptr, ev[i]->source.len, seed);
		ev[i]->key_hash = keel_hash64(ev[i]->id.ptr, ev[i]->id.len, h) | 1;
	}
}

/* keel_hash64 of the event's envelope, seed 0. An ingester whose store
 * hashes on demand (keel_store_ops.hashes_on_demand) leaves it to be
 * computed here on first use - most events never need it there - and
 * 0 means not yet computed (a hash that is 0 is computed again, to the
 * same value). Others have it from prepare. */
static inline uint64_t keel_batch_event_hash(struct keel_batch_event *ev)
{
	if (!ev->hash)
		ev->hash = keel_hash64(ev->envelope.ptr, ev->envelope.len, 0);
	return ev->hash;
}

#endif
