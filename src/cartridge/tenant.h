/*
 * tenant.h - which cartridge an ingester runs for each tenant
 * (docs/cartridges.md, "The recorded cartridge").
 *
 * A store records each tenant's cartridge (name, version, content hash
 * and a JSON cartridge's text) with the tenant's first events. An
 * ingester given a cartridge runs it for tenants whose record it matches
 * and for tenants new to the store, whose record it then writes, just
 * before the commit of the first transaction that logs their events;
 * given none, it runs each tenant's recorded cartridge, compiled from the
 * recorded text. Every other tenant's events are refused, with a message
 * naming the tenant and both cartridges. The store is asked once per
 * tenant per ingester (for a refused tenant, at each of its events, so
 * that a long-running server sees a record made meanwhile; for a new one
 * again after a transaction that was to record it failed); a record
 * changed by a replay while an ingester runs is seen by the next one.
 * Not part of the API.
 */
#ifndef KEEL_TENANT_CARTRIDGE_H
#define KEEL_TENANT_CARTRIDGE_H

#include "keel.h"
#include "event/batch.h"
#include "store/store.h"
#include "util.h"

struct keel_tenant_cartridges {
	struct keel_store *store;
	const struct keel_cartridge *given; /* NULL: each tenant's recorded one */
	struct keel_map map;		    /* tenant hash -> struct keel_tc_entry */
	struct keel_ptrvec entries;	    /* every tenant met */
	struct keel_ptrvec compiled; /* struct keel_cartridge *, one per recorded hash */
	struct keel_ptrvec pending;	    /* new tenants with events in the open transaction */
	size_t unrecorded;		    /* new tenants not yet pending */
	struct keel_tc_entry *last;	    /* the last one looked up: runs of one tenant */
};

void keel_tc_init(struct keel_tenant_cartridges *t, struct keel_store *s,
		  const struct keel_cartridge *given);
void keel_tc_free(struct keel_tenant_cartridges *t);

/* The cartridge for tenant's events: 0 and *out; KEEL_ECARTRIDGE with the
 * reason appended to msg (the tenant's events are refused); or the store's
 * error (the store could not be read; its message appended to msg). */
int keel_tc_resolve(struct keel_tenant_cartridges *t, struct keel_str tenant,
		    const struct keel_cartridge **out, struct keel_buf *msg);

/* A batch of the open transaction logged these events: their tenants new
 * to the store are recorded before it commits. */
void keel_tc_logged(struct keel_tenant_cartridges *t, struct keel_batch_event *const *ev,
		    size_t n);
/* Records them, inside the open transaction, with recorded_at. */
int keel_tc_record(struct keel_tenant_cartridges *t, int64_t recorded_at);
/* The transaction ended: committed (the records hold) or not (the store
 * is asked again at each tenant's next event: a commit whose outcome is
 * unknown may have written the record, another writer may have). */
void keel_tc_ended(struct keel_tenant_cartridges *t, bool committed);

/* "shop 2 (sha256:0123456789ab)": a cartridge as messages name it. */
/* Appends `tenant "T" is recorded with cartridge R, not G`: the one
 * wording of a refused cartridge (ingest, replay, forget). */
void keel_tc_describe_other(struct keel_buf *b, struct keel_str tenant,
			    const struct keel_cartridge_record *r,
			    const struct keel_cartridge *given);
void keel_tc_describe(struct keel_buf *b, struct keel_str name, struct keel_str version,
		      struct keel_str hash);
/* Whether a cartridge is the recorded one (name, version and hash). */
bool keel_tc_matches(const struct keel_cartridge *c, const struct keel_cartridge_record *r);
/* The record of c, its strings borrowed from c. */
struct keel_cartridge_record keel_tc_record_of(const struct keel_cartridge *c,
					       int64_t recorded_at);

#endif
