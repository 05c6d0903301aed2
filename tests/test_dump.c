/*
 * test_dump.c - the canonical dump (docs/dump.md) byte for byte on hand-built
 * store contents, load round trips, a store that goes on ingesting after a
 * load, and load's errors on bad records.
 *
 * Hand-built contents go into the memory store through the ordinary
 * append path (begin, append, commit): assertions in arrival order, out
 * of canonical order so the dump's sorting (and its derivation of
 * valid_to and closed_by) is what is tested.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "event/batch.h"
#include "write/append.h"
#include "store/store.h"
#include "store/sqlite/internal.h"
#include "util.h"

/* ------------------------------------------------------------- builder */

struct builder {
	struct keel_store *s;
	struct keel_append_builder ab;
	struct keel_arena arena;
	struct keel_ptrvec events;
};

static int64_t T(const char *s)
{
	int64_t t;
	const char *why;
	if (!s)
		return KEEL_TIME_INF;
	assert_int_equal(keel_time_parse(s, strlen(s), &t, &why), 0);
	return t;
}

static struct keel_str S(const char *s) {
	return s ? keel_str_cstr(s) : KEEL_STR_NULL;
}

static void b_init(struct builder *b, struct keel_store *s)
{
	memset(b, 0, sizeof *b);
	b->s = s;
	keel_append_builder_init(&b->ab, true);
	keel_arena_init(&b->arena);
}

static void b_entity(struct builder *b, const char *tenant, const char *subject,
		     const char *kind, const char *first, const char *last)
{
	struct keel_mention m = {.tenant = S(tenant),
				 .subject = S(subject),
				 .kind = S(kind),
				 .kind_time = kind ? T(first) : 0,
				 .first_seen = T(first),
				 .last_seen = T(last)};
	keel_append_add_mention(&b->ab, &m);
}

/* One assertion; a timeline's come in the order they arrived. */
static void b_row(struct builder *b, enum keel_row_kind kind, const char *tenant,
		  const char *subject, const char *name, const char *object,
		  const char *value, bool linked, const char *from, const char *asserted_by)
{
	struct keel_assertion a = {.kind = kind,
				   .tenant = S(tenant),
				   .subject = S(subject),
				   .name = S(name),
				   .object = S(object),
				   .value = S(value),
				   .linked = linked,
				   .valid_from = T(from),
				   .asserted_by = {S(""), S(asserted_by)}};
	keel_append_add_row(&b->ab, &a);
}

static void b_event(struct builder *b, const char *tenant, const char *id,
		    const char *type, const char *time, const char *envelope)
{
	struct keel_batch_event *ev = keel_arena_alloc(&b->arena, sizeof *ev);
	memset(ev, 0, sizeof *ev);
	ev->tenant = keel_arena_str(&b->arena, S(tenant));
	ev->source = keel_arena_str(&b->arena, S(""));
	ev->id = keel_arena_str(&b->arena, S(id));
	ev->type = keel_arena_str(&b->arena, S(type));
	ev->time = T(time);
	ev->envelope = keel_arena_str(&b->arena, S(envelope));
	ev->hash = keel_hash64(ev->envelope.ptr, ev->envelope.len, 0);
	ev->status = KEEL_EV_ACCEPTED;
	keel_ptrvec_push(&b->events, ev);
}

static void b_commit(struct builder *b)
{
	assert_int_equal(keel_store_begin(b->s), 0);
	struct keel_append a = keel_append_view(
	    &b->ab, (struct keel_batch_event **)b->events.items, b->events.len);
	assert_int_equal(keel_store_append(b->s, &a), 0);
	assert_int_equal(keel_store_commit(b->s), 0);
	keel_append_builder_free(&b->ab);
	keel_arena_free(&b->arena);
	keel_ptrvec_free(&b->events);
	b_init(b, b->s);
}

static struct keel_store *open_memory(void)
{
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	return s;
}

#define ENV(tenant, id, type, time, data)                                                \
	"{\"specversion\":\"1.0\",\"id\":\"" id "\",\"tenant\":\"" tenant                \
	"\",\"type\":\"" type "\",\"time\":\"" time "\",\"data\":" data "}"

/* Two tenants, every record type, every escape and null the format has.
 * Inserted in an order unlike the dump's. */
static void build_sample(struct keel_store *s)
{
	struct builder b;
	b_init(&b, s);
	b_event(&b, "beta", "b-1", "fleet.depot.opened", "2026-01-01T00:00:00Z",
		ENV("beta", "b-1", "fleet.depot.opened", "2026-01-01T00:00:00Z",
		    "{\"depot_id\":\"D\"}"));
	b_entity(&b, "beta", "depot:D", "depot", "2026-01-01T00:00:00Z",
		 "2026-01-01T00:00:00Z");
	/* alpha: a second arrives before the first, by id. */
	b_event(&b, "alpha", "e-2", "t.two", "2026-01-05T06:30:00+01:00",
		ENV("alpha", "e-2", "t.two", "2026-01-05T06:30:00+01:00",
		    "{\"n\":1e3,\"s\":\"caf\\u00e9\"}"));
	b_event(&b, "alpha", "e-1", "t.one", "2026-01-05T05:00:00Z",
		ENV("alpha", "e-1", "t.one", "2026-01-05T05:00:00Z", "{}"));
	b_entity(&b, "alpha", "vehicle:V-1", "vehicle", "2026-01-05T05:00:00Z",
		 "2026-01-05T07:00:00.5Z");
	b_entity(&b, "alpha", "Zed", NULL, "2026-01-05T05:00:00Z",
		 "2026-01-05T05:00:00Z");
	b_entity(&b, "alpha", "driver:D-1", "driver", "2026-01-05T05:00:00Z",
		 "2026-01-05T05:30:00Z");
	b_entity(&b, "alpha", "q\"b\\n\n\x01\xc3\xa9", "k\x1f", "2026-01-05T05:00:00Z",
		 "2026-01-05T05:00:00.000001Z");
	/* status arrived as x and in_service (both e-2, the later wins at
	 * 05:30), with available (e-1, 05:00) between them. */
	b_row(&b, KEEL_ROW_FACT, "alpha", "vehicle:V-1", "status", NULL, "\"x\"", false,
	      "2026-01-05T05:30:00Z", "e-2");
	b_row(&b, KEEL_ROW_FACT, "alpha", "vehicle:V-1", "status", NULL, "\"available\"",
	      false, "2026-01-05T05:00:00Z", "e-1");
	b_row(&b, KEEL_ROW_FACT, "alpha", "vehicle:V-1", "status", NULL, "\"in_service\"",
	      false, "2026-01-05T05:30:00Z", "e-2");
	b_row(&b, KEEL_ROW_FACT, "alpha", "vehicle:V-1", "location", NULL, NULL, false,
	      "2026-01-05T05:00:00Z", "e-1");
	b_row(&b, KEEL_ROW_FACT, "alpha", "vehicle:V-1", "geo", NULL,
	      "{\"lat\":41.10,\"lon\":-8.6e0}", false, "2026-01-05T05:00:00Z", "e-1");
	b_row(&b, KEEL_ROW_RELATION, "alpha", "driver:D-1", "drives", "vehicle:V-1", NULL,
	      false, "2026-01-05T05:30:00Z", "e-2");
	b_row(&b, KEEL_ROW_RELATION, "alpha", "driver:D-1", "drives", "vehicle:V-1", NULL,
	      true, "2026-01-05T05:00:00Z", "e-1");
	b_commit(&b);
}

static const char sample_dump[] =
    "{\"type\":\"entity\",\"tenant\":\"alpha\",\"subject\":\"Zed\",\"kind\":null,"
    "\"first_seen\":\"2026-01-05T05:00:00Z\",\"last_seen\":\"2026-01-05T05:00:00Z\"}\n"
    "{\"type\":\"entity\",\"tenant\":\"alpha\",\"subject\":\"driver:D-1\",\"kind\":"
    "\"driver\",\"first_seen\":\"2026-01-05T05:00:00Z\",\"last_seen\":"
    "\"2026-01-05T05:30:00Z\"}\n"
    "{\"type\":\"entity\",\"tenant\":\"alpha\",\"subject\":"
    "\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\","
    "\"kind\":\"k\\u001f\",\"first_seen\":\"2026-01-05T05:00:00Z\","
    "\"last_seen\":\"2026-01-05T05:00:00.000001Z\"}\n"
    "{\"type\":\"entity\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"kind\":"
    "\"vehicle\","
    "\"first_seen\":\"2026-01-05T05:00:00Z\",\"last_seen\":\"2026-01-05T07:00:00."
    "500000Z\"}\n"
    "{\"type\":\"fact\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"predicate\":"
    "\"geo\","
    "\"value\":{\"lat\":41.10,\"lon\":-8.6e0},\"valid_from\":\"2026-01-05T05:00:00Z\","
    "\"valid_to\":null,\"asserted_by\":{\"source\":\"\",\"id\":\"e-1\"},\"closed_by\":null}\n"
    "{\"type\":\"fact\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"predicate\":"
    "\"location\","
    "\"value\":null,\"valid_from\":\"2026-01-05T05:00:00Z\",\"valid_to\":null,"
    "\"asserted_by\":{\"source\":\"\",\"id\":\"e-1\"},\"closed_by\":null}\n"
    "{\"type\":\"fact\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"predicate\":"
    "\"status\","
    "\"value\":\"available\",\"valid_from\":\"2026-01-05T05:00:00Z\","
    "\"valid_to\":\"2026-01-05T05:30:00Z\",\"asserted_by\":{\"source\":\"\",\"id\":\"e-1\"},\"closed_by\":{\"source\":\"\",\"id\":\"e-2\"}}"
    "\n"
    "{\"type\":\"fact\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"predicate\":"
    "\"status\","
    "\"value\":\"x\",\"valid_from\":\"2026-01-05T05:30:00Z\","
    "\"valid_to\":\"2026-01-05T05:30:00Z\",\"asserted_by\":{\"source\":\"\",\"id\":\"e-2\"},\"closed_by\":{\"source\":\"\",\"id\":\"e-2\"}}"
    "\n"
    "{\"type\":\"fact\",\"tenant\":\"alpha\",\"subject\":\"vehicle:V-1\",\"predicate\":"
    "\"status\","
    "\"value\":\"in_service\",\"valid_from\":\"2026-01-05T05:30:00Z\",\"valid_to\":null,"
    "\"asserted_by\":{\"source\":\"\",\"id\":\"e-2\"},\"closed_by\":null}\n"
    "{\"type\":\"relation\",\"tenant\":\"alpha\",\"subject\":\"driver:D-1\",\"relation\":"
    "\"drives\","
    "\"object\":\"vehicle:V-1\",\"linked\":true,\"valid_from\":\"2026-01-05T05:00:00Z\","
    "\"valid_to\":\"2026-01-05T05:30:00Z\",\"asserted_by\":{\"source\":\"\",\"id\":\"e-1\"},\"closed_by\":{\"source\":\"\",\"id\":\"e-2\"}}"
    "\n"
    "{\"type\":\"relation\",\"tenant\":\"alpha\",\"subject\":\"driver:D-1\",\"relation\":"
    "\"drives\","
    "\"object\":\"vehicle:V-1\",\"linked\":false,\"valid_from\":\"2026-01-05T05:30:00Z\","
    "\"valid_to\":null,\"asserted_by\":{\"source\":\"\",\"id\":\"e-2\"},\"closed_by\":null}\n"
    "{\"type\":\"event\",\"tenant\":\"alpha\",\"source\":\"\",\"id\":\"e-2\",\"event_type\":\"t.two\","
    "\"time\":\"2026-01-05T05:30:00Z\",\"envelope\":" ENV(
	"alpha", "e-2", "t.two", "2026-01-05T06:30:00+01:00",
	"{\"n\":1e3,\"s\":\"caf\\u00e9\"}") "}\n"
					    "{\"type\":\"event\",\"tenant\":\"alpha\","
					    "\"source\":\"\",\"id\":\"e-1\",\"event_type\":\"t.one\","
					    "\"time\":\"2026-01-05T05:00:00Z\","
					    "\"envelope\":" ENV(
						"alpha", "e-1", "t.one",
						"2026-01-05T05:00:00Z",
						"{}") "}\n"
						      "{\"type\":\"entity\",\"tenant\":"
						      "\"beta\",\"subject\":\"depot:D\","
						      "\"kind\":\"depot\","
						      "\"first_seen\":\"2026-01-01T00:00:"
						      "00Z\",\"last_seen\":\"2026-01-"
						      "01T00:00:00Z\"}\n"
						      "{\"type\":\"event\",\"tenant\":"
						      "\"beta\",\"source\":\"\",\"id\":\"b-1\",\"event_"
						      "type\":\"fleet.depot.opened\","
						      "\"time\":\"2026-01-01T00:00:00Z\","
						      "\"envelope\":" ENV(
							  "beta", "b-1",
							  "fleet.depot.opened",
							  "2026-01-01T00:00:00Z",
							  "{\"depot_id\":\"D\"}") "}\n";

/* The lines of text that start with prefix, concatenated. */
static char *lines_with(const char *text, const char *prefix)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "");
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			keel_buf_add(&b, p, n);
		p += n;
	}
	return b.data;
}

/* --------------------------------------------------------------- dump */

static void dump_is_canonical_byte_for_byte(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	build_sample(s);
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(dump, sample_dump);
	free(dump);
	keel_store_close(s);
}

static void dump_of_one_tenant(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	build_sample(s);
	char *dump = keel_test_dump(s, "beta");
	char *expect =
	    lines_with(sample_dump, "{\"type\":\"entity\",\"tenant\":\"beta\"");
	char *events = lines_with(sample_dump, "{\"type\":\"event\",\"tenant\":\"beta\"");
	size_t n = strlen(expect);
	expect = realloc(expect, n + strlen(events) + 1);
	memcpy(expect + n, events, strlen(events) + 1);
	assert_true(strlen(expect) > 0);
	assert_string_equal(dump, expect);
	free(dump);
	free(expect);
	free(events);

	/* A tenant with nothing stored is not found (as for keel_stats), and
	 * nothing is written. */
	size_t len = 0;
	dump = NULL;
	FILE *f = open_memstream(&dump, &len);
	assert_non_null(f);
	assert_int_equal(keel_dump(s, "nobody", NULL, f), KEEL_ENOTFOUND);
	fclose(f);
	assert_int_equal(len, 0);
	assert_string_equal(keel_store_errmsg(s), "tenant \"nobody\" not found");
	free(dump);
	keel_store_close(s);
}

static void dump_of_empty_store_is_empty(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(dump, "");
	free(dump);
	keel_store_close(s);
}

/* --------------------------------------------------------------- load */

static int load_text(struct keel_store *s, const char *text)
{
	FILE *f = fmemopen((void *)(uintptr_t)text, strlen(text), "r");
	assert_non_null(f);
	int rc = keel_load(s, f);
	fclose(f);
	return rc;
}

static void load_then_dump_gives_the_same_bytes(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	assert_int_equal(load_text(s, sample_dump), 0);
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(dump, sample_dump);
	free(dump);
	keel_store_close(s);
}

static void load_refuses_a_tenant_that_has_data(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	assert_int_equal(load_text(s, sample_dump), 0);
	assert_int_equal(load_text(s, sample_dump), KEEL_EDUMP);
	assert_non_null(strstr(keel_store_errmsg(s),
			       "line 1: tenant \"alpha\" already has data in the store"));
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(dump, sample_dump);
	free(dump);
	keel_store_close(s);
}

static struct keel_cartridge *fleet(void)
{
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	return c;
}

/* Feeds lines [from, to) of text (NDJSON) to an ingester on s. */
static void ingest_lines(struct keel_store *s, const struct keel_cartridge *c,
			 char **lines, size_t from, size_t to)
{
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .batch = 300};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = from; i < to; i++)
		assert_int_equal(keel_ingest_add(ing, lines[i], strlen(lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->rejected, 0);
	keel_ingest_free(ing);
}

static size_t split_lines(char *text, char ***out)
{
	size_t n = 0, cap = 1024;
	char **lines = malloc(cap * sizeof *lines);
	for (char *p = text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = 0;
		if (n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof *lines);
		lines[n++] = p;
	}
	*out = lines;
	return n;
}

/* A store restored from a dump (several load batches, timelines split
 * across them) goes on exactly like the original: ingesting the rest of a
 * stream, late events included, into both gives the same dump. */
static void loaded_store_continues_like_the_original(void **state)
{
	(void)state;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const struct keel_generate_options go = {
	    .size = sizeof go,
	    .events = 3000, .tenants = 2, .seed = 5, .late = 0.05, .duplicates = 0.02};
	assert_int_equal(keel_generate_fleet(&go, f), 0);
	fclose(f);
	char **lines;
	size_t n = split_lines(text, &lines);
	assert_int_equal(n, 3000);
	struct keel_cartridge *c = fleet();

	struct keel_store *a = open_memory(), *b = open_memory();
	ingest_lines(a, c, lines, 0, n / 2);
	char *half = keel_test_dump(a, NULL);
	size_t records = 0;
	for (const char *p = half; (p = strchr(p, '\n')); p++)
		records++;
	assert_true(records > 4096 + 100); /* more than one load batch */
	assert_int_equal(load_text(b, half), 0);
	char *again = keel_test_dump(b, NULL);
	assert_string_equal(again, half);

	ingest_lines(a, c, lines, n / 2, n);
	ingest_lines(b, c, lines, n / 2, n);
	char *da = keel_test_dump(a, NULL), *db = keel_test_dump(b, NULL);
	assert_true(strlen(da) > strlen(half));
	assert_string_equal(db, da);

	free(da);
	free(db);
	free(again);
	free(half);
	keel_store_close(a);
	keel_store_close(b);
	keel_cartridge_free(c);
	free(lines);
	free(text);
}

static void load_of_nothing_is_nothing(void **state)
{
	(void)state;
	struct keel_store *s = open_memory();
	assert_int_equal(load_text(s, ""), 0);
	assert_int_equal(load_text(s, "\n\n"), 0);
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(dump, "");
	free(dump);
	keel_store_close(s);
}

/* Valid records to build bad dumps from. */
#define E1                                                                               \
	"{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s\",\"kind\":\"k\","        \
	"\"first_seen\":\"2026-01-01T00:00:00Z\",\"last_seen\":\"2026-01-01T00:00:"      \
	"00Z\"}\n"
#define F(from, to, by, closed)                                                          \
	"{\"type\":\"fact\",\"tenant\":\"t\",\"subject\":\"s\",\"predicate\":\"p\","     \
	"\"value\":1,\"valid_from\":" from ",\"valid_to\":" to ",\"asserted_by\":" by    \
	",\"closed_by\":" closed "}\n"
#define EV(id, tenant)                                                                   \
	"{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"\",\"id\":\"" id "\",\"event_type\":\"x.y\"," \
	"\"time\":\"2026-01-01T00:00:00Z\",\"envelope\":" ENV(                           \
	    tenant, id, "x.y", "2026-01-01T00:00:00Z", "{}") "}\n"
#define REF(id) "{\"source\":\"\",\"id\":\"" id "\"}"
#define D1 "\"2026-01-01T00:00:00Z\""
#define D2 "\"2026-01-02T00:00:00Z\""
#define D3 "\"2026-01-03T00:00:00Z\""

struct bad_case {
	const char *dump;
	const char *message; /* expected within keel_store_errmsg */
};

static const struct bad_case bad_cases[] = {
    {"not json\n", "line 1: not valid JSON"},
    {"[1]\n", "line 1: expected a JSON object"},
    {E1 "{\"type\":\"edge\",\"tenant\":\"t\"}\n",
     "line 2: field \"type\": must be entity, fact"},
    {"{\"type\":\"entity\",\"tenant\":\"t\",\"kind\":null,\"first_seen\":" D1
     ",\"last_seen\":" D1 "}\n",
     "line 1: field \"subject\": missing"},
    {"{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s\",\"kind\":null,\"first_"
     "seen\":" D1 ",\"last_seen\":" D1 ",\"seq\":1}\n",
     "line 1: field \"seq\": not a field of entity records"},
    {"{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s\",\"kind\":7,\"first_"
     "seen\":" D1 ",\"last_seen\":" D1 "}\n",
     "line 1: field \"kind\": expected a string or null"},
    {"{\"type\":\"entity\",\"tenant\":\"a "
     "b\",\"subject\":\"s\",\"kind\":null,\"first_seen\":" D1 ",\"last_seen\":" D1 "}\n",
     "line 1: field \"tenant\": must be 1-64 bytes of [A-Za-z0-9._-]"},
    {"{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s\",\"kind\":null,"
     "\"first_seen\":\"2026-13-01T00:00:00Z\",\"last_seen\":" D1 "}\n",
     "line 1: field \"first_seen\": not an RFC 3339 timestamp"},
    {"{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s\",\"kind\":null,"
     "\"first_seen\":" D2 ",\"last_seen\":" D1 "}\n",
     "line 1: field \"last_seen\": earlier than first_seen"},
    {E1 E1, "line 2: entity record out of order (duplicate subject)"},
    {E1 F(D1, "null", REF("e"), "null") E1, "line 3: entity record after fact records"},
    {"{\"type\":\"entity\",\"tenant\":\"u\",\"subject\":\"s\",\"kind\":null,\"first_"
     "seen\":" D1 ",\"last_seen\":" D1 "}\n" E1,
     "line 2: tenant \"t\" out of order"},
    {F(D2, D1, REF("e"), REF("f")), "line 1: field \"valid_to\": earlier than valid_from"},
    {F(D1, "null", REF("e"), REF("f")),
     "line 1: field \"closed_by\": must be null exactly when"},
    {F(D1, D2, REF("e"), "null"),
     "line 1: field \"closed_by\": must be null exactly when"},
    {E1 F(D1, D2, REF("e"), REF("f")) F(D3, "null", REF("f"), "null"),
     "line 3: row does not start where the previous row of its timeline ends"},
    {E1 F(D1, D2, REF("e"), REF("f")), "the timeline of line 2 ends with a closed row"},
    {E1 F(D1, D2, REF("e"), REF("f")) EV("e", "t"), "line 3: the timeline of line 2 ends"},
    {E1 F(D2, "null", REF("e"), "null") F(D1, D2, REF("e"), REF("f")),
     "line 3: fact record out of order"},
    {F(D1, "null", REF("e"), "null"), "line 1: fact subject \"s\" has no entity record"},
    {E1 "{\"type\":\"relation\",\"tenant\":\"t\",\"subject\":\"s\",\"relation\":\"r\","
     "\"object\":\"o\",\"linked\":true,\"valid_from\":" D1
     ",\"valid_to\":null,\"asserted_by\":{\"source\":\"\",\"id\":\"e\"},\"closed_by\":null}\n",
     "line 2: relation object \"o\" has no entity record"},
    /* an entity of another tenant does not count */
    {"{\"type\":\"entity\",\"tenant\":\"a\",\"subject\":\"s\",\"kind\":null,"
     "\"first_seen\":" D1 ",\"last_seen\":" D1 "}\n" F(D1, "null", REF("e"), "null"),
     "line 2: fact subject \"s\" has no entity record"},
    {"{\"type\":\"relation\",\"tenant\":\"t\",\"subject\":\"s\",\"relation\":\"r\","
     "\"object\":\"o\","
     "\"linked\":1,\"valid_from\":" D1
     ",\"valid_to\":null,\"asserted_by\":{\"source\":\"\",\"id\":\"e\"},\"closed_by\":null}\n",
     "line 1: field \"linked\": expected true or false"},
    {EV("e", "other"),
     "line 1: field \"envelope\": its source, id, tenant, type or time differs"},
    {EV("e", "t") EV("e", "t"), "line 2: event \"e\" from \"\": duplicate (line 1)"},
    {"{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"\",\"id\":\"e\",\"event_type\":\"x.y\","
     "\"time\":" D1 ",\"envelope\":[]}\n",
     "line 1: field \"envelope\": expected an object"},
};

static void load_rejects_bad_records(void **state)
{
	(void)state;
	for (size_t i = 0; i < KEEL_ARRAY_LEN(bad_cases); i++) {
		struct keel_store *s = open_memory();
		int rc = load_text(s, bad_cases[i].dump);
		if (rc != KEEL_EDUMP ||
		    !strstr(keel_store_errmsg(s), bad_cases[i].message))
			fail_msg("case %zu: rc %d, message \"%s\", expected \"%s\"", i,
				 rc, keel_store_errmsg(s), bad_cases[i].message);
		/* Nothing of the failed batch is kept. */
		char *dump = keel_test_dump(s, NULL);
		assert_string_equal(dump, "");
		free(dump);
		keel_store_close(s);
	}
}

/* An event record whose envelope is longer than the store can write (see
 * store.h, max_envelope) fails the load with its line and the rule, as any
 * bad record does, instead of the store's own error; one under the limit
 * loads and dumps back byte for byte. */
static void load_refuses_an_envelope_longer_than_the_store_takes(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir(), url[4200];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	struct keel_store *s;
	char *err = NULL;
	assert_int_equal(keel_store_open(url, &s, &err), 0);
	keel_store_sqlite_set_length_limit(s, 65536);
	const size_t max = 65536 - 4096;
	for (int over = 0; over < 2; over++) {
		/* the envelope as the dump writes it: compact, keys in order */
		size_t note = over ? max : 30000;
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_addf(&b,
			      "{\"type\":\"event\",\"tenant\":\"t\",\"source\":\"\",\"id\":\"e%d\","
			      "\"event_type\":\"x.y\",\"time\":\"2026-01-01T00:00:00Z\","
			      "\"envelope\":",
			      over);
		size_t env_start = b.len;
		keel_buf_addf(&b,
			      "{\"specversion\":\"1.0\",\"id\":\"e%d\",\"tenant\":\"t\","
			      "\"type\":\"x.y\",\"time\":\"2026-01-01T00:00:00Z\","
			      "\"data\":{\"note\":\"",
			      over);
		for (size_t i = 0; i < note; i++)
			keel_buf_addc(&b, 'x');
		keel_buf_adds(&b, "\"}}");
		size_t env_len = b.len - env_start;
		keel_buf_adds(&b, "}\n");
		int rc = load_text(s, b.data);
		if (over) {
			assert_int_equal(rc, KEEL_EDUMP);
			char expected[512];
			snprintf(expected, sizeof expected,
				 "line 1: field \"envelope\": %zu bytes (compacted), longer "
				 "than the store takes: at most %zu bytes (SQLite's length "
				 "limit, less room for the rest of its row)",
				 env_len, max);
			assert_string_equal(keel_store_errmsg(s), expected);
		} else {
			assert_int_equal(rc, 0);
			char *dump = keel_test_dump(s, NULL);
			assert_string_equal(dump, b.data);
			free(dump);
		}
		keel_buf_free(&b);
	}
	keel_store_close(s);
	keel_test_rmdir(dir);
	free(dir);
}

/* The good records of a bad dump's earlier batches stay; the batch that
 * holds the bad record goes. */
static void load_failure_keeps_earlier_batches(void **state)
{
	(void)state;
	struct keel_buf b;
	keel_buf_init(&b);
	for (int i = 0; i < 5000; i++)
		keel_buf_addf(
		    &b,
		    "{\"type\":\"entity\",\"tenant\":\"t\",\"subject\":\"s%05d\","
		    "\"kind\":null,\"first_seen\":" D1 ",\"last_seen\":" D1 "}\n",
		    i);
	keel_buf_adds(&b, "oops\n");
	struct keel_store *s = open_memory();
	assert_int_equal(load_text(s, b.data), KEEL_EDUMP);
	assert_non_null(strstr(keel_store_errmsg(s), "line 5001: not valid JSON"));
	char *dump = keel_test_dump(s, "t");
	size_t lines = 0;
	for (const char *p = dump; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 4096);
	free(dump);
	keel_store_close(s);
	keel_buf_free(&b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(dump_is_canonical_byte_for_byte),
    cmocka_unit_test(dump_of_one_tenant),
    cmocka_unit_test(dump_of_empty_store_is_empty),
    cmocka_unit_test(load_then_dump_gives_the_same_bytes),
    cmocka_unit_test(load_refuses_a_tenant_that_has_data),
    cmocka_unit_test(loaded_store_continues_like_the_original),
    cmocka_unit_test(load_of_nothing_is_nothing),
    cmocka_unit_test(load_rejects_bad_records),
    cmocka_unit_test(load_failure_keeps_earlier_batches),
    cmocka_unit_test(load_refuses_an_envelope_longer_than_the_store_takes),
};

KEEL_TEST_MAIN(tests)
