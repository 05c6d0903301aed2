/*
 * test_derive.c - rows derived on read (docs/semantics.md): assertions
 * written once, in arrival order, and valid_to / closed_by derived from
 * the next assertion of the timeline in (valid_from, arrival) order. Each
 * placement case of the semantics, on the deriver alone: in order, late
 * into a closed row, equal times, before the first row, unset rows, the
 * at filter that never matches an empty row, order independence, and the
 * dump order of a run of emptied rows.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "store/derive.h"

/* One timeline's assertions, in arrival order. */
struct fixture {
	struct keel_record rows[256];
	size_t nrows;
	struct keel_buf out;
};

static void place(struct fixture *f, int64_t t, const char *id, const char *v)
{
	struct keel_record *r = &f->rows[f->nrows];
	memset(r, 0, sizeof *r);
	r->type = KEEL_REC_FACT;
	r->tenant = keel_str_cstr("t");
	r->subject = keel_str_cstr("s");
	r->name = keel_str_cstr("p");
	r->asserted_by.source = keel_str_cstr("src");
	r->asserted_by.id = keel_str_cstr(id);
	r->value = v ? keel_str_cstr(v) : KEEL_STR_NULL;
	r->valid_from = t;
	r->valid_to = KEEL_TIME_INF;
	r->seq = (int64_t)++f->nrows;
}

static int cmp_raw(const void *pa, const void *pb)
{
	const struct keel_record *a = pa, *b = pb;
	if (a->valid_from != b->valid_from)
		return a->valid_from < b->valid_from ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Renders "[from,to)by>closer=value ..." of each row the deriver gives. */
static int render_row(void *ud, const struct keel_record *r)
{
	struct keel_buf *b = ud;
	keel_buf_addf(b, "%s[%lld,", b->len ? " " : "", (long long)r->valid_from);
	if (r->valid_to == KEEL_TIME_INF)
		keel_buf_adds(b, "inf");
	else
		keel_buf_addi64(b, r->valid_to);
	keel_buf_addf(b, ")%.*s>", (int)r->asserted_by.id.len, r->asserted_by.id.ptr);
	if (r->closed_by.id.ptr)
		keel_buf_addstr(b, r->closed_by.id);
	else
		keel_buf_adds(b, "-");
	keel_buf_adds(b, "=");
	if (r->value.ptr)
		keel_buf_addstr(b, r->value);
	else
		keel_buf_adds(b, "none");
	return 0;
}

/* Derives the fixture's rows as a store's scan hands them over: sorted by
 * (valid_from, seq); with at_set, only the last row from <= at and the
 * one after it. */
static char *derive(struct fixture *f, bool at_set, int64_t at)
{
	struct keel_record sorted[256];
	memcpy(sorted, f->rows, f->nrows * sizeof *sorted);
	qsort(sorted, f->nrows, sizeof *sorted, cmp_raw);
	struct keel_scan q = {.type = KEEL_REC_FACT, .at_set = at_set, .at = at};
	struct keel_buf b;
	keel_buf_init(&b);
	struct keel_deriver d;
	keel_deriver_init(&d, &q, render_row, &b);
	size_t from = 0, to = f->nrows;
	if (at_set) {
		size_t last = SIZE_MAX;
		for (size_t i = 0; i < f->nrows; i++)
			if (sorted[i].valid_from <= at)
				last = i;
		from = last == SIZE_MAX ? 0 : last;
		to = last == SIZE_MAX ? (f->nrows ? 1 : 0) : (last + 2 < f->nrows ? last + 2 : f->nrows);
	}
	for (size_t i = from; i < to; i++)
		assert_int_equal(keel_deriver_push(&d, &sorted[i]), 0);
	assert_int_equal(keel_deriver_finish(&d), 0);
	keel_buf_addc(&b, 0);
	return b.data;
}

static void expect(struct fixture *f, const char *want)
{
	char *got = derive(f, false, 0);
	assert_string_equal(got, want);
	free(got);
}

static void expect_at(struct fixture *f, int64_t at, const char *want)
{
	char *got = derive(f, true, at);
	assert_string_equal(got, want);
	free(got);
}

static void first_assertion_is_open(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "\"a\"");
	expect(&f, "[10,inf)e1>-=\"a\"");
}

static void in_order_closes_the_open_row(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 20, "e2", "2");
	place(&f, 30, "e3", "3");
	expect(&f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=3");
}

static void late_event_splits_the_row_containing_it(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 30, "e3", "3");
	expect(&f, "[10,30)e1>e3=1 [30,inf)e3>-=3");
	place(&f, 20, "e2", "2");
	expect(&f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=3");
}

static void equal_time_later_arrival_wins(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 10, "e2", "2");
	expect(&f, "[10,10)e1>e2=1 [10,inf)e2>-=2");
}

static void equal_time_late_into_closed_row(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 20, "e2", "2");
	place(&f, 30, "e3", "3");
	/* late, at the start of the middle row: it replaces that row */
	place(&f, 20, "e4", "4");
	expect(&f, "[10,20)e1>e2=1 [20,20)e2>e4=2 [20,30)e4>e3=4 [30,inf)e3>-=3");
}

static void before_first_row_ends_at_it(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 20, "e2", "2");
	place(&f, 10, "e1", "1");
	expect(&f, "[10,20)e1>e2=1 [20,inf)e2>-=2");
}

/* Before a run of equal times, a row is closed by the run's first
 * arrival: the next assertion in (valid_from, arrival) order, whatever
 * order the three arrived in (docs/semantics.md). */
static void before_a_run_is_closed_by_its_first_arrival(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 20, "e2", "2");
	place(&f, 20, "e3", "3"); /* [20,20) e2 is now empty */
	place(&f, 10, "e1", "1");
	expect(&f, "[10,20)e1>e2=1 [20,20)e2>e3=2 [20,inf)e3>-=3");
	struct fixture g = {0};
	place(&g, 10, "e1", "1");
	place(&g, 20, "e2", "2");
	place(&g, 20, "e3", "3");
	expect(&g, "[10,20)e1>e2=1 [20,20)e2>e3=2 [20,inf)e3>-=3");
}

static void unset_is_a_row_without_value(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 30, "e3", NULL);
	/* a late assertion before the unset still ends at the unset */
	place(&f, 20, "e2", "2");
	expect(&f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=none");
}

static void at_gives_the_row_containing_it_never_an_empty_one(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "e1", "1");
	place(&f, 10, "e2", "2");
	place(&f, 30, "e3", "3");
	expect_at(&f, 9, "");
	expect_at(&f, 10, "[10,30)e2>e3=2");
	expect_at(&f, 29, "[10,30)e2>e3=2");
	expect_at(&f, 30, "[30,inf)e3>-=3");
	expect_at(&f, 1000, "[30,inf)e3>-=3");
}

/* Within one valid_from the dump lists the emptied rows first, by
 * asserted_by, then the row that won (docs/dump.md). */
static void a_run_comes_out_in_dump_order(void **state)
{
	(void)state;
	struct fixture f = {0};
	place(&f, 10, "z", "1");
	place(&f, 10, "a", "2");
	place(&f, 10, "m", "3");
	expect(&f, "[10,10)a>m=2 [10,10)z>a=1 [10,inf)m>-=3");
}

/* Fisher-Yates with a fixed xorshift so failures reproduce. */
static void shuffle(int *a, size_t n, uint64_t *seed)
{
	for (size_t i = n - 1; i > 0; i--) {
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		size_t j = *seed % (i + 1);
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

static void order_does_not_matter_without_equal_times(void **state)
{
	(void)state;
	enum { N = 40 };
	static char names[N][8];
	for (int i = 0; i < N; i++)
		snprintf(names[i], sizeof names[i], "e%02d", i);
	char *reference = NULL;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 200; round++) {
		int order[N];
		for (int i = 0; i < N; i++)
			order[i] = i;
		if (round)
			shuffle(order, N, &seed);
		struct fixture f = {0};
		for (int i = 0; i < N; i++) {
			int k = order[i];
			/* every fifth assertion is an unset */
			place(&f, 100 + 7 * k, names[k], k % 5 ? "1" : NULL);
		}
		char *got = derive(&f, false, 0);
		if (!reference)
			reference = got;
		else {
			assert_string_equal(got, reference);
			free(got);
		}
	}
	free(reference);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(first_assertion_is_open),
	cmocka_unit_test(in_order_closes_the_open_row),
	cmocka_unit_test(late_event_splits_the_row_containing_it),
	cmocka_unit_test(equal_time_later_arrival_wins),
	cmocka_unit_test(equal_time_late_into_closed_row),
	cmocka_unit_test(before_first_row_ends_at_it),
	cmocka_unit_test(before_a_run_is_closed_by_its_first_arrival),
	cmocka_unit_test(unset_is_a_row_without_value),
	cmocka_unit_test(at_gives_the_row_containing_it_never_an_empty_one),
	cmocka_unit_test(a_run_comes_out_in_dump_order),
	cmocka_unit_test(order_does_not_matter_without_equal_times),
};
KEEL_TEST_MAIN(tests)
