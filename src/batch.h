/*
 * batch.h - the events of one batch and the operations their handlers
 * produced. Everything here lives in the batch's arena.
 */
#ifndef KEEL_BATCH_H
#define KEEL_BATCH_H

#include "util.h"

struct keel_timeline;
struct keel_entity;

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
	/* Resolved by the overlay when the batch's keys are collected. */
	struct keel_timeline *timeline;
	struct keel_entity *subject_entity;
	struct keel_entity *object_entity;
};

enum keel_event_status {
	KEEL_EV_PENDING,
	KEEL_EV_DUPLICATE,  /* logged before with the same envelope */
	KEEL_EV_CONFLICT,   /* logged before with a different envelope */
	KEEL_EV_ACCEPTED,
};

struct keel_batch_event {
	struct keel_str tenant;
	struct keel_str id;
	struct keel_str type;
	int64_t time;
	struct keel_str envelope; /* compacted */
	uint64_t hash;		  /* keel_hash64 of envelope, seed 0 */
	uint64_t position;	  /* input line or index */
	enum keel_event_status status;
	uint64_t stored_hash; /* set by the store's seen_ids on duplicates */
	bool unhandled;	      /* no handler for its type */
	struct keel_op *ops;
	size_t nops;
	int64_t seq; /* set by the store when logged */
};

#endif
