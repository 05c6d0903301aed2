/*
 * ingest.c - the one ingestion path (docs/architecture.md), for every batch size:
 * the batcher behind KEEL_INGEST_STREAMING and each worker of
 * KEEL_INGEST_WORKERS (src/write/ingest.h).
 *
 * keel_batcher_add does all the per-event work that needs no store (parse,
 * validate, run the cartridge, compact and hash: prepare.c). The event and
 * its operations go into the batch arena. A full batch is written behind
 * its own savepoint: drop logged ids (one batched lookup, the only stored
 * state the write path reads), then append the accepted events, their
 * assertions and their mentions (append.c). Nothing is updated: valid_to
 * and closed_by are derived on read (src/store/derive.c).
 *
 * A transaction holds the batches written within commit_interval_ms of
 * its first, and they share its recorded_at; their entity mentions are
 * folded into one an entity and written just before the commit (at batch
 * 500 a mention a batch was most of what batch 20 000 does not pay).
 * keel_batcher_flush always commits (docs/semantics.md,
 * "Batches, commits and failures"). The report and on_outcome learn of a
 * batch only once its transaction has committed. A batch that fails is rolled back
 * to its savepoint alone; the batches before it are committed, unless the
 * transaction carries log positions (keel consume's), which is all or
 * nothing (keel_batcher_fail).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keel.h"
#include "append.h"
#include "event/batch.h"
#include "ingest.h"
#include "prepare.h"
#include "store/store.h"
#include "cartridge/tenant.h"

struct keel_batcher {
	struct keel_store *store;
	struct keel_ingest_options opt;
	struct keel_prep prep;
	/* Each tenant's cartridge: the given one or the recorded one; new
	 * tenants' records are written just before their first commit. */
	struct keel_tenant_cartridges tenants;
	/* The open batch's events and operations; when on_outcome is set,
	 * those of every batch of the open transaction (their outcomes are
	 * told after its commit). */
	struct keel_arena arena;
	struct keel_ptrvec events; /* the open batch */
	struct keel_ptrvec accepted;
	struct keel_map batch_ids;
	struct keel_append_builder append;
	struct keel_buf errmsg;
	struct keel_report report;
	uint64_t first_position; /* of the open batch */
	uint64_t last_position;
	/* The open transaction: batches written, not yet committed. */
	bool in_tx;
	int64_t tx_started;	   /* monotonic microseconds */
	uint64_t tx_first_position;
	uint64_t tx_last_position;
	int64_t tx_recorded_at; /* every batch of the transaction's */
	/* The entity mentions of its batches, folded: one an entity a
	 * transaction, written just before its commit. */
	struct keel_append_builder tx_mentions;
	struct keel_report tx_counts; /* what its commit adds to report */
	struct keel_ptrvec tx_events; /* when on_outcome: its events */
	/* When on_conflict: the seq and position of every event logged since
	 * the last flush, in seq order, so that a conflict with one of them
	 * names its position (keel_batcher_conflict). Kept as spans of events
	 * whose seqs and positions both go up by one: an input that goes in
	 * whole is a span a transaction, so the memory grows with the lines
	 * that did not go in, not with the input. */
	struct keel_run_span *spans;
	size_t nspans, spans_cap;
	size_t nrun;		    /* events in the spans */
	size_t tx_nrun, batch_nrun; /* nrun when the transaction, the batch began */
	/* Log positions for the next commit (keel_ingest_log_position), one
	 * a (log, partition), their log names owned. */
	struct keel_given_position *positions;
	size_t npositions, positions_cap;
};

struct keel_given_position {
	char *log; /* owned; p.log views it */
	struct keel_log_position p;
};

/* count events logged as seq, seq + 1, ... from positions position,
 * position + 1, ...; first: the events logged before them in the run. */
struct keel_run_span {
	int64_t seq;
	uint64_t position;
	size_t first, count;
};

static int keel_batcher_write(struct keel_batcher *ing, bool commit_now);

void keel_report_add(struct keel_report *to, const struct keel_report *from)
{
	to->accepted += from->accepted;
	to->duplicates += from->duplicates;
	to->conflicting += from->conflicting;
	to->unhandled += from->unhandled;
	to->rejected += from->rejected;
	to->rows_inserted += from->rows_inserted;
	to->batches += from->batches;
	to->commits += from->commits;
}

static int64_t mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
	keel_tc_init(&ing->tenants, s, o->cartridge);
	keel_prep_init(&ing->prep, o->cartridge, &ing->report);
	ing->prep.tenants = &ing->tenants;
	ing->prep.position_word = ing->opt.position_word;
	ing->prep.max_line = ing->opt.max_line;
	ing->prep.max_envelope = s->max_envelope;
	ing->prep.max_envelope_why = s->max_envelope_why;
	ing->prep.on_reject = ing->opt.on_reject;
	ing->prep.reject_userdata = ing->opt.reject_userdata;
	ing->prep.on_conflict = ing->opt.on_conflict;
	ing->prep.conflict_userdata = ing->opt.conflict_userdata;
	ing->prep.defer_hash = keel_store_hashes_on_demand(s);
	keel_arena_init(&ing->arena);
	if (!ing->opt.commit_interval_ms)
		ing->opt.commit_interval_ms = KEEL_DEFAULT_COMMIT_INTERVAL_MS;
	keel_map_init(&ing->batch_ids);
	keel_append_builder_init(&ing->append, false);
	keel_append_builder_init(&ing->tx_mentions, true);
	keel_buf_init(&ing->errmsg);
	*out = ing;
	return 0;
}

/* The positions given since the last commit go, written or not. */
static void keel_batcher_drop_positions(struct keel_batcher *ing)
{
	for (size_t i = 0; i < ing->npositions; i++)
		free(ing->positions[i].log);
	ing->npositions = 0;
}

int keel_batcher_log_position(struct keel_batcher *ing, const char *log,
			      uint32_t partition, uint64_t seq, uint64_t token)
{
	if (!keel_store_keeps_log_positions(ing->store)) {
		keel_buf_reset(&ing->errmsg);
		keel_buf_addf(&ing->errmsg,
			      "store \"%s\" keeps no log positions: consuming a log needs a "
			      "store that takes concurrent writers (mysql, postgres)",
			      keel_store_url(ing->store));
		return KEEL_EINVAL;
	}
	struct keel_str name = keel_str_cstr(log);
	struct keel_log_position *p = NULL;
	for (size_t i = 0; i < ing->npositions && !p; i++)
		if (ing->positions[i].p.partition == partition &&
		    keel_str_eq(ing->positions[i].p.log, name))
			p = &ing->positions[i].p;
	if (!p) {
		if (ing->npositions == ing->positions_cap) {
			ing->positions_cap = ing->positions_cap ? 2 * ing->positions_cap : 8;
			ing->positions = keel_xrealloc(
			    ing->positions, ing->positions_cap * sizeof *ing->positions);
		}
		struct keel_given_position *g = &ing->positions[ing->npositions++];
		g->log = keel_xstrdup(log);
		p = &g->p;
		p->log = keel_str_make(g->log, name.len);
		p->partition = partition;
	}
	p->seq = seq;
	p->token = token;
	return 0;
}

/* Writes the positions given into the open transaction, just before its
 * commit: every event offered before them is in it. */
static int keel_batcher_write_positions(struct keel_batcher *ing)
{
	for (size_t i = 0; i < ing->npositions; i++) {
		struct keel_log_position *p = &ing->positions[i].p;
		p->recorded_at = ing->tx_recorded_at;
		uint64_t stored;
		int rc = keel_store_log_position(ing->store, p, &stored);
		if (rc)
			return rc;
	}
	return 0;
}

void keel_batcher_free(struct keel_batcher *ing)
{
	if (!ing)
		return;
	keel_prep_free(&ing->prep);
	keel_tc_free(&ing->tenants);
	keel_arena_free(&ing->arena);
	keel_ptrvec_free(&ing->events);
	keel_ptrvec_free(&ing->accepted);
	keel_map_free(&ing->batch_ids);
	keel_append_builder_free(&ing->append);
	keel_append_builder_free(&ing->tx_mentions);
	keel_ptrvec_free(&ing->tx_events);
	free(ing->spans);
	keel_batcher_drop_positions(ing);
	free(ing->positions);
	if (ing->in_tx)
		keel_store_rollback(ing->store);
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
	const struct keel_report *c = &ing->tx_counts;
	return ing->events.len + c->accepted + c->duplicates;
}

int keel_batcher_add_too_long(struct keel_batcher *ing, uint64_t position, const char *head,
			     size_t head_len)
{
	keel_prep_too_long(&ing->prep, position, head, head_len);
	return 0;
}

static int keel_batcher_fail_unwritten(struct keel_batcher *ing, int rc);

int keel_batcher_add(struct keel_batcher *ing, const char *text, size_t len,
		     uint64_t position, void *owner)
{
	struct keel_batch_event *ev = keel_prep_event(&ing->prep, &ing->arena, text, len,
						      position);
	if (!ev && ing->prep.refused) {
		/* its tenant has no cartridge here (rejected), or the store
		 * could not say which (not) */
		keel_buf_reset(&ing->errmsg);
		keel_buf_addf(&ing->errmsg, "%s %llu: ", ing->opt.position_word,
			      (unsigned long long)position);
		keel_buf_add(&ing->errmsg, ing->prep.msg.data, ing->prep.msg.len);
		if (ing->prep.refused != KEEL_ECARTRIDGE)
			return keel_batcher_fail_unwritten(ing, ing->prep.refused);
		return ing->prep.refused;
	}
	if (!ev)
		return 0; /* rejected and reported */
	ev->owner = owner;
	if (!ing->events.len)
		ing->first_position = position;
	ing->last_position = position;
	keel_ptrvec_push(&ing->events, ev);
	if (ing->events.len >= ing->opt.batch)
		return keel_batcher_write(ing, false);
	return 0;
}

/* The second and later copies of an identity (tenant, source, id) within
 * one batch are duplicates of the first. */
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
			if (keel_batch_event_same(other, ev)) {
				first = other;
				break;
			}
		}
		if (first) {
			ev->status = KEEL_EV_DUPLICATE;
			ev->first = first;
			ev->stored_hash = keel_batch_event_hash(first);
		} else {
			keel_map_put(m, h, ev);
		}
	}
}

/* Remembers where the batch's logged events came from (on_conflict). */
static void keel_batcher_remember(struct keel_batcher *ing, struct keel_batch_event **acc,
				  size_t n)
{
	if (!ing->opt.on_conflict)
		return;
	for (size_t i = 0; i < n; i++, ing->nrun++) {
		struct keel_run_span *last = ing->nspans ? &ing->spans[ing->nspans - 1] : NULL;
		if (last && acc[i]->seq == last->seq + (int64_t)last->count &&
		    acc[i]->position == last->position + last->count) {
			last->count++;
			continue;
		}
		if (ing->nspans == ing->spans_cap) {
			ing->spans_cap = ing->spans_cap ? 2 * ing->spans_cap : 64;
			ing->spans = keel_xrealloc(ing->spans, ing->spans_cap * sizeof *ing->spans);
		}
		ing->spans[ing->nspans++] =
		    (struct keel_run_span){acc[i]->seq, acc[i]->position, ing->nrun, 1};
	}
}

/* The position of the event this ingester logged as seq since its last
 * flush, if it did (stores number the events one handle logs in
 * increasing order). */
static bool keel_batcher_run_position(const struct keel_batcher *ing, int64_t seq,
				      uint64_t *position)
{
	/* The first span that starts after seq; the one before may hold it. */
	size_t lo = 0, hi = ing->nspans;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ing->spans[mid].seq <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	const struct keel_run_span *sp = &ing->spans[lo - 1];
	if (seq >= sp->seq + (int64_t)sp->count)
		return false;
	*position = sp->position + (uint64_t)(seq - sp->seq);
	return true;
}

/* Reports a conflicting duplicate with both positions: the first copy's
 * in the same batch, or logged since the last flush, or else the seq of
 * the one in the store. */
static void keel_batcher_conflict(struct keel_batcher *ing, const struct keel_batch_event *ev)
{
	uint64_t first = 0;
	bool known = ev->first != NULL;
	if (known)
		first = ev->first->position;
	else
		known = keel_batcher_run_position(ing, ev->stored_seq, &first);
	keel_prep_conflict(&ing->prep, ev, known, first, ev->stored_seq);
}

/* Ends the open batch; its memory goes unless the transaction's
 * outcomes still need it. */
static void keel_batcher_reset_batch(struct keel_batcher *ing)
{
	keel_append_builder_reset(&ing->append);
	if (!ing->opt.on_outcome)
		keel_arena_reset(&ing->arena);
	keel_map_clear(&ing->batch_ids);
	ing->events.len = 0;
	ing->accepted.len = 0;
}

/* Ends the open transaction (committed or not): nothing of it is kept. */
static void keel_batcher_reset_tx(struct keel_batcher *ing)
{
	ing->in_tx = false;
	keel_tc_ended(&ing->tenants, false); /* no-op after a commit */
	ing->tx_events.len = 0;
	keel_append_builder_reset(&ing->tx_mentions);
	memset(&ing->tx_counts, 0, sizeof ing->tx_counts);
	if (!ing->events.len)
		keel_arena_reset(&ing->arena);
}

/* What a rolled-back transaction or batch logged is not in the store:
 * forget where its events came from (their seqs may be given again). */
static void keel_batcher_forget(struct keel_batcher *ing, size_t nrun)
{
	if (ing->nrun <= nrun)
		return;
	while (ing->nspans && ing->spans[ing->nspans - 1].first >= nrun)
		ing->nspans--;
	if (ing->nspans) {
		struct keel_run_span *last = &ing->spans[ing->nspans - 1];
		if (last->first + last->count > nrun)
			last->count = nrun - last->first;
	}
	ing->nrun = nrun;
}

/* "batch of lines 1-500" (what, the position word's plural, the range). */
static void keel_batcher_range(const struct keel_batcher *ing, struct keel_buf *b,
			       const char *what, uint64_t first, uint64_t last)
{
	const char *word = ing->opt.position_word;
	size_t n = strlen(word);
	keel_buf_addf(b, "%s of %s%s %llu-%llu", what, word,
		      n && word[n - 1] == 'x' ? "es" : "s", (unsigned long long)first,
		      (unsigned long long)last);
}

static void keel_batcher_message(struct keel_batcher *ing, const char *what,
				 uint64_t first, uint64_t last)
{
	keel_buf_reset(&ing->errmsg);
	keel_batcher_range(ing, &ing->errmsg, what, first, last);
	keel_buf_addf(&ing->errmsg, ": %s", keel_store_errmsg(ing->store));
}

/* Ends the message with what was lost: nothing of the events first..last
 * is in the store, and running the same input again puts them there (what
 * was committed before comes back as duplicates). */
static void keel_batcher_lost(struct keel_batcher *ing, const char *how, uint64_t first,
			      uint64_t last)
{
	const char *word = ing->opt.position_word;
	size_t n = strlen(word);
	keel_buf_addf(&ing->errmsg,
		      "; %snothing of %s%s %llu-%llu was written: the same input again "
		      "ingests them",
		      how, word, n && word[n - 1] == 'x' ? "es" : "s",
		      (unsigned long long)first, (unsigned long long)last);
}

const struct keel_batch_event *keel_batcher_batch_event(const struct keel_batcher *ing,
							size_t seq)
{
	return ing->tx_events.items[seq];
}

/* Tells on_outcome what became of each event of the committed
 * transaction, seq counting from its first. */
static void keel_batcher_report_outcomes(struct keel_batcher *ing)
{
	for (size_t i = 0; i < ing->tx_events.len; i++) {
		const struct keel_batch_event *ev = ing->tx_events.items[i];
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

/* Commits the open transaction; only then does the report (and
 * on_outcome) learn of its batches. */
static int keel_batcher_commit(struct keel_batcher *ing)
{
	if (!ing->in_tx)
		return 0;
	/* the cartridges of tenants new to the store, with their first
	 * events */
	int rc = keel_tc_record(&ing->tenants, ing->tx_recorded_at);
	if (rc == 0 && ing->tx_mentions.nmentions) {
		/* the builder holds mentions only */
		struct keel_append m = keel_append_view(&ing->tx_mentions, NULL, 0);
		rc = keel_store_append(ing->store, &m);
	}
	if (rc == 0)
		rc = keel_batcher_write_positions(ing);
	keel_batcher_drop_positions(ing);
	if (rc == 0)
		rc = keel_store_commit(ing->store);
	if (rc) {
		keel_batcher_message(ing, "commit", ing->tx_first_position,
				     ing->tx_last_position);
		keel_batcher_lost(ing, "", ing->tx_first_position, ing->tx_last_position);
		keel_store_rollback(ing->store);
		keel_batcher_forget(ing, ing->tx_nrun);
		keel_batcher_reset_tx(ing);
		return rc;
	}
	keel_tc_ended(&ing->tenants, true);
	if (ing->opt.on_outcome)
		keel_batcher_report_outcomes(ing);
	ing->tx_counts.commits = 1;
	keel_report_add(&ing->report, &ing->tx_counts);
	ing->report.statements = keel_store_statements(ing->store);
	keel_batcher_reset_tx(ing);
	return 0;
}

/* After a failed batch (rc, its message set): the batches of the open
 * transaction before it are committed, and a failure of that commit is
 * told after the batch's own (and returned when it leaves what was
 * committed unknown). */
static int keel_batcher_commit_before(struct keel_batcher *ing, int rc)
{
	if (!ing->in_tx)
		return rc;
	struct keel_buf keep = ing->errmsg;
	keel_buf_init(&ing->errmsg);
	if (keel_batcher_commit(ing) == KEEL_EUNCERTAIN)
		rc = KEEL_EUNCERTAIN;
	if (ing->errmsg.len) {
		keel_buf_adds(&keep, "; then ");
		keel_buf_addstr(&keep, keel_str_make(ing->errmsg.data, ing->errmsg.len));
	}
	keel_buf_free(&ing->errmsg);
	ing->errmsg = keep;
	return rc;
}

/* The whole open transaction goes, after a failed batch: `why` says why
 * not only the batch. */
static int keel_batcher_fail_whole(struct keel_batcher *ing, int rc, const char *why,
				   uint64_t last)
{
	keel_batcher_lost(ing, why, ing->tx_first_position, last);
	keel_store_rollback(ing->store);
	keel_batcher_forget(ing, ing->tx_nrun);
	keel_batcher_reset_tx(ing);
	return rc;
}

/* A transaction that carries log positions (keel consume's) is all or
 * nothing: committing its earlier batches without their positions would
 * write rows that no fencing token was checked for, from a process that
 * may have lost its partition meanwhile (docs/log.md, "Fencing"). */
#define KEEL_WHOLE_WITH_POSITIONS                                                         \
	"the transaction carries log positions, so it goes whole: "

/* A batch failed: it alone is rolled back (to its savepoint) and the
 * batches before it are committed; if even that fails (the store has
 * rolled the whole transaction back already: a full disk, an I/O error),
 * or the transaction carries log positions, the transaction goes. The
 * message names the failed batch's range, then every line lost with it:
 * with grouped commits that is every batch since the last commit, not the
 * failed one only (docs/cli.md, "Failures"). */
static int keel_batcher_fail(struct keel_batcher *ing, int rc)
{
	bool positioned = ing->npositions > 0;
	/* the positions given cover the failed batch: not written */
	keel_batcher_drop_positions(ing);
	keel_batcher_message(ing, "batch", ing->first_position, ing->last_position);
	uint64_t first = ing->first_position, last = ing->last_position;
	keel_batcher_reset_batch(ing);
	keel_batcher_forget(ing, ing->batch_nrun);
	if (positioned)
		return keel_batcher_fail_whole(ing, rc, KEEL_WHOLE_WITH_POSITIONS, last);
	/* rollback_to_savepoint ends the savepoint too (store.h): no
	 * release after it. */
	if (keel_store_rollback_to_savepoint(ing->store) != 0)
		return keel_batcher_fail_whole(
		    ing, rc, "the store rolled back the whole transaction: ", last);
	keel_batcher_lost(ing, "", first, last);
	return keel_batcher_commit_before(ing, rc);
}

/* The store failed while an event was being added, before the open batch
 * was written (reading a new tenant's recorded cartridge): the batch
 * fails as a write of it would, so that nothing of it waits to be
 * committed with later events (keel serve would answer its POSTs failed,
 * then commit them with the next group's). It is dropped, nothing of it
 * written, and the transaction's earlier batches are committed; the
 * message, naming the event, names the batch first. */
static int keel_batcher_fail_unwritten(struct keel_batcher *ing, int rc)
{
	if (ing->events.len) {
		struct keel_buf m;
		keel_buf_init(&m);
		keel_batcher_range(ing, &m, "batch", ing->first_position,
				   ing->last_position);
		keel_buf_adds(&m, " not written: ");
		keel_buf_add(&m, ing->errmsg.data, ing->errmsg.len);
		keel_buf_free(&ing->errmsg);
		ing->errmsg = m;
	}
	bool positioned = ing->npositions > 0;
	uint64_t last = ing->last_position;
	keel_batcher_drop_positions(ing);
	keel_batcher_reset_batch(ing);
	if (positioned && ing->in_tx)
		return keel_batcher_fail_whole(ing, rc, KEEL_WHOLE_WITH_POSITIONS, last);
	return keel_batcher_commit_before(ing, rc);
}

/* Opens the transaction the next batches (and positions) go into. */
static int keel_batcher_begin(struct keel_batcher *ing)
{
	struct keel_store *s = ing->store;
	int rc = keel_store_begin(s);
	if (rc) {
		keel_batcher_message(ing, "batch", ing->first_position, ing->last_position);
		keel_batcher_lost(ing, "", ing->first_position, ing->last_position);
		keel_store_rollback(s);
		keel_batcher_drop_positions(ing);
		keel_batcher_reset_batch(ing);
		return rc;
	}
	ing->in_tx = true;
	ing->tx_nrun = ing->nrun;
	ing->tx_started = mono_usec();
	ing->tx_first_position = ing->first_position;
	ing->tx_recorded_at = keel_store_recorded_at(s);
	return 0;
}

/* Writes the open batch behind its savepoint, opening a transaction if
 * none is; commits when the transaction is old enough (or always, with
 * commit_now). */
static int keel_batcher_write(struct keel_batcher *ing, bool commit_now)
{
	struct keel_store *s = ing->store;
	int rc;
	if (!ing->events.len) {
		/* Log positions given after events that were all rejected
		 * still move on: a transaction of their own. */
		if (commit_now && !ing->in_tx && ing->npositions &&
		    (rc = keel_batcher_begin(ing)) != 0)
			return rc;
		return commit_now ? keel_batcher_commit(ing) : 0;
	}
	if (!ing->in_tx && (rc = keel_batcher_begin(ing)) != 0)
		return rc;
	ing->tx_last_position = ing->last_position;
	ing->batch_nrun = ing->nrun;
	if ((rc = keel_store_savepoint(s)) != 0)
		return keel_batcher_fail(ing, rc);

	struct keel_batch_event **events = (struct keel_batch_event **)ing->events.items;
	size_t n = ing->events.len;
	if ((rc = keel_store_seen_ids(s, events, n)) != 0)
		return keel_batcher_fail(ing, rc);
	keel_batcher_mark_repeats(ing);

	struct keel_report counts = {.batches = 1};
	int64_t recorded_at = ing->tx_recorded_at;
	for (size_t i = 0; i < n; i++) {
		struct keel_batch_event *ev = events[i];
		if (ev->status == KEEL_EV_DUPLICATE) {
			counts.duplicates++;
			if (ev->stored_hash != keel_batch_event_hash(ev)) {
				ev->status = KEEL_EV_CONFLICT;
				counts.conflicting++;
				keel_batcher_conflict(ing, ev);
			}
			continue;
		}
		ev->status = KEEL_EV_ACCEPTED;
		ev->recorded_at = recorded_at;
		counts.unhandled += ev->unhandled;
		keel_ptrvec_push(&ing->accepted, ev);
		keel_append_add_event(&ing->append, ev);
	}
	struct keel_batch_event **acc = (struct keel_batch_event **)ing->accepted.items;
	counts.accepted = ing->accepted.len;
	counts.rows_inserted = ing->append.nrows;
	if (counts.accepted) {
		struct keel_append a = keel_append_view(&ing->append, acc, counts.accepted);
		a.nmentions = 0; /* folded into the transaction's, below */
		a.seqs_wanted = ing->opt.on_conflict != NULL;
		if ((rc = keel_store_append(s, &a)) != 0)
			return keel_batcher_fail(ing, rc);
		keel_batcher_remember(ing, acc, counts.accepted);
	}
	if ((rc = keel_store_release(s)) != 0)
		return keel_batcher_fail(ing, rc);
	keel_append_fold_mentions(&ing->tx_mentions, ing->append.mentions,
				  ing->append.nmentions);
	keel_tc_logged(&ing->tenants, acc, counts.accepted);

	keel_report_add(&ing->tx_counts, &counts);
	if (ing->opt.on_outcome)
		for (size_t i = 0; i < n; i++) {
			events[i]->tx_seq = ing->tx_events.len;
			keel_ptrvec_push(&ing->tx_events, events[i]);
		}
	keel_batcher_reset_batch(ing);

	bool due = ing->opt.commit_interval_ms == KEEL_COMMIT_EVERY_BATCH ||
		   mono_usec() - ing->tx_started >= (int64_t)ing->opt.commit_interval_ms * 1000;
	return commit_now || due ? keel_batcher_commit(ing) : 0;
}

int keel_batcher_flush(struct keel_batcher *ing)
{
	int rc = keel_batcher_write(ing, true);
	/* What came before a flush is "already in the store". */
	ing->nrun = 0;
	ing->nspans = 0;
	return rc;
}
