/*
 * changes.c - history --changes: how the belief about each of a
 * subject's timelines changed, and when each change was recorded
 * (docs/semantics.md, "Transaction time"; the document in docs/cli.md).
 *
 * Rows are written once and their valid_to and closed_by derived on read
 * from the next assertion in (valid_from, arrival) order. So what Keel
 * believed after each assertion arrived is that derivation over the
 * assertions that had arrived by then. The store's raw scan gives each
 * timeline's assertions together; this file takes one timeline at a time,
 * walks its assertions in arrival order (seq) and keeps those seen so far
 * in (valid_from, seq) order. Each new assertion has the largest seq, so
 * it goes after every known one with valid_from <= its own:
 *  - the row it creates ends where the next known assertion begins (that
 *    assertion closes it), or is open when there is none;
 *  - the known assertion just before it, if any, is the row it shortens:
 *    that row ended where the new row now ends, and ends at the new row's
 *    valid_from from now on (an empty row when both begin at one time).
 * Memory is one timeline's assertions, never the subject's whole history.
 */
#include <stdlib.h>
#include <string.h>

#include "event/json_write.h"
#include "moment.h"
#include "query.h"

/* One assertion of the timeline being collected; strings in the arena. */
struct assertion {
	struct keel_str name, object, value;
	struct keel_event_ref asserted_by;
	bool linked;
	int64_t valid_from, seq, recorded_at;
};

struct changes_ctx {
	enum keel_record_type type;
	const struct keel_read_options *o; /* from, to, limit */
	struct keel_buf *b;
	size_t written; /* changes in the current list */
	uint64_t omitted; /* changes the limit left out of the current list */
	struct keel_arena arena;
	struct assertion *rows; /* the timeline, in the scan's order */
	size_t nrows, cap;
	struct assertion **arrival; /* by seq */
	struct assertion **known;   /* by (valid_from, seq), growing */
	/* each arrival's neighbours when it arrived: the row it shortened
	 * and the one that closes the row it created */
	struct assertion **prev, **next;
};

static int by_seq(const void *a, const void *b)
{
	const struct assertion *x = *(struct assertion *const *)a;
	const struct assertion *y = *(struct assertion *const *)b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Where an assertion beginning at t goes among known[0..n): after every
 * one beginning at or before t (they all arrived earlier). */
static size_t insert_position(struct assertion *const *known, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (known[mid]->valid_from <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One change: the assertion a, the row it created (ending where next
 * begins) and the row it shortened (prev's). */
static void add_change(struct changes_ctx *c, const struct assertion *a,
		       const struct assertion *prev, const struct assertion *next)
{
	struct keel_buf *b = c->b;
	int64_t end = next ? next->valid_from : KEEL_TIME_INF;
	if (c->written++)
		keel_buf_addc(b, ',');
	if (c->type == KEEL_REC_FACT) {
		keel_buf_adds(b, "{\"predicate\":");
		keel_buf_add_json_str(b, a->name);
	} else {
		keel_buf_adds(b, "{\"relation\":");
		keel_buf_add_json_str(b, a->name);
		keel_buf_adds(b, ",\"object\":");
		keel_buf_add_json_str(b, a->object);
	}
	keel_buf_adds(b, ",\"recorded_at\":");
	keel_buf_add_json_time(b, a->recorded_at);
	keel_buf_adds(b, ",\"asserted_by\":");
	keel_buf_add_json_ref(b, a->asserted_by);
	if (c->type == KEEL_REC_FACT) {
		keel_buf_adds(b, ",\"value\":");
		keel_buf_add_json_raw(b, a->value);
	} else {
		keel_buf_adds(b, a->linked ? ",\"linked\":true" : ",\"linked\":false");
	}
	keel_buf_adds(b, ",\"valid_from\":");
	keel_buf_add_json_time(b, a->valid_from);
	keel_buf_adds(b, ",\"valid_to\":");
	keel_buf_add_json_time(b, end);
	keel_buf_adds(b, ",\"closed_by\":");
	keel_buf_add_json_ref(b, next ? next->asserted_by : KEEL_EVENT_REF_NONE);
	keel_buf_adds(b, ",\"shortened\":");
	if (!prev) {
		keel_buf_adds(b, "null}");
		return;
	}
	keel_buf_adds(b, "{\"asserted_by\":");
	keel_buf_add_json_ref(b, prev->asserted_by);
	keel_buf_adds(b, ",\"valid_from\":");
	keel_buf_add_json_time(b, prev->valid_from);
	keel_buf_adds(b, ",\"valid_to_before\":");
	keel_buf_add_json_time(b, end);
	keel_buf_adds(b, ",\"valid_to_after\":");
	keel_buf_add_json_time(b, a->valid_from);
	keel_buf_adds(b, "}}");
}

/* Writes the changes of the collected timeline and forgets it: those
 * whose row, as created, history --from/--to keeps, the latest --limit of
 * them (in recording order). */
static void flush_timeline(struct changes_ctx *c)
{
	size_t n = c->nrows;
	if (!n)
		return;
	c->arrival = keel_xrealloc(c->arrival, n * sizeof *c->arrival);
	c->known = keel_xrealloc(c->known, n * sizeof *c->known);
	c->prev = keel_xrealloc(c->prev, n * sizeof *c->prev);
	c->next = keel_xrealloc(c->next, n * sizeof *c->next);
	for (size_t i = 0; i < n; i++)
		c->arrival[i] = &c->rows[i];
	qsort(c->arrival, n, sizeof *c->arrival, by_seq);
	size_t kept = 0;
	for (size_t k = 0; k < n; k++) {
		struct assertion *a = c->arrival[k];
		size_t pos = insert_position(c->known, k, a->valid_from);
		c->prev[k] = pos ? c->known[pos - 1] : NULL;
		c->next[k] = pos < k ? c->known[pos] : NULL;
		memmove(c->known + pos + 1, c->known + pos, (k - pos) * sizeof *c->known);
		c->known[pos] = a;
		/* kept or not: the next one's neighbours depend on it */
		int64_t end = c->next[k] ? c->next[k]->valid_from : KEEL_TIME_INF;
		if (!keel_history_keeps(c->o, a->valid_from, end))
			c->arrival[k] = NULL;
		else
			kept++;
	}
	size_t skip = c->o->limit && kept > c->o->limit ? kept - c->o->limit : 0;
	c->omitted += skip;
	for (size_t k = 0; k < n; k++) {
		if (!c->arrival[k])
			continue;
		if (skip) {
			skip--;
			continue;
		}
		add_change(c, c->arrival[k], c->prev[k], c->next[k]);
	}
	c->nrows = 0;
	keel_arena_reset(&c->arena);
}

static int changes_cb(void *ud, const struct keel_record *r)
{
	struct changes_ctx *c = ud;
	if (c->nrows && (!keel_str_eq(c->rows[0].name, r->name) ||
			 (c->type == KEEL_REC_RELATION &&
			  !keel_str_eq(c->rows[0].object, r->object))))
		flush_timeline(c); /* the scan moved on to the next timeline */
	if (c->nrows == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->rows = keel_xrealloc(c->rows, c->cap * sizeof *c->rows);
	}
	c->rows[c->nrows++] = (struct assertion){
	    .name = keel_arena_str(&c->arena, r->name),
	    .object = keel_arena_str(&c->arena, r->object),
	    .value = keel_arena_str(&c->arena, r->value),
	    .asserted_by = {keel_arena_str(&c->arena, r->asserted_by.source),
			    keel_arena_str(&c->arena, r->asserted_by.id)},
	    .linked = r->linked,
	    .valid_from = r->valid_from,
	    .seq = r->seq,
	    .recorded_at = r->recorded_at,
	};
	return 0;
}

int keel_query_changes(struct keel_store *s, const char *tenant, const char *subject,
		       const char *predicate, const struct keel_read_options *o,
		       struct keel_buf *b, uint64_t omitted[2])
{
	struct changes_ctx c = {.b = b, .o = o};
	keel_arena_init(&c.arena);
	struct keel_scan sc = {.type = KEEL_REC_FACT,
			       .tenant = keel_str_cstr(tenant),
			       .subject = keel_str_cstr(subject),
			       .name = predicate ? keel_str_cstr(predicate) : KEEL_STR_NULL,
			       .raw = true};
	keel_scan_known_at(&sc, o);
	int rc = 0;
	static const enum keel_record_type types[] = {KEEL_REC_FACT, KEEL_REC_RELATION};
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(types); i++) {
		keel_buf_adds(b, i == 0 ? ",\"facts\":[" : ",\"relations\":[");
		c.type = sc.type = types[i];
		c.written = 0;
		c.omitted = 0;
		rc = keel_store_scan(s, &sc, changes_cb, &c);
		if (rc == 0)
			flush_timeline(&c);
		omitted[i] = c.omitted;
		keel_buf_addc(b, ']');
	}
	free(c.rows);
	free(c.arrival);
	free(c.known);
	free(c.prev);
	free(c.next);
	keel_arena_free(&c.arena);
	return rc;
}
