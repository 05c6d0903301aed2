/*
 * bench_find.c - finding things on SQLite, in one run:
 *
 *   the N-event fleet store (default 1 000 000, one tenant, ingested by
 *     the keel binary at the defaults): keel entities pages of 100 by kind
 *     and by subject prefix, keel search pages of 100 (status has a value,
 *     now and at the moment of the middle event), in-process through the
 *     library (keel_entities, keel_search) so that process start is not
 *     counted; each series walks its listing page after page (following
 *     "next", from the first page again at the end), p50 / p99 / max, and
 *     which statement found its candidates (a search at or after its
 *     predicate's horizon reads the current rows, fact_current)
 *   the fold (src/store/sqlite/current.c): the first search at the present
 *     after the ingest, which folds every fact row into the current rows,
 *     timed apart; then rounds of 1 000 more events ingested by the keel
 *     binary, each followed by a search that folds their rows and one
 *     that has nothing to fold
 *   which index serves each: EXPLAIN QUERY PLAN of the candidate
 *     statements (src/store/sqlite/find.c) and of the reads confirming
 *     each candidate (the same ones show uses)
 *   what finding costs ingest: the same input into a new store with
 *     everything this build writes; into one without the two finding
 *     indexes (dropped before the ingest); and, with --before-keel, by
 *     that keel binary (one built from the commit before the current rows,
 *     bench/run builds it) into a store of its own schema, i.e. without
 *     the current rows' tables: the write path is the same, so the two
 *     should cost the same. Alternated, median of R runs each, in
 *     CPU seconds (user + system of the process: wall time on a shared
 *     host is mostly the neighbours') and wall seconds
 *
 * Usage: bench_find [--events N] [--calls K] [--runs R] [--dir DIR]
 *                   [--store PATH] [--before-keel PATH] [--tiny]
 * --tiny: 2000 events, K 20, R 1 (what CI runs to see the benchmark run to
 * its end, bench/CMakeLists.txt). --store reads an existing store of the fleet stream at PATH (a SQLite
 * file) instead: no ingest, and the store is left as it was but for the
 * current rows its searches fold.
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
#include "store/sqlite/internal.h"
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

/* Lines [from, from + n) of the file at src into a new file at dst. */
static void copy_lines(const char *src, const char *dst, uint64_t from, uint64_t n)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	if (!in || !out)
		die("cannot split the input", dst);
	char *line = NULL;
	size_t cap = 0;
	for (uint64_t i = 0; i < from + n && getline(&line, &cap, in) > 0; i++)
		if (i >= from)
			fputs(line, out);
	free(line);
	fclose(in);
	if (fclose(out) != 0)
		die("cannot write", dst);
}

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

/* Runs a keel binary to the end; its CPU seconds (user + system) and
 * wall seconds. */
static struct cost run(const char *keel, char *const argv[])
{
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(keel, argv);
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

/* How a store for the ingest's cost is made. */
enum variant {
	WITH_ALL,	  /* this build's schema */
	WITHOUT_INDEXES,  /* the two finding indexes dropped */
	BEFORE_CURRENT,	  /* by --before-keel, which creates its own schema */
	NVARIANTS
};

/* A new store at path, holding input, as variant v. */
static struct cost ingest_new(const char *path, const char *input, enum variant v,
			      const char *before_keel)
{
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s", path);
	remove_store(path);
	if (v != BEFORE_CURRENT) {
		struct keel_store *s;
		char *err = NULL;
		if (keel_store_open(url, &s, &err)) /* the schema of this build */
			die("cannot create the store", err);
		keel_store_close(s);
	}
	if (v == WITHOUT_INDEXES) {
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
	return run(v == BEFORE_CURRENT ? before_keel : KEEL_BIN, ing);
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

/* The ingest of input into new stores of each variant, alternated; the
 * last store with everything (with) is left for the reads. */
static void ingest_cost(const char *input, const char *with, const char *other,
			uint64_t events, size_t runs, const char *before_keel)
{
	static const char *const label[NVARIANTS] = {
	    [WITH_ALL] = "with all (schema of this build)",
	    [WITHOUT_INDEXES] = "without the two finding indexes",
	    [BEFORE_CURRENT] = "before the current rows (--before-keel)",
	};
	double *cpu[NVARIANTS], *wall[NVARIANTS];
	size_t nv = before_keel ? NVARIANTS : BEFORE_CURRENT;
	for (size_t v = 0; v < nv; v++) {
		cpu[v] = malloc(runs * sizeof *cpu[v]);
		wall[v] = malloc(runs * sizeof *wall[v]);
	}
	for (size_t i = 0; i < runs; i++)
		for (size_t v = nv; v-- > 0;) { /* WITH_ALL last: its store is read */
			struct cost c = ingest_new(v == WITH_ALL ? with : other, input, v,
						   before_keel);
			cpu[v][i] = c.cpu, wall[v][i] = c.wall;
		}
	remove_store(other);
	for (size_t v = 0; v < nv; v++) {
		qsort(cpu[v], runs, sizeof *cpu[v], cmp_double);
		qsort(wall[v], runs, sizeof *wall[v], cmp_double);
	}
	printf("ingest of %llu events into a new SQLite store, median of %zu alternated runs:\n",
	       (unsigned long long)events, runs);
	printf("| %-42s | %8s | %8s | %14s |\n", "", "CPU s", "wall s", "with all: CPU x");
	for (size_t v = nv; v-- > 0;)
		printf("| %-42s | %8.2f | %8.2f | %14.3f |\n", label[v], cpu[v][runs / 2],
		       wall[v][runs / 2], cpu[WITH_ALL][runs / 2] / cpu[v][runs / 2]);
	fflush(stdout);
	for (size_t v = 0; v < nv; v++)
		free(cpu[v]), free(wall[v]);
}

static int64_t sql_i64(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) || sqlite3_step(st) != SQLITE_ROW)
		die("cannot read", sqlite3_errmsg(db));
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Which statement finds a search's candidates, as the store chooses it
 * (src/store/sqlite/find.c): the current rows at or after the predicate's
 * horizon, the spans before it while few hold the value, the walks
 * otherwise. */
static const char *search_index(struct keel_store *s, const struct series *x, int64_t at)
{
	/* the value as stored: a string in quotes, a number or a boolean bare */
	bool bare = x->value[0] == '-' || (x->value[0] >= '0' && x->value[0] <= '9') ||
		    !strcmp(x->value, "true") || !strcmp(x->value, "false");
	char value[256];
	snprintf(value, sizeof value, bare ? "%s" : "\"%s\"", x->value);
	enum keel_sqlite_find what;
	if (keel_store_sqlite_search_source(s, "tenant-00", x->predicate, value, at, &what))
		die("cannot tell which statement a search reads", keel_store_errmsg(s));
	switch (what) {
	case KEEL_SQLITE_FIND_CURRENT:
		return "fact_current_value";
	case KEEL_SQLITE_FIND_SPANS:
		return "fact_spans";
	case KEEL_SQLITE_FIND_STRING:
		return "fact_rows_value walk";
	default:
		return "fact_rows_key walk";
	}
}

/* ---------------------------------------------------------- the fold */


static int64_t fact_rows_to_fold(sqlite3 *db)
{
	return sql_i64(db, "SELECT (SELECT count(*) FROM fact_rows WHERE seq > (SELECT "
			   "value FROM meta WHERE key = 'fact_current_seq'))");
}

/* One page of search status available at the present: wall and CPU ms. */
static void present_search(struct keel_store *s, double *wall_ms, double *cpu_ms)
{
	struct keel_find_options f = {.size = sizeof f, .limit = 100};
	struct keel_read_options o = {.size = sizeof o};
	char *json = NULL;
	double t0 = now(), c0 = cpu_now();
	if (keel_search(s, "tenant-00", "status", "available", &f, &o, &json))
		die("a search failed", keel_store_errmsg(s));
	*wall_ms = (now() - t0) * 1000;
	*cpu_ms = (cpu_now() - c0) * 1000;
	free(json);
}

/* The first search at the present on the new store folds every fact row
 * (src/store/sqlite/current.c): its time, apart from the series. */
static void first_search(struct keel_store *s, sqlite3 *db)
{
	int64_t rows = fact_rows_to_fold(db);
	double wall, cpu;
	present_search(s, &wall, &cpu);
	if (fact_rows_to_fold(db) != 0)
		die("the first search did not fold", NULL);
	printf("\nfirst search at the present after the ingest (status available, a page of "
	       "100), folding %lld fact rows: %.0f ms wall, %.0f ms CPU\n",
	       (long long)rows, wall, cpu);
	fflush(stdout);
}

/* Rounds of n more events by the keel binary, each followed by a search
 * at the present (which folds their rows) and another (nothing to fold). */
static void more_then_search(struct keel_store *s, sqlite3 *db, const char *url,
			     char more[][4200], size_t rounds, size_t n)
{
	double fold[8], again[8];
	int64_t rows = 0;
	for (size_t i = 0; i < rounds; i++) {
		char *ing[] = {"keel",	 "ingest", more[i], "--cartridge", "fleet",
			       "--store", (char *)url, "--quiet", NULL};
		run(KEEL_BIN, ing);
		rows += fact_rows_to_fold(db);
		double cpu;
		present_search(s, &fold[i], &cpu);
		present_search(s, &again[i], &cpu);
	}
	qsort(fold, rounds, sizeof *fold, cmp_double);
	qsort(again, rounds, sizeof *again, cmp_double);
	printf("\n%zu rounds of %zu more events (keel ingest), then search status available "
	       "at the present, a page of 100:\n",
	       rounds, n);
	printf("  the search that folds their rows (%.0f a round): median %.2f ms, max %.2f "
	       "ms wall\n",
	       (double)rows / (double)rounds, fold[rounds / 2], fold[rounds - 1]);
	printf("  the search after it (nothing to fold):          median %.2f ms, max %.2f "
	       "ms wall\n",
	       again[rounds / 2], again[rounds - 1]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	uint64_t events = 1000000;
	size_t calls = 1000, runs = 3;
	const char *dir = NULL, *store = NULL, *before_keel = NULL;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"store", required_argument, 0, 's'},
					     {"calls", required_argument, 0, 'k'},
					     {"runs", required_argument, 0, 'r'},
					     {"dir", required_argument, 0, 'd'},
					     {"before-keel", required_argument, 0, 'b'},
					     {"tiny", no_argument, 0, 't'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:k:r:d:s:b:t", opts, NULL)) != -1) {
		if (c == 't')
			events = 2000, calls = 20, runs = 1;
		else if (c == 'b')
			before_keel = optarg;
		else if (c == 's')
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
			    "[--store PATH] [--before-keel PATH] [--tiny]",
			    NULL);
	}
	if (!events || !calls || !runs)
		die("--events, --calls and --runs must be positive", NULL);
	if (before_keel && access(before_keel, X_OK) != 0)
		die("--before-keel is not an executable", before_keel);
	/* More events after the store's, ingested after the series: a search
	 * then folds only their rows. */
	enum { MORE_ROUNDS = 5, MORE_EVENTS = 1000 };
	char more[MORE_ROUNDS][4200];
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
		char all[4200];
		snprintf(all, sizeof all, "%s/all.ndjson", dir);
		generate(all, events + MORE_ROUNDS * MORE_EVENTS);
		copy_lines(all, input, 0, events);
		for (size_t i = 0; i < MORE_ROUNDS; i++) {
			snprintf(more[i], sizeof more[i], "%s/more%zu.ndjson", dir, i);
			copy_lines(all, more[i], events + i * MORE_EVENTS, MORE_EVENTS);
		}
		unlink(all);
		ingest_cost(input, with, without, events, runs, before_keel);
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
	if (!store)
		first_search(s, db);

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
	    {"search status completed --at past", NULL, NULL, "status", "completed", true},
	    {"search make DAF (held for good)", NULL, NULL, "make", "DAF", false},
	    {"search year 2018 (a number)", NULL, NULL, "year", "2018", false},
	    {"search odometer_km 0 (a number, none)", NULL, NULL, "odometer_km", "0", false},
	};
	printf("\npages of 100 on the %s store, %zu pages each (past: %s):\n",
	       store ? store : "new", calls, pb);
	printf("| %-40s | %7s | %7s | %7s | %7s | %7s | %8s | %5s | %-19s | %-20s |\n",
	       "read", "p50 ms", "p99 ms", "max ms", "cpu p50", "cpu p99", "per page", "walks",
	       "target (p99 wall)", "candidates from");
	for (size_t i = 0; i < KEEL_ARRAY_LEN(all); i++) {
		const struct series *x = &all[i];
		struct latency l = walk(s, x, past, calls);
		double target = x->predicate ? 20 : 5;
		const char *index = !x->predicate ? x->kind ? "entity_mentions_kind"
							    : "entity_mentions_key"
				    : search_index(s, x, x->past ? past : keel_time_now());
		printf("| %-40s | %7.3f | %7.3f | %7.3f | %7.3f | %7.3f | %8.1f | %5zu | "
		       "<= %2.0f ms %-6s | %-20s |\n",
		       x->what, l.p50, l.p99, l.max, l.cpu_p50, l.cpu_p99, l.per_page, l.walks,
		       target, l.p99 <= target ? "met" : "MISSED", index);
		fflush(stdout);
	}

	if (!store)
		more_then_search(s, db, url, more, MORE_ROUNDS, MORE_EVENTS);

	printf("\nwhich index serves each (EXPLAIN QUERY PLAN):\n");
	explain_candidates(db, "entities --prefix: candidates", KEEL_SQLITE_FIND_ENTITIES, true,
			   true);
	explain_candidates(db, "entities --kind: candidates", KEEL_SQLITE_FIND_KIND, true,
			   false);
	explain_candidates(db, "search at or after the horizon: candidates",
			   KEEL_SQLITE_FIND_CURRENT, true, false);
	explain_candidates(db, "search before it: candidates", KEEL_SQLITE_FIND_SPANS, true,
			   false);
	explain_candidates(db, "search as known at a moment, a string: candidates",
			   KEEL_SQLITE_FIND_STRING, true, true);
	explain_candidates(db, "search as known at a moment, another value: candidates",
			   KEEL_SQLITE_FIND_VALUE, true, true);
	explain_prepared(db, "entities: each candidate folded (as show finds it)",
			 "FROM entity_mentions", "subject = ?2");
	explain_prepared(db, "search: each candidate's row at the time (as show --at reads it)",
			 "WITH RECURSIVE k", "fact_rows");
	keel_store_close(s);
	if (!store) {
		remove_store(with);
		unlink(input);
		for (size_t i = 0; i < MORE_ROUNDS; i++)
			unlink(more[i]);
	}
	return 0;
}
