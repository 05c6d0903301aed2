/*
 * handle.c - struct keel_ingest, the one way into ingestion
 * (include/keel.h, docs/architecture.md): the CLI, the HTTP server and any
 * other source drive every mode through it, and this file is the only
 * place that tells the modes apart.
 */
#include <stdlib.h>

#include "keel.h"
#include "ingest.h"
#include "options.h"
#include "store/store.h"
#include "workers.h"

struct keel_ingest {
	enum keel_ingest_mode mode;
	/* exactly one, by mode */
	struct keel_batcher *batcher;
	struct keel_bulk *bulk;
	struct keel_workers *workers;
};

int keel_ingest_new(struct keel_store *s, const struct keel_ingest_options *given,
		    struct keel_ingest **out)
{
	*out = NULL;
	if (!s || !given)
		return KEEL_EINVAL;
	/* The mode is read from a copy: a caller built against an older
	 * keel.h may pass a shorter struct (keel.h, "Options structs"). */
	struct keel_ingest_options opt;
	const char *why = keel_options_copy(&opt, sizeof opt, given);
	if (why)
		return keel_store_fail(s, KEEL_EINVAL, "keel_ingest_options: %s", why);
	const struct keel_ingest_options *o = &opt;
	struct keel_ingest *ing = keel_xcalloc(1, sizeof *ing);
	ing->mode = o->mode;
	int rc;
	switch (o->mode) {
	case KEEL_INGEST_STREAMING:
		rc = keel_batcher_new(s, o, &ing->batcher);
		break;
	case KEEL_INGEST_BULK:
		rc = keel_bulk_new(s, o, &ing->bulk);
		break;
	case KEEL_INGEST_WORKERS:
		if (!keel_store_concurrent_writers(s)) {
			rc = keel_store_fail(s, KEEL_EINVAL,
					     "store \"%s\" takes one writer at a time: "
					     "workers need a store that takes concurrent "
					     "writers (mysql)",
					     keel_store_url(s));
			break;
		}
		struct keel_buf err;
		keel_buf_init(&err);
		rc = keel_workers_new(keel_store_url(s), o, &ing->workers, &err);
		if (rc)
			keel_store_fail(s, rc, "%s", err.len ? err.data : keel_strerror(rc));
		keel_buf_free(&err);
		break;
	default:
		rc = keel_store_fail(s, KEEL_EINVAL, "unknown ingest mode %d", (int)o->mode);
	}
	if (rc) {
		keel_ingest_free(ing);
		return rc;
	}
	*out = ing;
	return 0;
}

int keel_ingest_add(struct keel_ingest *ing, const char *text, size_t len,
		    uint64_t position)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_add(ing->bulk, text, len, position);
	case KEEL_INGEST_WORKERS:
		return keel_workers_add(ing->workers, text, len, position);
	default:
		return keel_batcher_add(ing->batcher, text, len, position, NULL);
	}
}

int keel_ingest_add_owned(struct keel_ingest *ing, const char *text, size_t len,
			  uint64_t position, void *owner)
{
	if (ing->mode != KEEL_INGEST_STREAMING)
		return keel_ingest_add(ing, text, len, position);
	return keel_batcher_add(ing->batcher, text, len, position, owner);
}

int keel_ingest_add_too_long(struct keel_ingest *ing, uint64_t position,
			     const char *head, size_t head_len)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_add_too_long(ing->bulk, position, head, head_len);
	case KEEL_INGEST_WORKERS:
		return keel_workers_add_too_long(ing->workers, position, head, head_len);
	default:
		return keel_batcher_add_too_long(ing->batcher, position, head, head_len);
	}
}

int keel_ingest_flush(struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return 0; /* written by finish only */
	case KEEL_INGEST_WORKERS:
		return keel_workers_flush(ing->workers);
	default:
		return keel_batcher_flush(ing->batcher);
	}
}

int keel_ingest_finish(struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_finish(ing->bulk);
	case KEEL_INGEST_WORKERS:
		return keel_workers_finish(ing->workers);
	default:
		return keel_batcher_flush(ing->batcher);
	}
}

size_t keel_ingest_pending(const struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return 0; /* nothing for a flush to commit */
	case KEEL_INGEST_WORKERS:
		return keel_workers_pending(ing->workers);
	default:
		return keel_batcher_pending(ing->batcher);
	}
}

const struct keel_report *keel_ingest_report(const struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_report(ing->bulk);
	case KEEL_INGEST_WORKERS:
		return keel_workers_report(ing->workers);
	default:
		return keel_batcher_report(ing->batcher);
	}
}

int keel_ingest_log_position(struct keel_ingest *ing, const char *log, uint32_t partition,
			     uint64_t seq, uint64_t token)
{
	if (ing->mode != KEEL_INGEST_STREAMING || !log)
		return KEEL_EINVAL;
	return keel_batcher_log_position(ing->batcher, log, partition, seq, token);
}

const char *keel_ingest_errmsg(const struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_errmsg(ing->bulk);
	case KEEL_INGEST_WORKERS:
		return keel_workers_errmsg(ing->workers);
	default:
		return keel_batcher_errmsg(ing->batcher);
	}
}

const char *keel_ingest_method(const struct keel_ingest *ing)
{
	switch (ing->mode) {
	case KEEL_INGEST_BULK:
		return keel_bulk_method(ing->bulk);
	case KEEL_INGEST_WORKERS:
		return keel_workers_method(ing->workers);
	default:
		return "";
	}
}

void keel_ingest_free(struct keel_ingest *ing)
{
	if (!ing)
		return;
	keel_batcher_free(ing->batcher);
	keel_bulk_free(ing->bulk);
	keel_workers_free(ing->workers);
	free(ing);
}

const struct keel_workers *keel_ingest_workers_of(const struct keel_ingest *ing)
{
	return ing->workers;
}

const struct keel_batch_event *keel_ingest_batch_event(const struct keel_ingest *ing,
						       size_t seq)
{
	/* on_outcome comes from the streaming batcher (the server's mode);
	 * in workers mode each worker's batcher calls it on its thread. */
	return ing->batcher ? keel_batcher_batch_event(ing->batcher, seq) : NULL;
}
