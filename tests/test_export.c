/*
 * test_export.c - keel_export parsed back (docs/export.md): the CSV files
 * through an RFC 4180 reader written here, each row rebuilt into the
 * dump's record and compared with the dump line by line (so quoting of
 * commas, quotes, CR, LF and every other byte round-trips); NDJSON
 * without --at is the dump itself, with --at every line parses and holds
 * exactly the rows valid then; GraphML is checked by tests/cli_export.sh
 * with XML and graph tools.
 */
#include "support.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "event/json.h"
#include "util.h"

/* Events whose strings need CSV quoting, plus a generated stream. */
static const char *const tricky[] = {
    "{\"specversion\":\"1.0\",\"id\":\"q,1\",\"tenant\":\"acme\",\"type\":"
    "\"fleet.vehicle.registered\",\"time\":\"2026-01-05T06:00:00Z\",\"data\":{"
    "\"vehicle_id\":\"V,\\\"1\\\"\\r\\n2\",\"depot_id\":\"D \\u00e9\",\"make\":\"a,b\","
    "\"model\":\"say \\\"hi\\\"\",\"year\":2020}}",
    "{\"specversion\":\"1.0\",\"id\":\"q\\\"2\",\"tenant\":\"acme\",\"type\":"
    "\"fleet.vehicle.status_changed\",\"time\":\"2026-01-05T07:00:00Z\",\"data\":{"
    "\"vehicle_id\":\"V,\\\"1\\\"\\r\\n2\",\"status\":\"in\\nuse\",\"reason\":\"x\"}}",
};

static struct keel_store *filled_store(void)
{
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	struct keel_cartridge *c = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, NULL), 0);
	struct keel_ingest_options o = {.size = sizeof o, .cartridge = c};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(tricky); i++)
		assert_int_equal(
		    keel_ingest_add(ing, tricky[i], strlen(tricky[i]), i + 1), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const struct keel_generate_options g = {
	    .size = sizeof g,
	    .events = 3000, .tenants = 2, .seed = 3, .late = 0.1};
	assert_int_equal(keel_generate_fleet(&g, f), 0);
	fclose(f);
	uint64_t n = 10;
	for (char *p = text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_int_equal(keel_ingest_add(ing, p, (size_t)(nl - p), n++), 0);
	}
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->rejected, 0);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	free(text);
	return s;
}

/* ------------------------------------------------------ an RFC 4180 reader */

struct csv {
	const char *p, *end;
};

/* Reads one record into fields (malloc'd strings with lengths); returns
 * the number of fields, 0 at the end. Fails the test on malformed CSV. */
static bool csv_null[16]; /* field i was unquoted and empty */

static size_t csv_next(struct csv *c, struct keel_buf *fields, size_t max)
{
	if (c->p >= c->end)
		return 0;
	size_t n = 0;
	for (;;) {
		assert_true(n < max);
		struct keel_buf *f = &fields[n];
		keel_buf_reset(f);
		csv_null[n++] = false;
		if (c->p < c->end && *c->p == '"') {
			c->p++;
			for (;;) {
				assert_true(c->p < c->end); /* unterminated quote */
				if (*c->p == '"') {
					if (c->p + 1 < c->end && c->p[1] == '"') {
						keel_buf_addc(f, '"');
						c->p += 2;
						continue;
					}
					c->p++;
					break;
				}
				keel_buf_addc(f, *c->p++);
			}
		} else {
			while (c->p < c->end && *c->p != ',' && *c->p != '\r') {
				/* bare quotes and line feeds only inside quotes */
				assert_true(*c->p != '"' && *c->p != '\n');
				keel_buf_addc(f, *c->p++);
			}
			csv_null[n - 1] = f->len == 0;
		}
		assert_true(c->p < c->end);
		if (*c->p == ',') {
			c->p++;
			continue;
		}
		assert_true(c->p + 1 < c->end && c->p[0] == '\r' && c->p[1] == '\n');
		c->p += 2;
		return n;
	}
}

static struct keel_buf *csv_fields;

static struct keel_str fstr(const struct keel_buf *f)
{
	/* An unquoted empty field is null; a quoted empty one is "". */
	if (csv_null[f - csv_fields])
		return KEEL_STR_NULL;
	return keel_str_make(f->len ? f->data : "", f->len);
}

static void add_time(struct keel_buf *b, const struct keel_buf *f)
{
	if (f->len) {
		keel_buf_addc(b, '"');
		keel_buf_add(b, f->data, f->len);
		keel_buf_addc(b, '"');
	} else {
		keel_buf_adds(b, "null");
	}
}

/* The reference in the columns f[0] (source) and f[1] (id), as the dump
 * writes it: null when the id column is null. */
static void add_ref(struct keel_buf *b, const struct keel_buf *f)
{
	struct keel_str id = fstr(&f[1]);
	if (!id.ptr) {
		assert_null(fstr(&f[0]).ptr);
		keel_buf_adds(b, "null");
		return;
	}
	keel_buf_adds(b, "{\"source\":");
	keel_buf_add_json_str(b, fstr(&f[0]));
	keel_buf_adds(b, ",\"id\":");
	keel_buf_add_json_str(b, id);
	keel_buf_addc(b, '}');
}

/* Rebuilds the dump line of a CSV row of `table`. */
static void csv_to_dump(const char *table, struct keel_buf *f, size_t n,
			struct keel_buf *out)
{
	keel_buf_reset(out);
	if (!strcmp(table, "entities")) {
		assert_int_equal(n, 5);
		keel_buf_adds(out, "{\"type\":\"entity\",\"tenant\":");
		keel_buf_add_json_str(out, fstr(&f[0]));
		keel_buf_adds(out, ",\"subject\":");
		keel_buf_add_json_str(out, fstr(&f[1]));
		keel_buf_adds(out, ",\"kind\":");
		keel_buf_add_json_str(out, fstr(&f[2]));
		keel_buf_adds(out, ",\"first_seen\":");
		add_time(out, &f[3]);
		keel_buf_adds(out, ",\"last_seen\":");
		add_time(out, &f[4]);
	} else if (!strcmp(table, "facts") || !strcmp(table, "relations")) {
		bool fact = !strcmp(table, "facts");
		assert_int_equal(n, fact ? 10 : 11);
		keel_buf_addf(out,
			      "{\"type\":\"%s\",\"tenant\":", fact ? "fact" : "relation");
		keel_buf_add_json_str(out, fstr(&f[0]));
		keel_buf_adds(out, ",\"subject\":");
		keel_buf_add_json_str(out, fstr(&f[1]));
		size_t k = 3;
		if (fact) {
			keel_buf_adds(out, ",\"predicate\":");
			keel_buf_add_json_str(out, fstr(&f[2]));
			keel_buf_adds(out, ",\"value\":");
			if (f[3].len)
				keel_buf_add(out, f[3].data, f[3].len);
			else
				keel_buf_adds(out, "null");
			k = 4;
		} else {
			keel_buf_adds(out, ",\"relation\":");
			keel_buf_add_json_str(out, fstr(&f[2]));
			keel_buf_adds(out, ",\"object\":");
			keel_buf_add_json_str(out, fstr(&f[3]));
			keel_buf_addf(out, ",\"linked\":%s", f[4].data);
			k = 5;
		}
		keel_buf_adds(out, ",\"valid_from\":");
		add_time(out, &f[k]);
		keel_buf_adds(out, ",\"valid_to\":");
		add_time(out, &f[k + 1]);
		/* each reference in two columns, source and id */
		keel_buf_adds(out, ",\"asserted_by\":");
		add_ref(out, &f[k + 2]);
		keel_buf_adds(out, ",\"closed_by\":");
		add_ref(out, &f[k + 4]);
	} else {
		assert_int_equal(n, 6);
		keel_buf_adds(out, "{\"type\":\"event\",\"tenant\":");
		keel_buf_add_json_str(out, fstr(&f[0]));
		keel_buf_adds(out, ",\"source\":");
		keel_buf_add_json_str(out, fstr(&f[1]));
		keel_buf_adds(out, ",\"id\":");
		keel_buf_add_json_str(out, fstr(&f[2]));
		keel_buf_adds(out, ",\"event_type\":");
		keel_buf_add_json_str(out, fstr(&f[3]));
		keel_buf_adds(out, ",\"time\":");
		add_time(out, &f[4]);
		keel_buf_adds(out, ",\"envelope\":");
		keel_buf_add(out, f[5].data, f[5].len);
	}
	keel_buf_adds(out, "}\n");
}

/* The dump's lines of one record type, concatenated. */
static char *dump_lines_of(const char *dump, const char *type)
{
	struct keel_buf b;
	keel_buf_init(&b);
	char prefix[64];
	snprintf(prefix, sizeof prefix, "{\"type\":\"%s\",", type);
	for (const char *p = dump, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!strncmp(p, prefix, strlen(prefix)))
			keel_buf_add(&b, p, (size_t)(nl - p) + 1);
	}
	keel_buf_addc(&b, 0);
	return b.data;
}

static void csv_parses_back_to_the_dump(void **state)
{
	(void)state;
	struct keel_store *s = filled_store();
	char *dir = keel_test_tmpdir();
	struct keel_export_options o = {.size = sizeof o, .format = KEEL_EXPORT_CSV, .dir = dir};
	assert_int_equal(keel_export(s, &o), 0);
	char *dump = keel_test_dump(s, NULL);
	static const char *const tables[][2] = {{"entities", "entity"},
						{"facts", "fact"},
						{"relations", "relation"},
						{"events", "event"}};
	struct keel_buf fields[12], line;
	for (size_t i = 0; i < KEEL_ARRAY_LEN(fields); i++)
		keel_buf_init(&fields[i]);
	csv_fields = fields;
	keel_buf_init(&line);
	for (size_t t = 0; t < 4; t++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s.csv", dir, tables[t][0]);
		size_t len;
		char *text = keel_test_read_file(path, &len);
		assert_non_null(text);
		struct csv c = {text, text + len};
		size_t n = csv_next(&c, fields, 12);
		assert_true(n >= 5);
		assert_string_equal(fields[0].data, "tenant");
		struct keel_buf rebuilt;
		keel_buf_init(&rebuilt);
		size_t rows = 0;
		while ((n = csv_next(&c, fields, 12))) {
			csv_to_dump(tables[t][0], fields, n, &line);
			keel_buf_add(&rebuilt, line.data, line.len);
			rows++;
		}
		keel_buf_addc(&rebuilt, 0);
		char *want = dump_lines_of(dump, tables[t][1]);
		assert_true(rows > 0);
		assert_string_equal(rebuilt.data, want);
		free(want);
		keel_buf_free(&rebuilt);
		free(text);
	}
	/* The tricky subject needed every kind of quoting. */
	size_t len;
	char path[4200];
	snprintf(path, sizeof path, "%s/entities.csv", dir);
	char *ent = keel_test_read_file(path, &len);
	assert_non_null(strstr(ent, "acme,\"vehicle:V,\"\"1\"\"\r\n2\",vehicle,"));
	free(ent);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(fields); i++)
		keel_buf_free(&fields[i]);
	keel_buf_free(&line);
	free(dump);
	keel_test_rmdir(dir);
	free(dir);
	keel_store_close(s);
}

static void ndjson_is_the_dump_and_at_filters(void **state)
{
	(void)state;
	struct keel_store *s = filled_store();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct keel_export_options o = {.size = sizeof o, .format = KEEL_EXPORT_NDJSON, .out = f};
	assert_int_equal(keel_export(s, &o), 0);
	fclose(f);
	char *dump = keel_test_dump(s, NULL);
	assert_string_equal(text, dump);
	free(text);

	/* --at: each line parses; facts and relations are exactly the dump's
	 * rows valid then; entities first seen by then; events up to then. */
	int64_t at;
	assert_int_equal(keel_time_parse("2026-01-05T09:30:00Z", 20, &at, NULL), 0);
	f = open_memstream(&text, &len);
	o.out = f;
	o.at_set = true;
	o.at = at;
	o.tenant = "tenant-01";
	assert_int_equal(keel_export(s, &o), 0);
	fclose(f);
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	uint64_t want[4] = {0}, got[4] = {0};
	static const char *const types[] = {"entity", "fact", "relation", "event"};
	for (int pass = 0; pass < 2; pass++) {
		char *p = pass ? text : dump;
		for (char *nl; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			struct keel_json_error jerr;
			assert_int_equal(
			    keel_json_parse(&doc, p, (size_t)(nl - p), &jerr), 0);
			const struct keel_json *t = keel_json_get(doc.root, "type", 4);
			const struct keel_json *tn = keel_json_get(doc.root, "tenant", 6);
			if (strncmp(tn->str, "tenant-01", tn->len))
				continue;
			int k = 0;
			while (strncmp(types[k], t->str, t->len))
				k++;
			bool keep = true;
			int64_t a, b;
			const struct keel_json *x;
			if (k == 0) {
				x = keel_json_get(doc.root, "first_seen", 10);
				keel_time_parse(x->str, x->len, &a, NULL);
				keep = a <= at;
			} else if (k == 3) {
				x = keel_json_get(doc.root, "time", 4);
				keel_time_parse(x->str, x->len, &a, NULL);
				keep = a <= at;
			} else {
				x = keel_json_get(doc.root, "valid_from", 10);
				keel_time_parse(x->str, x->len, &a, NULL);
				x = keel_json_get(doc.root, "valid_to", 8);
				b = x->type == KEEL_JSON_NULL ? KEEL_TIME_INF : 0;
				if (x->type != KEEL_JSON_NULL)
					keel_time_parse(x->str, x->len, &b, NULL);
				keep = a <= at && at < b;
			}
			if (pass)
				got[k]++, assert_true(keep);
			else
				want[k] += keep;
		}
	}
	for (int k = 0; k < 4; k++) {
		assert_true(want[k] > 0);
		assert_int_equal(got[k], want[k]);
	}
	keel_json_doc_free(&doc);
	free(text);
	free(dump);
	keel_store_close(s);
}

static void options_the_format_cannot_take_fail(void **state)
{
	(void)state;
	struct keel_store *s = filled_store();
	struct keel_export_options o = {.size = sizeof o, .format = KEEL_EXPORT_CSV};
	assert_int_equal(keel_export(s, &o), KEEL_EINVAL);
	assert_non_null(strstr(keel_store_errmsg(s), "output directory"));
	o.format = KEEL_EXPORT_GRAPHML;
	o.out = stdout;
	assert_int_equal(keel_export(s, &o), KEEL_EINVAL);
	assert_non_null(strstr(keel_store_errmsg(s), "one file per tenant"));
	keel_store_close(s);
}

/* The graphml of tenant "x" after ingesting events (fleet cartridge). */
static char *graphml_of(const char *const *events, size_t n)
{
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open("memory:", &s, NULL), 0);
	struct keel_cartridge *c = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, NULL), 0);
	struct keel_ingest_options io = {.size = sizeof io, .cartridge = c};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(s, &io, &ing), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(keel_ingest_add(ing, events[i], strlen(events[i]), i + 1), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->rejected, 0);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct keel_export_options o = {.size = sizeof o, .format = KEEL_EXPORT_GRAPHML, .tenant = "x", .out = f};
	assert_int_equal(keel_export(s, &o), 0);
	fclose(f);
	keel_store_close(s);
	return text;
}

/* docs/export.md: a character XML 1.0 cannot carry is written as U+FFFD
 * in its place; the rest of the string, non-ASCII included, stays. */
static void graphml_replaces_only_what_xml_cannot_carry(void **state)
{
	(void)state;
	static const char *const events[] = {
	    "{\"specversion\":\"1.0\",\"id\":\"e1\",\"tenant\":\"x\",\"type\":"
	    "\"fleet.vehicle.registered\",\"time\":\"2026-01-05T06:00:00Z\",\"data\":{"
	    "\"vehicle_id\":\"A\\u0001\\u00e9\",\"depot_id\":\"D\",\"make\":"
	    "\"m\\u0002\\u00fc\\u2028z\",\"model\":\"\\u00e9t\\u00e9\",\"year\":2020}}",
	};
	char *xml = graphml_of(events, KEEL_ARRAY_LEN(events));
	/* The subject: U+0001 replaced, the é after it kept. */
	assert_non_null(
	    strstr(xml, "<data key=\"subject\">vehicle:A\xef\xbf\xbd\xc3\xa9</data>"));
	/* A value: U+0002 replaced; ü and U+2028 kept. */
	assert_non_null(strstr(xml, ">m\xef\xbf\xbd\xc3\xbc\xe2\x80\xa8z</data>"));
	/* A value XML carries as it is. */
	assert_non_null(strstr(xml, ">\xc3\xa9t\xc3\xa9</data>"));
	/* Such a node's id is n<index>, its subject is not an id. */
	assert_null(strstr(xml, "id=\"vehicle:A"));
	assert_non_null(strstr(xml, "<node id=\"n"));
	free(xml);
}

/* U+FFFE and U+FFFF are valid UTF-8 but not XML characters: left in,
 * the file is not well-formed (xmllint: "Char 0xFFFF out of allowed
 * range"). They are replaced like C0 controls. */
static void graphml_replaces_the_noncharacters_xml_forbids(void **state)
{
	(void)state;
	static const char *const events[] = {
	    "{\"specversion\":\"1.0\",\"id\":\"e1\",\"tenant\":\"x\",\"type\":"
	    "\"fleet.vehicle.registered\",\"time\":\"2026-01-05T06:00:00Z\",\"data\":{"
	    "\"vehicle_id\":\"B\\uffff\",\"depot_id\":\"D\",\"make\":\"\\ufffeq\","
	    "\"model\":\"\\ufffd\\ud7ff\\ue000\",\"year\":2020}}",
	};
	char *xml = graphml_of(events, KEEL_ARRAY_LEN(events));
	assert_null(strstr(xml, "\xef\xbf\xbf")); /* U+FFFF */
	assert_null(strstr(xml, "\xef\xbf\xbe")); /* U+FFFE */
	assert_non_null(strstr(xml, ">vehicle:B\xef\xbf\xbd</data>"));
	assert_non_null(strstr(xml, ">\xef\xbf\xbdq</data>"));
	assert_null(strstr(xml, "id=\"vehicle:B"));
	/* Their neighbours U+FFFD, U+D7FF and U+E000 are XML characters. */
	assert_non_null(strstr(xml, ">\xef\xbf\xbd\xed\x9f\xbf\xee\x80\x80</data>"));
	free(xml);
}

const struct CMUnitTest tests[] = {
    cmocka_unit_test(csv_parses_back_to_the_dump),
    cmocka_unit_test(ndjson_is_the_dump_and_at_filters),
    cmocka_unit_test(options_the_format_cannot_take_fail),
    cmocka_unit_test(graphml_replaces_only_what_xml_cannot_carry),
    cmocka_unit_test(graphml_replaces_the_noncharacters_xml_forbids),
};
KEEL_TEST_MAIN(tests)
