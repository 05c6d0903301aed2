/*
 * log.h - what the files of the log share (docs/log.md): Keel's NATS
 * JetStream log, the only code that includes nats.h. Not part of the API.
 *
 *   partition.c  the tenant's partition; the names of a log's streams,
 *                subjects, bucket and consumers; message ids (names.h:
 *                built with or without NATS)
 *   nats.c       connecting to the servers, JetStream's errors as text
 *   create.c     keel_log_create: a log's streams and leases bucket
 *   publish.c    keel_publisher_*: checked envelopes published
 *                asynchronously, retried, acknowledged
 *   message.c    a message as the envelope Keel logs: structured content
 *                mode, or binary (ce- headers, the data as the payload)
 *   lease.c      who owns which partition: the leases bucket, members,
 *                fair shares
 *   consume.c    keel_consume: each owned partition fetched, ingested in
 *                order, its position committed with the rows, acknowledged
 *   status.c     keel_consume_status: owners, positions, lag
 *   store_map.c  store maps: partition ranges to store URLs
 */
#ifndef KEEL_LOG_H
#define KEEL_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "keel.h"
#include "util.h"
#include "names.h"

/* ------------------------------------------------------- connecting */

/* A connection and its JetStream context. */
struct keel_nats {
	natsConnection *nc;
	jsCtx *js;
	char *servers; /* as given, for messages */
};

/* What a publisher asks of its connection beyond the defaults. */
struct keel_nats_extra {
	const jsOptions *js; /* for the JetStream context; NULL: defaults */
	/* Refuse publishes while reconnecting instead of buffering them
	 * for after (which could put them before earlier publishes lost
	 * with the old connection). */
	bool no_reconnect_buffer;
	natsConnectionHandler disconnected; /* may be NULL */
	/* The connection's last callback (may be NULL): set only when the
	 * connection is made; not called when it is not. */
	natsConnectionHandler closed;
	void *closure;
};

/* Checks o (servers and stream present and well-formed) and connects
 * (client name given, for the servers' monitoring), with extra (NULL:
 * none). On failure err holds a message; n->nc is set when the connection
 * was made (the JetStream context failed): keel_nats_close n either way. */
int keel_nats_connect(const struct keel_log_options *o, const char *client_name,
		      const struct keel_nats_extra *extra, struct keel_nats *n,
		      struct keel_buf *err);
/* Only the option checks of keel_nats_connect. */
int keel_nats_check_options(const struct keel_log_options *o, struct keel_buf *err);
void keel_nats_close(struct keel_nats *n);
/* Appends s (and jerr, when not 0) as text, with the client library's
 * last error when it says more. */
void keel_nats_errtext(struct keel_buf *b, natsStatus s, jsErrCode jerr);
/* The number of partitions of a log, from its first stream's
 * description; KEEL_EINVAL with the message when there is no such log
 * (or it is not one of Keel's), KEEL_EIO when JetStream does not
 * answer. */
int keel_nats_partitions(struct keel_nats *n, const char *stream, uint32_t *partitions,
			 struct keel_buf *err);

/* A partition stream's first and last sequence as its leader holds them:
 * 0, or KEEL_EIO (why says it) when no leader answered within wait_ms.
 * In a cluster a stream without a leader (an election going on) is
 * answered by any of its members, each with its own copy, which may lag
 * behind: such an answer is not taken. */
int keel_log_stream_state(struct keel_nats *n, const char *stream, int64_t wait_ms,
			  uint64_t *first, uint64_t *last, struct keel_buf *why);

/* ----------------------------------------------------------- messages */

struct keel_ce_binary;
/* The envelope a message carries (message.c): structured content mode's
 * payload as it is, or binary content mode's ce- headers and payload
 * written into b's json (b: initialised by the caller, reused). 0 with
 * *text and *len set, or KEEL_EREJECTED and why in err. */
int keel_log_message_envelope(natsMsg *m, struct keel_ce_binary *b, const char **text,
			      size_t *len, struct keel_buf *err);

/* A monotonic clock in milliseconds. */
int64_t keel_log_now_ms(void);

#endif
