/*
 * test_conformance.c - the store contract (docs/stores.md, docs/semantics.md):
 * one suite run against every store in the table below. Each contract case
 * runs once per store and ctest shows it as test_conformance.CASE.STORE:
 * dumps that do not depend on the batch size or on the order events come in,
 * the memory store's dump and answers from every store, ingesting twice
 * changing nothing, dump/load round trips, duplicates and bad events
 * counted and rejected alike, and the store read as known at each moment
 * of its log equal to a store that had ingested only what it had recorded
 * by then. A new store joins with one line in stores[]
 * (docs/architecture.md, "Testing").
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "event/json.h"
#include "store/store.h"
#include "util.h"

#define STREAM_EVENTS 6000

/* A generated stream of exactly `events` lines. */
static struct keel_test_lines *stream_generate(uint64_t events, uint32_t tenants,
					       uint64_t seed, double late, double duplicates)
{
	struct keel_test_lines *s =
	    keel_test_lines_generate(events, tenants, seed, late, duplicates);
	assert_int_equal(s->n, events);
	return s;
}

/* ------------------------------------------------------------ the stores */

/* A new, empty store for one case: its URL, and what to remove after. */
struct store_case {
	char url[4096];
	char *dir;
};

/* A kind of store the contract runs on. fresh() makes a new, empty store
 * of that kind, or skips the case (keel_test_skip) when this machine has
 * none: MySQL and PostgreSQL need the servers of ctest's mysql_server
 * and postgres_server fixtures. */
struct store_kind {
	const char *name;
	void (*fresh)(struct store_case *c);
};

static void memory_fresh(struct store_case *c)
{
	c->dir = NULL;
	snprintf(c->url, sizeof c->url, "memory:");
}

static void sqlite_fresh(struct store_case *c)
{
	c->dir = keel_test_tmpdir();
	snprintf(c->url, sizeof c->url, "sqlite:%s/keel.db", c->dir);
}

#ifdef KEEL_WITH_MYSQL
/* A new database on the fixture's server, from its "fresh" command. */
static void mysql_fresh(struct store_case *c)
{
	c->dir = NULL;
	const char *fresh = getenv("KEEL_TEST_MYSQL_FRESH");
	if (!fresh || !*fresh)
		keel_test_skip("no MySQL server: KEEL_TEST_MYSQL_FRESH is unset "
			       "(the mysql_server ctest fixture sets it)");
	FILE *p = popen(fresh, "r");
	assert_non_null(p);
	assert_non_null(fgets(c->url, sizeof c->url, p));
	c->url[strcspn(c->url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
}
#endif

#ifdef KEEL_WITH_POSTGRES
/* A new database on the fixture's server, from its "fresh" command. */
static void postgres_fresh(struct store_case *c)
{
	c->dir = NULL;
	const char *fresh = getenv("KEEL_TEST_PG_FRESH");
	if (!fresh || !*fresh)
		keel_test_skip("no PostgreSQL server: KEEL_TEST_PG_FRESH is unset "
			       "(the postgres_server ctest fixture sets it)");
	FILE *p = popen(fresh, "r");
	assert_non_null(p);
	assert_non_null(fgets(c->url, sizeof c->url, p));
	c->url[strcspn(c->url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
}
#endif

/* Every store Keel has; each contract case runs on each of them. */
static const struct store_kind stores[] = {
	{"memory", memory_fresh},
	{"sqlite", sqlite_fresh},
#ifdef KEEL_WITH_MYSQL
	{"mysql", mysql_fresh},
#endif
#ifdef KEEL_WITH_POSTGRES
	{"postgres", postgres_fresh},
#endif
};

/* The reference the others are held to. */
static const struct store_kind *const memory = &stores[0];

static struct keel_store *store_open(const struct store_kind *k, struct store_case *c)
{
	k->fresh(c);
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open(c->url, &s, &err))
		fail_msg("open %s: %s", c->url, err);
	return s;
}

static void store_done(struct keel_store *s, struct store_case *c)
{
	keel_store_close(s);
	keel_test_rmdir(c->dir);
	free(c->dir);
}

/* ------------------------------------------------------------- ingestion */

static const struct keel_cartridge *fleet(void)
{
	static struct keel_cartridge *c;
	if (!c) {
		char *err = NULL;
		assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	}
	return c;
}

/* Every rejection's message, one a line. */
static void collect_reject(void *ud, uint64_t position, const char *id, const char *message,
			   const char *input, size_t input_len)
{
	(void)position;
	(void)id;
	(void)input;
	(void)input_len;
	keel_buf_adds(ud, message);
	keel_buf_addc(ud, '\n');
}

/* Ingests lines[order[i]] (or lines[i]) in batches into s; returns the
 * dump. rejects, when not NULL, collects the rejection messages. */
static char *ingest_rejects(struct keel_store *s, const struct keel_test_lines *st, const size_t *order,
			    size_t batch, struct keel_report *out, struct keel_buf *rejects)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(),
					      .batch = batch,
					      .on_reject = rejects ? collect_reject : NULL,
					      .reject_userdata = rejects};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < st->n; i++) {
		size_t k = order ? order[i] : i;
		int rc = keel_ingest_add(ing, st->lines[k], strlen(st->lines[k]), k + 1);
		if (rc)
			fail_msg("ingest: %s", keel_ingest_errmsg(ing));
	}
	if (keel_ingest_flush(ing))
		fail_msg("flush: %s", keel_ingest_errmsg(ing));
	if (out)
		*out = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return keel_test_dump(s, NULL);
}

static char *ingest_into(struct keel_store *s, const struct keel_test_lines *st, const size_t *order,
			 size_t batch, struct keel_report *out)
{
	return ingest_rejects(s, st, order, batch, out, NULL);
}

/* The dump of a new store of kind k given the stream. */
static char *ingest_fresh(const struct store_kind *k, const struct keel_test_lines *st,
			  const size_t *order, size_t batch, struct keel_report *out)
{
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	char *dump = ingest_into(s, st, order, batch, out);
	store_done(s, &c);
	return dump;
}

/* Fleet events with late ones and re-sent ones, shared by the cases. */
static struct keel_test_lines *standard_stream(void)
{
	static struct keel_test_lines *s;
	if (!s)
		s = stream_generate(STREAM_EVENTS, 3, 42, 0.05, 0.05);
	return s;
}

/* The dump without its event records (whose order is arrival order). */
static char *state_only(char *dump)
{
	struct keel_buf b;
	keel_buf_init(&b);
	for (char *p = dump; *p;) {
		char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
		if (strncmp(p, "{\"type\":\"event\"", 15) != 0)
			keel_buf_add(&b, p, len);
		p += len;
	}
	free(dump);
	return b.data ? b.data : strdup("");
}

/* --------------------------------------------------------- the contract */

/* The batch size is invisible in the dump. */
static void batch_sizes_give_identical_dumps(const struct store_kind *k)
{
	const size_t sizes[] = {1, 7, 500, 5000};
	char *reference = NULL;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct keel_report r;
		char *dump = ingest_fresh(k, standard_stream(), NULL, sizes[i], &r);
		assert_true(r.accepted > 0);
		assert_true(r.duplicates > 0); /* the stream has re-sent events */
		assert_int_equal(r.rejected, 0);
		if (!reference) {
			reference = dump;
		} else {
			assert_string_equal(dump, reference);
			free(dump);
		}
	}
	free(reference);
}

/* Every store holds what the memory store holds, byte for byte. */
static void gives_the_memory_stores_dump(const struct store_kind *k)
{
	char *want = ingest_fresh(memory, standard_stream(), NULL, 500, NULL);
	char *got = ingest_fresh(k, standard_stream(), NULL, 500, NULL);
	assert_true(strlen(want) > 1000);
	assert_string_equal(got, want);
	free(got);
	free(want);
}

/* Placement does not depend on arrival order: shuffled input at batch
 * sizes 1, 33 and 1000 gives the state of the input in order. */
static void permutations_give_same_timelines(const struct store_kind *k)
{
	/* No late events here: the generator never gives two events of one
	 * tenant the same time, so any order must give the same state. */
	struct keel_test_lines *st = stream_generate(3000, 2, 7, 0.0, 0.02);
	char *reference = state_only(ingest_fresh(memory, st, NULL, 100, NULL));
	assert_true(strlen(reference) > 1000);
	size_t *order = malloc(st->n * sizeof *order);
	uint64_t seed = 12345;
	const size_t batches[] = {1, 33, 1000};
	for (size_t round = 0; round < sizeof batches / sizeof batches[0]; round++) {
		for (size_t i = 0; i < st->n; i++)
			order[i] = i;
		for (size_t i = st->n - 1; i > 0; i--) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t j = (size_t)(seed >> 33) % (i + 1);
			size_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		char *got = state_only(ingest_fresh(k, st, order, batches[round], NULL));
		assert_string_equal(got, reference);
		free(got);
	}
	free(order);
	keel_test_lines_free(st);
	free(reference);
}

/* Ingestion is idempotent: the same input again is all duplicates. */
static void ingesting_twice_changes_nothing(const struct store_kind *k)
{
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	struct keel_report first, second;
	char *once = ingest_into(s, standard_stream(), NULL, 500, &first);
	char *twice = ingest_into(s, standard_stream(), NULL, 500, &second);
	assert_true(first.accepted > 0);
	assert_string_equal(twice, once);
	assert_int_equal(second.accepted, 0);
	assert_int_equal(second.duplicates, standard_stream()->n);
	assert_int_equal(second.conflicting, 0);
	assert_int_equal(second.rows_inserted, 0);
	free(once);
	free(twice);
	store_done(s, &c);
}

/* dump | load | dump is the identity, into this store and out of it. */
static void dump_load_dump_is_identical(const struct store_kind *k)
{
	const struct store_kind *pairs[2][2] = {{memory, k}, {k, memory}};
	for (size_t i = 0; i < 2; i++) {
		char *dump = ingest_fresh(pairs[i][0], standard_stream(), NULL, 500, NULL);
		struct store_case c;
		struct keel_store *s = store_open(pairs[i][1], &c);
		FILE *f = fmemopen(dump, strlen(dump), "r");
		assert_int_equal(keel_load(s, f), 0);
		fclose(f);
		char *again = keel_test_dump(s, NULL);
		assert_string_equal(again, dump);
		store_done(s, &c);
		free(dump);
		free(again);
	}
}

/* on_conflict's messages, one a line. */
static void collect_conflict(void *ud, uint64_t position, const char *source,
			     const char *id, const char *message, const char *envelope,
			     size_t envelope_len)
{
	(void)position;
	(void)source;
	(void)id;
	(void)envelope;
	(void)envelope_len;
	keel_buf_addf(ud, "%s\n", message);
}

/* An ingester into s in batches of 2 whose conflict messages go to said,
 * one a line. */
static struct keel_ingest *conflict_ingester(struct keel_store *s, struct keel_buf *said)
{
	keel_buf_init(said);
	keel_buf_adds(said, "");
	const struct keel_ingest_options o = {.size = sizeof o,
					      .cartridge = fleet(),
					      .batch = 2,
					      .on_conflict = collect_conflict,
					      .conflict_userdata = said};
	struct keel_ingest *ing;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	return ing;
}

/* An identity seen before is a duplicate whatever its envelope; one whose
 * envelope differs (beyond whitespace) is also counted as conflicting,
 * reported with both positions, and the first one stays. */
static void conflicting_duplicate_is_skipped_and_counted(const struct store_kind *k)
{
	static const char a[] = "{\"id\":\"x1\",\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
				"\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"idle\",\"reason\":\"r\"}}";
	static const char b[] = "{\"id\":\"x1\",\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
				"\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"moving\",\"reason\":\"r\"}}";
	static const char a_spaced[] = "{ \"id\": \"x1\", \"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","
				       "\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"idle\",\"reason\":\"r\"} }";
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	struct keel_buf said;
	struct keel_ingest *ing = conflict_ingester(s, &said);
	assert_int_equal(keel_ingest_add(ing, a, strlen(a), 1), 0);
	assert_int_equal(keel_ingest_add(ing, b, strlen(b), 2), 0); /* same batch */
	assert_int_equal(keel_ingest_add(ing, b, strlen(b), 3), 0); /* the next one */
	assert_int_equal(keel_ingest_add(ing, a_spaced, strlen(a_spaced), 4), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	/* after a flush, the first copy is the store's */
	assert_int_equal(keel_ingest_add(ing, b, strlen(b), 5), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	const struct keel_report *r = keel_ingest_report(ing);
	assert_int_equal(r->accepted, 1);
	assert_int_equal(r->duplicates, 4);
	/* b thrice conflicts; a with other whitespace is the same event */
	assert_int_equal(r->conflicting, 3);
	keel_ingest_free(ing);
	char *dump = keel_test_dump(s, "t");
	assert_non_null(strstr(dump, "\"value\":\"idle\""));
	assert_null(strstr(dump, "moving"));
	/* the seq the message gives is the logged event's, whatever the store
	 * numbers it */
	const char *seq = strstr(said.data, "(seq ");
	assert_non_null(seq);
	char want[1024];
	snprintf(want, sizeof want,
		 "line 2: event \"x1\": conflicting duplicate: its envelope differs from "
		 "that of line 1\n"
		 "line 3: event \"x1\": conflicting duplicate: its envelope differs from "
		 "that of line 1\n"
		 "line 5: event \"x1\": conflicting duplicate: its envelope differs from "
		 "that of the event already in the store (seq %lld)\n",
		 strtoll(seq + 5, NULL, 10));
	assert_string_equal(said.data, want);
	assert_true(strtoll(seq + 5, NULL, 10) > 0);
	keel_buf_free(&said);
	free(dump);
	store_done(s, &c);
}

/* A conflict names the line of the first copy however the lines before it
 * went: batches, a rejected line, a duplicate and skipped positions (the
 * batcher keeps positions as spans of consecutive lines, not a line each). */
static void conflict_names_the_first_line_across_gaps(const struct store_kind *k)
{
#define GAP_EV(id, status)                                                                 \
	"{\"id\":\"" id "\",\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","   \
	"\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"vehicle_id\":\"V-" id "\","             \
	"\"status\":\"" status "\",\"reason\":\"r\"}}"
	static const struct {
		uint64_t position;
		const char *line;
	} lines[] = {
	    {1, GAP_EV("e1", "idle")},	  {2, GAP_EV("e2", "idle")},
	    {3, "{not json"},		  {4, GAP_EV("e3", "idle")},
	    {5, GAP_EV("e1", "idle")},	  {9, GAP_EV("e4", "idle")},
	    {10, GAP_EV("e5", "idle")},	  {11, GAP_EV("e2", "moving")},
	    {12, GAP_EV("e3", "moving")}, {13, GAP_EV("e5", "moving")},
	    {14, GAP_EV("e4", "moving")}, {15, GAP_EV("e1", "moving")},
	};
#undef GAP_EV
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	struct keel_buf said;
	struct keel_ingest *ing = conflict_ingester(s, &said);
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
		assert_int_equal(keel_ingest_add(ing, lines[i].line, strlen(lines[i].line),
						 lines[i].position),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	const struct keel_report *r = keel_ingest_report(ing);
	assert_int_equal(r->accepted, 5);
	assert_int_equal(r->conflicting, 5);
	keel_ingest_free(ing);
	assert_string_equal(said.data,
			    "line 11: event \"e2\": conflicting duplicate: its envelope differs "
			    "from that of line 2\n"
			    "line 12: event \"e3\": conflicting duplicate: its envelope differs "
			    "from that of line 4\n"
			    "line 13: event \"e5\": conflicting duplicate: its envelope differs "
			    "from that of line 10\n"
			    "line 14: event \"e4\": conflicting duplicate: its envelope differs "
			    "from that of line 9\n"
			    "line 15: event \"e1\": conflicting duplicate: its envelope differs "
			    "from that of line 1\n");
	keel_buf_free(&said);
	store_done(s, &c);
}

/* An event is (tenant, source, id): one id from two sources is two events,
 * each named by its source in the rows it asserted; an envelope without a
 * source is a third, of source "". */
static void one_id_from_two_sources_is_two_events(const struct store_kind *k)
{
#define SRC_EV(src, status, minute)                                                      \
	"{\"id\":\"1\"," src "\"tenant\":\"t\",\"type\":\"fleet.vehicle.status_changed\","   \
	"\"time\":\"2026-01-01T00:0" minute ":00Z\",\"data\":{\"vehicle_id\":\"V-1\","          \
	"\"status\":\"" status "\",\"reason\":null}}"
	static const char *const in[] = {
	    SRC_EV("\"source\":\"/a\",", "idle", "1"),
	    SRC_EV("\"source\":\"/b\",", "moving", "2"),
	    SRC_EV("", "parked", "3"),
	    SRC_EV("\"source\":\"/a\",", "idle", "1"), /* /a's again: a duplicate */
	};
#undef SRC_EV
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	for (size_t batch = 1; batch <= 4; batch += 3) {
		struct keel_ingest *ing;
		const struct keel_ingest_options o = {
		    .size = sizeof o, .cartridge = fleet(), .batch = batch};
		assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
		for (size_t i = 0; i < KEEL_ARRAY_LEN(in); i++)
			assert_int_equal(keel_ingest_add(ing, in[i], strlen(in[i]), i + 1), 0);
		assert_int_equal(keel_ingest_flush(ing), 0);
		const struct keel_report *r = keel_ingest_report(ing);
		assert_int_equal(r->accepted, batch == 1 ? 3 : 0);
		assert_int_equal(r->duplicates, batch == 1 ? 1 : 4);
		assert_int_equal(r->conflicting, 0);
		keel_ingest_free(ing);
	}
	char *dump = keel_test_dump(s, "t");
	assert_non_null(strstr(dump, "\"value\":\"idle\",\"valid_from\":\"2026-01-01T00:01:00Z\","
				     "\"valid_to\":\"2026-01-01T00:02:00Z\",\"asserted_by\":{\"source\":"
				     "\"/a\",\"id\":\"1\"},\"closed_by\":{\"source\":\"/b\",\"id\":\"1\"}}"));
	assert_non_null(strstr(dump, "\"asserted_by\":{\"source\":\"/b\",\"id\":\"1\"},"
				     "\"closed_by\":{\"source\":\"\",\"id\":\"1\"}}"));
	assert_non_null(strstr(dump, "{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"/a\",\"id\":\"1\","));
	assert_non_null(strstr(dump, "{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"/b\",\"id\":\"1\","));
	assert_non_null(strstr(dump, "{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"\",\"id\":\"1\","));
	/* why finds each event by its source */
	char *json = NULL;
	assert_int_equal(keel_why(s, "t", "vehicle:V-1", "status",
				  KEEL_TEST_AT(1767225690LL * 1000000), &json),
			 0);
	assert_non_null(strstr(json, "\"event\":{\"source\":\"/a\",\"id\":\"1\","));
	free(json);
	assert_int_equal(keel_why(s, "t", "vehicle:V-1", "status",
				  KEEL_TEST_AT(1767225750LL * 1000000), &json),
			 0);
	assert_non_null(strstr(json, "\"event\":{\"source\":\"/b\",\"id\":\"1\","));
	assert_non_null(strstr(json, "\"status\":\"moving\""));
	free(json);
	free(dump);
	store_done(s, &c);
}

/* Bad events fail alone and the same way on every store: each is
 * rejected with its line and reason, unknown types are logged as
 * unhandled, and the store holds exactly the memory store's state for the
 * rest. */
static void bad_events_are_rejected_alone(const struct store_kind *k)
{
	const struct keel_test_lines *good = standard_stream();
	struct keel_buf in;
	keel_buf_init(&in);
	for (size_t i = 0; i < 2000; i++) {
		keel_buf_adds(&in, good->lines[i]);
		keel_buf_addc(&in, '\n');
		if (i % 400 == 17)
			keel_buf_adds(&in, "{\"id\":\"bad-json\",\n");
		if (i % 400 == 99)
			keel_buf_adds(&in, "{\"id\":\"no-time\",\"tenant\":\"t\",\"type\":"
					     "\"fleet.vehicle.status_changed\",\"data\":{}}\n");
		if (i % 400 == 201)
			keel_buf_adds(&in, "{\"id\":\"u1\",\"tenant\":\"tenant-00\",\"type\":"
					     "\"fleet.unknown\",\"time\":\"2026-01-01T00:00:00Z\","
					     "\"data\":{}}\n");
	}
	struct keel_test_lines *st = keel_test_lines_split(in.data);
	struct keel_buf want_rejects, got_rejects;
	keel_buf_init(&want_rejects);
	keel_buf_init(&got_rejects);
	struct keel_report want, got;
	struct store_case mc, c;
	struct keel_store *ms = store_open(memory, &mc), *s = store_open(k, &c);
	char *want_dump = ingest_rejects(ms, st, NULL, 300, &want, &want_rejects);
	char *got_dump = ingest_rejects(s, st, NULL, 300, &got, &got_rejects);
	assert_int_equal(got.rejected, 10);
	assert_int_equal(got.unhandled, 1); /* the same id, re-sent */
	assert_int_equal(got.accepted, want.accepted);
	assert_int_equal(got.duplicates, want.duplicates);
	assert_non_null(strstr(got_rejects.data, "event \"no-time\": field \"time\""));
	assert_string_equal(got_rejects.data, want_rejects.data);
	assert_string_equal(got_dump, want_dump);
	free(want_dump);
	free(got_dump);
	keel_buf_free(&want_rejects);
	keel_buf_free(&got_rejects);
	store_done(ms, &mc);
	store_done(s, &c);
	keel_test_lines_free(st); /* and in's bytes, which it owns */
}

/* The read side (show, history, why, stats) answers every store's state
 * with the memory store's JSON, at several times. */
static void queries_match_the_memory_store(const struct store_kind *k)
{
	struct keel_test_lines *st = stream_generate(4000, 2, 17, 0.05, 0.05);
	struct store_case mc, c;
	struct keel_store *mem = store_open(memory, &mc), *s = store_open(k, &c);
	free(ingest_into(s, st, NULL, 500, NULL));
	free(ingest_into(mem, st, NULL, 500, NULL));
	static const char *const subjects[] = {"vehicle:V-0001", "vehicle:V-0007",
					       "driver:DR-0003", "depot:D-01",
					       "trip:T-000002",	 "vehicle:none"};
	static const char *const predicates[] = {"status", "location", "odometer_km"};
	int64_t at[3];
	assert_int_equal(keel_time_parse("2026-01-05T09:00:00Z", 20, &at[0], NULL), 0);
	assert_int_equal(keel_time_parse("2026-01-05T12:30:00Z", 20, &at[1], NULL), 0);
	at[2] = keel_time_now();
	size_t compared = 0;
	for (size_t ti = 0; ti < 2; ti++) {
		const char *tenant = ti ? "tenant-01" : "tenant-00";
		for (size_t i = 0; i < sizeof subjects / sizeof subjects[0]; i++) {
			for (size_t t = 0; t < 3; t++) {
				char *a = NULL, *b = NULL;
				int ra = keel_show(s, tenant, subjects[i], KEEL_TEST_AT(at[t]), &a);
				int rb = keel_show(mem, tenant, subjects[i], KEEL_TEST_AT(at[t]), &b);
				assert_int_equal(ra, rb);
				if (ra == 0) {
					assert_string_equal(a, b);
					compared++;
				}
				free(a);
				free(b);
				for (size_t p = 0; p < 3; p++) {
					a = b = NULL;
					ra = keel_why(s, tenant, subjects[i], predicates[p], KEEL_TEST_AT(at[t]), &a);
					rb = keel_why(mem, tenant, subjects[i], predicates[p],
						      KEEL_TEST_AT(at[t]), &b);
					assert_int_equal(ra, rb);
					if (ra == 0)
						assert_string_equal(a, b);
					free(a);
					free(b);
				}
			}
			char *a = NULL, *b = NULL;
			int ra = keel_history(s, tenant, subjects[i], NULL, NULL, &a);
			int rb = keel_history(mem, tenant, subjects[i], NULL, NULL, &b);
			assert_int_equal(ra, rb);
			if (ra == 0)
				assert_string_equal(a, b);
			free(a);
			free(b);
		}
		char *a = NULL, *b = NULL;
		assert_int_equal(keel_stats(s, tenant, NULL, &a), 0);
		assert_int_equal(keel_stats(mem, tenant, NULL, &b), 0);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	assert_true(compared >= 10);
	store_done(mem, &mc);
	store_done(s, &c);
	keel_test_lines_free(st);
}

/* One logged event: when it was recorded and its envelope (malloc'd). */
struct logged {
	int64_t recorded_at;
	char *envelope;
};

struct log_ctx {
	struct logged *ev;
	size_t n, cap;
};

static int log_cb(void *ud, const struct keel_record *r)
{
	struct log_ctx *l = ud;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
	}
	l->ev[l->n++] = (struct logged){r->recorded_at,
					strndup(r->envelope.ptr, r->envelope.len)};
	return 0;
}

static int by_time(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int by_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dump read as known at `known_at`. */
static char *dump_known_at(struct keel_store *s, int64_t known_at)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const struct keel_read_options o = {.size = sizeof o, .known_at_set = true,
					    .known_at = known_at};
	if (keel_dump(s, NULL, &o, f))
		fail_msg("dump --known-at: %s", keel_store_errmsg(s));
	fclose(f);
	return buf;
}

/* Whether a row of a that had ended (valid_to not null) is not a row of
 * b: a late event recorded in between shortened it. (Open rows are closed
 * by events in order too, and entities' last_seen grows: those prove
 * nothing.) */
static bool closed_row_changed(const char *a, const char *b)
{
	struct keel_test_lines *la = keel_test_lines_split(strdup(a));
	struct keel_test_lines *lb = keel_test_lines_split(strdup(b));
	qsort(la->lines, la->n, sizeof *la->lines, by_line);
	qsort(lb->lines, lb->n, sizeof *lb->lines, by_line);
	bool missing = false;
	for (size_t i = 0, j = 0; i < la->n && !missing; i++) {
		const char *line = la->lines[i];
		if ((strncmp(line, "{\"type\":\"fact\"", 14) != 0 &&
		     strncmp(line, "{\"type\":\"relation\"", 18) != 0) ||
		    strstr(line, "\"valid_to\":null"))
			continue;
		while (j < lb->n && strcmp(lb->lines[j], la->lines[i]) < 0)
			j++;
		missing = j == lb->n || strcmp(lb->lines[j], la->lines[i]) != 0;
	}
	keel_test_lines_free(la);
	keel_test_lines_free(lb);
	return missing;
}

/* A member's JSON text (its raw span), as a keel_str. */
static struct keel_str raw_of(const char *text, const struct keel_json *obj, const char *key)
{
	const struct keel_json *v = keel_json_get(obj, key, strlen(key));
	assert_non_null(v);
	return keel_str_make(text + v->raw_off, v->raw_len);
}

/* One row as "timeline|value|valid_from|valid_to|asserted_by|closed_by",
 * every part the JSON text of the document's member. */
static char *row_line(struct keel_str timeline, struct keel_str value, struct keel_str from,
		      struct keel_str to, struct keel_str by, struct keel_str closed)
{
	struct keel_buf b;
	keel_buf_init(&b);
	const struct keel_str parts[] = {timeline, value, from, to, by, closed};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(parts); i++) {
		if (i)
			keel_buf_addc(&b, '|');
		keel_buf_addstr(&b, parts[i]);
	}
	keel_buf_reserve(&b, 0);
	return b.data;
}

/* A row's timeline within the subject: its predicate, or relation and
 * object; in buf. */
static struct keel_str timeline_of(const char *text, const struct keel_json *row, bool fact,
				   struct keel_buf *buf)
{
	keel_buf_reset(buf);
	keel_buf_addstr(buf, raw_of(text, row, fact ? "predicate" : "relation"));
	if (!fact)
		keel_buf_addstr(buf, raw_of(text, row, "object"));
	return keel_str_make(buf->data, buf->len);
}

/* The rows of a history document, as row_line()s, sorted. */
static void history_rows(const char *json, struct keel_ptrvec *out)
{
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, json, strlen(json), &err), 0);
	struct keel_buf tl;
	keel_buf_init(&tl);
	for (int fact = 1; fact >= 0; fact--) {
		const struct keel_json *list =
		    keel_json_get(doc.root, fact ? "facts" : "relations", fact ? 5 : 9);
		assert_non_null(list);
		for (const struct keel_json *r = list->child; r; r = r->next)
			keel_ptrvec_push(out, row_line(timeline_of(json, r, fact, &tl),
						       raw_of(json, r, fact ? "value" : "linked"),
						       raw_of(json, r, "valid_from"),
						       raw_of(json, r, "valid_to"),
						       raw_of(json, r, "asserted_by"),
						       raw_of(json, r, "closed_by")));
	}
	keel_buf_free(&tl);
	keel_json_doc_free(&doc);
	qsort(out->items, out->len, sizeof *out->items, by_line);
}

/* A row rebuilt from the changes: its parts, the ends still to move. */
struct rebuilt {
	struct keel_str timeline, value, from, to, by, closed;
	char *timeline_copy;
};

/* The rows the changes of a history --changes document end in: each
 * change adds its row, and ends the row it shortened (found by timeline,
 * asserter, valid_from and where it ended before) at its own valid_from,
 * closed by its own event. Within a timeline, recorded_at never
 * decreases. As row_line()s, sorted. */
static void rows_from_changes(const char *json, struct keel_ptrvec *out)
{
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, json, strlen(json), &err), 0);
	struct rebuilt *rows = NULL;
	size_t n = 0, cap = 0;
	int64_t last_recorded = 0;
	struct keel_buf tl;
	keel_buf_init(&tl);
	for (int fact = 1; fact >= 0; fact--) {
		const struct keel_json *list =
		    keel_json_get(doc.root, fact ? "facts" : "relations", fact ? 5 : 9);
		assert_non_null(list);
		for (const struct keel_json *c = list->child; c; c = c->next) {
			struct keel_str t = timeline_of(json, c, fact, &tl);
			struct keel_str by = raw_of(json, c, "asserted_by");
			struct keel_str from = raw_of(json, c, "valid_from");
			int64_t recorded;
			struct keel_str rec = raw_of(json, c, "recorded_at");
			assert_int_equal(keel_time_parse(rec.ptr + 1, rec.len - 2, &recorded, NULL),
					 0);
			const struct keel_json *sh = keel_json_get(c, "shortened", 9);
			assert_non_null(sh);
			if (sh->type != KEEL_JSON_NULL) {
				struct keel_str sby = raw_of(json, sh, "asserted_by");
				struct keel_str sfrom = raw_of(json, sh, "valid_from");
				struct keel_str before = raw_of(json, sh, "valid_to_before");
				assert_true(keel_str_eq(raw_of(json, sh, "valid_to_after"), from));
				assert_true(keel_str_eq(before, raw_of(json, c, "valid_to")));
				size_t k = n;
				while (k-- > 0)
					if (keel_str_eq(rows[k].timeline, t) &&
					    keel_str_eq(rows[k].by, sby) &&
					    keel_str_eq(rows[k].from, sfrom) &&
					    keel_str_eq(rows[k].to, before))
						break;
				if (k == SIZE_MAX)
					fail_msg("a change shortens a row no change made: %.*s",
						 (int)c->raw_len, json + c->raw_off);
				rows[k].to = from;
				rows[k].closed = by;
			}
			/* Changes come timeline by timeline, each in recording
			 * order. */
			if (n && keel_str_eq(rows[n - 1].timeline, t))
				assert_true(recorded >= last_recorded);
			last_recorded = recorded;
			if (n == cap)
				rows = realloc(rows, (cap = cap ? 2 * cap : 64) * sizeof *rows);
			char *copy = strndup(t.ptr, t.len);
			rows[n++] = (struct rebuilt){
			    keel_str_make(copy, t.len), raw_of(json, c, fact ? "value" : "linked"),
			    from, raw_of(json, c, "valid_to"), by, raw_of(json, c, "closed_by"), copy};
		}
	}
	for (size_t k = 0; k < n; k++) {
		keel_ptrvec_push(out, row_line(rows[k].timeline, rows[k].value, rows[k].from,
					       rows[k].to, rows[k].by, rows[k].closed));
		free(rows[k].timeline_copy);
	}
	free(rows);
	keel_buf_free(&tl);
	keel_json_doc_free(&doc);
	qsort(out->items, out->len, sizeof *out->items, by_line);
}

static void free_lines(struct keel_ptrvec *v)
{
	for (size_t i = 0; i < v->len; i++)
		free(v->items[i]);
	keel_ptrvec_free(v);
}

/* history --changes agrees with history: replaying each subject's changes
 * in order (each adds its row and ends the one it shortened) gives exactly
 * its history's rows, on a stream with late events ingested in two parts. */
static void changes_end_in_the_history(const struct store_kind *k)
{
	struct keel_test_lines *st = stream_generate(3000, 1, 5, 0.15, 0.02);
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	struct keel_test_lines second = {.lines = st->lines + st->n / 2,
					 .n = st->n - st->n / 2};
	struct keel_test_lines first = {.lines = st->lines, .n = st->n / 2};
	free(ingest_into(s, &second, NULL, 200, NULL)); /* the later half first */
	free(ingest_into(s, &first, NULL, 200, NULL));
	static const char *const subjects[] = {"vehicle:V-0001", "vehicle:V-0002",
					       "vehicle:V-0007", "driver:DR-0003",
					       "depot:D-01"};
	const struct keel_read_options changes = {.size = sizeof changes, .changes = true};
	size_t shortened = 0;
	for (size_t i = 0; i < KEEL_ARRAY_LEN(subjects); i++) {
		char *hist = NULL, *ch = NULL;
		assert_int_equal(keel_history(s, "tenant-00", subjects[i], NULL, NULL, &hist), 0);
		assert_int_equal(keel_history(s, "tenant-00", subjects[i], NULL, &changes, &ch), 0);
		struct keel_ptrvec want = {0}, got = {0};
		history_rows(hist, &want);
		rows_from_changes(ch, &got);
		assert_true(want.len > 0);
		assert_int_equal(got.len, want.len);
		for (size_t r = 0; r < want.len; r++)
			assert_string_equal(got.items[r], want.items[r]);
		/* Late rows shortened closed ones: "valid_to_before":"... */
		for (const char *p = ch; (p = strstr(p, "\"valid_to_before\":\"")); p++)
			shortened++;
		free_lines(&want);
		free_lines(&got);
		free(hist);
		free(ch);
	}
	assert_true(shortened > 0);
	store_done(s, &c);
	keel_test_lines_free(st);
}

/* The JSON without its "known_at" member, to set a read known at a moment
 * beside the same read of a store that holds only what was known then. */
static void drop_known_at(char *json)
{
	char *p = json ? strstr(json, ",\"known_at\":\"") : NULL;
	if (!p)
		return;
	char *end = strchr(p + strlen(",\"known_at\":\""), '"');
	assert_non_null(end);
	memmove(p, end + 1, strlen(end + 1) + 1);
}

/* Two reads' answers are the same but for a's "known_at" (both freed). */
static void same_answer_known_at(int ra, char *a, int rb, char *b)
{
	assert_int_equal(ra, rb);
	drop_known_at(a);
	if (ra == 0)
		assert_string_equal(a, b);
	free(a);
	free(b);
}

/* show and why known at `known_at`, at several times, answer as `fresh`
 * (a store given only the events recorded by then) answers now. */
static void reads_known_at_match(struct keel_store *s, struct keel_store *fresh,
				 int64_t known_at)
{
	static const char *const tenants[] = {"tenant-00", "tenant-01"};
	static const char *const subjects[] = {"vehicle:V-0001", "vehicle:V-0002",
					       "vehicle:V-0007", "driver:DR-0003",
					       "trip:T-000002"};
	int64_t at[5];
	assert_int_equal(keel_time_parse("2026-01-05T09:00:00Z", 20, &at[0], NULL), 0);
	assert_int_equal(keel_time_parse("2099-01-05T09:00:00Z", 20, &at[1], NULL), 0);
	at[2] = known_at;
	at[3] = known_at + 1;
	at[4] = KEEL_TIME_INF - 1;
	for (size_t ti = 0; ti < KEEL_ARRAY_LEN(tenants); ti++)
		for (size_t i = 0; i < KEEL_ARRAY_LEN(subjects); i++)
			for (size_t t = 0; t < KEEL_ARRAY_LEN(at); t++) {
				const struct keel_read_options then = {
				    .size = sizeof then, .at_set = true, .at = at[t],
				    .known_at_set = true, .known_at = known_at};
				char *a = NULL, *b = NULL;
				int ra = keel_show(s, tenants[ti], subjects[i], &then, &a);
				int rb = keel_show(fresh, tenants[ti], subjects[i],
						   KEEL_TEST_AT(at[t]), &b);
				same_answer_known_at(ra, a, rb, b);
				a = b = NULL;
				ra = keel_why(s, tenants[ti], subjects[i], "status", &then, &a);
				rb = keel_why(fresh, tenants[ti], subjects[i], "status",
					      KEEL_TEST_AT(at[t]), &b);
				same_answer_known_at(ra, a, rb, b);
			}
}

/* Moves the time of every step-th line to 2099 (from 2026): those events
 * are ahead of their recording, which the store's clock (2026) is not
 * yet at. */
static void move_ahead(struct keel_test_lines *st, size_t step)
{
	for (size_t i = 0; step && i < st->n; i += step) {
		char *p = strstr(st->lines[i], "\"time\":\"2026-");
		assert_non_null(p);
		memcpy(p + strlen("\"time\":\"20"), "99", 2);
	}
}

/* Transaction time (docs/semantics.md): a fleet stream with late and
 * re-sent events goes in as k chunks, each event in a chunk drawn at
 * random (so later chunks bring events older than those already stored),
 * with a flush, which commits, after each chunk. Then for every moment
 * the log records, and one before the first, the dump as known then is
 * byte for byte the dump of a new store of the same kind given only the
 * events recorded by then, in the order they were logged. Several seeds,
 * chunk counts and batch sizes. */
static void known_at_is_the_store_of_what_was_recorded(const struct store_kind *k)
{
	static const uint64_t seeds[] = {3, 11, 29};
	static const size_t batches[] = {50, 500, 7};
	/* Every how many events' times move ahead of their recording (0:
	 * none): a read known at a moment seeks those rows apart. */
	static const size_t ahead[] = {0, 3, 1};
	size_t rewritten = 0; /* seeds where a later chunk changed an earlier row */
	for (size_t si = 0; si < KEEL_ARRAY_LEN(seeds); si++) {
		struct keel_test_lines *st = stream_generate(1000, 2, seeds[si], 0.1, 0.05);
		move_ahead(st, ahead[si]);
		size_t nchunks = 3 + si;
		size_t *chunk = malloc(st->n * sizeof *chunk);
		uint64_t rng = seeds[si] * 2654435761u + 1;
		for (size_t i = 0; i < st->n; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			chunk[i] = (size_t)(rng >> 33) % nchunks;
		}

		struct store_case c;
		struct keel_store *s = store_open(k, &c);
		struct keel_ingest *ing;
		const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(),
						      .batch = batches[si]};
		assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
		for (size_t ch = 0; ch < nchunks; ch++) {
			for (size_t i = 0; i < st->n; i++)
				if (chunk[i] == ch &&
				    keel_ingest_add(ing, st->lines[i], strlen(st->lines[i]), i + 1))
					fail_msg("ingest: %s", keel_ingest_errmsg(ing));
			if (keel_ingest_flush(ing))
				fail_msg("flush: %s", keel_ingest_errmsg(ing));
		}
		assert_int_equal(keel_ingest_report(ing)->rejected, 0);
		keel_ingest_free(ing);
		char *final = keel_test_dump(s, NULL);

		/* The log, tenant by tenant in arrival order. */
		struct log_ctx log = {0};
		struct keel_ptrvec tenants = {0};
		assert_int_equal(keel_store_tenants(s, &tenants), 0);
		assert_int_equal(tenants.len, 2);
		for (size_t t = 0; t < tenants.len; t++) {
			struct keel_scan q = {.type = KEEL_REC_EVENT,
					      .tenant = keel_str_cstr(tenants.items[t])};
			assert_int_equal(keel_store_scan(s, &q, log_cb, &log), 0);
			free(tenants.items[t]);
		}
		keel_ptrvec_free(&tenants);

		/* The moments: each distinct recorded_at, and one before all. */
		int64_t *moments = malloc((log.n + 1) * sizeof *moments);
		for (size_t i = 0; i < log.n; i++)
			moments[i] = log.ev[i].recorded_at;
		qsort(moments, log.n, sizeof *moments, by_time);
		size_t nm = 0;
		for (size_t i = 0; i < log.n; i++)
			if (nm == 0 || moments[nm - 1] != moments[i])
				moments[nm++] = moments[i];
		/* Each flush committed at its own moment. */
		assert_true(nm >= nchunks);
		memmove(moments + 1, moments, nm * sizeof *moments);
		moments[0] = moments[1] - 1;
		nm++;
		/* A store may record each batch at its own moment: at most
		 * MOMENTS of them, spread evenly, the first and last kept. */
		enum { MOMENTS = 8 };
		if (nm > MOMENTS) {
			for (size_t m = 0; m < MOMENTS; m++)
				moments[m] = moments[m * (nm - 1) / (MOMENTS - 1)];
			nm = MOMENTS;
		}

		bool changed = false;
		for (size_t m = 0; m < nm; m++) {
			char *got = dump_known_at(s, moments[m]);
			struct store_case fc;
			struct keel_store *fresh = store_open(k, &fc);
			struct keel_ingest *fi;
			const struct keel_ingest_options fo = {
			    .size = sizeof fo, .cartridge = fleet(), .batch = 500};
			assert_int_equal(keel_ingest_new(fresh, &fo, &fi), 0);
			size_t given = 0;
			for (size_t i = 0; i < log.n; i++) {
				if (log.ev[i].recorded_at > moments[m])
					continue;
				given++;
				if (keel_ingest_add(fi, log.ev[i].envelope,
						    strlen(log.ev[i].envelope), given))
					fail_msg("ingest: %s", keel_ingest_errmsg(fi));
			}
			if (keel_ingest_flush(fi))
				fail_msg("flush: %s", keel_ingest_errmsg(fi));
			assert_int_equal(keel_ingest_report(fi)->accepted, given);
			keel_ingest_free(fi);
			char *want = keel_test_dump(fresh, NULL);
			reads_known_at_match(s, fresh, moments[m]);
			store_done(fresh, &fc);
			if (strcmp(got, want) != 0)
				fail_msg("seed %llu: the dump known at moment %zu of %zu "
					 "(%zu events recorded by then) differs from a store "
					 "given only those events",
					 (unsigned long long)seeds[si], m, nm, given);
			if (m == 0)
				assert_string_equal(got, ""); /* nothing recorded yet */
			if (m + 1 == nm)
				assert_string_equal(got, final);
			else if (closed_row_changed(got, final))
				changed = true;
			free(want);
			free(got);
		}
		rewritten += changed;

		for (size_t i = 0; i < log.n; i++)
			free(log.ev[i].envelope);
		free(log.ev);
		free(moments);
		free(final);
		free(chunk);
		store_done(s, &c);
		keel_test_lines_free(st);
	}
	/* The late events did rewrite what was derived earlier. */
	assert_int_equal(rewritten, KEEL_ARRAY_LEN(seeds));
}

/* ------------------------------------------------------------- finding */

/* Every page of a finding read (entities when predicate is NULL, else
 * search), limit entries each, joined into one list of its entries' JSON;
 * each page is also compared with the memory store's page. */
static void pages_match(struct keel_store *s, struct keel_store *mem, const char *tenant,
			const char *predicate, const char *value,
			struct keel_find_options f, const struct keel_read_options *o,
			struct keel_ptrvec *subjects)
{
	char *cursor = NULL;
	size_t pages = 0;
	for (;;) {
		f.cursor = cursor;
		char *a = NULL, *b = NULL;
		int ra = predicate ? keel_search(s, tenant, predicate, value, &f, o, &a)
				   : keel_entities(s, tenant, &f, o, &a);
		int rb = predicate ? keel_search(mem, tenant, predicate, value, &f, o, &b)
				   : keel_entities(mem, tenant, &f, o, &b);
		if (ra)
			fail_msg("%s", keel_store_errmsg(s));
		assert_int_equal(rb, 0);
		assert_string_equal(a, b);
		pages++;
		struct keel_json_doc doc;
		struct keel_json_error err;
		keel_json_doc_init(&doc);
		assert_int_equal(keel_json_parse(&doc, a, strlen(a), &err), 0);
		const struct keel_json *list =
		    keel_json_get(doc.root, predicate ? "subjects" : "entities",
				  predicate ? 8 : 8);
		assert_non_null(list);
		size_t n = 0;
		for (const struct keel_json *e = list->child; e; e = e->next, n++) {
			const struct keel_json *sub = keel_json_get(e, "subject", 7);
			keel_ptrvec_push(subjects, keel_xstrndup(sub->str, sub->len));
		}
		const struct keel_json *next = keel_json_get(doc.root, "next", 4);
		assert_non_null(next);
		free(cursor);
		cursor = NULL;
		if (next->type == KEEL_JSON_STRING) {
			/* a page that has a next one is full */
			assert_int_equal(n, f.limit);
			cursor = keel_xstrndup(next->str, next->len);
		}
		keel_json_doc_free(&doc);
		free(a);
		free(b);
		if (!cursor)
			break;
		assert_true(pages < 10000);
	}
}

static void free_subjects(struct keel_ptrvec *v)
{
	for (size_t i = 0; i < v->len; i++)
		free(v->items[i]);
	keel_ptrvec_free(v);
}

/* Whether the entity's show document at o has the predicate's value
 * (compact JSON) - the read search must agree with. */
static bool show_has(struct keel_store *s, const char *tenant, const char *subject,
		     const char *predicate, const char *value,
		     const struct keel_read_options *o)
{
	char *json = NULL;
	if (keel_show(s, tenant, subject, o, &json))
		return false;
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, json, strlen(json), &err), 0);
	const struct keel_json *facts = keel_json_get(doc.root, "facts", 5);
	const struct keel_json *f = keel_json_get(facts, predicate, strlen(predicate));
	const struct keel_json *v = f ? keel_json_get(f, "value", 5) : NULL;
	bool has = v && v->raw_len == strlen(value) &&
		   memcmp(json + v->raw_off, value, v->raw_len) == 0;
	keel_json_doc_free(&doc);
	free(json);
	return has;
}

/* keel entities and keel search give every store the memory store's
 * pages, page for page; paging three at a time lists each entity once,
 * in bytewise order, exactly those a single page of all lists; and each
 * search answer is what show says of every entity, now, at a past time
 * and as known before the second half of the stream was recorded. */
static void finding_matches_the_memory_store(const struct store_kind *k)
{
	struct keel_test_lines *st = stream_generate(4000, 2, 23, 0.05, 0.05);
	struct keel_test_lines first = *st, second = *st;
	first.n = st->n / 2;
	second.lines = st->lines + first.n;
	second.n = st->n - first.n;
	struct store_case mc, c;
	struct keel_store *mem = store_open(memory, &mc), *s = store_open(k, &c);
	free(ingest_into(s, &first, NULL, 500, NULL));
	free(ingest_into(mem, &first, NULL, 500, NULL));
	int64_t known_at = keel_time_now();
	free(ingest_into(s, &second, NULL, 500, NULL));
	free(ingest_into(mem, &second, NULL, 500, NULL));

	char *json = NULL;
	assert_int_equal(keel_tenants(s, NULL, NULL, NULL, &json), 0);
	assert_string_equal(json, "{\"tenants\":[\"tenant-00\",\"tenant-01\"]}");
	free(json);

	int64_t past;
	assert_int_equal(keel_time_parse("2026-01-05T07:00:00Z", 20, &past, NULL), 0);
	struct keel_read_options now = {.size = sizeof now, .at_set = true,
					.at = keel_time_now()};
	struct keel_read_options then = {.size = sizeof then, .at_set = true, .at = past};
	struct keel_read_options known = now;
	known.known_at_set = true;
	known.known_at = known_at;
	const struct keel_read_options *reads[] = {&now, &then, &known};
	static const char *const kinds[] = {"vehicle", "driver", "trip", "depot"};

	for (size_t r = 0; r < KEEL_ARRAY_LEN(reads); r++) {
		const struct keel_read_options *o = reads[r];
		struct keel_find_options all = {.size = sizeof all, .limit = KEEL_MAX_PAGE};
		struct keel_find_options by3 = {.size = sizeof by3, .limit = 3};
		struct keel_ptrvec whole = {0}, paged = {0};
		pages_match(s, mem, "tenant-00", NULL, NULL, all, o, &whole);
		pages_match(s, mem, "tenant-00", NULL, NULL, by3, o, &paged);
		assert_true(whole.len > 20);
		assert_int_equal(paged.len, whole.len);
		for (size_t i = 0; i < whole.len; i++) {
			assert_string_equal(paged.items[i], whole.items[i]);
			if (i)
				assert_true(strcmp(whole.items[i - 1], whole.items[i]) < 0);
		}
		/* the kinds partition the entities that have one */
		size_t kinded = 0;
		for (size_t i = 0; i < KEEL_ARRAY_LEN(kinds); i++) {
			struct keel_ptrvec of = {0};
			struct keel_find_options f = by3;
			f.kind = kinds[i];
			pages_match(s, mem, "tenant-00", NULL, NULL, f, o, &of);
			for (size_t j = 0; j < of.len; j++)
				assert_true(strncmp(of.items[j], kinds[i], strlen(kinds[i])) == 0);
			kinded += of.len;
			free_subjects(&of);
		}
		assert_int_equal(kinded, whole.len);
		struct keel_ptrvec pre = {0};
		struct keel_find_options f = by3;
		f.prefix = "vehicle:V-001";
		pages_match(s, mem, "tenant-00", NULL, NULL, f, o, &pre);
		size_t expect = 0;
		for (size_t i = 0; i < whole.len; i++)
			expect += strncmp(whole.items[i], f.prefix, strlen(f.prefix)) == 0;
		assert_int_equal(pre.len, expect);
		assert_true(expect > 0);
		free_subjects(&pre);

		/* search: exactly the entities whose show has the value */
		static const char *const values[] = {"available", "in_progress",
						     "maintenance"};
		for (size_t v = 0; v < KEEL_ARRAY_LEN(values); v++) {
			struct keel_ptrvec found = {0};
			pages_match(s, mem, "tenant-00", "status", values[v], by3, o, &found);
			char quoted[64];
			snprintf(quoted, sizeof quoted, "\"%s\"", values[v]);
			size_t j = 0;
			for (size_t i = 0; i < whole.len; i++) {
				if (!show_has(s, "tenant-00", whole.items[i], "status", quoted, o))
					continue;
				assert_true(j < found.len);
				assert_string_equal(found.items[j], whole.items[i]);
				j++;
			}
			assert_int_equal(j, found.len);
			free_subjects(&found);
		}
		free_subjects(&whole);
		free_subjects(&paged);
	}
	/* the entities known at known_at are fewer than all */
	struct keel_find_options all = {.size = sizeof all, .limit = KEEL_MAX_PAGE};
	struct keel_ptrvec a = {0}, b = {0};
	pages_match(s, mem, "tenant-01", NULL, NULL, all, &now, &a);
	pages_match(s, mem, "tenant-01", NULL, NULL, all, &known, &b);
	assert_true(b.len < a.len);
	free_subjects(&a);
	free_subjects(&b);
	store_done(mem, &mc);
	store_done(s, &c);
	keel_test_lines_free(st);
}

/* A tenant's cartridge is recorded with its first events (and only once
 * they are committed), used when none is given, and any other refused;
 * a replay changes it only when told to (docs/cartridges.md, "The
 * recorded cartridge"). */
static int add_one(struct keel_store *s, const struct keel_cartridge *c, const char *line,
		   struct keel_buf *rejects, char **errmsg, struct keel_report *out)
{
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = c,
					      .on_reject = collect_reject,
					      .reject_userdata = rejects};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	int rc = keel_ingest_add(ing, line, strlen(line), 1);
	if (rc == 0)
		assert_int_equal(keel_ingest_flush(ing), 0);
	*errmsg = strdup(keel_ingest_errmsg(ing));
	*out = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return rc;
}

static void the_cartridge_is_remembered(const struct store_kind *k)
{
	static const char shop_json[] =
	    "{\"cartridge\":\"shop\",\"version\":\"1\",\"events\":{\"shop.order.placed\":"
	    "[{\"op\":\"fact\",\"subject\":\"order:{/data/order}\",\"predicate\":\"status\","
	    "\"value\":{\"const\":\"placed\"}}]}}";
	static const char *const lines[] = {
	    "{\"id\":\"o1\",\"tenant\":\"shop\",\"type\":\"shop.order.placed\","
	    "\"time\":\"2026-01-01T00:00:00Z\",\"data\":{\"order\":\"1\"}}",
	    "{\"id\":\"o2\",\"tenant\":\"shop\",\"type\":\"shop.order.placed\","
	    "\"time\":\"2026-01-01T00:01:00Z\",\"data\":{\"order\":\"2\"}}",
	    "{\"id\":\"o3\",\"tenant\":\"shop\",\"type\":\"shop.order.placed\","
	    "\"time\":\"2026-01-01T00:02:00Z\",\"data\":{\"order\":\"3\"}}",
	};
	struct keel_cartridge *shop = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_compile(shop_json, strlen(shop_json), &shop, &err), 0);
	assert_string_equal(keel_cartridge_version(shop), "1");
	assert_int_equal(strncmp(keel_cartridge_hash(shop), "sha256:", 7), 0);
	assert_int_equal(strlen(keel_cartridge_hash(shop)), 7 + 64);
	struct store_case c;
	struct keel_store *s = store_open(k, &c);
	struct keel_buf rejects;
	keel_buf_init(&rejects);
	struct keel_report r;

	/* None given, none recorded: refused, rejected, nothing logged. */
	assert_int_equal(add_one(s, NULL, lines[0], &rejects, &err, &r), KEEL_ECARTRIDGE);
	assert_non_null(strstr(err, "line 1: tenant \"shop\" has no recorded cartridge"));
	assert_non_null(strstr(rejects.data, "line 1: event \"o1\": tenant \"shop\" has no "
					     "recorded cartridge"));
	assert_int_equal(r.rejected, 1);
	free(err);
	uint64_t counts[4];
	assert_int_equal(keel_store_counts(s, keel_str_cstr("shop"), KEEL_TIME_INF, counts), 0);
	assert_int_equal(counts[3], 0);
	/* The ingester goes on: a bad event after a refused one is only
	 * rejected, and the tenant is refused again. */
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .on_reject = collect_reject,
					      .reject_userdata = &rejects};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	assert_int_equal(keel_ingest_add(ing, lines[0], strlen(lines[0]), 1), KEEL_ECARTRIDGE);
	assert_int_equal(keel_ingest_add(ing, "not json", 8, 2), 0);
	assert_int_equal(keel_ingest_add(ing, lines[1], strlen(lines[1]), 3), KEEL_ECARTRIDGE);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->rejected, 3);
	keel_ingest_free(ing);

	/* The first ingest records shop; without a cartridge it runs again. */
	assert_int_equal(add_one(s, shop, lines[0], &rejects, &err, &r), 0);
	free(err);
	assert_int_equal(add_one(s, NULL, lines[1], &rejects, &err, &r), 0);
	free(err);
	assert_int_equal(r.accepted, 1);
	assert_int_equal(r.unhandled, 0);
	char *dump = keel_test_dump(s, "shop");
	assert_non_null(strstr(dump, "\"subject\":\"order:2\",\"predicate\":\"status\""));
	free(dump);
	/* What the store keeps compiles back to the same cartridge. */
	struct keel_cartridge *back = NULL;
	assert_int_equal(keel_cartridge_recorded(s, "shop", &back), 0);
	assert_string_equal(keel_cartridge_name(back), "shop");
	assert_string_equal(keel_cartridge_hash(back), keel_cartridge_hash(shop));
	keel_cartridge_free(back);
	assert_int_equal(keel_cartridge_recorded(s, "nobody", &back), KEEL_ENOTFOUND);
	assert_null(back);

	/* Another cartridge is refused, naming both. */
	keel_buf_reset(&rejects);
	assert_int_equal(add_one(s, fleet(), lines[2], &rejects, &err, &r), KEEL_ECARTRIDGE);
	assert_non_null(strstr(err, "tenant \"shop\" is recorded with cartridge shop 1 (sha256:"));
	assert_non_null(strstr(err, ", not fleet 1 (sha256:"));
	free(err);
	assert_int_equal(keel_store_counts(s, keel_str_cstr("shop"), KEEL_TIME_INF, counts), 0);
	assert_int_equal(counts[3], 2);

	/* Replay: the recorded one without a cartridge; another only when
	 * told, and then it is the tenant's. */
	struct keel_replay_report *rep = NULL;
	struct keel_replay_options ro = {.size = sizeof ro};
	assert_int_equal(keel_replay(s, "shop", &ro, &rep), 0);
	assert_int_equal(rep->unhandled, 0);
	keel_replay_report_free(rep);
	ro.cartridge = fleet();
	assert_int_equal(keel_replay(s, "shop", &ro, &rep), KEEL_ECARTRIDGE);
	assert_non_null(strstr(keel_store_errmsg(s), "add --change-cartridge"));
	ro.change_cartridge = true;
	assert_int_equal(keel_replay(s, "shop", &ro, &rep), 0);
	assert_int_equal(rep->unhandled, 2); /* fleet knows no shop events */
	keel_replay_report_free(rep);
	assert_int_equal(add_one(s, NULL, lines[2], &rejects, &err, &r), 0);
	free(err);
	assert_int_equal(r.unhandled, 1); /* the recorded one is fleet now */
	assert_int_equal(add_one(s, shop, lines[2], &rejects, &err, &r), KEEL_ECARTRIDGE);
	free(err);

	keel_buf_free(&rejects);
	keel_cartridge_free(shop);
	store_done(s, &c);
}

/* ------------------------------------------------ cases times stores */

/* keel forget (docs/semantics.md, "Forgetting") leaves every store with
 * the memory store's dump, which a replay of the tenant keeps, in which no
 * line of the tenant names the subject, and whose reads of it say it was
 * forgotten. */
static void forgetting_gives_the_memory_stores_dump(const struct store_kind *k)
{
	const struct keel_forget_options o = {.size = sizeof o, .cartridge = fleet(),
					      .by = "user:conformance"};
	struct keel_forget_report rep;
	char *dumps[2];
	const struct store_kind *kinds[2] = {memory, k};
	for (int i = 0; i < 2; i++) {
		struct store_case c;
		struct keel_store *s = store_open(kinds[i], &c);
		free(ingest_into(s, standard_stream(), NULL, 500, NULL));
		if (keel_forget(s, "tenant-01", "vehicle:V-0002", &o, &rep))
			fail_msg("forget: %s", keel_store_errmsg(s));
		assert_true(rep.events > 0);
		dumps[i] = keel_test_dump(s, NULL);
		struct keel_replay_options ro = {.size = sizeof ro, .cartridge = fleet()};
		struct keel_replay_report *rr = NULL;
		assert_int_equal(keel_replay(s, "tenant-01", &ro, &rr), 0);
		assert_int_equal(rr->added + rr->removed, 0);
		keel_replay_report_free(rr);
		char *replayed = keel_test_dump(s, NULL);
		assert_string_equal(replayed, dumps[i]);
		free(replayed);
		char *json = NULL;
		assert_int_equal(keel_show(s, "tenant-01", "vehicle:V-0002", NULL, &json),
				 KEEL_EFORGOTTEN);
		assert_int_equal(keel_show(s, "tenant-02", "vehicle:V-0002", NULL, &json), 0);
		free(json);
		store_done(s, &c);
	}
	assert_string_equal(dumps[1], dumps[0]);
	for (char *p = dumps[1]; *p;) {
		char *nl = strchr(p, '\n');
		*nl = 0;
		if (strstr(p, "\"tenant\":\"tenant-01\"") && strstr(p, "V-0002"))
			fail_msg("still names V-0002: %s", p);
		p = nl + 1;
	}
	free(dumps[0]);
	free(dumps[1]);
}

/* What forgetting is measured against: the tenant's log as it stands
 * after the forget (the redacted envelopes), ingested afresh into a
 * memory store - by construction the graph without the subject. */
struct redacted_log {
	struct keel_ptrvec envelopes; /* malloc'd, NUL-terminated, by seq */
	int64_t *recorded;
	size_t n, cap;
};

static int redacted_log_fn(void *ud, const struct keel_record *r)
{
	struct redacted_log *l = ud;
	char *e = keel_xmalloc(r->envelope.len + 1);
	memcpy(e, r->envelope.ptr, r->envelope.len);
	e[r->envelope.len] = 0;
	keel_ptrvec_push(&l->envelopes, e);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->recorded = keel_xrealloc(l->recorded, l->cap * sizeof *l->recorded);
	}
	l->recorded[l->n++] = r->recorded_at;
	return 0;
}

/* The tenant's dump (without its events, whose hashes are the received
 * envelopes' in one and the redacted ones' in the other) from a memory
 * store given the logged events recorded by `upto`. */
static char *redacted_log_state(const struct redacted_log *l, const char *tenant, int64_t upto)
{
	struct keel_store *s = NULL;
	char *err = NULL;
	if (keel_store_open("memory:", &s, &err))
		fail_msg("%s", err);
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet(),
					      .batch = 500};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < l->n && l->recorded[i] <= upto; i++) {
		const char *e = l->envelopes.items[i];
		if (keel_ingest_add(ing, e, strlen(e), i + 1))
			fail_msg("ingest: %s", keel_ingest_errmsg(ing));
	}
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->rejected, 0);
	keel_ingest_free(ing);
	char *dump = state_only(keel_test_dump(s, tenant));
	keel_store_close(s);
	return dump;
}

static char *tenant_known_at(struct keel_store *s, const char *tenant, int64_t known_at)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const struct keel_read_options o = {.size = sizeof o, .known_at_set = true,
					    .known_at = known_at};
	assert_int_equal(keel_dump(s, tenant, &o, f), 0);
	fclose(f);
	return state_only(buf);
}

/* Forgetting without a rebuild (docs/semantics.md, "Forgetting") leaves
 * the graph that ingesting the redacted log gives, now and known at each
 * moment of the log (every transaction's mentions mended alike), and a
 * replay of the tenant (what forgetting did before: a rebuild) changes
 * nothing. Two subjects a round, small transactions and large ones. */
static void forgetting_equals_ingesting_the_redacted_log(const struct store_kind *k)
{
	static const struct {
		size_t batch;
		uint32_t commit_ms;
		const char *tenant, *subjects[2];
	} rounds[] = {
	    {50, KEEL_COMMIT_EVERY_BATCH, "tenant-01", {"vehicle:V-0002", "driver:DR-0001"}},
	    {500, 0, "tenant-02", {"depot:D-01", "vehicle:V-0005"}},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(rounds); i++) {
		struct store_case c;
		struct keel_store *s = store_open(k, &c);
		const struct keel_test_lines *st = standard_stream();
		struct keel_ingest *ing;
		const struct keel_ingest_options io = {.size = sizeof io, .cartridge = fleet(),
						       .batch = rounds[i].batch,
						       .commit_interval_ms = rounds[i].commit_ms};
		assert_int_equal(keel_ingest_new(s, &io, &ing), 0);
		for (size_t j = 0; j < st->n; j++)
			assert_int_equal(keel_ingest_add(ing, st->lines[j], strlen(st->lines[j]),
							 j + 1),
					 0);
		assert_int_equal(keel_ingest_flush(ing), 0);
		keel_ingest_free(ing);
		const char *tenant = rounds[i].tenant;
		const struct keel_forget_options o = {.size = sizeof o, .cartridge = fleet(),
						      .by = "user:conformance"};
		for (size_t j = 0; j < 2; j++) {
			struct keel_forget_report rep;
			if (keel_forget(s, tenant, rounds[i].subjects[j], &o, &rep))
				fail_msg("forget %s: %s", rounds[i].subjects[j],
					 keel_store_errmsg(s));
			assert_true(rep.events > 0 && rep.rows > 0);
		}
		struct redacted_log l = {0};
		struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = keel_str_cstr(tenant)};
		assert_int_equal(keel_store_scan(s, &q, redacted_log_fn, &l), 0);
		assert_true(l.n > 100);
		/* now, and known at moments a third and two thirds along */
		int64_t moments[3] = {l.recorded[l.n / 3], l.recorded[2 * l.n / 3], KEEL_TIME_INF};
		for (size_t m = 0; m < 3; m++) {
			char *want = redacted_log_state(&l, tenant, moments[m]);
			char *got = m < 2 ? tenant_known_at(s, tenant, moments[m])
					  : state_only(keel_test_dump(s, tenant));
			for (size_t j = 0; j < 2; j++)
				if (strstr(got, rounds[i].subjects[j] + strcspn(
							       rounds[i].subjects[j], ":") + 1))
					fail_msg("%s still named", rounds[i].subjects[j]);
			assert_string_equal(got, want);
			free(want);
			free(got);
		}
		char *before = keel_test_dump(s, NULL);
		struct keel_replay_options ro = {.size = sizeof ro, .cartridge = fleet()};
		struct keel_replay_report *rr = NULL;
		assert_int_equal(keel_replay(s, tenant, &ro, &rr), 0);
		assert_int_equal(rr->added + rr->removed, 0);
		keel_replay_report_free(rr);
		char *after = keel_test_dump(s, NULL);
		assert_string_equal(after, before);
		free(before);
		free(after);
		for (size_t j = 0; j < l.envelopes.len; j++)
			free(l.envelopes.items[j]);
		keel_ptrvec_free(&l.envelopes);
		free(l.recorded);
		store_done(s, &c);
	}
}

/* Forgetting finds every event that named the subject, including one
 * whose only operation naming it is an entity operation (no row) built
 * from other text than the subject's ("vehicle:{/data/v}" over "V-1"),
 * strictly inside the subject's span: by a declarative cartridge, by one
 * whose row-making operation a forget of another subject took away (the
 * event redacted), and by a C cartridge, which Keel cannot read. Each
 * such event is redacted, so no envelope of the tenant holds the
 * subject's text afterwards and a replay brings nothing back. */
static const char seen_json[] =
    "{\"cartridge\":\"cams\",\"version\":\"1\",\"events\":{"
    "\"v.registered\":[{\"op\":\"entity\",\"subject\":\"vehicle:{/data/v}\","
    "\"kind\":\"vehicle\"},{\"op\":\"fact\",\"subject\":\"vehicle:{/data/v}\","
    "\"predicate\":\"plate\",\"value\":{\"from\":\"/data/plate\"}}],"
    "\"v.seen\":[{\"op\":\"entity\",\"subject\":\"vehicle:{/data/v}\"},"
    "{\"op\":\"fact\",\"subject\":\"camera:{/data/camera}\",\"predicate\":\"saw_at\","
    "\"value\":{\"from\":\"/data/where\"}}],"
    "\"v.driven\":[{\"op\":\"entity\",\"subject\":\"vehicle:{/data/v}\"},"
    "{\"op\":\"fact\",\"subject\":\"vehicle:{/data/v}\",\"predicate\":\"driver\","
    "\"value\":{\"from\":\"/data/driver\"}}],"
    "\"v.towed\":[{\"op\":\"link\",\"subject\":\"tow:{/data/tow}\",\"relation\":"
    "\"towed\",\"object\":\"vehicle:{/data/v}\"}],"
    "\"lot.checked\":[{\"op\":\"entity\",\"subject\":\"lot:{/data/lot}\",\"kind\":"
    "\"lot\"}],"
    "\"v.parked\":[{\"op\":\"link\",\"subject\":\"vehicle:{/data/v}\",\"relation\":"
    "\"parked_at\",\"object\":\"lot:{/data/lot}\"}]}}";

/* The same cartridge in C (no v.driven): opaque to Keel. */
static int seen_c_entity(struct keel_ctx *ctx, const struct keel_event *ev)
{
	struct keel_value v;
	if (keel_event_get(ev, "/data/v", &v) || v.type != KEEL_VALUE_STRING)
		return 0; /* redacted away: nothing to say of the vehicle */
	char subject[64];
	int n = snprintf(subject, sizeof subject, "vehicle:%.*s", (int)v.len, v.text);
	return keel_ctx_entity(ctx, subject, (size_t)n, NULL, 0);
}

static int seen_c_registered(struct keel_ctx *ctx, const struct keel_event *ev, void *ud)
{
	(void)ud;
	struct keel_value v, plate;
	if (keel_event_get(ev, "/data/v", &v) || keel_event_get(ev, "/data/plate", &plate))
		return 0;
	char subject[64];
	int n = snprintf(subject, sizeof subject, "vehicle:%.*s", (int)v.len, v.text);
	int rc = keel_ctx_entity(ctx, subject, (size_t)n, "vehicle", 7);
	return rc ? rc : keel_ctx_fact(ctx, subject, (size_t)n, "plate", 5, plate.json,
				       plate.json_len);
}

static int seen_c_seen(struct keel_ctx *ctx, const struct keel_event *ev, void *ud)
{
	(void)ud;
	int rc = seen_c_entity(ctx, ev);
	struct keel_value cam, where;
	if (rc || keel_event_get(ev, "/data/camera", &cam) ||
	    keel_event_get(ev, "/data/where", &where))
		return rc;
	char subject[64];
	int n = snprintf(subject, sizeof subject, "camera:%.*s", (int)cam.len, cam.text);
	return keel_ctx_fact(ctx, subject, (size_t)n, "saw_at", 6, where.json, where.json_len);
}

struct envelopes_hold {
	const char *needle;
	size_t hits;
};

static int envelopes_hold_fn(void *ud, const struct keel_record *r)
{
	struct envelopes_hold *h = ud;
	if (memmem(r->envelope.ptr, r->envelope.len, h->needle, strlen(h->needle)))
		h->hits++;
	return 0;
}

static size_t envelopes_holding(struct keel_store *s, const char *tenant, const char *needle)
{
	struct envelopes_hold h = {.needle = needle};
	struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = keel_str_cstr(tenant)};
	assert_int_equal(keel_store_scan(s, &q, envelopes_hold_fn, &h), 0);
	return h.hits;
}

static void forgetting_finds_entity_operations_without_rows(const struct store_kind *k)
{
	static const char *const lines[] = {
	    "{\"id\":\"r1\",\"tenant\":\"%s\",\"type\":\"v.registered\",\"time\":\"2026-01-01T10:00:00Z\","
	    "\"data\":{\"v\":\"V-1\",\"plate\":\"P-1\"}}",
	    "{\"id\":\"r2\",\"tenant\":\"%s\",\"type\":\"v.registered\",\"time\":\"2026-01-01T10:01:00Z\","
	    "\"data\":{\"v\":\"V-2\",\"plate\":\"P-2\"}}",
	    "{\"id\":\"s1\",\"tenant\":\"%s\",\"type\":\"v.seen\",\"time\":\"2026-01-01T10:05:00Z\","
	    "\"data\":{\"v\":\"V-1\",\"camera\":\"C-1\",\"where\":\"north gate\"}}",
	    "{\"id\":\"d1\",\"tenant\":\"%s\",\"type\":\"v.driven\",\"time\":\"2026-01-01T10:06:00Z\","
	    "\"data\":{\"v\":\"V-1\",\"driver\":\"D-1\"}}",
	    "{\"id\":\"s2\",\"tenant\":\"%s\",\"type\":\"v.seen\",\"time\":\"2026-01-01T10:07:00Z\","
	    "\"data\":{\"v\":\"V-2\",\"camera\":\"C-1\",\"where\":\"south gate\"}}",
	    "{\"id\":\"d2\",\"tenant\":\"%s\",\"type\":\"v.driven\",\"time\":\"2026-01-01T10:10:00Z\","
	    "\"data\":{\"v\":\"V-1\",\"driver\":\"D-2\"}}",
	    "{\"id\":\"d3\",\"tenant\":\"%s\",\"type\":\"v.driven\",\"time\":\"2026-01-01T10:11:00Z\","
	    "\"data\":{\"v\":\"V-2\",\"driver\":\"D-1\"}}",
	    /* a lot mentioned by an entity operation alone, then (its last
	     * mention) by a link from V-1: forgetting V-1 leaves it the first */
	    "{\"id\":\"l1\",\"tenant\":\"%s\",\"type\":\"lot.checked\",\"time\":"
	    "\"2026-01-01T10:02:00Z\",\"data\":{\"lot\":\"L-1\"}}",
	    "{\"id\":\"p1\",\"tenant\":\"%s\",\"type\":\"v.parked\",\"time\":"
	    "\"2026-01-01T10:09:00Z\",\"data\":{\"v\":\"V-1\",\"lot\":\"L-1\"}}",
	    /* the tow is mentioned by this link to V-1 alone: it goes too */
	    "{\"id\":\"t1\",\"tenant\":\"%s\",\"type\":\"v.towed\",\"time\":"
	    "\"2026-01-01T10:08:00Z\",\"data\":{\"v\":\"V-1\",\"tow\":\"T-9\"}}",
	    "{\"id\":\"r3\",\"tenant\":\"%s\",\"type\":\"v.registered\",\"time\":"
	    "\"2026-01-01T10:12:00Z\",\"data\":{\"v\":\"V-1\",\"plate\":\"P-3\"}}",
	};
	struct keel_cartridge *decl = NULL, *opaque = keel_cartridge_new("cams-c", "1");
	char *err = NULL;
	assert_int_equal(keel_cartridge_compile(seen_json, strlen(seen_json), &decl, &err), 0);
	assert_int_equal(keel_cartridge_on(opaque, "v.registered", seen_c_registered, NULL), 0);
	assert_int_equal(keel_cartridge_on(opaque, "v.seen", seen_c_seen, NULL), 0);
	const struct {
		const char *tenant;
		const struct keel_cartridge *c;
	} rounds[] = {{"cams", decl}, {"cams-c", opaque}};
	struct store_case sc;
	struct keel_store *s = store_open(k, &sc);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(rounds); i++) {
		const char *tenant = rounds[i].tenant;
		struct keel_ingest *ing;
		const struct keel_ingest_options io = {.size = sizeof io,
						       .cartridge = rounds[i].c};
		assert_int_equal(keel_ingest_new(s, &io, &ing), 0);
		for (size_t j = 0; j < KEEL_ARRAY_LEN(lines); j++) {
			if (rounds[i].c == opaque &&
			    (strstr(lines[j], "v.driven") || strstr(lines[j], "v.towed") ||
			     strstr(lines[j], "lot.checked") || strstr(lines[j], "v.parked")))
				continue; /* the C cartridge has none of these */
			char line[512];
			int n = snprintf(line, sizeof line, lines[j], tenant);
			assert_int_equal(keel_ingest_add(ing, line, (size_t)n, j + 1), 0);
		}
		assert_int_equal(keel_ingest_flush(ing), 0);
		keel_ingest_free(ing);
		const struct keel_forget_options o = {.size = sizeof o,
						      .cartridge = rounds[i].c,
						      .by = "user:conformance"};
		struct keel_forget_report rep;
		/* First a driver, named only as a value: d1 keeps its entity
		 * operation of V-1 and loses the row that named V-1 too. */
		if (rounds[i].c == decl) {
			if (keel_forget(s, tenant, "D-1", &o, &rep))
				fail_msg("forget D-1: %s", keel_store_errmsg(s));
			assert_int_equal(rep.rows, 2); /* d1's and d3's driver */
		}
		assert_int_equal(envelopes_holding(s, tenant, "V-1"), rounds[i].c == decl ? 7 : 3);
		if (keel_forget(s, tenant, "vehicle:V-1", &o, &rep))
			fail_msg("forget vehicle:V-1: %s", keel_store_errmsg(s));
		if (envelopes_holding(s, tenant, "V-1"))
			fail_msg("%s: an envelope still holds V-1 after forgetting vehicle:V-1",
				 tenant);
		assert_int_equal(rep.events, rounds[i].c == decl ? 7 : 3);
		/* the plates of r1 and r3, the entity; d2's driver, the tow's
		 * link and the tow, the link to the lot */
		assert_int_equal(rep.rows, rounds[i].c == decl ? 7 : 3);
		char *dump = keel_test_dump(s, tenant);
		assert_null(strstr(dump, "V-1"));
		assert_null(strstr(dump, "tow:T-9"));
		if (rounds[i].c == decl) /* seen at 10:02 only, now */
			assert_non_null(strstr(dump, "\"lot:L-1\",\"kind\":\"lot\""));
		assert_non_null(strstr(dump, "vehicle:V-2"));
		assert_non_null(strstr(dump, "north gate")); /* the camera's fact stays */
		/* A replay (a rebuild from the redacted log) changes nothing. */
		struct keel_replay_options ro = {.size = sizeof ro, .cartridge = rounds[i].c};
		struct keel_replay_report *rr = NULL;
		if (keel_replay(s, tenant, &ro, &rr))
			fail_msg("replay: %s", keel_store_errmsg(s));
		keel_replay_report_free(rr);
		char *after = keel_test_dump(s, tenant);
		assert_string_equal(after, dump);
		free(dump);
		free(after);
	}
	store_done(s, &sc);
	keel_cartridge_free(decl);
	keel_cartridge_free(opaque);
}

struct contract_case {
	const char *name;
	void (*run)(const struct store_kind *k);
};

#define CONTRACT_CASE(fn) {#fn, fn}
static const struct contract_case contract[] = {
	CONTRACT_CASE(batch_sizes_give_identical_dumps),
	CONTRACT_CASE(gives_the_memory_stores_dump),
	CONTRACT_CASE(permutations_give_same_timelines),
	CONTRACT_CASE(ingesting_twice_changes_nothing),
	CONTRACT_CASE(dump_load_dump_is_identical),
	CONTRACT_CASE(conflicting_duplicate_is_skipped_and_counted),
	CONTRACT_CASE(conflict_names_the_first_line_across_gaps),
	CONTRACT_CASE(one_id_from_two_sources_is_two_events),
	CONTRACT_CASE(bad_events_are_rejected_alone),
	CONTRACT_CASE(queries_match_the_memory_store),
	CONTRACT_CASE(known_at_is_the_store_of_what_was_recorded),
	CONTRACT_CASE(changes_end_in_the_history),
	CONTRACT_CASE(finding_matches_the_memory_store),
	CONTRACT_CASE(forgetting_gives_the_memory_stores_dump),
	CONTRACT_CASE(forgetting_equals_ingesting_the_redacted_log),
	CONTRACT_CASE(forgetting_finds_entity_operations_without_rows),
	CONTRACT_CASE(the_cartridge_is_remembered),
};

/* One contract case on one store: a cmocka case's initial state. */
struct binding {
	const struct contract_case *c;
	const struct store_kind *k;
	char name[128];
};

static void run_binding(void **state)
{
	const struct binding *b = *state;
	b->c->run(b->k);
}

int main(int argc, char **argv)
{
	enum { NCASES = sizeof contract / sizeof contract[0],
	       NSTORES = sizeof stores / sizeof stores[0] };
	static struct binding bindings[NCASES * NSTORES];
	static struct CMUnitTest tests[NCASES * NSTORES];
	size_t n = 0;
	for (size_t i = 0; i < NCASES; i++) {
		for (size_t j = 0; j < NSTORES; j++, n++) {
			struct binding *b = &bindings[n];
			b->c = &contract[i];
			b->k = &stores[j];
			snprintf(b->name, sizeof b->name, "%s.%s", b->c->name, b->k->name);
			tests[n] = (struct CMUnitTest){b->name, run_binding, NULL, NULL, b};
		}
	}
	return keel_test_main(tests, n, argc, argv);
}
