/*
 * bench_json.c - Keel's JSON parser against the C JSON libraries Debian
 * ships, on Keel's own workload: ~100k fleet envelopes of 250-400 bytes
 * generated here from a fixed seed (the same bytes on every run and
 * machine).
 *
 * Each contestant parses every envelope, reads two fields ("id" and "type")
 * and frees or resets its tree, on one core; contestants take turns, one
 * pass each per round, and each keeps its best pass. The
 * "limit" rows only touch the same bytes (memchr for the newlines, a byte
 * sum), which no parser can beat. A second table feeds each library the
 * inputs Keel must reject and shows which it actually rejects.
 *
 * Usage: bench_json [ENVELOPES] [SECONDS_PER_CONTESTANT]
 *        bench_json --tiny   (1000 envelopes, 0.05 s each: what CI runs to
 *                             see the benchmark run to its end)
 *        bench_json --dump [ENVELOPES]   (writes the corpus as NDJSON)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <json-c/json.h>
#include <yajl/yajl_tree.h>
#define JSMN_STATIC
#define JSMN_STRICT
#include <jsmn.h>

#include "event/json.h"
#include "util.h"

/* ------------------------------------------------------------ workload */

struct corpus {
	struct keel_buf nl;  /* envelopes, each followed by '\n' */
	struct keel_buf nul; /* the same, each followed by '\0' (yajl wants C strings) */
	size_t *off;	     /* start of envelope i in both buffers */
	size_t *len;
	size_t n;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64: fixed output for a fixed seed, everywhere */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(rng() % n);
}

/* A decimal with `frac` digits after the point, as text. */
static void add_fixed(struct keel_buf *b, long whole_lo, long whole_hi, int frac)
{
	long span = whole_hi - whole_lo + 1;
	long w = whole_lo + (long)(rng() % (uint64_t)span);
	unsigned long scale = 1;
	for (int i = 0; i < frac; i++)
		scale *= 10;
	keel_buf_addf(b, "%ld.%0*lu", w, frac, (unsigned long)(rng() % scale));
}

static const char *const drivers[] = {
    "Anna Schmidt", "Zoë Müller",    "Łukasz Nowak",  "José García",   "Jürgen Weiß",
    "Ngozi Okafor", "Søren Ødegård", "Chen Wei 陈伟", "Amélie Dubois", "Ravi Kumar",
};
static const char *const cities[] = {
    "Berlin", "São Paulo", "Kraków", "München", "Lyon", "Göteborg", "Zürich", "Porto",
};
static const char *const statuses[] = {"in_service", "maintenance", "idle", "charging",
				       "out_of_service"};
static const char *const words[] = {"route", "depot", "north", "gate", "B7", "shift",
				    "late",  "swap",  "check", "tyre", "ok", "cargo"};

static void gen_data(struct keel_buf *b, unsigned kind, unsigned veh)
{
	switch (kind) {
	case 0:
		keel_buf_addf(b, "{\"vehicle_id\":\"V-%04u\",\"lat\":", veh);
		add_fixed(b, 47, 54, 6);
		keel_buf_adds(b, ",\"lon\":");
		add_fixed(b, 6, 14, 6);
		keel_buf_adds(b, ",\"speed_kmh\":");
		add_fixed(b, 0, 129, 1);
		keel_buf_addf(b, ",\"heading\":%u}", rnd(360));
		break;
	case 1:
		keel_buf_addf(
		    b,
		    "{\"vehicle_id\":\"V-%04u\",\"status\":\"%s\",\"odometer_km\":%u,"
		    "\"reason\":\"%s\"}",
		    veh, statuses[rnd(5)], 1000 + rnd(400000),
		    rnd(4) ? "scheduled" : "driver report: \\\"brakes\\\" noisy");
		break;
	case 2:
		keel_buf_addf(
		    b,
		    "{\"vehicle_id\":\"V-%04u\",\"driver_id\":\"D-%05u\",\"driver\":"
		    "\"%s\",\"shift\":{\"start\":\"2026-03-01T%02u:00:00Z\","
		    "\"hours\":%u}}",
		    veh, rnd(100000), drivers[rnd(10)], rnd(24), 4 + rnd(8));
		break;
	case 3:
		keel_buf_addf(
		    b,
		    "{\"trip_id\":\"T-%08u\",\"vehicle_id\":\"V-%04u\",\"origin\":"
		    "{\"city\":\"%s\",\"lat\":",
		    rnd(100000000), veh, cities[rnd(8)]);
		add_fixed(b, 40, 60, 5);
		keel_buf_adds(b, ",\"lon\":");
		add_fixed(b, -9, 20, 5);
		keel_buf_addf(b, "},\"passengers\":%u}", rnd(5));
		break;
	case 4:
		keel_buf_addf(
		    b,
		    "{\"trip_id\":\"T-%08u\",\"distance_km\":%u.%u,\"duration_s\":%u,"
		    "\"fare\":{\"amount\":%u.%02u,\"currency\":\"EUR\"},\"rated\":%s}",
		    rnd(100000000), rnd(300), rnd(10), 60 + rnd(7200), rnd(200), rnd(100),
		    rnd(2) ? "true" : "null");
		break;
	default:
		keel_buf_addf(
		    b,
		    "{\"vehicle_id\":\"V-%04u\",\"fuel_pct\":%u,\"range_km\":%u,"
		    "\"tags\":[\"%s\",\"%s\"],\"low\":%s,\"temp_c\":-%u.%u}",
		    veh, rnd(101), rnd(700), words[rnd(12)], words[rnd(12)],
		    rnd(5) ? "false" : "true", rnd(30), rnd(10));
		break;
	}
}

static const char *const types[] = {
    "fleet.vehicle.location_reported",
    "fleet.vehicle.status_changed",
    "fleet.driver.assigned",
    "fleet.trip.started",
    "fleet.trip.ended",
    "fleet.vehicle.fuel_reported",
};

static size_t gen_one(struct keel_buf *b, size_t i)
{
	unsigned kind = rnd(10) < 5 ? 0 : 1 + rnd(5); /* half are locations */
	unsigned tenant = rnd(8);
	unsigned veh = rnd(5000);
	unsigned target = 250 + rnd(151);
	size_t start = b->len;
	unsigned sec = (unsigned)(i % 86400);
	keel_buf_addf(
	    b,
	    "{\"specversion\":\"1.0\",\"id\":\"t%u-e-%010zu\",\"source\":\"/fleet/sim\","
	    "\"type\":\"%s\",\"time\":\"2026-03-01T%02u:%02u:%02u.%06uZ\",\"tenant\":"
	    "\"tenant-%02u\",",
	    tenant, i, types[kind], sec / 3600, sec / 60 % 60, sec % 60, rnd(1000000),
	    tenant);
	if (rnd(3) == 0)
		keel_buf_addf(b, "\"subject\":\"vehicle:V-%04u\",", veh);
	keel_buf_adds(b, "\"datacontenttype\":\"application/json\",\"data\":");
	gen_data(b, kind, veh);
	/* Pad with a free-text extension towards the target length. */
	static const char pad[] = ",\"comment\":\"\"";
	if (b->len - start + 1 + (sizeof pad - 1) + 4 <= target) {
		keel_buf_adds(b, ",\"comment\":\"");
		const char *sep = "";
		for (;;) {
			const char *w = words[rnd(12)];
			if (b->len - start + strlen(sep) + strlen(w) + 2 > target)
				break;
			keel_buf_adds(b, sep);
			keel_buf_adds(b, w);
			sep = " ";
		}
		keel_buf_addc(b, '"');
	}
	keel_buf_addc(b, '}');
	return b->len - start;
}

static void corpus_build(struct corpus *c, size_t n)
{
	keel_buf_init(&c->nl);
	keel_buf_init(&c->nul);
	c->off = keel_xmalloc(n * sizeof *c->off);
	c->len = keel_xmalloc(n * sizeof *c->len);
	c->n = n;
	rng_state = 20260301;
	for (size_t i = 0; i < n; i++) {
		c->off[i] = c->nl.len;
		/* A draw that comes out too long is drawn again. */
		while (gen_one(&c->nl, i) > 400)
			c->nl.len = c->off[i];
		c->len[i] = c->nl.len - c->off[i];
		keel_buf_addc(&c->nl, '\n');
	}
	keel_buf_add(&c->nul, c->nl.data, c->nl.len);
	for (size_t i = 0; i < n; i++)
		c->nul.data[c->off[i] + c->len[i]] = 0;
}

/* ---------------------------------------------------------- contestants */

/* Each returns a checksum of what it read so the work cannot be skipped,
 * or SIZE_MAX if a document failed to parse. */
typedef size_t (*pass_fn)(const struct corpus *c);

static struct keel_json_doc keel_doc;

static size_t pass_keel(const struct corpus *c)
{
	size_t sum = 0;
	struct keel_json_error err;
	for (size_t i = 0; i < c->n; i++) {
		if (keel_json_parse(&keel_doc, c->nl.data + c->off[i], c->len[i], &err))
			return SIZE_MAX;
		const struct keel_json *id = keel_json_get(keel_doc.root, "id", 2);
		const struct keel_json *ty = keel_json_get(keel_doc.root, "type", 4);
		if (!id || !ty)
			return SIZE_MAX;
		sum += id->len + ty->len + (unsigned char)ty->str[6];
	}
	return sum;
}

static size_t pass_cjson(const struct corpus *c)
{
	size_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		cJSON *root = cJSON_ParseWithLength(c->nl.data + c->off[i], c->len[i]);
		if (!root)
			return SIZE_MAX;
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
		const cJSON *ty = cJSON_GetObjectItemCaseSensitive(root, "type");
		if (!cJSON_IsString(id) || !cJSON_IsString(ty))
			return SIZE_MAX;
		sum += strlen(id->valuestring) + strlen(ty->valuestring) +
		       (unsigned char)ty->valuestring[6];
		cJSON_Delete(root);
	}
	return sum;
}

static size_t pass_yajl(const struct corpus *c)
{
	static const char *id_path[] = {"id", NULL};
	static const char *ty_path[] = {"type", NULL};
	size_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		yajl_val root = yajl_tree_parse(c->nul.data + c->off[i], NULL, 0);
		if (!root)
			return SIZE_MAX;
		const char *id =
		    YAJL_GET_STRING(yajl_tree_get(root, id_path, yajl_t_string));
		const char *ty =
		    YAJL_GET_STRING(yajl_tree_get(root, ty_path, yajl_t_string));
		if (!id || !ty)
			return SIZE_MAX;
		sum += strlen(id) + strlen(ty) + (unsigned char)ty[6];
		yajl_tree_free(root);
	}
	return sum;
}

static struct json_tokener *jc_tok;

static size_t pass_jsonc(const struct corpus *c)
{
	size_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		json_tokener_reset(jc_tok);
		struct json_object *root =
		    json_tokener_parse_ex(jc_tok, c->nl.data + c->off[i], (int)c->len[i]);
		if (!root)
			return SIZE_MAX;
		struct json_object *id, *ty;
		if (!json_object_object_get_ex(root, "id", &id) ||
		    !json_object_object_get_ex(root, "type", &ty))
			return SIZE_MAX;
		const char *ts = json_object_get_string(ty);
		sum += (size_t)json_object_get_string_len(id) +
		       (size_t)json_object_get_string_len(ty) + (unsigned char)ts[6];
		json_object_put(root);
	}
	return sum;
}

static size_t jsmn_find(const char *js, const jsmntok_t *t, int n, const char *key)
{
	/* Top-level members: a key token at the object's children level; skip
	 * nested values by their end offset. */
	size_t kl = strlen(key);
	int end = t[0].end;
	for (int i = 1; i + 1 < n && t[i].start < end;) {
		if (t[i].type == JSMN_STRING && (size_t)(t[i].end - t[i].start) == kl &&
		    memcmp(js + t[i].start, key, kl) == 0)
			return (size_t)(t[i + 1].end - t[i + 1].start) +
			       (unsigned char)js[t[i + 1].start + 6];
		int vend = t[i + 1].end;
		i += 2;
		while (i < n && t[i].start < vend)
			i++;
	}
	return SIZE_MAX;
}

static size_t pass_jsmn(const struct corpus *c)
{
	jsmntok_t tok[128];
	size_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		jsmn_parser p;
		jsmn_init(&p);
		const char *js = c->nl.data + c->off[i];
		int n = jsmn_parse(&p, js, c->len[i], tok, 128);
		if (n < 1)
			return SIZE_MAX;
		size_t a = jsmn_find(js, tok, n, "id");
		size_t b = jsmn_find(js, tok, n, "type");
		if (a == SIZE_MAX || b == SIZE_MAX)
			return SIZE_MAX;
		sum += a + b;
	}
	return sum;
}

static size_t pass_memchr(const struct corpus *c)
{
	size_t lines = 0;
	const char *p = c->nl.data, *end = c->nl.data + c->nl.len;
	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		lines++;
		p++;
	}
	return lines;
}

static size_t pass_bytesum(const struct corpus *c)
{
	size_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		const unsigned char *p = (const unsigned char *)c->nl.data + c->off[i];
		unsigned s = 0;
		for (size_t j = 0; j < c->len[i]; j++)
			s += p[j];
		sum += s;
	}
	return sum;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct contestant {
	const char *name;
	const char *validates;
	pass_fn fn;
	double best; /* seconds for one pass */
};

/* One timed pass; keeps the contestant's best. */
static void run_pass(struct contestant *k, const struct corpus *c)
{
	static volatile size_t sink;
	double a = now();
	size_t r = k->fn(c);
	double t = now() - a;
	if (r == SIZE_MAX) {
		fprintf(stderr, "bench_json: %s failed to parse the corpus\n", k->name);
		exit(1);
	}
	sink = r;
	if (t < k->best)
		k->best = t;
}

/* Rounds of one pass per contestant, so that a busy spell on a shared
 * machine hits every contestant alike; each keeps its best pass. */
static void run_all(struct contestant *ks, size_t n, const struct corpus *c,
		    double budget)
{
	for (size_t i = 0; i < n; i++)
		ks[i].best = 1e30;
	double t0 = now();
	for (int round = 0; round < 3 || now() - t0 < budget * (double)n; round++)
		for (size_t i = 0; i < n; i++)
			run_pass(&ks[i], c);
}

/* --------------------------------------------------- validation matrix */

struct bad_case {
	const char *name;
	const char *text; /* NUL-terminated; len excludes the NUL */
};

static const struct bad_case bad_cases[] = {
    {"duplicate key", "{\"id\":\"a\",\"id\":\"b\"}"},
    {"invalid UTF-8 (stray byte)", "{\"a\":\"\xff\"}"},
    {"overlong UTF-8", "{\"a\":\"\xc0\xaf\"}"},
    {"surrogate in UTF-8", "{\"a\":\"\xed\xa0\x80\"}"},
    {"lone \\u surrogate", "{\"a\":\"\\ud800\"}"},
    {"control char in string", "{\"a\":\"x\x01y\"}"},
    {"trailing garbage", "{\"a\":1} x"},
    {"leading zero", "{\"a\":01}"},
    {"bad number 1.", "{\"a\":1.}"},
    {"trailing comma", "{\"a\":1,}"},
    {"single quotes", "{'a':1}"},
    {"nesting 100 deep (a limit)", NULL},
};

static int rejects_keel(const char *t, size_t n)
{
	struct keel_json_error err;
	return keel_json_parse(&keel_doc, t, n, &err) != 0;
}

static int rejects_cjson(const char *t, size_t n)
{
	const char *endp = NULL;
	cJSON *r = cJSON_ParseWithLengthOpts(t, n, &endp, 0);
	if (!r)
		return 1;
	/* cJSON stops after the value; trailing text counts as rejected
	 * only if the caller checks, which we do, as a caller would. */
	int trailing = 0;
	for (const char *p = endp; p < t + n; p++)
		if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
			trailing = 1;
	cJSON_Delete(r);
	return trailing;
}

static int rejects_yajl(const char *t, size_t n)
{
	(void)n;
	yajl_val r = yajl_tree_parse(t, NULL, 0);
	if (!r)
		return 1;
	yajl_tree_free(r);
	return 0;
}

static int rejects_jsonc(const char *t, size_t n)
{
	json_tokener_reset(jc_tok);
	struct json_object *r = json_tokener_parse_ex(jc_tok, t, (int)n);
	if (!r)
		return 1;
	/* Like cJSON, trailing bytes are the caller's to check. */
	size_t used = json_tokener_get_parse_end(jc_tok);
	json_object_put(r);
	for (size_t i = used; i < n; i++)
		if (t[i] != ' ' && t[i] != '\n' && t[i] != '\t' && t[i] != '\r')
			return 1;
	return 0;
}

static int rejects_jsmn(const char *t, size_t n)
{
	jsmntok_t tok[256];
	jsmn_parser p;
	jsmn_init(&p);
	int r = jsmn_parse(&p, t, n, tok, 256);
	if (r < 1)
		return 1;
	return (size_t)tok[0].end != n && t[tok[0].end] != ' ' ? 1 : 0;
}

static void matrix(void)
{
	static int (*const fns[])(const char *, size_t) = {
	    rejects_keel, rejects_cjson, rejects_yajl, rejects_jsonc, rejects_jsmn,
	};
	char deep[256];
	size_t dn = 0;
	for (int i = 0; i < 100; i++)
		deep[dn++] = '[';
	for (int i = 0; i < 100; i++)
		deep[dn++] = ']';
	deep[dn] = 0;

	printf("\nrejects invalid input?      keel   cJSON  yajl   json-c jsmn\n");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(bad_cases); i++) {
		const char *t = bad_cases[i].text ? bad_cases[i].text : deep;
		size_t n = strlen(t);
		printf("%-27s", bad_cases[i].name);
		for (size_t j = 0; j < KEEL_ARRAY_LEN(fns); j++)
			printf(" %-6s", fns[j](t, n) ? "yes" : "NO");
		printf("\n");
	}
}

/* An object of 100k distinct keys, then the same with a duplicate of an
 * early key at its end: both must take milliseconds (keys hashed), not the
 * tens of seconds of comparing every pair. tests/test_json.c checks the
 * answers; how long they take is measured here. */
static void wide_objects(void)
{
	struct keel_buf b;
	struct keel_json_error err;
	keel_buf_init(&b);
	for (int dup = 0; dup < 2; dup++) {
		keel_buf_reset(&b);
		keel_buf_addc(&b, '{');
		for (int i = 0; i < 100000; i++)
			keel_buf_addf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
		if (dup)
			keel_buf_adds(&b, ",\"k3\":0");
		keel_buf_addc(&b, '}');
		double t0 = now();
		int rc = keel_json_parse(&keel_doc, b.data, b.len, &err);
		double dt = now() - t0;
		printf("object of 100000 keys%s: %s in %.1f ms\n", dup ? " + a duplicate" : "",
		       rc ? "rejected" : "parsed", dt * 1e3);
	}
	keel_buf_free(&b);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--dump") == 0) {
		struct corpus d;
		corpus_build(&d, argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 100000);
		fwrite(d.nl.data, 1, d.nl.len, stdout);
		return 0;
	}
	size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 100000;
	double budget = argc > 2 ? strtod(argv[2], NULL) : 1.0;
	if (argc > 1 && strcmp(argv[1], "--tiny") == 0)
		n = 1000, budget = 0.05;
	struct corpus c;
	corpus_build(&c, n ? n : 1);
	keel_json_doc_init(&keel_doc);
	jc_tok = json_tokener_new();
	/* json-c's most validating mode: strict grammar and UTF-8 checks. */
	json_tokener_set_flags(jc_tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

	size_t minl = SIZE_MAX, maxl = 0;
	for (size_t i = 0; i < c.n; i++) {
		minl = c.len[i] < minl ? c.len[i] : minl;
		maxl = c.len[i] > maxl ? c.len[i] : maxl;
	}
	printf("corpus: %zu envelopes, %zu bytes (%zu-%zu bytes each, mean %.0f)\n", c.n,
	       c.nl.len, minl, maxl, (double)(c.nl.len - c.n) / (double)c.n);

	struct contestant ks[] = {
	    {"keel_json", "full (RFC 8259 + UTF-8 + dup keys + depth)", pass_keel, 0},
	    {"cJSON 1.7.15", "grammar only", pass_cjson, 0},
	    {"yajl 2.1 tree", "grammar + UTF-8", pass_yajl, 0},
	    {"json-c 0.16 strict", "grammar + UTF-8 (strict mode)", pass_jsonc, 0},
	    {"jsmn 1.1 tokens", "structure only (strict mode)", pass_jsmn, 0},
	    {"limit: memchr", "none: finds the newlines", pass_memchr, 0},
	    {"limit: byte sum", "none: reads every byte", pass_bytesum, 0},
	};
	run_all(ks, KEEL_ARRAY_LEN(ks), &c, budget);

	double ours = (double)c.n / ks[0].best;
	printf("\n%-20s %12s %9s %9s  %s\n", "parser", "docs/s", "MB/s", "vs keel",
	       "validation");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(ks); i++) {
		double dps = (double)c.n / ks[i].best;
		double mbs = (double)c.nl.len / ks[i].best / 1e6;
		printf("%-20s %12.0f %9.1f %8.2fx  %s\n", ks[i].name, dps, mbs,
		       dps / ours, ks[i].validates);
	}
	matrix();
	printf("\n");
	wide_objects();

	json_tokener_free(jc_tok);
	keel_json_doc_free(&keel_doc);
	keel_buf_free(&c.nl);
	keel_buf_free(&c.nul);
	free(c.off);
	free(c.len);
	return 0;
}
