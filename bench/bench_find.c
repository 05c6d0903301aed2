/*
 * bench_find.c - finding things on SQLite (issue 16), in one run:
 *
 *   the N-event fleet store (default 1 000 000, one tenant, ingested by
 *     the keel binary at the defaults): keel entities pages of 100 by kind
 *     and by subject prefix, keel search pages of 100 (status has a value,
 *     now and at the moment of the middle event), in-process through the
 *     library (keel_entities, keel_search) so that process start is not
 *     counted; each series walks its listing page after page (following
 *     "next", from the first page again at the end), p50 / p99 / max
 *   which index serves each: EXPLAIN QUERY PLAN of the candidate
 *     statements (src/store/sqlite_find.c) and of the reads confirming
 *     each candidate (the same ones show uses)
 *   what the two indexes cost ingest: the same input through the same
 *     keel binary into a new store with them and into one without them
 *     (dropped before the ingest), alternated, median of R runs each,
 *     in CPU seconds (user + system of the process: wall time on a shared
 *     host is mostly the neighbours') and wall seconds
 *
 * Usage: bench_find [--events N] [--calls K] [--runs R] [--dir DIR]
 *                   [--store PATH]
 * --store reads an existing store of the fleet stream at PATH (a SQLite
 * file) instead: no ingest, and the store is left as it was.
 */

#include <fcntl.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"
#include "store/sqlite_internal.h"
#include "util.h"

static double clock_s(clockid_t which)
{
	struct timespec ts;
	clock_gettime(which, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* This thread's CPU time: what a page costs, whatever the neighbours do. */
static double cpu_now(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench_find: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ the store */

static void generate(const char *path, uint64_t events)
{
	FILE *f = fopen(path, "wb");
	const struct keel_generate_options o = {
	    .size = sizeof o, .events = events, .tenants = 1, .seed = 1};
	if (!f || keel_generate_fleet(&o, f) != 0 || fclose(f) != 0)
		die("generate failed", path);
}

struct cost {
	double cpu, wall;
};

/* Runs the keel binary to the end; its CPU seconds (user + system) and
 * wall seconds. */
static struct cost run(char *const argv[])
{
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(KEEL_BIN, argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("a keel process failed", argv[1]);
	struct cost c = {(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
			 now() - t0};
	return c;
}

static void remove_store(const char *path)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	char p[4200];
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s%s", path, suffix[i]);
		unlink(p);
	}
}

/* A new store at path, holding input: with the find indexes or, without,
 * the schema created and the two indexes dropped before the ingest. */
static struct cost ingest_new(const char *path, const char *input, bool with_indexes)
{
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s", path);
	remove_store(path);
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open(url, &s, &err)) /* the schema of this build */
		die("cannot create the store", err);
	keel_store_close(s);
	if (!with_indexes) {
		sqlite3 *db;
		if (sqlite3_open(path, &db) ||
		    sqlite3_exec(db,
				 "DROP INDEX entity_mentions_kind; DROP INDEX fact_rows_value",
				 NULL, NULL, NULL))
			die("cannot drop the find indexes", sqlite3_errmsg(db));
		sqlite3_close(db);
	}
	char *ing[] = {"keel", "ingest", (char *)input, "--cartridge", "fleet", "--store", url,
		       "--quiet", NULL};
	return run(ing);
}

/* ---------------------------------------------------------------- plans */

static void explain(sqlite3 *db, const char *label, const char *sql)
{
	sqlite3_stmt *st;
	char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL))
		die("cannot explain", sqlite3_errmsg(db));
	sqlite3_free(q);
	printf("  %s:\n", label);
	while (sqlite3_step(st) == SQLITE_ROW)
		printf("    %s\n", (const char *)sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
}

static void explain_candidates(sqlite3 *db, const char *label, enum keel_sqlite_find what,
			       bool lower, bool upper)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_sqlite_find_sql(&b, what, lower, false, upper, false);
	explain(db, label, b.data);
	keel_buf_free(&b);
}

/* The store's own prepared statement whose SQL holds both needles (the
 * confirming reads, cached by the store after their first use). */
static void explain_prepared(sqlite3 *db, const char *label, const char *a, const char *b)
{
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st)) {
		const char *sql = sqlite3_sql(st);
		if (sql && strstr(sql, a) && strstr(sql, b) && !strstr(sql, "EXPLAIN")) {
			explain(db, label, sql);
			return;
		}
	}
	printf("  %s: (statement not found)\n", label);
}

/* ---------------------------------------------------------------- reads */

struct series {
	const char *what;
	const char *kind, *prefix;	 /* entities */
	const char *predicate, *value; /* search */
	bool past;
};

struct latency {
	double p50, p99, max;	 /* milliseconds, wall */
	double cpu_p50, cpu_p99; /* milliseconds of this thread's CPU */
	size_t calls;
	double per_page; /* entries a page, on average */
	size_t walks;	 /* times the whole listing was walked */
};

/* The "next" of a finding document, into cursor ("" when null). */
static void next_of(const char *json, char *cursor, size_t size)
{
	const char *p = strstr(json, "],\"next\":");
	cursor[0] = 0;
	if (!p || p[9] != '"')
		return;
	p += 10;
	size_t n = strcspn(p, "\"");
	if (n >= size)
		die("cursor too long", NULL);
	memcpy(cursor, p, n);
	cursor[n] = 0;
}

static size_t entries_of(const char *json)
{
	size_t n = 0;
	for (const char *p = json; (p = strstr(p, "{\"subject\":")); p++)
		n++;
	return n;
}

static struct latency walk(struct keel_store *s, const struct series *x, int64_t past,
			   size_t calls)
{
	const size_t warm = 20;
	double *lat = malloc(calls * sizeof *lat), *cpu = malloc(calls * sizeof *cpu);
	char cursor[4096] = "";
	struct latency r = {.calls = calls};
	size_t entries = 0;
	struct keel_read_options o = {.size = sizeof o, .at_set = x->past, .at = past};
	for (size_t i = 0; i < warm + calls; i++) {
		struct keel_find_options f = {.size = sizeof f,
					      .kind = x->kind,
					      .prefix = x->prefix,
					      .cursor = cursor[0] ? cursor : NULL,
					      .limit = 100};
		char *json = NULL;
		double t0 = now(), c0 = cpu_now();
		int rc = x->predicate ? keel_search(s, "tenant-00", x->predicate, x->value, &f,
						    &o, &json)
				      : keel_entities(s, "tenant-00", &f, &o, &json);
		double dt = now() - t0, dc = cpu_now() - c0;
		if (rc)
			die("a read failed", keel_store_errmsg(s));
		next_of(json, cursor, sizeof cursor);
		if (!cursor[0])
			r.walks += i >= warm;
		if (i >= warm) {
			lat[i - warm] = dt * 1000;
			cpu[i - warm] = dc * 1000;
			entries += entries_of(json);
		}
		free(json);
	}
	size_t i99 = (size_t)((double)(calls - 1) * 0.99 + 0.5);
	qsort(lat, calls, sizeof *lat, cmp_double);
	qsort(cpu, calls, sizeof *cpu, cmp_double);
	r.p50 = lat[calls / 2];
	r.p99 = lat[i99];
	r.max = lat[calls - 1];
	r.cpu_p50 = cpu[calls / 2];
	r.cpu_p99 = cpu[i99];
	r.per_page = (double)entries / (double)calls;
	free(lat);
	free(cpu);
	return r;
}

/* The ingest of input into new stores without and with the find indexes,
 * alternated; the last store with them (with) is left for the reads. */
static void ingest_cost(const char *input, const char *with, const char *without,
			uint64_t events, size_t runs)
{
	/* Ingest with and without the indexes, alternated; the last store
	 * with them is the one read. */
	double *cw = malloc(runs * sizeof *cw), *cn = malloc(runs * sizeof *cn);
	double *ww = malloc(runs * sizeof *ww), *wn = malloc(runs * sizeof *wn);
	for (size_t i = 0; i < runs; i++) {
		struct cost n = ingest_new(without, input, false);
		struct cost w = ingest_new(with, input, true);
		cn[i] = n.cpu, wn[i] = n.wall, cw[i] = w.cpu, ww[i] = w.wall;
	}
	remove_store(without);
	qsort(cw, runs, sizeof *cw, cmp_double);
	qsort(cn, runs, sizeof *cn, cmp_double);
	qsort(ww, runs, sizeof *ww, cmp_double);
	qsort(wn, runs, sizeof *wn, cmp_double);
	printf("ingest of %llu events into a new SQLite store, median of %zu alternated runs:\n",
	       (unsigned long long)events, runs);
	printf("| %-36s | %8s | %8s |\n", "", "CPU s", "wall s");
	printf("| %-36s | %8.2f | %8.2f |\n", "without the find indexes", cn[runs / 2],
	       wn[runs / 2]);
	printf("| %-36s | %8.2f | %8.2f |\n", "with them (schema of this build)", cw[runs / 2],
	       ww[runs / 2]);
	printf("| %-36s | %8.3f | %8.3f |\n", "ratio", cw[runs / 2] / cn[runs / 2],
	       ww[runs / 2] / wn[runs / 2]);
	fflush(stdout);
	free(cw), free(cn), free(ww), free(wn);
}

int main(int argc, char **argv)
{
	uint64_t events = 1000000;
	size_t calls = 1000, runs = 3;
	const char *dir = NULL, *store = NULL;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"store", required_argument, 0, 's'},
					     {"calls", required_argument, 0, 'k'},
					     {"runs", required_argument, 0, 'r'},
					     {"dir", required_argument, 0, 'd'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:k:r:d:s:", opts, NULL)) != -1) {
		if (c == 's')
			store = optarg;
		else if (c == 'n')
			events = strtoull(optarg, NULL, 10);
		else if (c == 'k')
			calls = strtoull(optarg, NULL, 10);
		else if (c == 'r')
			runs = strtoull(optarg, NULL, 10);
		else if (c == 'd')
			dir = optarg;
		else
			die("usage: bench_find [--events N] [--calls K] [--runs R] [--dir DIR] "
			    "[--store PATH]",
			    NULL);
	}
	if (!events || !calls || !runs)
		die("--events, --calls and --runs must be positive", NULL);
	char tmpl[] = "/tmp/keel-bench-find-XXXXXX";
	if (!store && !dir && !(dir = mkdtemp(tmpl)))
		die("cannot create a directory", NULL);
	char input[4200], with[4200], without[4200];
	if (store) {
		snprintf(with, sizeof with, "%s", store);
	} else {
		snprintf(input, sizeof input, "%s/in.ndjson", dir);
		snprintf(with, sizeof with, "%s/with.db", dir);
		snprintf(without, sizeof without, "%s/without.db", dir);
		generate(input, events);
		ingest_cost(input, with, without, events, runs);
	}
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s", with);
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open_existing(url, &s, &err))
		die("cannot open the store", err);
	/* The moment of the middle event: a past time for search. */
	int64_t past = 0;
	sqlite3 *db = keel_store_sqlite_db(s);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT time FROM events WHERE seq = (SELECT max(seq) / 2 FROM events)",
			       -1, &st, NULL) ||
	    sqlite3_step(st) != SQLITE_ROW)
		die("cannot read the middle event", sqlite3_errmsg(db));
	past = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	char pb[KEEL_TIME_BUFSZ];
	keel_time_format(past, pb);

	static const struct series all[] = {
	    {"entities --kind vehicle", "vehicle", NULL, NULL, NULL, false},
	    {"entities --kind trip", "trip", NULL, NULL, NULL, false},
	    {"entities --kind depot (few: one page)", "depot", NULL, NULL, NULL, false},
	    {"entities --prefix trip:T-00", NULL, "trip:T-00", NULL, NULL, false},
	    {"entities --prefix vehicle:", NULL, "vehicle:", NULL, NULL, false},
	    {"entities (all)", NULL, NULL, NULL, NULL, false},
	    {"search status available", NULL, NULL, "status", "available", false},
	    {"search status in_progress", NULL, NULL, "status", "in_progress", false},
	    {"search status completed", NULL, NULL, "status", "completed", false},
	    {"search status available --at past", NULL, NULL, "status", "available", true},
	    {"search status maintenance --at past", NULL, NULL, "status", "maintenance", true},
	    {"search make DAF (held for good)", NULL, NULL, "make", "DAF", false},
	    {"search year 2018 (a number: no index)", NULL, NULL, "year", "2018", false},
	};
	printf("\npages of 100 on the %s store, %zu pages each (past: %s):\n",
	       store ? store : "new", calls, pb);
	printf("| %-40s | %7s | %7s | %7s | %7s | %7s | %8s | %5s | %-19s |\n", "read",
	       "p50 ms", "p99 ms", "max ms", "cpu p50", "cpu p99", "per page", "walks",
	       "target (p99 wall)");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(all); i++) {
		const struct series *x = &all[i];
		struct latency l = walk(s, x, past, calls);
		double target = x->predicate ? 20 : 5;
		printf("| %-40s | %7.3f | %7.3f | %7.3f | %7.3f | %7.3f | %8.1f | %5zu | "
		       "<= %2.0f ms %-6s |\n",
		       x->what, l.p50, l.p99, l.max, l.cpu_p50, l.cpu_p99, l.per_page, l.walks,
		       target, l.p99 <= target ? "met" : "MISSED");
		fflush(stdout);
	}

	printf("\nwhich index serves each (EXPLAIN QUERY PLAN):\n");
	explain_candidates(db, "entities --prefix: candidates", KEEL_SQLITE_FIND_ENTITIES, true,
			   true);
	explain_candidates(db, "entities --kind: candidates", KEEL_SQLITE_FIND_KIND, true,
			   false);
	explain_candidates(db, "search for a string: candidates", KEEL_SQLITE_FIND_STRING,
			   true, false);
	explain_candidates(db, "search for another value: candidates", KEEL_SQLITE_FIND_VALUE,
			   true, false);
	explain_prepared(db, "entities: each candidate folded (as show finds it)",
			 "FROM entity_mentions", "subject = ?2");
	explain_prepared(db, "search: each candidate's row at the time (as show --at reads it)",
			 "WITH RECURSIVE k", "fact_rows");
	keel_store_close(s);
	if (!store) {
		remove_store(with);
		unlink(input);
	}
	return 0;
}
