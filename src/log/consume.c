/*
 * consume.c - keel_consume (keel consume; docs/log.md, "Consuming"): the
 * log's partitions projected into stores, each partition applied by one
 * living process at a time, every message exactly once.
 *
 * One thread runs the loop:
 *
 *   leases   every third of the lease time (lease.c): renew, take a fair
 *            share, name what is lost or beyond the share
 *   claim    a partition taken is claimed in its store: in a transaction
 *            of its own, its position row gets this lease's token (any
 *            older holder's later commit now fails) and gives the
 *            sequence to resume after; then a durable pull consumer
 *            "keel-<token>" is made on its stream, starting right after
 *            it (the previous holder's consumer is deleted)
 *   fetch    each owned partition in turn: up to `batch` messages, without
 *            waiting; each is applied in sequence order (below)
 *   commit   a store's open transaction, once commit_interval_ms old, or
 *            linger_ms old when a round fetched nothing: the rows and
 *            every partition's
 *            position with its token (keel_ingest_log_position), in one
 *            transaction; then each partition's last message is
 *            acknowledged (the consumers acknowledge "all up to")
 *
 * In sequence order: a partition is a stream of its own, so its sequence
 * numbers have no gaps, and message N + 1 is the only one that may be
 * applied after N. One at or below the last applied is a redelivery:
 * dropped. One further on waits in a small buffer (a redelivery of an
 * earlier message may overtake later ones, which JetStream allows) until
 * the gap is filled; a gap that stays open past the acknowledgement wait
 * is looked up in the stream (a message removed by the stream's limits
 * or deleted is skipped, said in the log) or the consumer is made again
 * from the next sequence. So the stored position never passes a message
 * that was not applied.
 *
 * Failures: a store error fails the open transaction whole (positions
 * given make it all or nothing), and every partition of that store is
 * claimed again and resumes after its stored position; what the log
 * delivers meanwhile is dropped. A refused commit (KEEL_EFENCED: another
 * process took a partition while this one was paused) does the same, and
 * the partition whose claim is refused is let go. The log going away is
 * the client library's to reconnect; a lease not renewed within its time
 * is lost.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event/binary_mode.h"
#include "lease.h"
#include "log.h"
#include "options.h"
#include "store/store.h"
#include "store_map.h"

/* The ingester never commits on its own: the loop decides when. */
#define KEEL_CONSUME_NO_AUTO_COMMIT (UINT32_MAX - 1)
#define KEEL_CONSUME_MAX_ACK_PENDING 20000
#define KEEL_CONSUME_IDLE_MS 20
#define KEEL_CONSUME_FETCH_MS 10
#define KEEL_CONSUME_FETCH_GRACE_MS 200
#define KEEL_CONSUME_FETCH_BATCHES 4
#define NS_PER_MS 1000000

enum keel_part_state {
	PART_FREE,     /* not ours */
	PART_CLAIMING, /* leased; the store's claim or the consumer is due */
	PART_OWNED,    /* fetched and applied */
	PART_LEAVING,  /* lost or beyond the share: out once committed */
};

struct keel_sink; /* a store and its ingester */

struct keel_held {
	natsMsg *m;
	uint64_t seq;
};

struct keel_part {
	uint32_t n;
	enum keel_part_state state;
	bool give_up; /* PART_LEAVING: hand the lease back (not lost) */
	uint64_t token;
	struct keel_sink *sink;
	natsSubscription *sub; /* the durable consumer's deliveries (an inbox) */
	char durable[40];
	char next[200]; /* where its pull requests go */
	char stream[80];
	uint64_t applied;   /* the last sequence offered to the ingester */
	uint64_t committed; /* the last one committed */
	/* The reply subject of the message at applied, acknowledged after
	 * the commit (the consumers acknowledge "all up to"). Kept as text:
	 * acknowledging through the message would reach into its
	 * subscription, which may be made anew meanwhile. */
	char ack[256];
	struct keel_held *held; /* beyond applied + 1, by sequence */
	size_t nheld, held_cap;
	int64_t gap_since;
	int64_t retry_at; /* PART_CLAIMING: not before */
	bool dirty;	  /* applied > committed, in its sink's open transaction */
};

struct keel_sink {
	char *url;
	struct keel_store *store;
	struct keel_ingest *ing;
	bool dirty;
	int64_t tx_started;
	int64_t retry_at; /* not open: not before */
};

struct keel_consumer {
	struct keel_consume_options opt;
	struct keel_log_options log;
	char name[128];
	FILE *out;
	struct keel_nats n;
	bool connected;
	uint32_t partitions;
	struct keel_part *parts;
	struct keel_store_map map;
	struct keel_sink *sinks;
	size_t nsinks;
	struct keel_leases leases;
	bool leases_open;
	struct keel_lease_change *change;
	int64_t next_tick;
	struct keel_ce_binary ce;
	struct keel_buf err, msg;
	struct keel_part *current; /* the partition being applied (on_reject) */
	uint64_t drop_every;	   /* the test seam (see keel_consume_handle) */
};

static void keel_consume_say(struct keel_consumer *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void keel_consume_say(struct keel_consumer *c, const char *fmt, ...)
{
	if (!c->out)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(c->out, "keel consume: %s: ", c->name);
	vfprintf(c->out, fmt, ap);
	fputc('\n', c->out);
	fflush(c->out);
	va_end(ap);
}

static bool keel_consume_stopping(struct keel_consumer *c)
{
	return c->opt.should_stop && c->opt.should_stop(c->opt.stop_userdata);
}

/* Sleeps ms, waking to notice a stop. */
static void keel_consume_sleep(struct keel_consumer *c, int64_t ms)
{
	while (ms > 0 && !keel_consume_stopping(c)) {
		int64_t step = ms < 100 ? ms : 100;
		struct timespec ts = {0, (long)step * 1000000};
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

static void keel_consume_on_reject(void *ud, uint64_t position, const char *id,
				   const char *message, const char *input, size_t len)
{
	struct keel_consumer *c = ud;
	struct keel_buf m;
	keel_buf_init(&m);
	keel_buf_addf(&m, "partition %u %s", c->current ? (unsigned)c->current->n : 0,
		      message);
	if (c->opt.on_reject)
		c->opt.on_reject(c->opt.reject_userdata, position, id, m.data, input, len);
	keel_buf_free(&m);
}

/* -------------------------------------------------------------- sinks */

static void keel_sink_close(struct keel_sink *k)
{
	keel_ingest_free(k->ing);
	keel_store_close(k->store);
	k->ing = NULL;
	k->store = NULL;
	k->dirty = false;
}

/* Opens the store and its ingester: 0, KEEL_EINVAL for what retrying
 * cannot mend (err set), another error to retry. */
static int keel_sink_open(struct keel_consumer *c, struct keel_sink *k)
{
	char *why = NULL;
	int rc = keel_store_open(k->url, &k->store, &why);
	if (rc) {
		keel_consume_say(c, "store: %s; retrying", why ? why : keel_strerror(rc));
		free(why);
		return rc == KEEL_EINVAL || rc == KEEL_EURL || rc == KEEL_ESCHEMA ? rc
										  : KEEL_EIO;
	}
	if (!keel_store_keeps_log_positions(k->store) ||
	    !keel_store_concurrent_writers(k->store)) {
		keel_buf_addf(&c->err,
			      "store \"%s\" keeps no log positions: consuming a log needs a "
			      "store that takes concurrent writers (mysql, postgres)",
			      keel_store_url(k->store));
		keel_sink_close(k);
		return KEEL_EINVAL;
	}
	/* one writer of several: see keel_store_worker_init */
	if ((rc = keel_store_worker_init(k->store)) != 0) {
		keel_consume_say(c, "store: %s; retrying", keel_store_errmsg(k->store));
		keel_sink_close(k);
		return KEEL_EIO;
	}
	struct keel_ingest_options io = {
	    .size = sizeof io,
	    .cartridge = c->opt.cartridge,
	    .batch = c->opt.batch,
	    .max_line = c->opt.max_line,
	    .position_word = "seq",
	    .on_reject = keel_consume_on_reject,
	    .reject_userdata = c,
	    .commit_interval_ms = KEEL_CONSUME_NO_AUTO_COMMIT,
	};
	if ((rc = keel_ingest_new(k->store, &io, &k->ing)) != 0) {
		keel_buf_addf(&c->err, "%s", keel_store_errmsg(k->store));
		keel_sink_close(k);
		return KEEL_EINVAL;
	}
	return 0;
}

/* ---------------------------------------------------------- partitions */

static void keel_part_drop_held(struct keel_part *p)
{
	for (size_t i = 0; i < p->nheld; i++)
		natsMsg_Destroy(p->held[i].m);
	p->nheld = 0;
	p->gap_since = 0;
}

static void keel_part_drop_messages(struct keel_part *p)
{
	p->ack[0] = '\0';
	keel_part_drop_held(p);
}

static void keel_part_unsubscribe(struct keel_part *p)
{
	if (p->sub) {
		natsSubscription_Unsubscribe(p->sub);
		natsSubscription_Destroy(p->sub);
		p->sub = NULL;
	}
}

/* Back to claiming: what was applied and not committed is gone with the
 * failed transaction; the store's position says where to resume. */
static void keel_part_reclaim(struct keel_consumer *c, struct keel_part *p, int64_t delay)
{
	keel_part_drop_messages(p);
	keel_part_unsubscribe(p);
	p->dirty = false;
	p->applied = p->committed;
	if (p->state == PART_LEAVING) {
		if (p->give_up)
			keel_leases_give_up(&c->leases, p->n);
		p->state = PART_FREE;
		return;
	}
	p->state = PART_CLAIMING;
	p->retry_at = keel_log_now_ms() + delay;
}

/* Lets p go: nothing of it is in an open transaction. */
static void keel_part_leave(struct keel_consumer *c, struct keel_part *p, const char *why)
{
	keel_part_drop_messages(p);
	keel_part_unsubscribe(p);
	if (p->give_up)
		keel_leases_give_up(&c->leases, p->n);
	else
		keel_leases_forget(&c->leases, p->n);
	keel_consume_say(c, "partition %u: let go (%s)", (unsigned)p->n, why);
	p->state = PART_FREE;
	p->give_up = false;
	p->dirty = false;
}

/* The durable consumer of this holding, made anew to start at `start`;
 * any other of Keel's consumers on the stream (a previous holder's) is
 * deleted. */
static int keel_part_subscribe(struct keel_consumer *c, struct keel_part *p, uint64_t start)
{
	keel_part_unsubscribe(p);
	jsErrCode jerr = 0;
	jsConsumerNamesList *names = NULL;
	natsStatus s = js_ConsumerNames(&names, c->n.js, p->stream, NULL, &jerr);
	if (s == NATS_OK) {
		for (int i = 0; i < names->Count; i++)
			if (strncmp(names->List[i], "keel-", 5) == 0)
				js_DeleteConsumer(c->n.js, p->stream, names->List[i], NULL, NULL);
		jsConsumerNamesList_Destroy(names);
	} else if (s != NATS_NOT_FOUND) {
		keel_buf_reset(&c->msg);
		keel_nats_errtext(&c->msg, s, jerr);
		keel_consume_say(c, "partition %u: listing its consumers: %s", (unsigned)p->n,
				 c->msg.data);
		return KEEL_EIO;
	}
	jsConsumerConfig cc;
	jsConsumerConfig_Init(&cc);
	cc.Durable = p->durable;
	cc.Description = c->name;
	cc.DeliverPolicy = js_DeliverByStartSequence;
	cc.OptStartSeq = start;
	cc.AckPolicy = js_AckAll;
	cc.AckWait = (int64_t)c->opt.ack_wait_ms * NS_PER_MS;
	cc.MaxAckPending = KEEL_CONSUME_MAX_ACK_PENDING;
	cc.MaxDeliver = -1;
	jsConsumerInfo *ci = NULL;
	jerr = 0;
	s = js_AddConsumer(&ci, c->n.js, p->stream, &cc, NULL, &jerr);
	jsConsumerInfo_Destroy(ci);
	/* Its deliveries come to an inbox of our own (keel_part_fetch says
	 * why not through the client library's pull subscription). */
	if (s == NATS_OK) {
		natsInbox *inbox = NULL;
		s = natsInbox_Create(&inbox);
		if (s == NATS_OK)
			s = natsConnection_SubscribeSync(&p->sub, c->n.nc, inbox);
		natsInbox_Destroy(inbox);
		snprintf(p->next, sizeof p->next, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", p->stream,
			 p->durable);
	}
	if (s != NATS_OK) {
		keel_buf_reset(&c->msg);
		keel_nats_errtext(&c->msg, s, jerr);
		keel_consume_say(c, "partition %u: making its consumer: %s", (unsigned)p->n,
				 c->msg.data);
		p->sub = NULL;
		return KEEL_EIO;
	}
	return 0;
}

/* Claims p in its store (its own transaction): the position row takes
 * this token; *stored is where to resume after. */
static int keel_part_claim(struct keel_consumer *c, struct keel_part *p, uint64_t *stored)
{
	struct keel_store *s = p->sink->store;
	struct keel_log_position pos = {
	    .log = keel_str_cstr(c->log.stream),
	    .partition = p->n,
	    .seq = 0,
	    .token = p->token,
	    .recorded_at = keel_time_now(),
	};
	int rc = keel_store_begin(s);
	if (rc == 0)
		rc = keel_store_log_position(s, &pos, stored);
	if (rc == 0)
		rc = keel_store_commit(s);
	if (rc) {
		keel_buf_reset(&c->msg);
		keel_buf_adds(&c->msg, keel_store_errmsg(s));
		keel_store_rollback(s);
	}
	return rc;
}

static void keel_sink_commit(struct keel_consumer *c, struct keel_sink *k);

/* Whether p's stream still holds everything up to upto (a position
 * stored or a message applied): 0; KEEL_EIO when its leader does not
 * answer (try again later); KEEL_EINVAL with c->err set when the stream
 * ends before upto. Then the log lost messages that were applied (or
 * was made anew under the same name), and its next messages would take
 * sequence numbers already applied: a consumer would drop them as
 * redeliveries, or apply twice what it read again. Nothing retrying can
 * mend, so the consumer stops (docs/log.md, "A log behind its store"). */
static int keel_part_check_log(struct keel_consumer *c, struct keel_part *p, uint64_t upto)
{
	uint64_t first = 0, last = 0;
	keel_buf_reset(&c->msg);
	if (keel_log_stream_state(&c->n, p->stream, 2000, &first, &last, &c->msg))
		return KEEL_EIO;
	if (last >= upto)
		return 0;
	keel_buf_addf(&c->err,
		      "partition %u of log \"%s\": the log ends at seq %llu, before seq %llu, "
		      "which its store (%s) holds as applied: the log lost messages after "
		      "they were applied, or was made anew; stopping rather than skip or "
		      "apply anything twice (docs/log.md, \"A log behind its store\")",
		      (unsigned)p->n, c->log.stream, (unsigned long long)last,
		      (unsigned long long)upto,
		      p->sink->store ? keel_store_url(p->sink->store) : "not open");
	return KEEL_EINVAL;
}

/* Takes up a partition whose lease is held: claim, then subscribe. */
static void keel_part_take(struct keel_consumer *c, struct keel_part *p)
{
	struct keel_sink *k = p->sink;
	if (!k->ing) {
		if (keel_log_now_ms() < k->retry_at)
			return;
		int rc = keel_sink_open(c, k);
		if (rc) {
			k->retry_at = keel_log_now_ms() + 1000;
			return;
		}
	}
	if (k->dirty)
		keel_sink_commit(c, k); /* a claim is a transaction of its own */
	if (p->state != PART_CLAIMING)
		return;
	uint64_t stored = 0;
	int rc = keel_part_claim(c, p, &stored);
	if (rc == KEEL_EFENCED) {
		keel_consume_say(c, "partition %u: claim refused: %s", (unsigned)p->n,
				 c->msg.data);
		keel_part_leave(c, p, "another process holds a later lease");
		return;
	}
	if (rc) {
		keel_consume_say(c, "partition %u: claiming it in the store: %s; retrying",
				 (unsigned)p->n, c->msg.data);
		p->retry_at = keel_log_now_ms() + 1000;
		return;
	}
	p->applied = p->committed = stored;
	rc = keel_part_check_log(c, p, stored);
	if (rc == KEEL_EIO) {
		keel_consume_say(c, "partition %u: %s; retrying", (unsigned)p->n, c->msg.data);
		p->retry_at = keel_log_now_ms() + 1000;
		return;
	}
	if (rc || keel_part_subscribe(c, p, stored + 1)) {
		p->retry_at = keel_log_now_ms() + 1000;
		return;
	}
	p->state = PART_OWNED;
	keel_consume_say(c, "partition %u: taken (token %llu), resuming after seq %llu",
			 (unsigned)p->n, (unsigned long long)p->token,
			 (unsigned long long)stored);
}

/* ------------------------------------------------------------ applying */

static void keel_sink_fail(struct keel_consumer *c, struct keel_sink *k, const char *what);

/* Offers the message at applied + 1 to the ingester. */
static int keel_part_apply(struct keel_consumer *c, struct keel_part *p, natsMsg *m,
			   uint64_t seq)
{
	struct keel_sink *k = p->sink;
	const char *text;
	size_t len;
	keel_buf_reset(&c->msg);
	c->current = p;
	int rc = keel_log_message_envelope(m, &c->ce, &text, &len, &c->msg);
	if (rc == KEEL_EREJECTED) {
		/* the binary mode's headers are wrong: rejected as ingest
		 * rejects a bad line */
		struct keel_buf full;
		keel_buf_init(&full);
		keel_buf_addf(&full, "seq %llu: %s", (unsigned long long)seq, c->msg.data);
		keel_consume_on_reject(c, seq, NULL, full.data, natsMsg_GetData(m),
				       (size_t)natsMsg_GetDataLength(m));
		keel_buf_free(&full);
		rc = 0;
	} else {
		size_t max = c->opt.max_line ? c->opt.max_line : KEEL_DEFAULT_MAX_LINE;
		rc = len > max ? keel_ingest_add_too_long(k->ing, seq, text, max)
			       : keel_ingest_add(k->ing, text, len, seq);
		if (rc == KEEL_ECARTRIDGE)
			rc = 0; /* rejected (no cartridge for its tenant), reported */
	}
	c->current = NULL;
	if (rc == 0)
		rc = keel_ingest_log_position(k->ing, c->log.stream, p->n, seq, p->token);
	if (rc) {
		natsMsg_Destroy(m);
		keel_sink_fail(c, k, keel_ingest_errmsg(k->ing));
		return rc;
	}
	if (!k->dirty) {
		k->dirty = true;
		k->tx_started = keel_log_now_ms();
	}
	p->dirty = true;
	p->applied = seq;
	const char *reply = natsMsg_GetReply(m);
	if (reply && strlen(reply) < sizeof p->ack)
		memcpy(p->ack, reply, strlen(reply) + 1);
	natsMsg_Destroy(m);
	return 0;
}

static uint64_t keel_msg_seq(natsMsg *m, uint64_t *delivered)
{
	jsMsgMetaData *meta = NULL;
	uint64_t seq = 0;
	if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
		seq = meta->Sequence.Stream;
		*delivered = meta->NumDelivered;
	}
	jsMsgMetaData_Destroy(meta);
	return seq;
}

/* Holds m (seq beyond applied + 1) until the gap before it is filled. */
static void keel_part_hold(struct keel_consumer *c, struct keel_part *p, natsMsg *m,
			   uint64_t seq)
{
	size_t i = p->nheld;
	while (i > 0 && p->held[i - 1].seq > seq)
		i--;
	if (i > 0 && p->held[i - 1].seq == seq) {
		natsMsg_Destroy(m); /* held already */
		return;
	}
	if (p->nheld == 2 * KEEL_CONSUME_FETCH_BATCHES * c->opt.batch) {
		/* full: the furthest goes (it is delivered again later) */
		if (i == p->nheld) {
			natsMsg_Destroy(m);
			return;
		}
		natsMsg_Destroy(p->held[--p->nheld].m);
	}
	if (p->nheld == p->held_cap) {
		p->held_cap = p->held_cap ? 2 * p->held_cap : 64;
		p->held = keel_xrealloc(p->held, p->held_cap * sizeof *p->held);
	}
	memmove(p->held + i + 1, p->held + i, (p->nheld - i) * sizeof *p->held);
	p->held[i] = (struct keel_held){m, seq};
	p->nheld++;
	if (!p->gap_since)
		p->gap_since = keel_log_now_ms();
}

/* Takes the first held message out. */
static struct keel_held keel_part_unhold(struct keel_part *p)
{
	struct keel_held h = p->held[0];
	memmove(p->held, p->held + 1, (p->nheld - 1) * sizeof *p->held);
	p->nheld--;
	return h;
}

/* One delivered message; the partition may be reclaimed on a failure
 * (then everything after is dropped). */
static void keel_part_handle(struct keel_consumer *c, struct keel_part *p, natsMsg *m)
{
	uint64_t delivered = 1;
	uint64_t seq = keel_msg_seq(m, &delivered);
	if (seq == 0 || p->state != PART_OWNED || seq <= p->applied) {
		natsMsg_Destroy(m); /* a redelivery of what was applied */
		return;
	}
	/* The test seam: KEEL_TEST_CONSUME_DROP=N drops the first delivery of
	 * every Nth message (not applied, not acknowledged), so that its
	 * redelivery comes after later messages (tests/log_*.sh). */
	if (c->drop_every && seq % c->drop_every == 0 && delivered == 1) {
		natsMsg_Destroy(m);
		return;
	}
	if (seq > p->applied + 1) {
		keel_part_hold(c, p, m, seq);
		return;
	}
	if (p->nheld)
		keel_consume_say(c,
				 "partition %u: seq %llu came after %zu later messages, which "
				 "waited for it",
				 (unsigned)p->n, (unsigned long long)seq, p->nheld);
	if (keel_part_apply(c, p, m, seq))
		return;
	while (p->state == PART_OWNED && p->nheld && p->held[0].seq <= p->applied + 1) {
		struct keel_held h = keel_part_unhold(p);
		if (h.seq <= p->applied)
			natsMsg_Destroy(h.m);
		else if (keel_part_apply(c, p, h.m, h.seq))
			return;
	}
	p->gap_since = p->nheld ? keel_log_now_ms() : 0;
}

/* A gap open for longer than a redelivery takes: the message after
 * applied may not exist any more (removed by the stream's limits, or
 * deleted), or the consumer lost track; ask the stream. */
static void keel_part_gap(struct keel_consumer *c, struct keel_part *p)
{
	uint64_t want = p->applied + 1, first = 0, last = 0;
	keel_buf_reset(&c->msg);
	if (keel_log_stream_state(&c->n, p->stream, 2000, &first, &last, &c->msg)) {
		p->gap_since = keel_log_now_ms();
		return;
	}
	natsMsg *m = NULL;
	jsErrCode jerr = 0;
	if (last < want) {
		/* later messages were delivered, and the stream no longer has
		 * even this one: it lost them (keel_part_check_log says so) */
		if (keel_part_check_log(c, p, p->nheld ? p->held[p->nheld - 1].seq : want) !=
		    KEEL_EINVAL)
			p->gap_since = keel_log_now_ms();
		return;
	}
	if (want < first) {
		keel_consume_say(c,
				 "partition %u: seq %llu-%llu were removed from the log "
				 "(its limits) before they were applied: skipped",
				 (unsigned)p->n, (unsigned long long)want,
				 (unsigned long long)(first - 1));
		p->applied = first - 1;
	} else if (js_GetMsg(&m, c->n.js, p->stream, want, NULL, &jerr) == NATS_NOT_FOUND ||
		   jerr == JSNoMessageFoundErr) {
		/* between the first and the last: deleted */
		keel_consume_say(c, "partition %u: seq %llu is not in the log (deleted): "
				    "skipped",
				 (unsigned)p->n, (unsigned long long)want);
		p->applied = want;
	} else {
		natsMsg_Destroy(m);
		keel_consume_say(c,
				 "partition %u: seq %llu was not delivered again in time: "
				 "making the consumer again from it",
				 (unsigned)p->n, (unsigned long long)want);
		keel_part_drop_held(p);
		if (keel_part_subscribe(c, p, want))
			keel_part_reclaim(c, p, 1000);
		return;
	}
	/* the held messages may follow now */
	p->gap_since = keel_log_now_ms();
	if (p->nheld)
		keel_part_handle(c, p, keel_part_unhold(p).m);
}

/* One round of p's pull consumer: the number of messages, or -1 when
 * the consumer is gone (reclaimed).
 *
 * The request is made here rather than with natsSubscription_Fetch:
 * libnats 3.4's fetch allocates an array of `batch` messages, first
 * takes what is already waiting in the subscription (messages of an
 * earlier request that came after it gave up), then lowers the batch by
 * that count and collects until the count equals the lowered batch; when
 * more than half a batch was waiting, the count never equals it and the
 * library writes past its array (fixed upstream after 3.4, not in
 * Debian 12's). Our own loop has no array: a message of an earlier
 * request is just the next message, applied in sequence order as any
 * other (keel_part_handle). */
static int keel_part_fetch(struct keel_consumer *c, struct keel_part *p)
{
	/* A few batches a request: each request is a round trip. Without
	 * waiting for a full batch: the server answers "no messages" (404)
	 * at once only when none is waiting for an acknowledgement either,
	 * so the request also expires soon (408; each idle partition costs
	 * a round this long). */
	int batch = (int)(KEEL_CONSUME_FETCH_BATCHES * c->opt.batch);
	char req[128];
	int len = snprintf(req, sizeof req, "{\"batch\":%d,\"expires\":%lld,\"no_wait\":true}",
			   batch, (long long)KEEL_CONSUME_FETCH_MS * NS_PER_MS);
	natsStatus s = natsConnection_PublishRequest(
	    c->n.nc, p->next, natsSubscription_GetSubject(p->sub), req, len);
	/* The server's end of the request (its status) is waited for a while
	 * past its expiry, so that few messages come after the round. */
	int64_t deadline = keel_log_now_ms() + KEEL_CONSUME_FETCH_MS + KEEL_CONSUME_FETCH_GRACE_MS;
	int n = 0;
	while (s == NATS_OK && n < batch) {
		int64_t left = deadline - keel_log_now_ms();
		natsMsg *m = NULL;
		s = natsSubscription_NextMsg(&m, p->sub, left > 0 ? left : 1);
		if (s != NATS_OK)
			break;
		const char *reply = natsMsg_GetReply(m);
		if (reply && strncmp(reply, "$JS.ACK.", 8) == 0) {
			n++;
			keel_part_handle(c, p, m);
			if (!p->sub)
				return -1; /* a failed commit reclaimed it */
			continue;
		}
		/* A status (no reply subject): 100 a heartbeat, 404 / 408 the
		 * request's end, 409 a consumer deleted (or a request beyond its
		 * limits, which ends it too). */
		const char *code = "", *desc = "";
		natsMsgHeader_Get(m, "Status", &code);
		natsMsgHeader_Get(m, "Description", &desc);
		bool deleted = strncmp(code, "409", 3) == 0 && desc && strstr(desc, "Deleted");
		bool heartbeat = strncmp(code, "100", 3) == 0;
		natsMsg_Destroy(m);
		if (deleted) {
			s = NATS_NOT_FOUND;
			break;
		}
		if (!heartbeat)
			return n;
	}
	if (s == NATS_OK || s == NATS_TIMEOUT)
		return n;
	keel_buf_reset(&c->msg);
	if (s == NATS_NOT_FOUND)
		keel_buf_adds(&c->msg, "its consumer was deleted");
	else
		keel_nats_errtext(&c->msg, s, 0);
	keel_consume_say(c, "partition %u: fetching: %s", (unsigned)p->n, c->msg.data);
	/* the consumer may be gone (another holder deleted it): claim again,
	 * which says whether the partition is still ours */
	if (p->dirty)
		keel_sink_commit(c, p->sink);
	if (p->state == PART_OWNED)
		keel_part_reclaim(c, p, 500);
	return -1;
}

/* ------------------------------------------------------------- commits */

static void keel_sink_fail(struct keel_consumer *c, struct keel_sink *k, const char *what)
{
	keel_consume_say(c, "commit refused or failed: %s; resuming each partition after "
			    "its stored position",
			 what);
	k->dirty = false;
	for (uint32_t i = 0; i < c->partitions; i++) {
		struct keel_part *p = &c->parts[i];
		if (p->sink == k && (p->state == PART_OWNED || p->state == PART_LEAVING))
			keel_part_reclaim(c, p, 200);
	}
}

static void keel_sink_commit(struct keel_consumer *c, struct keel_sink *k)
{
	if (!k->dirty)
		return;
	int rc = keel_ingest_flush(k->ing);
	if (rc) {
		keel_sink_fail(c, k, keel_ingest_errmsg(k->ing));
		return;
	}
	k->dirty = false;
	for (uint32_t i = 0; i < c->partitions; i++) {
		struct keel_part *p = &c->parts[i];
		if (p->sink != k || !p->dirty)
			continue;
		p->dirty = false;
		p->committed = p->applied;
		if (p->ack[0]) {
			natsConnection_PublishString(c->n.nc, p->ack, "+ACK");
			p->ack[0] = '\0';
		}
	}
}

static void keel_consume_commit_all(struct keel_consumer *c)
{
	for (size_t i = 0; i < c->nsinks; i++)
		keel_sink_commit(c, &c->sinks[i]);
}

/* --------------------------------------------------------------- leases */

static void keel_consume_tick(struct keel_consumer *c, int64_t now)
{
	struct keel_lease_change *ch = c->change;
	keel_leases_tick(&c->leases, now, ch); /* on failure, only the losses */
	for (uint32_t i = 0; i < ch->nlost; i++) {
		struct keel_part *p = &c->parts[ch->lost[i]];
		keel_consume_say(c, "partition %u: lease lost", (unsigned)p->n);
		if (p->state == PART_OWNED && p->dirty) {
			p->state = PART_LEAVING; /* its commit may be refused */
			p->give_up = false;
		} else if (p->state != PART_FREE) {
			p->give_up = false;
			keel_part_leave(c, p, "lease lost");
		}
	}
	for (uint32_t i = 0; i < ch->nextra; i++) {
		struct keel_part *p = &c->parts[ch->extra[i]];
		if (p->state == PART_OWNED || p->state == PART_CLAIMING) {
			p->give_up = true;
			if (p->state == PART_OWNED && p->dirty)
				p->state = PART_LEAVING;
			else
				keel_part_leave(c, p, "beyond this process's share");
		}
	}
	for (uint32_t i = 0; i < ch->ngained; i++) {
		struct keel_part *p = &c->parts[ch->gained[i]];
		keel_part_drop_messages(p);
		keel_part_unsubscribe(p);
		p->state = PART_CLAIMING;
		p->token = keel_leases_token(&c->leases, p->n);
		p->give_up = false;
		p->dirty = false;
		p->retry_at = 0;
		snprintf(p->durable, sizeof p->durable, "keel-%llu", (unsigned long long)p->token);
	}
}

/* ---------------------------------------------------------------- run */

static void keel_consume_default_name(char *buf, size_t n)
{
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	for (char *h = host; *h; h++)
		if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') ||
		      (*h >= '0' && *h <= '9') || *h == '-' || *h == '_'))
			*h = '_';
	snprintf(buf, n, "%s-%ld", *host ? host : "keel", (long)getpid());
}

static bool keel_consume_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 100)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

/* Connects, reads the log's partitions and opens its leases, retrying
 * while the log cannot be reached: 0, or a fatal error (err set). */
static int keel_consume_connect(struct keel_consumer *c)
{
	int64_t said = 0;
	while (!keel_consume_stopping(c)) {
		struct keel_buf why;
		keel_buf_init(&why);
		int rc = keel_nats_connect(&c->log, c->name, NULL, &c->n, &why);
		if (rc == 0)
			rc = keel_nats_partitions(&c->n, c->log.stream, &c->partitions, &why);
		if (rc == 0)
			rc = keel_leases_open(&c->n, c->log.stream, c->name, c->partitions,
					      &c->leases, &why);
		if (rc == 0) {
			c->leases_open = true;
			keel_buf_free(&why);
			return 0;
		}
		keel_nats_close(&c->n);
		if (rc == KEEL_EINVAL) {
			keel_buf_add(&c->err, why.data, why.len);
			keel_buf_free(&why);
			return rc;
		}
		int64_t now = keel_log_now_ms();
		if (!said || now - said >= 10000) {
			keel_consume_say(c, "%s; retrying every second", why.data);
			said = now;
		}
		keel_buf_free(&why);
		keel_consume_sleep(c, 1000);
	}
	return 0;
}

static void keel_consume_free(struct keel_consumer *c)
{
	for (uint32_t i = 0; c->parts && i < c->partitions; i++) {
		keel_part_drop_messages(&c->parts[i]);
		keel_part_unsubscribe(&c->parts[i]);
		free(c->parts[i].held);
	}
	free(c->parts);
	for (size_t i = 0; i < c->nsinks; i++) {
		keel_sink_close(&c->sinks[i]);
		free(c->sinks[i].url);
	}
	free(c->sinks);
	keel_store_map_free(&c->map);
	if (c->leases_open)
		keel_leases_close(&c->leases);
	keel_nats_close(&c->n);
	free(c->change);
	keel_ce_binary_free(&c->ce);
	keel_buf_free(&c->err);
	keel_buf_free(&c->msg);
}

/* The options, copied and checked; the store map read. */
static int keel_consume_setup(struct keel_consumer *c, const struct keel_consume_options *o)
{
	const char *why = keel_options_copy(&c->opt, sizeof c->opt, o);
	if (!why && !c->opt.log)
		why = "no log options";
	if (!why)
		why = keel_options_copy(&c->log, sizeof c->log, c->opt.log);
	if (why) {
		keel_buf_addf(&c->err, "keel_consume_options: %s", why);
		return KEEL_EINVAL;
	}
	int rc = keel_nats_check_options(&c->log, &c->err);
	if (rc)
		return rc;
	if (c->opt.name && !keel_consume_name_ok(c->opt.name)) {
		keel_buf_addf(&c->err,
			      "consumer name \"%s\": not 1 to 100 letters, digits, '-', '_' "
			      "or '.'",
			      c->opt.name);
		return KEEL_EINVAL;
	}
	if (c->opt.name)
		snprintf(c->name, sizeof c->name, "%s", c->opt.name);
	else
		keel_consume_default_name(c->name, sizeof c->name);
	if (!c->opt.ack_wait_ms)
		c->opt.ack_wait_ms = 30000;
	if (!c->opt.commit_interval_ms)
		c->opt.commit_interval_ms = KEEL_DEFAULT_COMMIT_INTERVAL_MS;
	if (!c->opt.batch)
		c->opt.batch = KEEL_DEFAULT_BATCH;
	if (!c->opt.max_line)
		c->opt.max_line = KEEL_DEFAULT_MAX_LINE;
	c->out = c->opt.log_file;
	if (!!c->opt.store_url == !!c->opt.store_map) {
		keel_buf_adds(&c->err, "give a store or a store map (one of them)");
		return KEEL_EINVAL;
	}
	if (c->opt.store_map)
		rc = keel_store_map_read(c->opt.store_map, &c->map, &c->err);
	else
		rc = keel_store_map_one(c->opt.store_url, &c->map);
	if (rc)
		return rc;
	const char *drop = getenv("KEEL_TEST_CONSUME_DROP");
	if (drop)
		c->drop_every = strtoull(drop, NULL, 10);
	return 0;
}

int keel_consume(const struct keel_consume_options *o, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	struct keel_consumer *c = keel_xcalloc(1, sizeof *c);
	keel_buf_init(&c->err);
	keel_buf_init(&c->msg);
	keel_ce_binary_init(&c->ce);
	int rc = o ? keel_consume_setup(c, o) : KEEL_EINVAL;
	if (rc == 0)
		rc = keel_consume_connect(c);
	if (rc == 0 && c->n.nc &&
	    (rc = keel_store_map_check(&c->map, c->partitions, &c->err)) == 0) {
		c->change = keel_xcalloc(1, sizeof *c->change);
		c->nsinks = c->map.n;
		c->sinks = keel_xcalloc(c->nsinks, sizeof *c->sinks);
		for (size_t i = 0; i < c->nsinks; i++)
			c->sinks[i].url = keel_xstrdup(c->map.urls[i]);
		c->parts = keel_xcalloc(c->partitions, sizeof *c->parts);
		for (uint32_t i = 0; i < c->partitions; i++) {
			struct keel_part *p = &c->parts[i];
			p->n = i;
			p->sink = &c->sinks[keel_store_map_find(&c->map, i)];
			snprintf(p->stream, sizeof p->stream, "%s-%u", c->log.stream, (unsigned)i);
		}
		/* Every store is opened once before anything is taken: one that
		 * can never be written to (not a concurrent-writers store) is
		 * fatal here, one that is down is retried. */
		for (size_t i = 0; rc == 0 && i < c->nsinks; i++) {
			int src = keel_sink_open(c, &c->sinks[i]);
			if (src == KEEL_EINVAL && c->err.len)
				rc = src;
			else if (src)
				c->sinks[i].retry_at = keel_log_now_ms() + 1000;
		}
	}
	int64_t lease_step = c->leases.ttl_ms / 3;
	while (rc == 0 && c->n.nc && !keel_consume_stopping(c)) {
		int64_t now = keel_log_now_ms();
		if (now >= c->next_tick) {
			keel_consume_tick(c, now);
			/* and every partition's stream still holds what was
			 * applied of it (the log not answering: next time, so
			 * that a log in trouble stalls the loop once a tick) */
			for (uint32_t i = 0; i < c->partitions && !c->err.len; i++) {
				struct keel_part *p = &c->parts[i];
				if (p->state == PART_OWNED && p->applied &&
				    keel_part_check_log(c, p, p->applied) == KEEL_EIO)
					break;
			}
			c->next_tick = now + lease_step;
		}
		for (uint32_t i = 0; i < c->partitions; i++) {
			struct keel_part *p = &c->parts[i];
			if (p->state == PART_CLAIMING && now >= p->retry_at)
				keel_part_take(c, p);
			if (c->err.len)
				rc = KEEL_EINVAL; /* a store that can never work */
		}
		int got = 0;
		for (uint32_t i = 0; i < c->partitions && rc == 0; i++) {
			struct keel_part *p = &c->parts[i];
			if (p->state != PART_OWNED || !p->sub)
				continue;
			int n = keel_part_fetch(c, p);
			if (n > 0)
				got += n;
			if (p->state == PART_OWNED && p->gap_since &&
			    keel_log_now_ms() - p->gap_since > (int64_t)c->opt.ack_wait_ms + 2000)
				keel_part_gap(c, p);
		}
		now = keel_log_now_ms();
		for (size_t i = 0; i < c->nsinks; i++) {
			struct keel_sink *k = &c->sinks[i];
			int64_t age = now - k->tx_started;
			if (k->dirty && ((got == 0 && age >= (int64_t)c->opt.linger_ms) ||
					 age >= (int64_t)c->opt.commit_interval_ms))
				keel_sink_commit(c, k);
		}
		for (uint32_t i = 0; i < c->partitions; i++) {
			struct keel_part *p = &c->parts[i];
			if (p->state == PART_LEAVING && !p->dirty)
				keel_part_leave(c, p, p->give_up ? "beyond this process's share"
								 : "lease lost");
		}
		if (got == 0)
			keel_consume_sleep(c, KEEL_CONSUME_IDLE_MS);
	}
	/* Stopping: what was taken is committed, the leases handed back. */
	if (c->parts) {
		keel_consume_commit_all(c);
		for (uint32_t i = 0; i < c->partitions; i++) {
			struct keel_part *p = &c->parts[i];
			if (p->state != PART_FREE) {
				p->give_up = true;
				keel_part_leave(c, p, "stopping");
			}
		}
	}
	if (rc && errmsg)
		*errmsg = keel_xstrdup(c->err.len ? c->err.data : keel_strerror(rc));
	keel_consume_free(c);
	free(c);
	return rc;
}
