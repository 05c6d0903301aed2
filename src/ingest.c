/*
 * ingest.c - the one ingestion path (docs/architecture.md), for every batch size:
 * the batcher behind KEEL_INGEST_STREAMING and each worker of
 * KEEL_INGEST_WORKERS (src/ingest.h).
 *
 * keel_batcher_add does all the per-event work that needs no store (parse,
 * validate, run the cartridge, compact and hash: prepare.c). The event and
 * its operations go into the batch arena. keel_batcher_flush then runs the
 * batch against the store: begin, drop logged ids (one batched lookup),
 * resolve keys into the overlay, prefetch, apply in event order, write back,
 * commit. A batch of one is simply a batch.
 */
#include <stdlib.h>
#include <string.h>

#include "../include/keel.h"
#include "batch.h"
#include "ingest.h"
#include "overlay.h"
#include "prepare.h"
#include "store.h"

struct keel_batcher {
	struct keel_store *store;
	struct keel_ingest_options opt;
	struct keel_prep prep;
	struct keel_arena arena; /* the open batch's events and operations */
	struct keel_ptrvec events;
	struct keel_ptrvec accepted;
	struct keel_map batch_ids;
	struct keel_overlay overlay;
	struct keel_buf errmsg;
	struct keel_report report;
	uint64_t first_position;
	uint64_t last_position;
};

int keel_batcher_new(struct keel_store *s, const struct keel_ingest_options *o,
		    struct keel_batcher **out)
{
	*out = NULL;
	struct keel_batcher *ing = keel_xcalloc(1, sizeof *ing);
	ing->store = s;
	ing->opt = *o;
	if (!ing->opt.batch)
		ing->opt.batch = KEEL_DEFAULT_BATCH;
	if (!ing->opt.max_line)
		ing->opt.max_line = KEEL_DEFAULT_MAX_LINE;
	if (!ing->opt.position_word)
		ing->opt.position_word = "line";
	keel_prep_init(&ing->prep, o->cartridge, &ing->report);
	ing->prep.position_word = ing->opt.position_word;
	ing->prep.max_line = ing->opt.max_line;
	ing->prep.max_envelope = s->max_envelope;
	ing->prep.max_envelope_why = s->max_envelope_why;
	ing->prep.on_reject = ing->opt.on_reject;
	ing->prep.reject_userdata = ing->opt.reject_userdata;
	ing->prep.defer_hash = keel_store_hashes_on_demand(s);
	keel_arena_init(&ing->arena);
	keel_map_init(&ing->batch_ids);
	keel_overlay_init(&ing->overlay);
	keel_buf_init(&ing->errmsg);
	*out = ing;
	return 0;
}

void keel_batcher_free(struct keel_batcher *ing)
{
	if (!ing)
		return;
	keel_prep_free(&ing->prep);
	keel_arena_free(&ing->arena);
	keel_ptrvec_free(&ing->events);
	keel_ptrvec_free(&ing->accepted);
	keel_map_free(&ing->batch_ids);
	keel_overlay_free(&ing->overlay);
	keel_buf_free(&ing->errmsg);
	free(ing);
}

const struct keel_report *keel_batcher_report(const struct keel_batcher *ing)
{
	return &ing->report;
}

const char *keel_batcher_errmsg(const struct keel_batcher *ing)
{
	return ing->errmsg.len ? ing->errmsg.data : "";
}

size_t keel_batcher_pending(const struct keel_batcher *ing)
{
	return ing->events.len;
}

int keel_batcher_add_too_long(struct keel_batcher *ing, uint64_t position, const char *head,
			     size_t head_len)
{
	keel_prep_too_long(&ing->prep, position, head, head_len);
	return 0;
}

int keel_batcher_add(struct keel_batcher *ing, const char *text, size_t len,
		    uint64_t position)
{
	struct keel_batch_event *ev = keel_prep_event(&ing->prep, &ing->arena, text, len,
						      position);
	if (!ev)
		return 0; /* rejected and reported */
	if (!ing->events.len)
		ing->first_position = position;
	ing->last_position = position;
	keel_ptrvec_push(&ing->events, ev);
	if (ing->events.len >= ing->opt.batch)
		return keel_batcher_flush(ing);
	return 0;
}

/* The second and later copies of an id within one batch are duplicates of
 * the first. */
static void keel_batcher_mark_repeats(struct keel_batcher *ing)
{
	struct keel_map *m = &ing->batch_ids;
	for (size_t i = 0; i < ing->events.len; i++) {
		struct keel_batch_event *ev = ing->events.items[i];
		if (ev->status != KEEL_EV_PENDING)
			continue;
		uint64_t h = keel_batch_event_key_hash(ev);
		struct keel_batch_event *first = NULL;
		for (size_t k = keel_map_first(m, h); k != SIZE_MAX; k = keel_map_next(m, h, k)) {
			struct keel_batch_event *other = m->values[k];
			if (keel_str_eq(other->id, ev->id) && keel_str_eq(other->tenant, ev->tenant)) {
				first = other;
				break;
			}
		}
		if (first) {
			ev->status = KEEL_EV_DUPLICATE;
			ev->stored_hash = keel_batch_event_hash(first);
		} else {
			keel_map_put(m, h, ev);
		}
	}
}

static void keel_batcher_reset_batch(struct keel_batcher *ing)
{
	keel_overlay_reset(&ing->overlay);
	keel_arena_reset(&ing->arena);
	keel_map_clear(&ing->batch_ids);
	ing->events.len = 0;
	ing->accepted.len = 0;
}

static int keel_batcher_fail(struct keel_batcher *ing, int rc)
{
	keel_buf_reset(&ing->errmsg);
	const char *word = ing->opt.position_word;
	size_t n = strlen(word);
	keel_buf_addf(&ing->errmsg, "batch of %s%s %llu-%llu: %s", word,
		      n && word[n - 1] == 'x' ? "es" : "s",
		      (unsigned long long)ing->first_position,
		      (unsigned long long)ing->last_position, keel_store_errmsg(ing->store));
	keel_store_rollback(ing->store);
	keel_batcher_reset_batch(ing);
	return rc;
}

const struct keel_batch_event *keel_batcher_batch_event(const struct keel_batcher *ing,
							size_t seq)
{
	return ing->events.items[seq];
}

/* Tells on_outcome what became of each event of the committed batch. */
static void keel_batcher_report_outcomes(struct keel_batcher *ing)
{
	for (size_t i = 0; i < ing->events.len; i++) {
		const struct keel_batch_event *ev = ing->events.items[i];
		enum keel_ingest_outcome o;
		if (ev->status == KEEL_EV_CONFLICT)
			o = KEEL_INGEST_CONFLICTING;
		else if (ev->status == KEEL_EV_DUPLICATE)
			o = KEEL_INGEST_DUPLICATE;
		else if (ev->unhandled)
			o = KEEL_INGEST_UNHANDLED;
		else
			o = KEEL_INGEST_ACCEPTED;
		ing->opt.on_outcome(ing->opt.outcome_userdata, ev->position, i, o);
	}
}

int keel_batcher_flush(struct keel_batcher *ing)
{
	if (!ing->events.len)
		return 0;
	struct keel_store *s = ing->store;
	struct keel_batch_event **events = (struct keel_batch_event **)ing->events.items;
	size_t n = ing->events.len;
	/* A store whose state is an overlay (memory) takes the batch in place. */
	struct keel_overlay *o = keel_store_overlay(s);
	bool in_place = o != NULL;
	if (!in_place)
		o = &ing->overlay;
	uint64_t rows_inserted = 0, rows_closed = 0;
	int rc;

	if ((rc = keel_store_begin(s)) != 0)
		return keel_batcher_fail(ing, rc);
	if ((rc = keel_store_seen_ids(s, events, n)) != 0)
		return keel_batcher_fail(ing, rc);
	keel_batcher_mark_repeats(ing);

	uint64_t duplicates = 0, conflicting = 0, unhandled = 0;
	for (size_t i = 0; i < n; i++) {
		struct keel_batch_event *ev = events[i];
		if (ev->status == KEEL_EV_DUPLICATE) {
			duplicates++;
			if (ev->stored_hash != keel_batch_event_hash(ev)) {
				ev->status = KEEL_EV_CONFLICT;
				conflicting++;
			}
			continue;
		}
		ev->status = KEEL_EV_ACCEPTED;
		unhandled += ev->unhandled;
		keel_ptrvec_push(&ing->accepted, ev);
	}
	struct keel_batch_event **acc = (struct keel_batch_event **)ing->accepted.items;
	size_t nacc = ing->accepted.len;
	if (nacc) {
		keel_overlay_resolve(o, acc, nacc);
		if (!in_place && (rc = keel_store_prefetch(s, o)) != 0)
			return keel_batcher_fail(ing, rc);
		keel_overlay_prefetch_rows(acc, nacc);
		for (size_t i = 0; i < nacc; i++)
			keel_overlay_apply(o, acc[i]);
		rows_inserted = o->new_rows.len;
		rows_closed = o->rows_closed;
		if ((rc = keel_store_write_back(s, o, acc, nacc)) != 0)
			return keel_batcher_fail(ing, rc);
	}
	if ((rc = keel_store_commit(s)) != 0)
		return keel_batcher_fail(ing, rc);

	if (ing->opt.on_outcome)
		keel_batcher_report_outcomes(ing);

	struct keel_report *r = &ing->report;
	r->accepted += nacc;
	r->duplicates += duplicates;
	r->conflicting += conflicting;
	r->unhandled += unhandled;
	r->rows_inserted += rows_inserted;
	r->rows_closed += rows_closed;
	r->batches++;
	r->statements = keel_store_statements(s);
	keel_batcher_reset_batch(ing);
	return 0;
}
