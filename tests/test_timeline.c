/*
 * test_timeline.c - placement (docs/semantics.md), each case, on the pure timeline:
 * in order, late into a closed row, equal times, before the first row,
 * unset rows, empty rows never matching, order independence.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "timeline.h"

struct fixture {
	struct keel_timeline tl;
	struct keel_row rows[256];
	size_t nrows;
	struct keel_row *dirtied[256];
	size_t ndirtied;
};

static void on_dirtied(void *ud, struct keel_row *row)
{
	struct fixture *f = ud;
	f->dirtied[f->ndirtied++] = row;
}

/* Asserts value v (NULL = unset) by event id at t. */
static bool place(struct fixture *f, int64_t t, const char *id, const char *v)
{
	struct keel_row *r = &f->rows[f->nrows++];
	memset(r, 0, sizeof *r);
	r->asserted_by = keel_str_cstr(id);
	r->value = keel_str_cstr(v);
	const struct keel_place_sink sink = {.dirtied = on_dirtied, .ud = f};
	return keel_timeline_place(&f->tl, t, r, &sink);
}

/* Renders the timeline as "[from,to)by>closer=value ..." for comparison. */
static char *render(const struct keel_timeline *tl)
{
	struct keel_buf b;
	keel_buf_init(&b);
	for (size_t i = 0; i < tl->nrows; i++) {
		const struct keel_row *r = tl->rows[i];
		keel_buf_addf(&b, "%s[%lld,", i ? " " : "", (long long)r->valid_from);
		if (r->valid_to == KEEL_TIME_INF)
			keel_buf_adds(&b, "inf");
		else
			keel_buf_addi64(&b, r->valid_to);
		keel_buf_addf(&b, ")%.*s>", (int)r->asserted_by.len, r->asserted_by.ptr);
		if (r->closed_by.ptr)
			keel_buf_addstr(&b, r->closed_by);
		else
			keel_buf_adds(&b, "-");
		keel_buf_adds(&b, "=");
		keel_buf_adds(&b, r->value.ptr ? r->value.ptr : "none");
	}
	keel_buf_addc(&b, 0);
	return b.data;
}

static void expect(const struct fixture *f, const char *want)
{
	char *got = render(&f->tl);
	assert_string_equal(got, want);
	free(got);
}

static struct fixture *fixture_new(void)
{
	return calloc(1, sizeof(struct fixture));
}

static void fixture_free(struct fixture *f)
{
	keel_timeline_free_rows(&f->tl);
	free(f);
}

static void first_assertion_is_open(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	assert_false(place(f, 10, "e1", "\"a\""));
	expect(f, "[10,inf)e1>-=\"a\"");
	fixture_free(f);
}

static void in_order_closes_the_open_row(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	assert_true(place(f, 20, "e2", "2"));
	place(f, 30, "e3", "3");
	expect(f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=3");
	fixture_free(f);
}

static void in_order_touches_only_the_open_row(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	static char ids[50][8];
	for (int i = 0; i < 50; i++) {
		snprintf(ids[i], sizeof ids[i], "e%d", i);
		place(f, 10 * (i + 1), ids[i], "1");
		/* fetched rows are not NEW: clear flags to observe dirtying */
		for (size_t k = 0; k < f->tl.nrows; k++)
			f->tl.rows[k]->flags = 0;
	}
	f->ndirtied = 0;
	place(f, 1000, "last", "2");
	assert_int_equal(f->ndirtied, 1);
	assert_int_equal(f->dirtied[0]->valid_from, 500);
	fixture_free(f);
}

static void late_event_splits_the_row_containing_it(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	place(f, 30, "e3", "3");
	for (size_t k = 0; k < f->tl.nrows; k++)
		f->tl.rows[k]->flags = 0;
	f->ndirtied = 0;
	assert_true(place(f, 20, "e2", "2"));
	expect(f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=3");
	/* only the row containing t was touched */
	assert_int_equal(f->ndirtied, 1);
	assert_int_equal(f->dirtied[0]->valid_from, 10);
	fixture_free(f);
}

static void equal_time_later_arrival_wins(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	assert_true(place(f, 10, "e2", "2"));
	expect(f, "[10,10)e1>e2=1 [10,inf)e2>-=2");
	fixture_free(f);
}

static void equal_time_late_into_closed_row(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	place(f, 20, "e2", "2");
	place(f, 30, "e3", "3");
	/* late, at the start of the middle row: it replaces that row */
	place(f, 20, "e4", "4");
	expect(f, "[10,20)e1>e2=1 [20,20)e2>e4=2 [20,30)e4>e3=4 [30,inf)e3>-=3");
	fixture_free(f);
}

static void before_first_row_ends_at_it(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 20, "e2", "2");
	assert_false(place(f, 10, "e1", "1"));
	expect(f, "[10,20)e1>e2=1 [20,inf)e2>-=2");
	fixture_free(f);
}

static void before_first_skips_empty_rows(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 20, "e2", "2");
	place(f, 20, "e3", "3"); /* [20,20) e2 is now empty */
	place(f, 10, "e1", "1");
	/* the first non-empty row after 10 is e3's, so e1 is closed by e3 */
	expect(f, "[10,20)e1>e3=1 [20,20)e2>e3=2 [20,inf)e3>-=3");
	fixture_free(f);
}

static void unset_is_a_row_without_value(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	place(f, 30, "e3", NULL);
	/* a late assertion before the unset still ends at the unset */
	place(f, 20, "e2", "2");
	expect(f, "[10,20)e1>e2=1 [20,30)e2>e3=2 [30,inf)e3>-=none");
	fixture_free(f);
}

static void empty_rows_never_match(void **state)
{
	(void)state;
	struct fixture *f = fixture_new();
	place(f, 10, "e1", "1");
	place(f, 10, "e2", "2");
	assert_null(keel_timeline_containing(&f->tl, 9));
	struct keel_row *c = keel_timeline_containing(&f->tl, 10);
	assert_non_null(c);
	assert_string_equal(c->asserted_by.ptr, "e2");
	fixture_free(f);
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
	static const char *ids[N];
	static char names[N][8];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "e%02d", i);
		ids[i] = names[i];
	}
	char *reference = NULL;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 200; round++) {
		int order[N];
		for (int i = 0; i < N; i++)
			order[i] = i;
		if (round)
			shuffle(order, N, &seed);
		struct fixture *f = fixture_new();
		for (int i = 0; i < N; i++) {
			int k = order[i];
			/* every fifth assertion is an unset */
			place(f, 100 + 7 * k, ids[k], k % 5 ? "1" : NULL);
		}
		char *got = render(&f->tl);
		if (!reference)
			reference = got;
		else {
			assert_string_equal(got, reference);
			free(got);
		}
		fixture_free(f);
	}
	free(reference);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(first_assertion_is_open),
	cmocka_unit_test(in_order_closes_the_open_row),
	cmocka_unit_test(in_order_touches_only_the_open_row),
	cmocka_unit_test(late_event_splits_the_row_containing_it),
	cmocka_unit_test(equal_time_later_arrival_wins),
	cmocka_unit_test(equal_time_late_into_closed_row),
	cmocka_unit_test(before_first_row_ends_at_it),
	cmocka_unit_test(before_first_skips_empty_rows),
	cmocka_unit_test(unset_is_a_row_without_value),
	cmocka_unit_test(empty_rows_never_match),
	cmocka_unit_test(order_does_not_matter_without_equal_times),
};
KEEL_TEST_MAIN(tests)
