/*
 * lease.h - partition ownership through the log's leases bucket
 * (lease.c, docs/log.md "Leases"). Used by the consumer only.
 */
#ifndef KEEL_LOG_LEASE_H
#define KEEL_LOG_LEASE_H

#include <pthread.h>

#include "log.h"

struct keel_lease_part {
	bool owned;
	uint64_t rev;	  /* the last revision written */
	uint64_t token;	  /* the revision that took it: the fencing token */
	int64_t renewed;  /* when last written (keel_log_now_ms) */
};

struct keel_leases {
	kvStore *kv;
	char *name, *member_key;
	uint32_t partitions;
	int64_t ttl_ms; /* the lease time: the bucket's TTL */
	uint32_t members, index; /* the last view of the living members */
	/* The renewer thread writes the member key and the owned leases every
	 * third of a lease, whatever the consumer's loop is doing (a long
	 * commit, a store being retried). mu guards parts and lost, and is
	 * held across every write of the bucket, so that the renewer and the
	 * loop never write the same lease at once. */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t renewer;
	bool running, stop;
	struct keel_lease_part *parts;
	uint32_t *lost; /* found lost by the renewer, not yet told */
	uint32_t nlost;
};

/* What a tick changed: partitions taken, lost (someone else holds them,
 * or they could not be renewed in time), and owned beyond the fair share
 * (to give up once their work is committed). */
struct keel_lease_change {
	uint32_t gained[KEEL_LOG_MAX_PARTITIONS], lost[KEEL_LOG_MAX_PARTITIONS],
	    extra[KEEL_LOG_MAX_PARTITIONS];
	uint32_t ngained, nlost, nextra;
};

/* Opens the bucket of the log `stream` for the member `name` and starts
 * the renewer. */
int keel_leases_open(struct keel_nats *n, const char *stream, const char *name,
		     uint32_t partitions, struct keel_leases *l, struct keel_buf *err);
/* Stops the renewer; gives up nothing (the leases expire), removes the
 * member key. */
void keel_leases_close(struct keel_leases *l);
/* Tells what the renewer found lost, reads the members, takes free
 * partitions up to the fair share and names the ones beyond it. Call it
 * every third of ttl_ms. KEEL_EIO when the bucket did not answer (then
 * only the losses are told). */
int keel_leases_tick(struct keel_leases *l, int64_t now, struct keel_lease_change *c);
/* The fencing token of p's lease (the revision that took it). */
uint64_t keel_leases_token(struct keel_leases *l, uint32_t p);
/* The fair share of this member, and what it owns. */
uint32_t keel_leases_share(const struct keel_leases *l);
uint32_t keel_leases_owned(const struct keel_leases *l);
/* Gives partition p up ("" on its revision), for another to take at once. */
void keel_leases_give_up(struct keel_leases *l, uint32_t p);
/* Forgets p without writing (it was found to be someone else's). */
void keel_leases_forget(struct keel_leases *l, uint32_t p);

#endif
