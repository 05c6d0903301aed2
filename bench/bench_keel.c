/*
 * bench_keel.c - the parse, memory-store and SQLite ingest table (issues 2
 * and 15), in one run, beside the Python figures of docs/performance.md and
 * against the limits of the same run:
 *
 *   parse + validate envelopes        vs reading the same bytes
 *   parse + handlers, memory store    (Python: 160 000 events/s), one
 *     thread; median of three runs
 *   SQLite at the defaults (batch 500, commits grouped every second):
 *     101 000 and N (default 1 000 000) fleet events, via the keel binary
 *     so that peak RSS and CPU time are the ingest's own; the same N at
 *     batch 20 000 (batch 500 must stay within 1.15x of it); the N re-sent
 *   the SQLite limit: the same final rows (the append-only tables, rows as
 *     stored) inserted by a plain loop of prepared single-row INSERTs in
 *     one transaction
 *   where the limit is: the same 101 000 and N events ingested into stores
 *     without the indexes the reads need (the rows and the event-id key
 *     alone), and those indexes built after them by SQLite's CREATE INDEX
 *   where the time of the N-event ingest goes: the same input through the
 *     same binary into the memory store (reading, parsing, the cartridge
 *     and the memory store's own appends) against the SQLite ingest, in
 *     CPU seconds (wall time on a shared host is mostly the neighbours');
 *     and the same input read and prepared in this process with no store
 *     at all (the reader, then parse, validate, cartridge, compact, hash):
 *     the most a thread preparing beside the store's writer could take
 *     off the ingest's critical path (docs/performance.md, "A writer
 *     thread beside the preparation")
 *
 * Usage: bench_keel [--events N] [--small N] [--dir DIR] [--tiny]
 *   (N default 1000000, --small default 101000; --tiny: 2000 and 1000,
 *   what CI runs to see the benchmark run to its end, bench/CMakeLists.txt)
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "event/envelope.h"
#include "event/json.h"
#include "keel.h"
#include "write/prepare.h"
#include "store/sqlite/parts.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_keel: %s\n", what);
	exit(1);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot read input");
	struct stat st;
	fstat(fileno(f), &st);
	char *buf = malloc((size_t)st.st_size + 1);
	*len = fread(buf, 1, (size_t)st.st_size, f);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static void generate(const char *path, uint64_t events, double late, double dups)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		die("cannot write input");
	const struct keel_generate_options o = {
		.size = sizeof o,
		.events = events, .tenants = 1, .seed = 1, .late = late, .duplicates = dups};
	if (keel_generate_fleet(&o, f) != 0)
		die("generate failed");
	fclose(f);
}

/* The next line of [*p, end) (without its newline) and its length in *n;
 * NULL at the end. Every measurement splits the input this way, as a
 * reader of NDJSON does. */
static inline const char *next_line(const char **p, const char *end, size_t *n)
{
	if (*p >= end)
		return NULL;
	const char *line = *p;
	const char *nl = memchr(line, '\n', (size_t)(end - line));
	if (!nl)
		nl = end;
	*n = (size_t)(nl - line);
	*p = nl + 1;
	return line;
}

/* What one run of the keel binary cost: wall and CPU seconds, peak RSS. */
struct proc_cost {
	double wall, cpu;
	long maxrss_kib;
};

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* This process's user + system CPU seconds so far. */
static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

/* Runs the keel binary; its wall time, CPU time and peak RSS. The peak
 * RSS comes from GNU time (/usr/bin/time -f %M), which forks keel from its
 * own small process: a child forked from this one starts with this
 * process's pages mapped, and the kernel keeps that high-water mark in the
 * child's ru_maxrss through exec. CPU time beside wall time tells a loaded
 * host (wall >> CPU) from a slow path. */
static struct proc_cost run_keel(char *const argv[])
{
	char rss_path[] = "/tmp/keel-bench-rss-XXXXXX";
	int rss_fd = mkstemp(rss_path);
	if (rss_fd < 0)
		die("mkstemp");
	close(rss_fd);
	char *targv[64] = {"time", "-f", "%M", "-o", rss_path, KEEL_BIN};
	size_t n = 6;
	for (size_t i = 1; argv[i] && n < 63; i++)
		targv[n++] = argv[i];
	targv[n] = NULL;
	/* The previous run's dirty pages are written back first, so that the
	 * kernel's writeback of one run's file does not land in the next. */
	sync();
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv("/usr/bin/time", targv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("keel ingest failed (or /usr/bin/time is missing: scripts/deps --bench)");
	double wall = now() - t0;
	long maxrss = -1;
	FILE *f = fopen(rss_path, "r");
	if (!f || fscanf(f, "%ld", &maxrss) != 1)
		die("no peak RSS from /usr/bin/time");
	fclose(f);
	unlink(rss_path);
	return (struct proc_cost){.wall = wall,
				  .cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime),
				  .maxrss_kib = maxrss};
}

static double bench_read_limit(const char *buf, size_t len, size_t *lines)
{
	double t0 = now();
	size_t n = 0;
	unsigned sum = 0;
	const char *p = buf, *line;
	size_t linelen;
	while ((line = next_line(&p, buf + len, &linelen))) {
		sum += (unsigned char)line[0];
		n++;
	}
	double dt = now() - t0;
	if (sum == 1)
		puts("");
	*lines = n;
	return dt;
}

static double bench_parse(const char *buf, size_t len, size_t *ok)
{
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_buf msg;
	keel_buf_init(&msg);
	size_t good = 0;
	double t0 = now();
	const char *p = buf, *line;
	size_t n;
	while ((line = next_line(&p, buf + len, &n))) {
		struct keel_json_error err;
		struct keel_envelope env;
		if (keel_json_parse(&doc, line, n, &err) == 0 &&
		    keel_envelope_read(&doc, &env, &msg) == 0)
			good++;
	}
	double dt = now() - t0;
	keel_json_doc_free(&doc);
	keel_buf_free(&msg);
	*ok = good;
	return dt;
}

static double bench_memory(const char *buf, size_t len, uint64_t *accepted)
{
	struct keel_store *s;
	struct keel_cartridge *c;
	struct keel_ingest *ing;
	if (keel_store_open("memory:", &s, NULL) || keel_cartridge_load("fleet", &c, NULL))
		die("memory store");
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = c, .batch = 500};
	keel_ingest_new(s, &o, &ing);
	double t0 = now();
	uint64_t lineno = 0;
	const char *p = buf, *line;
	size_t n;
	while ((line = next_line(&p, buf + len, &n)))
		if (keel_ingest_add(ing, line, n, ++lineno))
			die("memory ingest");
	keel_ingest_flush(ing);
	double dt = now() - t0;
	*accepted = keel_ingest_report(ing)->accepted;
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	keel_store_close(s);
	return dt;
}

/* The big input read and prepared with no store: keel_reader, as keel
 * ingest reads, then keel_prep_event for every line into an arena reset
 * every 500 events (the default batch). CPU seconds of this process. */
static struct proc_cost bench_prepare(const char *path, uint64_t *prepared)
{
	struct keel_cartridge *c;
	if (keel_cartridge_load("fleet", &c, NULL))
		die("fleet cartridge");
	struct keel_report report = {0};
	struct keel_prep prep;
	keel_prep_init(&prep, c, &report);
	prep.max_line = KEEL_DEFAULT_MAX_LINE;
	struct keel_arena arena;
	keel_arena_init(&arena);
	struct keel_reader *r;
	char *err = NULL;
	double t0 = now(), cpu0 = cpu_self();
	if (keel_reader_open(path, KEEL_DEFAULT_MAX_LINE, &r, &err))
		die("cannot read the big input");
	const char *line;
	size_t len;
	uint64_t lineno, n = 0;
	bool too_long;
	while (keel_reader_next(r, &line, &len, &lineno, &too_long) == 1) {
		if (!too_long && keel_prep_event(&prep, &arena, line, len, lineno))
			n++;
		if (lineno % KEEL_DEFAULT_BATCH == 0)
			keel_arena_reset(&arena);
	}
	struct proc_cost cost = {.wall = now() - t0, .cpu = cpu_self() - cpu0};
	keel_reader_close(r);
	keel_arena_free(&arena);
	keel_prep_free(&prep);
	keel_cartridge_free(c);
	*prepared = n;
	return cost;
}

/* Median of three runs of a measurement that is over in a fraction of a
 * second: one run on a shared machine is mostly the neighbours' noise. */
static double median3(double a, double b, double c)
{
	if (a > b) {
		double t = a;
		a = b;
		b = t;
	}
	return c < a ? a : c > b ? b : c;
}

/* The store's own pragmas (src/store/sqlite/store.c), page cache included: a
 * smaller cache would spill a transaction and flatter a limit. */
static void store_pragmas(sqlite3 *db)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
		 "PRAGMA cache_size=-%d; PRAGMA temp_store=MEMORY; "
		 "PRAGMA wal_autocheckpoint=%d",
		 KEEL_SQLITE_CACHE_KIB, KEEL_SQLITE_AUTOCHECKPOINT);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL))
		die(sqlite3_errmsg(db));
}

/* The SQLite limit: copy every row of src's tables into a fresh store's
 * schema with a plain loop of prepared single-row INSERTs in one
 * transaction. Rows are read into memory first; only the insert loop is
 * timed. The tables are the append-only ones, rows exactly as stored
 * (docs/store-sqlite.md); facts, relations and entities are views. */

static struct proc_cost bench_sqlite_limit(const char *src_path, const char *dst_url,
					   const char *dst_path, uint64_t *rows)
{
	struct keel_store *s;
	if (keel_store_open(dst_url, &s, NULL))
		die("limit store");
	keel_store_close(s);
	sqlite3 *src, *dst;
	if (sqlite3_open(src_path, &src) || sqlite3_open(dst_path, &dst))
		die("sqlite open");
	store_pragmas(dst);
	/* every table of the schema, event_ids included: it is the log's
	 * (tenant, id) key, as the UNIQUE index on events used to be */
	const char *tables[] = {"entity_mentions", "fact_rows", "relation_rows", "events",
				"event_ids"};
	enum { NT = sizeof tables / sizeof tables[0] };
	struct table {
		int ncol;
		size_t nrows;
		sqlite3_value **vals;
		char cols[512]; /* the stored columns: a generated one is not inserted */
	} t[NT];
	for (int i = 0; i < NT; i++) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(src, "SELECT group_concat(name, ',') FROM "
					    "pragma_table_xinfo(?) WHERE hidden = 0",
				       -1, &st, NULL))
			die(sqlite3_errmsg(src));
		sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_text(st, 0))
			die("limit: no columns");
		snprintf(t[i].cols, sizeof t[i].cols, "%s", sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		char sql[640];
		snprintf(sql, sizeof sql, "SELECT %s FROM %s", t[i].cols, tables[i]);
		if (sqlite3_prepare_v2(src, sql, -1, &st, NULL))
			die(sqlite3_errmsg(src));
		t[i].ncol = sqlite3_column_count(st);
		size_t cap = 1024;
		t[i].nrows = 0;
		t[i].vals = malloc(cap * (size_t)t[i].ncol * sizeof(void *));
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (t[i].nrows == cap)
				t[i].vals = realloc(t[i].vals, (cap *= 2) * (size_t)t[i].ncol * sizeof(void *));
			for (int c = 0; c < t[i].ncol; c++)
				t[i].vals[t[i].nrows * (size_t)t[i].ncol + (size_t)c] =
					sqlite3_value_dup(sqlite3_column_value(st, c));
			t[i].nrows++;
		}
		sqlite3_finalize(st);
	}
	sync();
	double t0 = now(), c0 = cpu_self();
	sqlite3_exec(dst, "BEGIN", 0, 0, 0);
	*rows = 0;
	for (int i = 0; i < NT; i++) {
		char sql[1024];
		int n = snprintf(sql, sizeof sql, "INSERT INTO %s (%s) VALUES (", tables[i],
				 t[i].cols);
		for (int c = 0; c < t[i].ncol; c++)
			n += snprintf(sql + n, sizeof sql - (size_t)n, c ? ",?" : "?");
		snprintf(sql + n, sizeof sql - (size_t)n, ")");
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(dst, sql, -1, &st, NULL))
			die(sqlite3_errmsg(dst));
		for (size_t r = 0; r < t[i].nrows; r++) {
			for (int c = 0; c < t[i].ncol; c++)
				sqlite3_bind_value(st, c + 1, t[i].vals[r * (size_t)t[i].ncol + (size_t)c]);
			if (sqlite3_step(st) != SQLITE_DONE)
				die(sqlite3_errmsg(dst));
			sqlite3_reset(st);
		}
		sqlite3_finalize(st);
		*rows += t[i].nrows;
	}
	sqlite3_exec(dst, "COMMIT", 0, 0, 0);
	struct proc_cost cost = {.wall = now() - t0, .cpu = cpu_self() - c0};
	for (int i = 0; i < NT; i++) {
		for (size_t k = 0; k < t[i].nrows * (size_t)t[i].ncol; k++)
			sqlite3_value_free(t[i].vals[k]);
		free(t[i].vals);
	}
	sqlite3_close(src);
	sqlite3_close(dst);
	return cost;
}

/* Where the limit of the write path is (docs/performance.md, "The
 * indexes the reads need are the write path's limit"): the rows alone,
 * and the reads' indexes built after them by SQLite itself. A new store
 * at path gets its schema from keel, then loses every secondary index of
 * the row tables (their SQL is kept in *sql, from sqlite_schema, so that
 * this follows the schema as it changes); the ingest of those rows alone
 * is then timed by the caller, and bench_build_indexes builds the same
 * indexes back with CREATE INDEX, SQLite's bulk path (it sorts the keys,
 * then fills each b-tree in order). The event-id key stays: it is the
 * write path's own lookup. */
#define ROW_INDEXES                                                                 \
	" FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN " \
	"('fact_rows', 'relation_rows', 'entity_mentions')"

static void store_without_row_indexes(const char *path, char **sql)
{
	char url[4200];
	snprintf(url, sizeof url, "sqlite:%s", path);
	struct keel_store *s;
	if (keel_store_open(url, &s, NULL))
		die("store without indexes");
	keel_store_close(s);
	sqlite3 *db;
	sqlite3_stmt *st;
	if (sqlite3_open(path, &db) ||
	    sqlite3_prepare_v2(db,
			       "SELECT group_concat(sql, ';'), "
			       "group_concat('DROP INDEX ' || name, ';')" ROW_INDEXES,
			       -1, &st, NULL) ||
	    sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_text(st, 0))
		die("no row indexes in the schema");
	*sql = strdup((const char *)sqlite3_column_text(st, 0));
	char *drops = strdup((const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	if (sqlite3_exec(db, drops, NULL, NULL, NULL))
		die(sqlite3_errmsg(db));
	free(drops);
	sqlite3_close(db);
}

static struct proc_cost bench_build_indexes(const char *path, const char *sql)
{
	sqlite3 *db;
	if (sqlite3_open(path, &db))
		die("sqlite open");
	store_pragmas(db);
	sync();
	double t0 = now(), c0 = cpu_self();
	if (sqlite3_exec(db, sql, NULL, NULL, NULL))
		die(sqlite3_errmsg(db));
	struct proc_cost cost = {.wall = now() - t0, .cpu = cpu_self() - c0};
	sqlite3_close(db);
	return cost;
}

/* n with its digits in groups of three, "101 000", as the tables print it. */
static void grouped(uint64_t n, char *out, size_t size)
{
	char digits[24];
	int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			out[o++] = ' ';
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

static const char *verdict(int ok)
{
	return ok ? "met" : "MISSED";
}

int main(int argc, char **argv)
{
	uint64_t big = 1000000, small = 101000;
	const char *dir = NULL;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"small", required_argument, 0, 's'},
					     {"dir", required_argument, 0, 'd'},
					     {"tiny", no_argument, 0, 't'},
					     {0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:s:d:t", opts, NULL)) != -1) {
		if (c == 'n')
			big = strtoull(optarg, NULL, 10);
		else if (c == 's')
			small = strtoull(optarg, NULL, 10);
		else if (c == 'd')
			dir = optarg;
		else if (c == 't')
			big = 2000, small = 1000;
		else
			return 2;
	}
	if (!big || !small)
		die("--events and --small must be positive");
	/* The targets are set for the sizes the issues name. */
	bool small_targets = small == 101000;
	char small_n[32];
	grouped(small, small_n, sizeof small_n);
	char tmpl[] = "/tmp/keel-bench-XXXXXX";
	bool own_dir = !dir; /* removed at the end: about 2 GB at 1M events */
	if (!dir && !(dir = mkdtemp(tmpl)))
		die("mkdtemp");
	char small_in[4096], big_in[4096], db_small[4096], db_big[4096], db_wide[4096];
	char url[4200];
	snprintf(small_in, sizeof small_in, "%s/fleet-small.ndjson", dir);
	snprintf(big_in, sizeof big_in, "%s/fleet-big.ndjson", dir);
	snprintf(db_small, sizeof db_small, "%s/small.db", dir);
	snprintf(db_big, sizeof db_big, "%s/big.db", dir);
	snprintf(db_wide, sizeof db_wide, "%s/big-batch20000.db", dir);
	char limit_path[4096], bare_small[4096], bare_big[4096];
	snprintf(limit_path, sizeof limit_path, "%s/limit.db", dir);
	snprintf(bare_small, sizeof bare_small, "%s/small-rows-alone.db", dir);
	snprintf(bare_big, sizeof bare_big, "%s/big-rows-alone.db", dir);
	/* A --dir of an earlier run still holds its stores: start them afresh,
	 * or the ingest would measure re-sends and the limit copy would fail. */
	const char *stores[] = {db_small, db_big, db_wide, limit_path, bare_small, bare_big};
	static const char *const suffix[] = {"", "-wal", "-shm"};
	for (size_t i = 0; i < sizeof stores / sizeof stores[0]; i++) {
		for (size_t k = 0; k < sizeof suffix / sizeof suffix[0]; k++) {
			char p[4200];
			snprintf(p, sizeof p, "%s%s", stores[i], suffix[k]);
			if (unlink(p) != 0 && errno != ENOENT)
				die("cannot remove an earlier run's store");
		}
	}
	fprintf(stderr, "generating inputs in %s ...\n", dir);
	generate(small_in, small, 0.0, 0.0);

	size_t len, lines, parsed;
	char *buf = read_all(small_in, &len);
	double t_read = bench_read_limit(buf, len, &lines);
	double t_parse = bench_parse(buf, len, &parsed);
	if (parsed != lines)
		die("parse rejected generated events");
	uint64_t accepted;
	double t_mem = median3(bench_memory(buf, len, &accepted), bench_memory(buf, len, &accepted),
			       bench_memory(buf, len, &accepted));
	free(buf);
	/* The big input is written only now, so that its page cache does not
	 * weigh on the in-process measurements above. */
	generate(big_in, big, 0.0, 0.0);

	/* The defaults (batch 500, --commit-interval 1000) are what a user
	 * gets; they are not passed, so that a change of default shows here. */
	char store_small[4200], store_big[4200], store_wide[4200];
	snprintf(store_small, sizeof store_small, "sqlite:%s", db_small);
	snprintf(store_big, sizeof store_big, "sqlite:%s", db_big);
	snprintf(store_wide, sizeof store_wide, "sqlite:%s", db_wide);
	fprintf(stderr, "SQLite: %s events ...\n", small_n);
	char *a1[] = {"keel", "ingest", small_in, "--cartridge", "fleet", "--store", store_small,
		      "--quiet", NULL};
	struct proc_cost c_small = run_keel(a1);
	fprintf(stderr, "SQLite: %llu events at the defaults, then re-sent ...\n",
		(unsigned long long)big);
	char *a2[] = {"keel", "ingest", big_in, "--cartridge", "fleet", "--store", store_big,
		      "--quiet", NULL};
	struct proc_cost c_big = run_keel(a2);
	struct proc_cost c_resend = run_keel(a2);
	fprintf(stderr, "SQLite: %llu events at batch 20 000 ...\n", (unsigned long long)big);
	char *a3[] = {"keel", "ingest", big_in, "--cartridge", "fleet", "--store", store_wide, "--batch", "20000",
		      "--quiet", NULL};
	struct proc_cost c_wide = run_keel(a3);

	/* The same input through the same binary into the memory store: what
	 * reading, parsing and the cartridge cost in that process, so that the
	 * SQLite ingest's CPU time splits into those and the store's share. */
	fprintf(stderr, "memory store: %llu events ...\n", (unsigned long long)big);
	char *a4[] = {"keel", "ingest", big_in, "--cartridge", "fleet", "--store", "memory:",
		      "--quiet", NULL};
	struct proc_cost c_mem = run_keel(a4);
	fprintf(stderr, "reading and preparing %llu events, no store ...\n",
		(unsigned long long)big);
	uint64_t prepared;
	struct proc_cost c_prep = bench_prepare(big_in, &prepared);
	if (prepared != big)
		die("preparing rejected generated events");

	fprintf(stderr, "SQLite: the limit (prepared INSERT loop) ...\n");
	snprintf(url, sizeof url, "sqlite:%s", limit_path);
	uint64_t rows;
	struct proc_cost c_limit = bench_sqlite_limit(db_big, url, limit_path, &rows);

	/* The rows alone, then the reads' indexes built after them: the same
	 * ingests into stores without those indexes, each followed by
	 * CREATE INDEX in this process. */
	fprintf(stderr, "SQLite: the rows alone, then their indexes built after ...\n");
	char *index_sql;
	char bare_small_url[4200], bare_big_url[4200];
	snprintf(bare_small_url, sizeof bare_small_url, "sqlite:%s", bare_small);
	snprintf(bare_big_url, sizeof bare_big_url, "sqlite:%s", bare_big);
	store_without_row_indexes(bare_small, &index_sql);
	free(index_sql);
	store_without_row_indexes(bare_big, &index_sql);
	char *a5[] = {"keel", "ingest", small_in, "--cartridge", "fleet", "--store", bare_small_url,
		      "--quiet", NULL};
	struct proc_cost c_bare_small = run_keel(a5);
	struct proc_cost c_index_small = bench_build_indexes(bare_small, index_sql);
	char *a6[] = {"keel", "ingest", big_in, "--cartridge", "fleet", "--store", bare_big_url,
		      "--quiet", NULL};
	struct proc_cost c_bare_big = run_keel(a6);
	struct proc_cost c_index_big = bench_build_indexes(bare_big, index_sql);
	free(index_sql);

	double parse_rate = (double)lines / t_parse;
	double mem_rate = (double)lines / t_mem;
	double mib = 1024.0;
	char label[96];
	printf("Keel %s bench_keel (issues 2 and 15), one run, %llu-event input; %ld cores\n",
	       KEEL_VERSION, (unsigned long long)big, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-48s %14s %10s %14s %12s %s\n", "measure", "this run", "CPU", "python",
	       "target", "");
	printf("%-48s %11.0f /s %10s %14s %12s %s\n", "parse + validate envelopes", parse_rate,
	       "", "157 000 /s", ">= 1.5M/s", verdict(parse_rate >= 1.5e6));
	printf("%-48s %11.0f /s\n", "  limit: reading the same bytes (lines)",
	       (double)lines / t_read);
	printf("%-48s %13.2fx\n", "  parse / read ratio (time)", t_parse / t_read);
	printf("%-48s %11.0f /s %10s %14s %12s %s\n", "parse + handlers, memory store, batch 500",
	       mem_rate, "", "160 000 /s", ">= 1M/s", verdict(mem_rate >= 1e6));
	snprintf(label, sizeof label, "SQLite %s events, defaults", small_n);
	printf("%-48s %12.2f s %8.2f s %14s %12s %s\n", label, c_small.wall, c_small.cpu,
	       small_targets ? "2.9 s" : "", small_targets ? "<= 0.8 s" : "",
	       small_targets ? verdict(c_small.wall <= 0.8) : "");
	snprintf(label, sizeof label, "SQLite %llu events, defaults (batch 500)",
		 (unsigned long long)big);
	printf("%-48s %12.2f s %8.2f s %14s %12s %s\n", label, c_big.wall, c_big.cpu,
	       big == 1000000 ? "~40 s (est.)" : "", big == 1000000 ? "<= 8 s" : "",
	       big == 1000000 ? verdict(c_big.wall <= 8.0) : "");
	printf("%-48s %12.2f s %8.2f s\n", "  the same into memory: (keel ingest, memory:)",
	       c_mem.wall, c_mem.cpu);
	printf("%-48s %12s %8.2f s\n", "  CPU: SQLite's share (ingest - memory)", "",
	       c_big.cpu - c_mem.cpu);
	printf("%-48s %12.2f s %8.2f s\n", "  reading + preparing alone (no store)",
	       c_prep.wall, c_prep.cpu);
	printf("%-48s %12s %8.2f s\n", "  CPU: the store's writes (ingest - preparing)",
	       "", c_big.cpu - c_prep.cpu);
	printf("%-48s %13.0f%%\n", "  preparing / ingest (CPU): a writer thread's most",
	       100.0 * c_prep.cpu / c_big.cpu);
	snprintf(label, sizeof label, "SQLite %llu events, batch 20 000",
		 (unsigned long long)big);
	printf("%-48s %12.2f s %8.2f s\n", label, c_wide.wall, c_wide.cpu);
	printf("%-48s %13.2fx %9.2fx %14s %12s %s\n", "  batch 500 / batch 20 000 (wall, CPU)",
	       c_big.wall / c_wide.wall, c_big.cpu / c_wide.cpu, "", "<= 1.15x",
	       verdict(c_big.wall / c_wide.wall <= 1.15));
	printf("%-48s %12.2f s %8.2f s\n", "  limit: same rows, prepared INSERT loop",
	       c_limit.wall, c_limit.cpu);
	printf("%-48s %13.2fx %9.2fx\n", "  ingest (defaults) / limit (wall, CPU)",
	       c_big.wall / c_limit.wall, c_big.cpu / c_limit.cpu);
	printf("where the limit is: the rows alone (no index the reads need), then those "
	       "indexes built after them by SQLite's CREATE INDEX\n");
	snprintf(label, sizeof label, "SQLite %s events, rows alone", small_n);
	printf("%-48s %12.2f s %8.2f s %14s %12s %s\n", label, c_bare_small.wall,
	       c_bare_small.cpu, "", small_targets ? "(<= 0.8 s)" : "",
	       small_targets ? verdict(c_bare_small.wall <= 0.8) : "");
	printf("%-48s %12.2f s %8.2f s\n", "  then their indexes, CREATE INDEX",
	       c_index_small.wall, c_index_small.cpu);
	printf("%-48s %13.2fx %9.2fx\n", "  (rows alone + CREATE INDEX) / ingest",
	       (c_bare_small.wall + c_index_small.wall) / c_small.wall,
	       (c_bare_small.cpu + c_index_small.cpu) / c_small.cpu);
	snprintf(label, sizeof label, "SQLite %llu events, rows alone", (unsigned long long)big);
	printf("%-48s %12.2f s %8.2f s %14s %12s %s\n", label, c_bare_big.wall, c_bare_big.cpu,
	       "", big == 1000000 ? "(<= 8 s)" : "",
	       big == 1000000 ? verdict(c_bare_big.wall <= 8.0) : "");
	printf("%-48s %12.2f s %8.2f s\n", "  then their indexes, CREATE INDEX",
	       c_index_big.wall, c_index_big.cpu);
	printf("%-48s %13.2fx %9.2fx\n", "  (rows alone + CREATE INDEX) / ingest",
	       (c_bare_big.wall + c_index_big.wall) / c_big.wall,
	       (c_bare_big.cpu + c_index_big.cpu) / c_big.cpu);
	snprintf(label, sizeof label, "SQLite %llu re-sent (all duplicates)",
		 (unsigned long long)big);
	printf("%-48s %12.2f s %8.2f s %14s %12s %s\n", label, c_resend.wall, c_resend.cpu, "",
	       "<= 1.5 s", verdict(c_resend.wall <= 1.5));
	snprintf(label, sizeof label, "peak RSS, ingest %s (defaults)", small_n);
	printf("%-48s %10.1f MiB %10s %14s %12s %s\n", label, (double)c_small.maxrss_kib / mib, "", "", "<= 64 MiB",
	       verdict(c_small.maxrss_kib <= 64 * 1024));
	snprintf(label, sizeof label, "peak RSS, ingest %llu (defaults)", (unsigned long long)big);
	printf("%-48s %10.1f MiB %10s %14s %12s %s\n", label, (double)c_big.maxrss_kib / mib, "",
	       "", "<= 64 MiB", verdict(c_big.maxrss_kib <= 64 * 1024));
	snprintf(label, sizeof label, "peak RSS, ingest %llu (batch 20 000)",
		 (unsigned long long)big);
	printf("%-48s %10.1f MiB\n", label, (double)c_wide.maxrss_kib / mib);
	snprintf(label, sizeof label, "peak RSS, re-send %llu", (unsigned long long)big);
	printf("%-48s %10.1f MiB\n", label, (double)c_resend.maxrss_kib / mib);
	printf("(the memory store keeps the whole graph: its peak RSS, %.0f MiB, is not a "
	       "target)\n",
	       (double)c_mem.maxrss_kib / mib);
	printf("(rows in the limit copy: %llu; memory-store events accepted: %llu; CPU is the "
	       "ingest process's user + system time: wall well above it is waiting, for the "
	       "disk or a busy host)\n",
	       (unsigned long long)rows, (unsigned long long)accepted);
	fflush(stdout);
	if (own_dir) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_keel: could not remove %s\n", dir);
	}
	return 0;
}
