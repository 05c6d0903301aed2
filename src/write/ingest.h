/*
 * ingest.h - the three ways of writing behind the one public handle,
 * struct keel_ingest (include/keel.h; the handle is src/write/handle.c):
 *
 *   keel_batcher  streaming: batches committed as they fill (ingest.c);
 *                 the one place the semantics of a batch live
 *   keel_bulk     tenants new to the store, built in memory and written in
 *                 one transaction at the end (replay.c)
 *   keel_workers  N connections, the input partitioned by tenant, each
 *                 worker a keel_batcher of its own (workers.c)
 *
 * Each takes the public keel_ingest_options, already copied to this
 * library's size and checked (cartridge set) by keel_ingest_new, the one
 * place that reads a caller's struct, and follows the contract of the
 * keel_ingest_* function of the same suffix. Not part of the API.
 */
#ifndef KEEL_INGEST_H
#define KEEL_INGEST_H

#include "keel.h"
#include "util.h"

/* Adds from's counts of what was written (accepted, duplicates,
 * conflicting, unhandled, rejected, rows, batches, commits) to to's; read
 * and statements are each counter's own. */
void keel_report_add(struct keel_report *to, const struct keel_report *from);

struct keel_batcher;
int keel_batcher_new(struct keel_store *s, const struct keel_ingest_options *o,
		     struct keel_batcher **out);
/* owner: kept in the event (keel_batch_event.owner) for on_outcome. */
int keel_batcher_add(struct keel_batcher *b, const char *text, size_t len,
		     uint64_t position, void *owner);
int keel_batcher_add_too_long(struct keel_batcher *b, uint64_t position,
			      const char *head, size_t head_len);
int keel_batcher_flush(struct keel_batcher *b);
size_t keel_batcher_pending(const struct keel_batcher *b);
const struct keel_report *keel_batcher_report(const struct keel_batcher *b);
/* The event at seq (its order in the batch) of the batch being committed,
 * for on_outcome callbacks that need more than the position. */
const struct keel_batch_event *keel_batcher_batch_event(const struct keel_batcher *b,
							size_t seq);
const char *keel_batcher_errmsg(const struct keel_batcher *b);
int keel_batcher_log_position(struct keel_batcher *b, const char *log,
			      uint32_t partition, uint64_t seq, uint64_t token);
void keel_batcher_free(struct keel_batcher *b);

struct keel_bulk;
/* keel replay of tenant inside the caller's open transaction, which it
 * leaves open on success and on failure alike (keel forget, src/write/forget.c). */
int keel_replay_in_tx(struct keel_store *s, const char *tenant,
		      const struct keel_cartridge *c, struct keel_replay_report **out);

int keel_bulk_new(struct keel_store *s, const struct keel_ingest_options *o,
		  struct keel_bulk **out);
int keel_bulk_add(struct keel_bulk *b, const char *text, size_t len, uint64_t position);
int keel_bulk_add_too_long(struct keel_bulk *b, uint64_t position, const char *head,
			   size_t head_len);
int keel_bulk_finish(struct keel_bulk *b);
const struct keel_report *keel_bulk_report(const struct keel_bulk *b);
const char *keel_bulk_errmsg(const struct keel_bulk *b);
const char *keel_bulk_method(const struct keel_bulk *b);
void keel_bulk_free(struct keel_bulk *b);

/* Opens o->workers connections with url; on failure the message goes to
 * err. */
struct keel_workers;
int keel_workers_new(const char *url, const struct keel_ingest_options *o,
		     struct keel_workers **out, struct keel_buf *err);
int keel_workers_add(struct keel_workers *w, const char *text, size_t len,
		     uint64_t position);
int keel_workers_add_too_long(struct keel_workers *w, uint64_t position,
			      const char *head, size_t head_len);
int keel_workers_flush(struct keel_workers *w);
int keel_workers_finish(struct keel_workers *w);
size_t keel_workers_pending(const struct keel_workers *w);
const struct keel_report *keel_workers_report(struct keel_workers *w);
const char *keel_workers_errmsg(const struct keel_workers *w);
const char *keel_workers_method(const struct keel_workers *w);
void keel_workers_free(struct keel_workers *w);

#endif
