/*
 * lease.h - partition ownership through the log's leases bucket
 * (lease.c, docs/log.md "Leases"). Used by the consumer only.
 */
#ifndef KEEL_LOG_LEASE_H
#define KEEL_LOG_LEASE_H

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
	struct keel_lease_part *parts;
	uint32_t members, index; /* the last view of the living members */
};

/* What a tick changed: partitions taken, lost (someone else holds them,
 * or they could not be renewed in time), and owned beyond the fair share
 * (to give up once their work is committed). */
struct keel_lease_change {
	uint32_t gained[KEEL_LOG_MAX_PARTITIONS], lost[KEEL_LOG_MAX_PARTITIONS],
	    extra[KEEL_LOG_MAX_PARTITIONS];
	uint32_t ngained, nlost, nextra;
};

/* Opens the bucket of the log `stream` for the member `name`. */
int keel_leases_open(struct keel_nats *n, const char *stream, const char *name,
		     uint32_t partitions, struct keel_leases *l, struct keel_buf *err);
/* Gives up nothing (the leases expire), removes the member key. */
void keel_leases_close(struct keel_leases *l);
/* Renews the member and the owned leases, reads the members, takes free
 * partitions up to the fair share and names the ones beyond it. Call it
 * every third of ttl_ms. KEEL_EIO when the bucket did not answer (nothing
 * changed; the owned leases are lost once not renewed for ttl_ms). */
int keel_leases_tick(struct keel_leases *l, int64_t now, struct keel_lease_change *c);
/* The fair share of this member, and what it owns. */
uint32_t keel_leases_share(const struct keel_leases *l);
uint32_t keel_leases_owned(const struct keel_leases *l);
/* Gives partition p up ("" on its revision), for another to take at once. */
void keel_leases_give_up(struct keel_leases *l, uint32_t p);
/* Forgets p without writing (it was found to be someone else's). */
void keel_leases_forget(struct keel_leases *l, uint32_t p);

#endif
