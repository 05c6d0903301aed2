/*
 * hand_batch.c - batches made by hand and raw scans as text, for the SQL
 * stores' tests (hand_batch.h).
 */
#include "support.h"

#include <string.h>

#include "hand_batch.h"


void hb_init(struct hbatch *b, int64_t recorded_at)
{
	memset(b, 0, sizeof *b);
	keel_arena_init(&b->arena);
	b->recorded_at = recorded_at;
}

void hb_free(struct hbatch *b)
{
	keel_ptrvec_free(&b->events);
	keel_arena_free(&b->arena);
}

struct keel_str hb_str(struct hbatch *b, const char *s)
{
	return keel_arena_str(&b->arena, keel_str_cstr(s));
}

/* An event `id` of tenant "t" asserting subject's predicate = value (JSON;
 * NULL: unset) at time t. */
void hb_fact(struct hbatch *b, const char *id, int64_t t, const char *subject,
		    const char *predicate, const char *value)
{
	struct keel_batch_event *ev = keel_arena_alloc(&b->arena, sizeof *ev);
	memset(ev, 0, sizeof *ev);
	ev->tenant = hb_str(b, "t");
	ev->source = hb_str(b, "");
	ev->id = hb_str(b, id);
	ev->type = hb_str(b, "test.fact");
	ev->time = t;
	ev->envelope = hb_str(b, "{}");
	ev->hash = keel_hash64("{}", 2, 0);
	ev->status = KEEL_EV_ACCEPTED;
	ev->recorded_at = b->recorded_at;
	keel_ptrvec_push(&b->events, ev);
	assert_true(b->nrows < KEEL_ARRAY_LEN(b->rows));
	b->rows[b->nrows++] = (struct keel_assertion){
	    .kind = KEEL_ROW_FACT,
	    .tenant = ev->tenant,
	    .subject = hb_str(b, subject),
	    .name = hb_str(b, predicate),
	    .value = value ? hb_str(b, value) : KEEL_STR_NULL,
	    .valid_from = t,
	    .asserted_by = {ev->source, ev->id},
	    .recorded_at = b->recorded_at,
	};
}

/* A relation row of event id: subject -relation-> object, linked or not. */
void hb_link(struct hbatch *b, const char *id, int64_t t, const char *subject,
		    const char *relation, const char *object, bool linked)
{
	assert_true(b->nrows < KEEL_ARRAY_LEN(b->rows));
	b->rows[b->nrows++] = (struct keel_assertion){
	    .kind = KEEL_ROW_RELATION,
	    .tenant = hb_str(b, "t"),
	    .subject = hb_str(b, subject),
	    .name = hb_str(b, relation),
	    .object = hb_str(b, object),
	    .linked = linked,
	    .valid_from = t,
	    .asserted_by = {hb_str(b, ""), hb_str(b, id)},
	    .recorded_at = b->recorded_at,
	};
}

void hb_mention(struct hbatch *b, const char *subject, const char *kind,
		       int64_t kind_time, int64_t first, int64_t last)
{
	assert_true(b->nmentions < KEEL_ARRAY_LEN(b->mentions));
	b->mentions[b->nmentions++] = (struct keel_mention){
	    .tenant = hb_str(b, "t"),
	    .subject = hb_str(b, subject),
	    .kind = kind ? hb_str(b, kind) : KEEL_STR_NULL,
	    .kind_time = kind_time,
	    .first_seen = first,
	    .last_seen = last,
	    .recorded_at = b->recorded_at,
	};
}

int hb_append(struct keel_store *s, struct hbatch *b)
{
	struct keel_append a = {.events = (struct keel_batch_event **)b->events.items,
				.nevents = b->events.len,
				.rows = b->rows,
				.nrows = b->nrows,
				.mentions = b->mentions,
				.nmentions = b->nmentions};
	return keel_store_append(s, &a);
}

/* One batch, committed alone. */
void hb_run(struct keel_store *s, struct hbatch *b)
{
	if (keel_store_begin(s) || keel_store_savepoint(s) || hb_append(s, b) ||
	    keel_store_release(s) || keel_store_commit(s))
		fail_msg("batch: %s", keel_store_errmsg(s));
}

/* The raw records of a scan, one line each:
 * "subject name object value from asserted_by recorded_at". */
/* s, or `none` for an absent string. */
static void add_or(struct keel_buf *b, struct keel_str s, const char *none)
{
	if (s.ptr)
		keel_buf_add(b, s.ptr, s.len);
	else
		keel_buf_adds(b, none);
}

static int raw_line(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	add_or(b, r->subject, "-");
	keel_buf_addc(b, ' ');
	add_or(b, r->name, "-");
	keel_buf_addc(b, ' ');
	add_or(b, r->object, "-");
	keel_buf_addc(b, ' ');
	add_or(b, r->value, "null");
	keel_buf_addf(b, " %lld ", (long long)r->valid_from);
	add_or(b, r->asserted_by.id, "-");
	keel_buf_addf(b, " %lld\n", (long long)r->recorded_at);
	return 0;
}

/* A raw scan (the store's op itself, no derivation) as text. */
char *raw_scan(struct keel_store *s, const struct keel_scan *q)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	if (s->ops->scan(s, q, raw_line, &b))
		fail_msg("scan: %s", keel_store_errmsg(s));
	return b.data;
}

static int entity_line(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	add_or(b, r->subject, "-");
	keel_buf_addc(b, ' ');
	add_or(b, r->kind, "null");
	keel_buf_addf(b, " %lld %lld %lld\n", (long long)r->first_seen,
		      (long long)r->last_seen, (long long)r->recorded_at);
	return 0;
}

char *entity_scan(struct keel_store *s, const struct keel_scan *q)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	if (s->ops->scan(s, q, entity_line, &b))
		fail_msg("scan: %s", keel_store_errmsg(s));
	return b.data;
}