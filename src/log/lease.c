/*
 * lease.c - who owns which partition (docs/log.md, "Leases"), in the
 * log's key-value bucket "S-leases", whose every key is gone a lease time
 * (the bucket's TTL) after its last write:
 *
 *   m.NAME   a living consumer: written again every third of a lease
 *   p.N      partition N's lease: the owner's name, "" once given up
 *
 * A partition is taken by a conditional write: create when the key is not
 * there (never written, or expired), update on the revision read when it
 * is "" (given up). It is kept by updating it on the revision last
 * written, every third of a lease: a write that fails means someone else
 * holds it now. The revision of the take is the fencing token: the
 * bucket's revisions only grow, so whoever takes a partition later holds
 * a greater token than anyone before (docs/log.md, "Fencing").
 *
 * Fair shares: the living members, sorted by name, split the P partitions
 * evenly (the first P mod N one more each). A member below its share takes
 * free partitions, starting from a point that depends on its place, so
 * that members do not all reach for the same ones; one above its share
 * gives up its highest-numbered partitions, once the consumer has
 * committed what it took of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lease.h"

#define NS_PER_MS 1000000

static void *keel_leases_renewer(void *arg);

int keel_leases_open(struct keel_nats *n, const char *stream, const char *name,
		     uint32_t partitions, struct keel_leases *l, struct keel_buf *err)
{
	memset(l, 0, sizeof *l);
	struct keel_buf bucket;
	keel_buf_init(&bucket);
	keel_log_bucket(&bucket, stream);
	natsStatus s = js_KeyValue(&l->kv, n->js, bucket.data);
	kvStatus *st = NULL;
	if (s == NATS_OK)
		s = kvStore_Status(&st, l->kv);
	if (s != NATS_OK) {
		keel_buf_addf(err, "leases bucket \"%s\": ", bucket.data);
		keel_nats_errtext(err, s, 0);
		keel_buf_free(&bucket);
		kvStore_Destroy(l->kv);
		l->kv = NULL;
		return s == NATS_NOT_FOUND ? KEEL_EINVAL : KEEL_EIO;
	}
	l->ttl_ms = kvStatus_TTL(st) / NS_PER_MS;
	if (l->ttl_ms <= 0)
		l->ttl_ms = KEEL_LOG_DEFAULT_LEASE_MS;
	kvStatus_Destroy(st);
	keel_buf_free(&bucket);
	l->name = keel_xstrdup(name);
	struct keel_buf k;
	keel_buf_init(&k);
	keel_buf_addf(&k, "m.%s", name);
	l->member_key = k.data;
	l->partitions = partitions;
	l->parts = keel_xcalloc(partitions, sizeof *l->parts);
	l->lost = keel_xcalloc(partitions, sizeof *l->lost);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cond, NULL);
	uint64_t rev;
	kvStore_PutString(&rev, l->kv, l->member_key, "");
	l->running = pthread_create(&l->renewer, NULL, keel_leases_renewer, l) == 0;
	return 0;
}

void keel_leases_close(struct keel_leases *l)
{
	if (l->running) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_signal(&l->cond);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->renewer, NULL);
	}
	if (l->parts) {
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cond);
	}
	free(l->lost);
	if (l->kv)
		kvStore_Delete(l->kv, l->member_key);
	kvStore_Destroy(l->kv);
	free(l->name);
	free(l->member_key);
	free(l->parts);
	memset(l, 0, sizeof *l);
}

static void keel_lease_key(char *key, size_t n, uint32_t p)
{
	snprintf(key, n, "p.%u", (unsigned)p);
}

static int keel_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The living members, from the bucket's keys: how many, and where this
 * one is among them by name (false: the bucket did not answer). Only the
 * consumer's loop reads or writes members and index. */
static bool keel_leases_members(struct keel_leases *l)
{
	kvKeysList keys;
	memset(&keys, 0, sizeof keys);
	natsStatus s = kvStore_Keys(&keys, l->kv, NULL);
	if (s != NATS_OK && s != NATS_NOT_FOUND)
		return false; /* keep the last view */
	struct keel_ptrvec names = {0};
	bool self = false;
	for (int i = 0; i < keys.Count; i++)
		if (strncmp(keys.Keys[i], "m.", 2) == 0) {
			keel_ptrvec_push(&names, keys.Keys[i] + 2);
			self |= strcmp(keys.Keys[i] + 2, l->name) == 0;
		}
	if (!self)
		keel_ptrvec_push(&names, l->name);
	qsort(names.items, names.len, sizeof *names.items, keel_name_cmp);
	l->members = (uint32_t)names.len;
	for (size_t i = 0; i < names.len; i++)
		if (strcmp(names.items[i], l->name) == 0)
			l->index = (uint32_t)i;
	keel_ptrvec_free(&names);
	kvKeysList_Destroy(&keys);
	return true;
}

uint32_t keel_leases_share(const struct keel_leases *l)
{
	uint32_t n = l->members ? l->members : 1;
	return l->partitions / n + (l->index < l->partitions % n);
}

uint32_t keel_leases_owned(const struct keel_leases *l)
{
	uint32_t k = 0;
	for (uint32_t p = 0; p < l->partitions; p++)
		k += l->parts[p].owned;
	return k;
}

/* Takes partition p if it is free: 0 and its token, or -1. */
static int keel_leases_take(struct keel_leases *l, uint32_t p)
{
	char key[32];
	keel_lease_key(key, sizeof key, p);
	uint64_t rev = 0;
	kvEntry *e = NULL;
	natsStatus s = kvStore_Get(&e, l->kv, key);
	if (s == NATS_OK) {
		bool free_now = kvEntry_ValueLen(e) == 0;
		uint64_t last = kvEntry_Revision(e);
		kvEntry_Destroy(e);
		if (!free_now)
			return -1;
		s = kvStore_UpdateString(&rev, l->kv, key, l->name, last);
	} else if (s == NATS_NOT_FOUND) {
		s = kvStore_CreateString(&rev, l->kv, key, l->name);
	}
	if (s != NATS_OK)
		return -1;
	l->parts[p].owned = true;
	l->parts[p].rev = rev;
	l->parts[p].token = rev;
	return 0;
}

/* One renewal pass, with mu held: the member key, then every owned
 * lease on its last revision. A failed write means someone else holds
 * the lease now; no answer is not known to be a loss until the lease's
 * time has passed. */
static void keel_leases_renew(struct keel_leases *l, int64_t now)
{
	uint64_t rev;
	kvStore_PutString(&rev, l->kv, l->member_key, "");
	for (uint32_t p = 0; p < l->partitions; p++) {
		struct keel_lease_part *lp = &l->parts[p];
		if (!lp->owned)
			continue;
		char key[32];
		keel_lease_key(key, sizeof key, p);
		natsStatus s = kvStore_UpdateString(&rev, l->kv, key, l->name, lp->rev);
		if (s == NATS_OK) {
			lp->rev = rev;
			lp->renewed = now;
			continue;
		}
		bool unanswered = s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS ||
				  s == NATS_CONNECTION_CLOSED || s == NATS_NO_SERVER;
		if (unanswered && keel_log_now_ms() - lp->renewed <= l->ttl_ms)
			continue;
		lp->owned = false;
		l->lost[l->nlost++] = p;
	}
}

static void *keel_leases_renewer(void *arg)
{
	struct keel_leases *l = arg;
	pthread_mutex_lock(&l->mu);
	/* every third of a lease from the start of the last pass, however
	 * long the pass took (replicated writes on a busy cluster) */
	struct timespec next;
	clock_gettime(CLOCK_REALTIME, &next);
	while (!l->stop) {
		int64_t step = l->ttl_ms / 3;
		next.tv_sec += step / 1000;
		next.tv_nsec += (long)(step % 1000) * 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		int rc = 0;
		while (!l->stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&l->cond, &l->mu, &next);
		if (!l->stop)
			keel_leases_renew(l, keel_log_now_ms());
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		if (now.tv_sec > next.tv_sec + 10)
			next = now; /* the clock jumped, or the process was stopped */
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int keel_leases_tick(struct keel_leases *l, int64_t now, struct keel_lease_change *c)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_lock(&l->mu);
	for (uint32_t i = 0; i < l->nlost; i++)
		c->lost[c->nlost++] = l->lost[i];
	l->nlost = 0;
	pthread_mutex_unlock(&l->mu);
	/* Reading the members takes a while (a watcher on the bucket): not
	 * under the lock, which the renewer must get every third of a lease. */
	if (!keel_leases_members(l))
		return KEEL_EIO; /* the log is away: try again at the next tick */
	uint32_t share = keel_leases_share(l);
	pthread_mutex_lock(&l->mu);
	uint32_t owned = keel_leases_owned(l);
	pthread_mutex_unlock(&l->mu);
	uint32_t start = l->members ? (uint32_t)((uint64_t)l->index * l->partitions / l->members)
				    : 0;
	for (uint32_t i = 0; i < l->partitions && owned < share; i++) {
		uint32_t p = (start + i) % l->partitions;
		pthread_mutex_lock(&l->mu);
		if (!l->parts[p].owned && keel_leases_take(l, p) == 0) {
			l->parts[p].renewed = now;
			c->gained[c->ngained++] = p;
			owned++;
		}
		pthread_mutex_unlock(&l->mu);
	}
	pthread_mutex_lock(&l->mu);
	for (uint32_t p = l->partitions; p-- > 0 && owned > share;) {
		if (!l->parts[p].owned)
			continue;
		c->extra[c->nextra++] = p;
		owned--;
	}
	pthread_mutex_unlock(&l->mu);
	return 0;
}

uint64_t keel_leases_token(struct keel_leases *l, uint32_t p)
{
	pthread_mutex_lock(&l->mu);
	uint64_t t = l->parts[p].token;
	pthread_mutex_unlock(&l->mu);
	return t;
}

void keel_leases_give_up(struct keel_leases *l, uint32_t p)
{
	pthread_mutex_lock(&l->mu);
	struct keel_lease_part *lp = &l->parts[p];
	if (lp->owned) {
		lp->owned = false;
		char key[32];
		keel_lease_key(key, sizeof key, p);
		uint64_t rev;
		kvStore_UpdateString(&rev, l->kv, key, "", lp->rev);
	}
	pthread_mutex_unlock(&l->mu);
}

void keel_leases_forget(struct keel_leases *l, uint32_t p)
{
	pthread_mutex_lock(&l->mu);
	l->parts[p].owned = false;
	pthread_mutex_unlock(&l->mu);
}
