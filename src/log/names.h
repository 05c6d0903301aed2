/*
 * names.h - the names Keel gives a log's parts and the partition of a
 * tenant (partition.c; docs/log.md, "Partitions" and "Names"). Without
 * nats.h: built with or without the log.
 */
#ifndef KEEL_LOG_NAMES_H
#define KEEL_LOG_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "keel.h"
#include "util.h"

/* Whether a log's name is one Keel takes: 1 to 64 letters, digits, '-'
 * and '_' (JetStream's stream names allow more; subjects and bucket
 * names built from it must stay valid). */
bool keel_log_name_ok(const char *stream);
/* "S-p", the stream of partition p; "S.p", its subject; "S-leases". */
void keel_log_stream_name(struct keel_buf *b, const char *stream, uint32_t p);
void keel_log_subject(struct keel_buf *b, const char *stream, uint32_t p);
void keel_log_bucket(struct keel_buf *b, const char *stream);
/* The description recorded with each stream (docs/log.md), and its
 * reading: false when desc is not one. */
void keel_log_description(struct keel_buf *b, const char *stream, uint32_t p,
			  uint32_t partitions);
bool keel_log_description_parse(const char *desc, uint32_t *p, uint32_t *partitions);
/* The Nats-Msg-Id of an event: tenant "/" source "/" id, each
 * percent-encoded (every byte but A-Z a-z 0-9 - . _ ~). */
void keel_log_msg_id(struct keel_buf *b, struct keel_str tenant, struct keel_str source,
		     struct keel_str id);

#endif
