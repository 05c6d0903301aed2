/*
 * prepare.h - the per-event work that needs no store: parse, validate the
 * envelope, run the cartridge, compact and hash. The ingester and replay
 * both prepare events through it, so an event is judged the same way on
 * every path and a rejection reads the same everywhere.
 */
#ifndef KEEL_PREPARE_H
#define KEEL_PREPARE_H

#include "keel.h"
#include "event/batch.h"
#include "event/json.h"
#include "util.h"

struct keel_tenant_cartridges;

struct keel_prep {
	const struct keel_cartridge *cartridge; /* borrowed */
	/* When set, each event's tenant picks its cartridge here instead
	 * (src/cartridge/tenant.h); borrowed. */
	struct keel_tenant_cartridges *tenants;
	/* Why the last keel_prep_event returned NULL when it was not an
	 * ordinary rejection: KEEL_ECARTRIDGE (its tenant's events are
	 * refused; rejected too, through on_reject) or a store's error
	 * reading the tenant's cartridge (not rejected; msg holds it). */
	int refused;
	const char *position_word;		/* "line", "index", "event" */
	size_t max_line;			/* 0: no limit */
	size_t max_envelope;	  /* compacted; 0: no limit (the store's) */
	const char *max_envelope_why; /* the store's reason, for the message */
	const char *max_envelope_holder; /* "store" (NULL) or "log" */
	keel_reject_fn on_reject;		/* may be NULL */
	void *reject_userdata;
	keel_conflict_fn on_conflict;		/* may be NULL */
	void *conflict_userdata;
	struct keel_report *report; /* read and rejected are counted here */
	bool defer_hash; /* leave ev->hash to keel_batch_event_hash (batch.h) */
	/* The envelope rules only, no cartridge run (keel publish, which
	 * does not see the store that holds each tenant's cartridge): the
	 * event has no operations. */
	bool envelope_only;
	struct keel_json_doc doc;
	struct keel_buf msg;
};

/* Fills p with defaults ("line", no limit, no callback); the caller sets
 * the public fields it needs afterwards. */
void keel_prep_init(struct keel_prep *p, const struct keel_cartridge *c,
		    struct keel_report *report);
void keel_prep_free(struct keel_prep *p);

/* Prepares one envelope found at position. Returns the event, allocated
 * with its strings, operations and compacted envelope in a (status
 * KEEL_EV_PENDING), or NULL when it was rejected: then on_reject has been
 * called with the full message and report->rejected counted (see also
 * p->refused). */
struct keel_batch_event *keel_prep_event(struct keel_prep *p, struct keel_arena *a,
					 const char *text, size_t len, uint64_t position);

/* Reports ev, a conflicting duplicate, through on_conflict with both
 * positions: the first copy's (first_known: first_position) or else the
 * logged one's seq. */
void keel_prep_conflict(struct keel_prep *p, const struct keel_batch_event *ev,
			bool first_known, uint64_t first_position, int64_t stored_seq);

/* Rejects an input line longer than max_line (only its head was kept). */
void keel_prep_too_long(struct keel_prep *p, uint64_t position, const char *head,
			size_t head_len);

#endif
