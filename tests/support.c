/* support.c - see support.h. */
#include "support.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Cases skipped by keel_test_skip in this run: cmocka counts only
 * failures, and a skip must not exit 0. */
static size_t skipped;

bool keel_test_ci(void)
{
	const char *ci = getenv("CI");
	return ci && !strcmp(ci, "true");
}

void keel_test_skip_at(const char *file, int line, const char *why)
{
	if (keel_test_ci()) {
		print_error("cannot run: %s; under CI=true nothing may be skipped\n", why);
		_fail(file, line);
	}
	skipped++;
	print_message("skipped: %s\n", why);
	_skip(file, line);
}

/* The logs of the suite's database fixtures (MySQL's error log,
 * PostgreSQL's server log), each from the size it had when the case
 * started: what a failed case adds to them is shown with the failure,
 * since a server-side cause (a deadlock, a crash) appears nowhere else. */
struct fixture_log {
	const char *env, *file, *name;
	char path[4096];
	long long from; /* -1: no such log */
};

static struct fixture_log fixture_logs[] = {
	{"KEEL_TEST_MYSQL_DIR", "err.log", "the MySQL fixture's error log", "", -1},
	{"KEEL_TEST_PG_DIR", "cluster/server.log", "the PostgreSQL fixture's log", "", -1},
};

static void fixture_logs_mark(void)
{
	for (size_t i = 0; i < sizeof fixture_logs / sizeof fixture_logs[0]; i++) {
		struct fixture_log *l = &fixture_logs[i];
		const char *dir = getenv(l->env);
		struct stat st;
		l->from = -1;
		if (!dir || !*dir)
			continue;
		snprintf(l->path, sizeof l->path, "%s/%s", dir, l->file);
		if (stat(l->path, &st) == 0)
			l->from = (long long)st.st_size;
	}
}

static void fixture_logs_print(void)
{
	for (size_t i = 0; i < sizeof fixture_logs / sizeof fixture_logs[0]; i++) {
		const struct fixture_log *l = &fixture_logs[i];
		struct stat st;
		if (l->from < 0 || stat(l->path, &st) || st.st_size <= l->from)
			continue; /* it logged nothing meanwhile */
		FILE *f = fopen(l->path, "r");
		if (!f)
			continue;
		if (fseek(f, (long)l->from, SEEK_SET) == 0) {
			fprintf(stderr, "--- %s meanwhile (%s):\n", l->name, l->path);
			char buf[4096];
			size_t n;
			while ((n = fread(buf, 1, sizeof buf, f)) > 0)
				fwrite(buf, 1, n, stderr);
			fprintf(stderr, "--- end of the fixture's log\n");
		}
		fclose(f);
	}
}

int keel_test_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (argc > 2) {
		fprintf(stderr, "usage: %s [--list | PATTERN]\n", self);
		return 2;
	}
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	struct CMUnitTest *chosen = malloc((n ? n : 1) * sizeof *chosen);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (argc < 2 || fnmatch(argv[1], tests[i].name, 0) == 0)
			chosen[k++] = tests[i];
	if (argc == 2 && k == 0) {
		fprintf(stderr, "%s: no case matches \"%s\" (--list shows them)\n", self, argv[1]);
		free(chosen);
		return 1;
	}
	fixture_logs_mark();
	int failed = _cmocka_run_group_tests(self, chosen, k, NULL, NULL);
	free(chosen);
	if (failed) {
		fixture_logs_print();
		return 1;
	}
	return skipped ? 77 : 0;
}

char *keel_test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/keel-test-XXXXXX", base ? base : "/tmp");
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	return strdup(dir);
}

void keel_test_rmdir(const char *dir)
{
	if (dir && strstr(dir, "keel-test-"))
		keel_test_sh("rm -rf '%s'", dir);
}

char *keel_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

void keel_test_write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

int keel_test_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

char *keel_test_dump(struct keel_store *s, const char *tenant)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(keel_dump(s, tenant, NULL, f), 0);
	fclose(f);
	return buf;
}

/* A fuel report of exactly `size` bytes, written compact (so that its
 * compacted envelope is the line itself), or a short one when size is 0.
 * The `note` field is \" pairs: two bytes each in the envelope, four once escaped
 * for an SQL literal, the worst case of escaping. */
static char *large_line(int i, size_t size)
{
	char head[256];
	int n = snprintf(head, sizeof head,
			 "{\"id\":\"e%d\",\"tenant\":\"t1\",\"type\":"
			 "\"fleet.vehicle.fuel_reported\",\"time\":\"2026-01-01T00:00:%02dZ\","
			 "\"data\":{\"vehicle_id\":\"V%d\",\"fuel_pct\":%d,\"note\":\"",
			 i, i, i % 2 + 1, i);
	static const char tail[] = "\"}}";
	size_t fixed = (size_t)n + strlen(tail);
	if (!size)
		size = fixed;
	assert_true(fixed <= size);
	char *line = malloc(size + 1), *p = line;
	memcpy(p, head, (size_t)n);
	p += n;
	size_t fill = size - fixed;
	for (size_t k = 0; k < fill / 2; k++) {
		*p++ = '\\';
		*p++ = '"';
	}
	if (fill % 2)
		*p++ = 'x';
	memcpy(p, tail, sizeof tail);
	assert_int_equal(strlen(line), size);
	return line;
}

struct large_rejects {
	size_t n;
	uint64_t position;
	char message[512];
};

static void large_reject(void *ud, uint64_t position, const char *id,
			 const char *message, const char *input, size_t input_len)
{
	(void)id;
	(void)input;
	(void)input_len;
	struct large_rejects *r = ud;
	if (r->n++ == 0) {
		r->position = position;
		snprintf(r->message, sizeof r->message, "%s", message);
	}
}

/* Lines [0, n) but left_out into s; the report. */
static struct keel_report large_ingest(struct keel_store *s, char **lines, size_t n,
				       size_t left_out, struct large_rejects *r)
{
	static struct keel_cartridge *fleet;
	char *err = NULL;
	if (!fleet && keel_cartridge_load("fleet", &fleet, &err))
		fail_msg("fleet: %s", err);
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {
	    .size = sizeof o,
	    .cartridge = fleet, .batch = 500, .on_reject = large_reject, .reject_userdata = r};
	assert_int_equal(keel_ingest_new(s, &o, &ing), 0);
	for (size_t i = 0; i < n; i++)
		if (i != left_out)
			assert_int_equal(keel_ingest_add(ing, lines[i], strlen(lines[i]), i + 1),
					 0);
	if (keel_ingest_flush(ing))
		fail_msg("flush: %s", keel_ingest_errmsg(ing));
	struct keel_report rep = *keel_ingest_report(ing);
	keel_ingest_free(ing);
	return rep;
}

/* See support.h. */
void keel_test_large_events(struct keel_store *s, size_t max, const char *why)
{
	char *lines[30];
	for (int i = 1; i <= 30; i++)
		lines[i - 1] = large_line(i, i == 11 ? max : i == 21 ? max + 1 : 0);
	struct keel_store *mem;
	char *err = NULL;
	assert_int_equal(keel_store_open("memory:", &mem, &err), 0);
	struct large_rejects none = {0}, r = {0};
	large_ingest(mem, lines, 30, 20, &none);
	assert_int_equal(none.n, 0);
	char *ref = keel_test_dump(mem, NULL);
	keel_store_close(mem);

	struct keel_report rep = large_ingest(s, lines, 30, SIZE_MAX, &r);
	assert_int_equal(rep.accepted, 29);
	assert_int_equal(rep.rejected, 1);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.position, 21);
	char expected[512];
	snprintf(expected, sizeof expected,
		 "line 21: event \"e21\": envelope of %zu bytes (compacted) is longer than "
		 "the store takes: at most %zu bytes (%s)",
		 max + 1, max, why);
	assert_string_equal(r.message, expected);
	char *d = keel_test_dump(s, NULL);
	assert_string_equal(d, ref);
	free(d);
	free(ref);
	for (int i = 0; i < 30; i++)
		free(lines[i]);
}

/* See support.h. */
struct keel_cartridge *keel_test_fleet_cartridge(const char *from, const char *to)
{
	size_t len;
	char *json = keel_test_read_file(KEEL_SOURCE_DIR "/cartridges/fleet.json", &len);
	assert_non_null(json);
	if (from) {
		/* Every occurrence of from becomes to (same length or shorter). */
		size_t fl = strlen(from), tl = strlen(to);
		assert_true(tl <= fl);
		char *out = malloc(len + 1), *o = out;
		for (char *p = json; *p;) {
			if (!strncmp(p, from, fl)) {
				memcpy(o, to, tl);
				o += tl;
				p += fl;
			} else {
				*o++ = *p++;
			}
		}
		*o = 0;
		free(json);
		json = out;
		len = strlen(json);
	}
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_compile(json, len, &c, &err), 0);
	free(json);
	return c;
}

struct keel_test_lines *keel_test_lines_split(char *text)
{
	struct keel_test_lines *t = calloc(1, sizeof *t);
	t->text = text;
	size_t cap = 1024;
	t->lines = malloc(cap * sizeof *t->lines);
	for (char *p = t->text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = 0;
		if (t->n == cap)
			t->lines = realloc(t->lines, (cap *= 2) * sizeof *t->lines);
		t->lines[t->n++] = p;
	}
	return t;
}

struct keel_test_lines *keel_test_lines_generate(uint64_t events, uint32_t tenants,
						 uint64_t seed, double late, double dups)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = events,
	    .tenants = tenants,
	    .seed = seed,
	    .late = late,
	    .duplicates = dups,
	};
	assert_int_equal(keel_generate_fleet(&o, f), 0);
	fclose(f);
	return keel_test_lines_split(text);
}

void keel_test_lines_free(struct keel_test_lines *t)
{
	if (!t)
		return;
	free(t->lines);
	free(t->text);
	free(t);
}
