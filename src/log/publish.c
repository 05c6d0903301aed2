/*
 * publish.c - keel_publisher_* (keel publish, keel serve --forward;
 * docs/log.md, "Publishing").
 *
 * Each envelope is prepared as ingestion prepares it (prepare.c: the
 * same parse, rules and messages; the cartridge only when one is given),
 * so a line ingest would reject is rejected here and never published. A
 * good one is published asynchronously to its tenant's partition: the
 * compacted envelope as the payload (CloudEvents' structured content
 * mode), its identity as Nats-Msg-Id (a publish sent twice within the
 * duplicate window is stored once), and the stream it must land in as
 * Nats-Expected-Stream.
 *
 * At most max_pending publishes are in flight, in a ring of slots kept in
 * input order. The client library calls on_ack on its own thread with
 * each acknowledgement, or with the error (a timeout after
 * ack_timeout_ms, no stream leader during an election, a lost
 * connection, a refusal): the slot is marked, under the lock, and the
 * caller's thread does the rest: after a failure nothing more is sent
 * until every publish in flight has settled, and then the failed ones go
 * again in input order (keel_pub_retry).
 *
 * Order (docs/log.md, "Order"). A publish that fails may be followed by
 * a later one of its partition that was already on its way and gets
 * stored (a new stream leader elected meanwhile); sent again, the failed
 * one would land after it. So a publish sent while the one before it in
 * its partition (input order) is not yet acknowledged carries
 * Nats-Expected-Last-Msg-Id, that one's Nats-Msg-Id: JetStream stores it
 * only right after it, and refuses it otherwise (keel_pub_send). A
 * refused publish is sent again with the failed ones, once the one
 * before it is settled. So an event is stored only after every earlier
 * event of its partition, whatever fails, and publishing stays
 * pipelined: a refusal costs a round trip, and happens after a failure
 * or when another producer's message came in between. Duplicates need
 * care, since the log answers for an earlier copy: an acknowledged
 * duplicate vouches for nothing before it (keel_pub_send), and an event
 * whose earlier copy may be the log's last message waits until all
 * before it is stored (keel_pub_suspect).
 *
 * The client library's callbacks reach a small shared state that outlives
 * the publisher (keel_pub_shared), freed by the connection's last
 * callback.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event/batch.h"
#include "options.h"
#include "write/prepare.h"
#include "log.h"

enum keel_slot_state { SLOT_FREE, SLOT_PENDING, SLOT_FAILED, SLOT_DONE };

struct keel_pub_slot {
	enum keel_slot_state state;
	natsMsg *msg; /* the library's while pending; ours when failed */
	uint64_t position;
	size_t seq; /* among the events added since the last flush */
	uint32_t partition;
	uint64_t ord;	   /* among all events added: 1, 2, ... */
	uint64_t prev_ord; /* the partition's event before this one; 0: none */
	char *id;	   /* its Nats-Msg-Id (kept with the slot, reused) */
	size_t id_cap;
	uint64_t hash;	   /* of id (keel_pub_hash) */
	bool dup;	   /* acknowledged as a duplicate */
	int64_t first_ms; /* first sent */
	natsStatus err;	  /* when failed */
	jsErrCode jerr;
	char errtext[160];
};

struct keel_publisher {
	struct keel_publish_options opt;
	struct keel_log_options log;
	struct keel_nats n;
	uint32_t partitions;
	char **subjects, **streams; /* by partition */
	struct keel_prep prep;
	struct keel_report prep_report;
	struct keel_arena arena;
	struct keel_buf msg_id, errmsg, expect;

	/* What the client library's threads reach (see keel_pub_shared);
	 * mu is its lock. */
	struct keel_pub_shared *shared;
	pthread_mutex_t *mu;
	pthread_cond_t cond;
	/* the ring: slots[(head + i) % cap] for i < count, oldest first */
	struct keel_pub_slot *slots;
	size_t cap, head, count;
	size_t pending, failed; /* slots in those states */
	/* acknowledged, for on_published on the caller's thread */
	struct {
		uint64_t position;
		size_t seq;
		bool duplicate;
	} *done;
	size_t nseq; /* events added (not rejected) since the last flush */
	size_t ndone, done_cap;
	struct keel_publish_report report;
	struct keel_publish_report shown; /* keel_publisher_report's copy */
	uint64_t next_ord; /* the next event's ord */
	uint64_t *last_ord; /* by partition: its last event's ord; 0: none */
	/* The hashes of the ring's Nats-Msg-Ids, a multiset (open
	 * addressing, linear probing, 0 empty), and by partition the hash
	 * of the last event that left the ring: where an event's duplicate
	 * could be the log's last message (see keel_pub_suspect). */
	uint64_t *ids_key;
	uint32_t *ids_count;
	size_t ids_cap; /* a power of two, at least twice cap */
	uint64_t *out_hash;
	int fatal;
};

/* The state the client library's callbacks reach, which must outlive the
 * publisher: the connection may call them (an acknowledgement late, the
 * disconnection its closing causes) after keel_publisher_free. They find
 * p NULL then; the connection's closed callback, its last, frees this. */
struct keel_pub_shared {
	pthread_mutex_t mu;
	struct keel_publisher *p;
};

static void keel_pub_on_closed(natsConnection *nc, void *closure)
{
	(void)nc;
	struct keel_pub_shared *sh = closure;
	pthread_mutex_destroy(&sh->mu);
	free(sh);
}

/* ------------------------------------------------------ acknowledgements */

static struct keel_pub_slot *keel_pub_find(struct keel_publisher *p, const natsMsg *msg)
{
	for (size_t i = 0; i < p->count; i++) {
		struct keel_pub_slot *s = &p->slots[(p->head + i) % p->cap];
		if (s->state == SLOT_PENDING && s->msg == msg)
			return s;
	}
	return NULL;
}

/* ------------------------------------------- the ring's message ids */

/* FNV-1a 64 of a message id; never 0 (the table's empty key). */
static uint64_t keel_pub_hash(const char *id)
{
	uint64_t h = 14695981039346656037ULL;
	for (const unsigned char *c = (const unsigned char *)id; *c; c++) {
		h ^= *c;
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

static size_t keel_pub_ids_find(const struct keel_publisher *p, uint64_t h)
{
	size_t mask = p->ids_cap - 1, i = (size_t)h & mask;
	while (p->ids_key[i] && p->ids_key[i] != h)
		i = (i + 1) & mask;
	return i;
}

static void keel_pub_ids_add(struct keel_publisher *p, uint64_t h)
{
	size_t i = keel_pub_ids_find(p, h);
	p->ids_key[i] = h;
	p->ids_count[i]++;
}

/* One h less; the last one's entry is deleted by shifting back the
 * entries after it that may move (no tombstones). */
static void keel_pub_ids_remove(struct keel_publisher *p, uint64_t h)
{
	size_t mask = p->ids_cap - 1, i = keel_pub_ids_find(p, h);
	if (!p->ids_key[i] || --p->ids_count[i])
		return;
	for (size_t j = (i + 1) & mask; p->ids_key[j]; j = (j + 1) & mask) {
		size_t home = (size_t)p->ids_key[j] & mask;
		/* the entry stays when its home is in (i, j], cyclically */
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (stays)
			continue;
		p->ids_key[i] = p->ids_key[j];
		p->ids_count[i] = p->ids_count[j];
		i = j;
	}
	p->ids_key[i] = 0;
	p->ids_count[i] = 0;
}

/* Frees the done slots at the ring's head. */
static void keel_pub_advance(struct keel_publisher *p)
{
	while (p->count && p->slots[p->head].state == SLOT_DONE) {
		struct keel_pub_slot *s = &p->slots[p->head];
		keel_pub_ids_remove(p, s->hash);
		p->out_hash[s->partition] = s->hash;
		s->state = SLOT_FREE;
		p->head = (p->head + 1) % p->cap;
		p->count--;
	}
}

static void keel_pub_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae,
			    void *closure)
{
	(void)js;
	struct keel_pub_shared *sh = closure;
	pthread_mutex_lock(&sh->mu);
	struct keel_publisher *p = sh->p;
	struct keel_pub_slot *s = p ? keel_pub_find(p, msg) : NULL;
	if (!s) {
		pthread_mutex_unlock(&sh->mu);
		natsMsg_Destroy(msg);
		return;
	}
	p->pending--;
	if (pa) {
		s->state = SLOT_DONE;
		s->dup = pa->Duplicate;
		s->msg = NULL;
		natsMsg_Destroy(msg);
		if (pa->Duplicate)
			p->report.duplicates++;
		else
			p->report.published++;
		if (p->opt.on_published) {
			if (p->ndone == p->done_cap) {
				p->done_cap = p->done_cap ? 2 * p->done_cap : 256;
				p->done = keel_xrealloc(p->done, p->done_cap * sizeof *p->done);
			}
			p->done[p->ndone].position = s->position;
			p->done[p->ndone].seq = s->seq;
			p->done[p->ndone].duplicate = pa->Duplicate;
			p->ndone++;
		}
		keel_pub_advance(p);
	} else {
		/* kept: sent again by the caller's thread */
		s->state = SLOT_FAILED;
		s->err = pae ? pae->Err : NATS_ERR;
		s->jerr = pae ? pae->ErrCode : 0;
		snprintf(s->errtext, sizeof s->errtext, "%s",
			 pae && pae->ErrText ? pae->ErrText : natsStatus_GetText(s->err));
		p->failed++;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(p->mu);
}

/* The slot of the event of ord o, with the lock held; NULL when it has
 * left the ring (acknowledged) or is not yet in it. The ring holds
 * consecutive ords, the head's the oldest. */
static struct keel_pub_slot *keel_pub_slot_of(struct keel_publisher *p, uint64_t o)
{
	if (!p->count || !o)
		return NULL;
	uint64_t head_ord = p->slots[p->head].ord;
	if (o < head_ord || o - head_ord >= p->count)
		return NULL;
	return &p->slots[(p->head + (o - head_ord)) % p->cap];
}

/* A refusal that only says the publish came out of order: it is sent
 * again with the failed ones, and is no failure of its own. */
static bool keel_pub_out_of_order(const struct keel_pub_slot *s)
{
	return s->jerr == JSStreamWrongLastMsgIDErr;
}

/* Whether a failure is worth sending again: no answer, or a refusal a
 * cluster gives while a stream changes leader (its own sequence check
 * failing, no leader, the system not ready); any other refusal is for
 * good. */
static bool keel_pub_retryable(const struct keel_pub_slot *s)
{
	return s->jerr == 0 || s->jerr == JSStreamWrongLastMsgIDErr ||
	       s->jerr == JSStreamSequenceNotMatchErr || s->jerr == JSClusterNotAvailErr ||
	       s->jerr == JSClusterNotLeaderErr;
}

/* ------------------------------------------------------------ sending */

static void keel_pub_fail(struct keel_publisher *p, const struct keel_pub_slot *s,
			  const char *what)
{
	if (p->fatal)
		return;
	p->fatal = KEEL_EIO;
	keel_buf_reset(&p->errmsg);
	keel_buf_addf(&p->errmsg, "%s %llu: %s", p->prep.position_word,
		      (unsigned long long)s->position, what);
	if (s->errtext[0])
		keel_buf_addf(&p->errmsg, ": %s", s->errtext);
}

/* Sends the slot's message; called without the lock, on the caller's
 * thread. When the event before it in its partition is not acknowledged
 * yet (in flight, or failed and not sent again), the message may be
 * stored only right after that one: Nats-Expected-Last-Msg-Id names it
 * (see the file comment). Once it is acknowledged, every earlier event
 * of the partition is stored, and the message needs no condition. A
 * message the library did not take stays ours: the slot is failed then. */
static void keel_pub_send(struct keel_publisher *p, struct keel_pub_slot *s)
{
	jsPubOptions po;
	jsPubOptions_Init(&po);
	po.MaxWait = p->opt.ack_timeout_ms;
	natsMsg *m = s->msg;
	pthread_mutex_lock(p->mu);
	const struct keel_pub_slot *prev = keel_pub_slot_of(p, s->prev_ord);
	/* An acknowledged duplicate was stored earlier, wherever it was in
	 * the input: it says nothing of the events before it, which are
	 * those to look at. */
	while (prev && prev->state == SLOT_DONE && prev->dup)
		prev = keel_pub_slot_of(p, prev->prev_ord);
	bool expect = prev && prev->state != SLOT_DONE;
	if (expect) {
		keel_buf_reset(&p->expect);
		keel_buf_adds(&p->expect, prev->id);
	}
	s->state = SLOT_PENDING;
	p->pending++;
	pthread_mutex_unlock(p->mu);
	/* still ours: the library has not seen it */
	natsStatus st = expect ? natsMsgHeader_Set(m, "Nats-Expected-Last-Msg-Id", p->expect.data)
			       : natsMsgHeader_Delete(m, "Nats-Expected-Last-Msg-Id");
	if (st == NATS_NOT_FOUND)
		st = NATS_OK;
	if (st == NATS_OK)
		st = js_PublishMsgAsync(p->n.js, &m, &po);
	if (st != NATS_OK && m) {
		pthread_mutex_lock(p->mu);
		if (s->state == SLOT_PENDING) {
			s->state = SLOT_FAILED;
			s->err = st;
			s->jerr = 0;
			snprintf(s->errtext, sizeof s->errtext, "%s", natsStatus_GetText(st));
			p->pending--;
			p->failed++;
		}
		pthread_mutex_unlock(p->mu);
	}
}

/* Tells on_published what was acknowledged; the caller's thread. */
static void keel_pub_report_done(struct keel_publisher *p)
{
	if (!p->opt.on_published)
		return;
	for (;;) {
		pthread_mutex_lock(p->mu);
		size_t n = p->ndone;
		if (!n) {
			pthread_mutex_unlock(p->mu);
			return;
		}
		uint64_t pos[64];
		size_t seq[64];
		bool dup[64];
		size_t k = n < 64 ? n : 64;
		for (size_t i = 0; i < k; i++) {
			pos[i] = p->done[i].position;
			seq[i] = p->done[i].seq;
			dup[i] = p->done[i].duplicate;
		}
		memmove(p->done, p->done + k, (n - k) * sizeof *p->done);
		p->ndone -= k;
		pthread_mutex_unlock(p->mu);
		for (size_t i = 0; i < k; i++)
			p->opt.on_published(p->opt.published_userdata, pos[i], seq[i], dup[i]);
	}
}

/* Waits (with the lock held) until nothing is in flight or the deadline. */
static void keel_pub_wait_idle(struct keel_publisher *p)
{
	while (p->pending) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cond, p->mu, &ts);
	}
}

/* The failed publishes, sent again once nothing else is in flight, in
 * input order (each with its condition, keel_pub_send); until none is
 * left or one has failed for give_up_ms. A refusal for coming out of
 * order is no failure of its own: the publish before it had failed, or
 * another producer's message came in between. */
static int keel_pub_retry(struct keel_publisher *p)
{
	pthread_mutex_lock(p->mu);
	while (p->failed && !p->fatal) {
		keel_pub_wait_idle(p);
		const struct keel_pub_slot *why = NULL;
		size_t k = 0;
		for (size_t i = 0; i < p->count; i++) {
			struct keel_pub_slot *s = &p->slots[(p->head + i) % p->cap];
			if (s->state != SLOT_FAILED)
				continue;
			int64_t waited = keel_log_now_ms() - s->first_ms;
			if (!keel_pub_retryable(s)) {
				keel_pub_fail(p, s, "the log refused the event");
				break;
			}
			if (waited > (int64_t)p->opt.give_up_ms) {
				keel_pub_fail(p, s, "not acknowledged by the log in time");
				break;
			}
			if (!why && !keel_pub_out_of_order(s))
				why = s;
			k++;
		}
		if (p->fatal || !k)
			break;
		if (why && p->opt.log_file)
			fprintf(p->opt.log_file, "keel: %zu publish%s failed (%s): sending again\n",
				k, k == 1 ? "" : "es", why->errtext);
		/* no stream leader, or no server: give the cluster a moment */
		bool pause = why && why->err != NATS_TIMEOUT;
		uint64_t o = p->slots[p->head].ord, end = o + p->count;
		pthread_mutex_unlock(p->mu);
		if (pause)
			usleep(250 * 1000);
		/* Acknowledgements of the first sent may free the ring's head
		 * meanwhile; a failed slot stays where it is. */
		for (; o < end; o++) {
			pthread_mutex_lock(p->mu);
			struct keel_pub_slot *s = keel_pub_slot_of(p, o);
			bool again = s && s->state == SLOT_FAILED;
			if (again) {
				p->failed--;
				p->report.retries++;
			}
			pthread_mutex_unlock(p->mu);
			if (again)
				keel_pub_send(p, s);
		}
		pthread_mutex_lock(p->mu);
	}
	int rc = p->fatal;
	pthread_mutex_unlock(p->mu);
	return rc;
}

/* Whether an event (its id's hash h, its partition) may be a duplicate of
 * one still in the ring, or of its partition's last to leave it, with
 * the lock held. The log takes a duplicate without storing it, so the
 * log's last message may then be the earlier copy, followed in the input
 * by events not stored yet: an event sent on the condition "right after
 * this duplicate" would be stored before them. Such an event is sent
 * only once everything before it is stored (keel_pub_drain). A copy
 * further back is safe: a later event of its partition is stored after
 * it, so it is not the log's last. (A hash shared by two ids only costs
 * a wait.) */
static bool keel_pub_suspect(const struct keel_publisher *p, uint64_t h, uint32_t part)
{
	return p->ids_key[keel_pub_ids_find(p, h)] == h || p->out_hash[part] == h;
}

/* Until nothing is in flight and nothing failed: every event added so
 * far is stored or found a duplicate. */
static int keel_pub_drain(struct keel_publisher *p)
{
	for (;;) {
		keel_pub_report_done(p);
		pthread_mutex_lock(p->mu);
		keel_pub_wait_idle(p);
		bool failed = p->failed > 0;
		pthread_mutex_unlock(p->mu);
		if (p->fatal || !failed)
			return p->fatal;
		int rc = keel_pub_retry(p);
		if (rc)
			return rc;
	}
}

/* --------------------------------------------------------------- API */

int keel_publisher_new(const struct keel_publish_options *given, struct keel_publisher **out,
		       char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	struct keel_buf err;
	keel_buf_init(&err);
	struct keel_publisher *p = keel_xcalloc(1, sizeof *p);
	p->shared = keel_xcalloc(1, sizeof *p->shared);
	pthread_mutex_init(&p->shared->mu, NULL);
	p->shared->p = p;
	p->mu = &p->shared->mu;
	pthread_cond_init(&p->cond, NULL);
	keel_arena_init(&p->arena);
	keel_buf_init(&p->msg_id);
	keel_buf_init(&p->errmsg);
	keel_buf_init(&p->expect);
	p->next_ord = 1;
	int rc = 0;
	const char *why = keel_options_copy(&p->opt, sizeof p->opt, given);
	if (!why && !p->opt.log)
		why = "no log options";
	if (!why)
		why = keel_options_copy(&p->log, sizeof p->log, p->opt.log);
	if (why) {
		keel_buf_addf(&err, "keel_publish_options: %s", why);
		rc = KEEL_EINVAL;
		goto out;
	}
	if (!p->opt.max_pending)
		p->opt.max_pending = 4096;
	if (!p->opt.ack_timeout_ms)
		p->opt.ack_timeout_ms = 5000;
	if (!p->opt.give_up_ms)
		p->opt.give_up_ms = 60000;
	if (!p->opt.max_line)
		p->opt.max_line = KEEL_DEFAULT_MAX_LINE;
	keel_prep_init(&p->prep, p->opt.cartridge, &p->prep_report);
	p->prep.envelope_only = p->opt.cartridge == NULL;
	p->prep.position_word = p->opt.position_word ? p->opt.position_word : "line";
	p->prep.max_line = p->opt.max_line;
	p->prep.on_reject = p->opt.on_reject;
	p->prep.reject_userdata = p->opt.reject_userdata;
	p->prep.defer_hash = true;

	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	jo.PublishAsync.AckHandler = keel_pub_on_ack;
	jo.PublishAsync.AckHandlerClosure = p->shared;
	struct keel_nats_extra extra = {
	    .js = &jo,
	    .no_reconnect_buffer = true,
	    .closed = keel_pub_on_closed,
	    .closure = p->shared,
	};
	if ((rc = keel_nats_connect(&p->log, "keel publish", &extra, &p->n, &err)) != 0)
		goto out;
	/* A stream without a leader (a node just lost) times out: asked
	 * again until give_up_ms, as a publish would be. */
	int64_t since = keel_log_now_ms();
	for (;;) {
		keel_buf_reset(&err);
		rc = keel_nats_partitions(&p->n, p->log.stream, &p->partitions, &err);
		if (rc != KEEL_EIO || keel_log_now_ms() - since > (int64_t)p->opt.give_up_ms)
			break;
		if (p->opt.log_file)
			fprintf(p->opt.log_file, "keel: %s; asking again\n", err.data);
		sleep(1);
	}
	if (rc)
		goto out;
	/* The largest message the servers take, less room for the headers. */
	int64_t max = natsConnection_GetMaxPayload(p->n.nc);
	if (max > 2048) {
		p->prep.max_envelope = (size_t)max - 1024;
		p->prep.max_envelope_why = "the NATS servers' max_payload, less room for headers";
		p->prep.max_envelope_holder = "log";
	}
	p->subjects = keel_xcalloc(p->partitions, sizeof *p->subjects);
	p->streams = keel_xcalloc(p->partitions, sizeof *p->streams);
	struct keel_buf b;
	keel_buf_init(&b);
	for (uint32_t i = 0; i < p->partitions; i++) {
		keel_log_subject(&b, p->log.stream, i);
		p->subjects[i] = keel_xstrdup(b.data);
		keel_log_stream_name(&b, p->log.stream, i);
		p->streams[i] = keel_xstrdup(b.data);
	}
	keel_buf_free(&b);
	p->last_ord = keel_xcalloc(p->partitions, sizeof *p->last_ord);
	p->out_hash = keel_xcalloc(p->partitions, sizeof *p->out_hash);
	p->cap = p->opt.max_pending;
	p->slots = keel_xcalloc(p->cap, sizeof *p->slots);
	for (p->ids_cap = 16; p->ids_cap < 2 * p->cap; p->ids_cap *= 2)
		;
	p->ids_key = keel_xcalloc(p->ids_cap, sizeof *p->ids_key);
	p->ids_count = keel_xcalloc(p->ids_cap, sizeof *p->ids_count);
out:
	if (rc) {
		if (errmsg)
			*errmsg = keel_xstrdup(err.data ? err.data : keel_strerror(rc));
		keel_publisher_free(p);
	} else {
		*out = p;
	}
	keel_buf_free(&err);
	return rc;
}

int keel_publisher_add_too_long(struct keel_publisher *p, uint64_t position,
				const char *head, size_t head_len)
{
	keel_prep_too_long(&p->prep, position, head, head_len);
	return p->fatal;
}

int keel_publisher_add(struct keel_publisher *p, const char *text, size_t len,
		       uint64_t position)
{
	if (p->fatal)
		return p->fatal;
	keel_arena_reset(&p->arena);
	struct keel_batch_event *ev = keel_prep_event(&p->prep, &p->arena, text, len, position);
	if (!ev)
		return p->prep.refused && p->prep.refused != KEEL_ECARTRIDGE ? p->prep.refused
									 : 0;
	uint32_t part = keel_log_partition(ev->tenant.ptr, ev->tenant.len, p->partitions);
	natsMsg *m = NULL;
	natsStatus st = natsMsg_Create(&m, p->subjects[part], NULL, ev->envelope.ptr,
				       (int)ev->envelope.len);
	keel_log_msg_id(&p->msg_id, ev->tenant, ev->source, ev->id);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Nats-Msg-Id", p->msg_id.data);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Nats-Expected-Stream", p->streams[part]);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "content-type",
				       "application/cloudevents+json; charset=utf-8");
	if (st != NATS_OK) {
		natsMsg_Destroy(m);
		keel_buf_reset(&p->errmsg);
		keel_buf_addf(&p->errmsg, "%s %llu: making the message: %s",
			      p->prep.position_word, (unsigned long long)position,
			      natsStatus_GetText(st));
		return p->fatal = KEEL_EIO;
	}
	/* A free slot: wait for acknowledgements (sending failed ones
	 * again) while the ring is full. */
	for (;;) {
		keel_pub_report_done(p);
		pthread_mutex_lock(p->mu);
		bool full = p->count == p->cap, failed = p->failed > 0;
		if (full && !failed) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&p->cond, p->mu, &ts);
			full = p->count == p->cap;
			failed = p->failed > 0;
		}
		pthread_mutex_unlock(p->mu);
		if (failed) {
			int rc = keel_pub_retry(p);
			if (rc) {
				natsMsg_Destroy(m);
				return rc;
			}
			continue;
		}
		if (!full)
			break;
	}
	uint64_t h = keel_pub_hash(p->msg_id.data);
	pthread_mutex_lock(p->mu);
	bool suspect = keel_pub_suspect(p, h, part);
	pthread_mutex_unlock(p->mu);
	if (suspect) {
		int rc = keel_pub_drain(p);
		if (rc) {
			natsMsg_Destroy(m);
			return rc;
		}
	}
	pthread_mutex_lock(p->mu);
	struct keel_pub_slot *s = &p->slots[(p->head + p->count) % p->cap];
	p->count++;
	char *id = s->id;
	size_t id_cap = s->id_cap;
	memset(s, 0, sizeof *s);
	if (id_cap <= p->msg_id.len) {
		id_cap = p->msg_id.len + 64;
		id = keel_xrealloc(id, id_cap);
	}
	memcpy(id, p->msg_id.data, p->msg_id.len + 1);
	s->id = id;
	s->id_cap = id_cap;
	s->hash = h;
	keel_pub_ids_add(p, h);
	s->state = SLOT_FAILED; /* not pending until keel_pub_send */
	s->msg = m;
	s->position = position;
	s->seq = p->nseq++;
	s->partition = part;
	s->ord = p->next_ord++;
	s->prev_ord = p->last_ord[part];
	p->last_ord[part] = s->ord;
	s->first_ms = keel_log_now_ms();
	pthread_mutex_unlock(p->mu);
	keel_pub_send(p, s);
	return 0;
}

int keel_publisher_flush(struct keel_publisher *p)
{
	for (;;) {
		keel_pub_report_done(p);
		pthread_mutex_lock(p->mu);
		while (p->pending && !p->failed) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&p->cond, p->mu, &ts);
			if (p->ndone > 1024)
				break;
		}
		bool failed = p->failed > 0, empty = p->count == 0 && p->ndone == 0;
		pthread_mutex_unlock(p->mu);
		if (p->fatal)
			return p->fatal;
		if (failed) {
			int rc = keel_pub_retry(p);
			if (rc)
				return rc;
			continue;
		}
		if (empty) {
			p->nseq = 0;
			return 0;
		}
	}
}

const struct keel_publish_report *keel_publisher_report(struct keel_publisher *p)
{
	pthread_mutex_lock(p->mu);
	p->shown = p->report;
	p->shown.read = p->prep_report.read;
	p->shown.rejected = p->prep_report.rejected;
	pthread_mutex_unlock(p->mu);
	return &p->shown;
}

const char *keel_publisher_errmsg(const struct keel_publisher *p)
{
	return p->errmsg.len ? p->errmsg.data : "";
}

void keel_publisher_free(struct keel_publisher *p)
{
	if (!p)
		return;
	/* Callbacks that come later find no publisher. */
	pthread_mutex_lock(p->mu);
	p->shared->p = NULL;
	pthread_mutex_unlock(p->mu);
	bool connected = p->n.nc != NULL;
	keel_nats_close(&p->n);
	for (size_t i = 0; p->slots && i < p->count; i++) {
		struct keel_pub_slot *s = &p->slots[(p->head + i) % p->cap];
		if (s->state == SLOT_FAILED)
			natsMsg_Destroy(s->msg);
	}
	for (size_t i = 0; p->slots && i < p->cap; i++)
		free(p->slots[i].id);
	free(p->slots);
	for (uint32_t i = 0; p->subjects && i < p->partitions; i++) {
		free(p->subjects[i]);
		free(p->streams[i]);
	}
	free(p->subjects);
	free(p->streams);
	free(p->last_ord);
	free(p->out_hash);
	free(p->ids_key);
	free(p->ids_count);
	free(p->done);
	if (p->prep.report)
		keel_prep_free(&p->prep);
	keel_arena_free(&p->arena);
	keel_buf_free(&p->msg_id);
	keel_buf_free(&p->errmsg);
	keel_buf_free(&p->expect);
	/* A connection made frees the shared state in its closed callback. */
	if (!connected) {
		pthread_mutex_destroy(&p->shared->mu);
		free(p->shared);
	}
	pthread_cond_destroy(&p->cond);
	free(p);
}
