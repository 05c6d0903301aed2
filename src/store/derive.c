/*
 * derive.c - valid_to and closed_by from the next assertion (derive.h).
 */
#include "derive.h"

#include <stdlib.h>
#include <string.h>

void keel_deriver_init(struct keel_deriver *d, const struct keel_scan *q, keel_scan_fn fn,
		       void *ud)
{
	memset(d, 0, sizeof *d);
	d->fn = fn;
	d->ud = ud;
	d->at_set = q->at_set;
	d->at = q->at;
	keel_arena_init(&d->arena);
}

void keel_deriver_free(struct keel_deriver *d)
{
	keel_ptrvec_free(&d->empties);
	keel_arena_free(&d->arena);
}

static bool same_timeline(const struct keel_record *a, const struct keel_record *b)
{
	return keel_str_eq(a->subject, b->subject) && keel_str_eq(a->name, b->name) &&
	       keel_str_eq(a->object, b->object) && keel_str_eq(a->tenant, b->tenant);
}

static void copy_strings(struct keel_arena *a, struct keel_record *r)
{
	struct keel_str *fields[] = {&r->tenant, &r->subject, &r->name, &r->object,
				     &r->value, &r->asserted_by.source, &r->asserted_by.id,
				     &r->closed_by.source, &r->closed_by.id};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(fields); i++)
		if (fields[i]->ptr)
			*fields[i] = keel_arena_str(a, *fields[i]);
}

static int emit(struct keel_deriver *d, const struct keel_record *r)
{
	if (d->at_set &&
	    !(r->valid_from <= d->at && d->at < r->valid_to && r->valid_from < r->valid_to))
		return 0;
	return d->fn(d->ud, r);
}

static int cmp_empty(const void *pa, const void *pb)
{
	const struct keel_record *a = *(const struct keel_record *const *)pa;
	const struct keel_record *b = *(const struct keel_record *const *)pb;
	int c = keel_event_ref_cmp(a->asserted_by, b->asserted_by);
	if (c)
		return c;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The held row is complete (its end is known): an emptied row waits for
 * the row that won its valid_from; the winner goes out after them. */
static int complete_held(struct keel_deriver *d)
{
	struct keel_record *r = &d->row;
	if (r->valid_to == r->valid_from) {
		struct keel_record *copy = keel_arena_alloc(&d->arena, sizeof *copy);
		*copy = *r;
		copy_strings(&d->arena, copy);
		keel_ptrvec_push(&d->empties, copy);
		return 0;
	}
	int rc = 0;
	if (d->empties.len > 1)
		qsort(d->empties.items, d->empties.len, sizeof *d->empties.items, cmp_empty);
	for (size_t i = 0; rc == 0 && i < d->empties.len; i++)
		rc = emit(d, d->empties.items[i]);
	if (rc == 0)
		rc = emit(d, r);
	d->empties.len = 0;
	return rc;
}

int keel_deriver_push(struct keel_deriver *d, const struct keel_record *r)
{
	int rc = 0;
	if (d->held) {
		struct keel_record *p = &d->row;
		if (same_timeline(p, r)) {
			p->valid_to = r->valid_from;
			p->closed_by = r->asserted_by; /* valid until r's callback ends */
		} else {
			p->valid_to = KEEL_TIME_INF;
			p->closed_by = KEEL_EVENT_REF_NONE;
		}
		rc = complete_held(d);
		d->held = false;
		if (rc)
			return rc;
	}
	if (!d->empties.len)
		keel_arena_reset(&d->arena);
	d->row = *r;
	copy_strings(&d->arena, &d->row);
	d->held = true;
	return 0;
}

int keel_deriver_finish(struct keel_deriver *d)
{
	int rc = 0;
	if (d->held) {
		d->row.valid_to = KEEL_TIME_INF;
		d->row.closed_by = KEEL_EVENT_REF_NONE;
		d->held = false;
		rc = complete_held(d);
	}
	keel_deriver_free(d);
	return rc;
}
