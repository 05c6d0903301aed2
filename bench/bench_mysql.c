/*
 * bench_mysql.c - MySQL/MariaDB ingestion (issues 3 and 15) measured on
 * this machine, in one run, beside the Python figures of docs/performance.md:
 *
 *   3 030 and 101 000 fleet events at batch 500 (commits grouped every
 *   second, the default)
 *   N (default 1 000 000) events at batch 500 (--big-batch adds sizes)
 *   the 101 000 re-sent (all duplicates)
 *   statements per batch (mean and most)
 *   the limit: LOAD DATA LOCAL INFILE of the same final rows (the
 *   append-only tables as stored, exported from the N-event store) into
 *   the same schema, in one transaction, and keel's rows/s as a ratio of it
 *   where the time goes: the 101 000 events again at the two batch sizes,
 *   with the store's statement profile on, side by side per kind of
 *   statement (what the smaller batch pays, and in which statements)
 *
 * The store is driven through the library in this process (the keel
 * binary does the same work around it); times cover ingestion from the
 * first event to the last commit, not opening the store. Inputs are the
 * generator's profile 1 with one tenant, as in bench_keel.
 *
 * Usage: bench_mysql [--events N] [--big-batch B[,B...]] [--dir DIR]
 *                    [--url mysql://user:pass@host:port/db] [--tiny]
 * (--tiny: 300, 1000 and 2000 events where the run uses 3 030, 101 000 and
 * N: what CI runs to see the benchmark run to its end, bench/CMakeLists.txt.)
 * (--big-batch: the batch sizes of the N-event runs, default 500.)
 * Without --url a private MariaDB is started with scripts/mariadb-test-
 * server and stopped at the end. With --url, its user must be allowed to
 * create databases named after db with a suffix; the URL must not need
 * percent-decoding.
 */
#if defined(__has_include)
#if !__has_include(<mysql.h>)
#define KEEL_BENCH_NO_MYSQL
#endif
#endif

#ifdef KEEL_BENCH_NO_MYSQL
/* Built without the MySQL store (KEEL_WITH_MYSQL=OFF): nothing to measure. */
#include <stdio.h>
int main(void)
{
	puts("bench_mysql: built without the MySQL store");
	return 0;
}
#else
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "keel.h"
#include "store/store.h"
#include "store/mysql/internal.h"

/* scripts/mariadb-test-server, found beside this source file. */
static char *server_script(void)
{
	const char *env = getenv("KEEL_MYSQL_SCRIPT");
	if (env && *env)
		return strdup(env);
	char *p = malloc(strlen(__FILE__) + 64);
	strcpy(p, __FILE__);
	char *slash = strrchr(p, '/');
	if (slash)
		*slash = 0;
	slash = strrchr(p, '/');
	if (slash)
		slash[1] = 0;
	else
		strcpy(p, "./");
	strcat(p, "scripts/mariadb-test-server");
	return p;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_mysql: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void generate(const char *path, uint64_t events)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		die("cannot write %s", path);
	const struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = events, .tenants = 1, .seed = 1, .late = 0.0, .duplicates = 0.0};
	if (keel_generate_fleet(&o, f) != 0)
		die("generate failed");
	fclose(f);
}

/* ----------------------------------------------------------- databases */

struct target {
	char user[256], password[256], host[256], db[256];
	unsigned port;
};

static void parse_url(const char *url, struct target *t)
{
	memset(t, 0, sizeof *t);
	t->port = 3306;
	if (sscanf(url, "mysql://%255[^:@]:%255[^@]@%255[^:/]:%u/%255[^?]", t->user,
		   t->password, t->host, &t->port, t->db) != 5 &&
	    sscanf(url, "mysql://%255[^:@]:%255[^@]@%255[^:/]/%255[^?]", t->user,
		   t->password, t->host, t->db) != 4)
		die("cannot read the URL %s (expected mysql://user:pass@host[:port]/db)",
		    url);
}

static MYSQL *connect_to(const struct target *t, const char *db, bool local_infile)
{
	MYSQL *m = mysql_init(NULL);
	unsigned on = local_infile;
	mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &on);
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (!mysql_real_connect(m, t->host, t->user, t->password, db, t->port, NULL, 0))
		die("connect: %s", mysql_error(m));
	return m;
}

static void sql(MYSQL *m, const char *q)
{
	if (mysql_query(m, q))
		die("%s", mysql_error(m));
	MYSQL_RES *r = mysql_store_result(m);
	if (r)
		mysql_free_result(r);
}

static char *sql_value(MYSQL *m, const char *q)
{
	if (mysql_query(m, q))
		die("%s", mysql_error(m));
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	char *v = strdup(row && row[0] ? row[0] : "");
	if (r)
		mysql_free_result(r);
	return v;
}

/* A new empty database for one measurement; returns its URL. */
static char *fresh_db(const struct target *t, MYSQL *admin, const char *suffix)
{
	char q[1024];
	snprintf(q, sizeof q, "DROP DATABASE IF EXISTS `%s_%s`", t->db, suffix);
	sql(admin, q);
	snprintf(q, sizeof q, "CREATE DATABASE `%s_%s`", t->db, suffix);
	sql(admin, q);
	char *url = malloc(2048);
	snprintf(url, 2048, "mysql://%s:%s@%s:%u/%s_%s", t->user, t->password, t->host,
		 t->port, t->db, suffix);
	return url;
}

/* -------------------------------------------------------------- ingest */

struct run {
	double seconds;
	uint64_t events, accepted, duplicates, rows_inserted, commits, batches;
	uint64_t statements;	 /* during ingestion */
	uint64_t max_statements; /* in one batch */
};

static struct keel_cartridge *fleet;

static void ingest(struct keel_store *s, const char *path, size_t batch, struct run *r)
{
	struct keel_reader *rd;
	char *err = NULL;
	if (keel_reader_open(path, 0, &rd, &err))
		die("%s", err);
	struct keel_ingest *ing;
	const struct keel_ingest_options o = {.size = sizeof o, .cartridge = fleet, .batch = batch};
	if (keel_ingest_new(s, &o, &ing))
		die("ingest_new failed");
	const char *line;
	size_t len;
	uint64_t lineno;
	bool too_long;
	uint64_t start = keel_store_statements(s), last = start;
	memset(r, 0, sizeof *r);
	double t0 = now();
	int rc;
	while ((rc = keel_reader_next(rd, &line, &len, &lineno, &too_long)) == 1) {
		if (keel_ingest_add(ing, line, len, lineno))
			die("%s", keel_ingest_errmsg(ing));
		uint64_t st = keel_store_statements(s);
		if (st != last) {
			if (st - last > r->max_statements)
				r->max_statements = st - last;
			last = st;
		}
	}
	if (rc < 0 || keel_ingest_flush(ing))
		die("%s", keel_ingest_errmsg(ing));
	r->seconds = now() - t0;
	uint64_t st = keel_store_statements(s);
	if (st - last > r->max_statements)
		r->max_statements = st - last;
	const struct keel_report *rep = keel_ingest_report(ing);
	r->events = rep->read;
	r->accepted = rep->accepted;
	r->duplicates = rep->duplicates;
	r->rows_inserted = rep->rows_inserted;
	r->commits = rep->commits;
	r->batches = rep->batches;
	r->statements = st - start;
	keel_ingest_free(ing);
	keel_reader_close(rd);
}

static struct keel_store *open_store(const char *url)
{
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open(url, &s, &err))
		die("%s", err);
	return s;
}

/* -------------------------------------------------------------- profile */

/* Where a batch size's time goes: the 101 000 events once more, each batch
 * size on a fresh database with the store's statement profile on (two
 * clock readings per statement), so that the docs can say what batch 500
 * pays over batch 5000 and in which statements. */
struct profiled {
	struct run run;
	struct keel_mysql_prof kinds[KEEL_MYSQL_PROF_KINDS];
	size_t n;
};

static void profile_run(struct keel_store *s, const char *path, size_t batch,
			struct profiled *p)
{
	keel_store_mysql_set_profile(s, true);
	ingest(s, path, batch, &p->run);
	const struct keel_mysql_prof *k;
	p->n = keel_store_mysql_profile(s, &k);
	memcpy(p->kinds, k, p->n * sizeof *k);
}

static const struct keel_mysql_prof *prof_find(const struct profiled *p, const char *what)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->kinds[i].what, what))
			return &p->kinds[i];
	return NULL;
}

static void prof_cell(const struct keel_mysql_prof *k)
{
	char cell[32];
	snprintf(cell, sizeof cell, "%.3f s (%llu)", k ? k->seconds : 0.0,
		 (unsigned long long)(k ? k->count : 0));
	printf(" %16s", cell);
}

/* One line per kind of statement of either run, the small batch's first. */
static void print_profiles(const struct profiled p[2], const size_t batch[2],
			   const char *events)
{
	printf("where %s events spend their time, per kind of statement (wall time, "
	       "statements; profiled runs)\n",
	       events);
	char head[2][32];
	for (int r = 0; r < 2; r++)
		snprintf(head[r], sizeof head[r], "batch %zu", batch[r]);
	printf("  %-34s %16s %16s %11s\n", "", head[0], head[1], "difference");
	double sums[2] = {0, 0};
	for (int r = 0; r < 2; r++) {
		for (size_t i = 0; i < p[r].n; i++) {
			const char *what = p[r].kinds[i].what;
			if (r == 1 && prof_find(&p[0], what))
				continue;
			const struct keel_mysql_prof *a = prof_find(&p[0], what),
						     *b = prof_find(&p[1], what);
			double da = a ? a->seconds : 0, db = b ? b->seconds : 0;
			sums[0] += da;
			sums[1] += db;
			printf("  %-34s", what);
			prof_cell(a);
			prof_cell(b);
			printf(" %+9.3f s\n", da - db);
		}
	}
	printf("  %-34s %14.3f s %14.3f s %+9.3f s\n", "all statements", sums[0], sums[1],
	       sums[0] - sums[1]);
	printf("  %-34s %14.3f s %14.3f s %+9.3f s\n", "the whole ingest",
	       p[0].run.seconds, p[1].run.seconds, p[0].run.seconds - p[1].run.seconds);
}

/* --------------------------------------------------------- LOAD DATA */

/* The append-only tables, every column a row is written with (seq is
 * the table's own AUTO_INCREMENT, as in keel's inserts). */
static const struct {
	const char *table, *cols;
} tables[] = {
    {"keel_events", "tenant, id, type, time, hash, envelope, recorded_at"},
    {"keel_entity_mentions",
     "tenant, subject, kind, kind_time, first_seen, last_seen, recorded_at"},
    {"keel_fact_rows",
     "tenant, subject, predicate, value, valid_from, asserted_by, recorded_at"},
    {"keel_relation_rows", "tenant, subject, relation, object, linked, valid_from, "
			   "asserted_by, recorded_at"},
};

/* A field in LOAD DATA's default text format. */
static void put_field(FILE *f, const char *p, unsigned long n)
{
	if (!p) {
		fputs("\\N", f);
		return;
	}
	for (unsigned long i = 0; i < n; i++) {
		char c = p[i];
		switch (c) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\0':
			fputs("\\0", f);
			break;
		default:
			fputc(c, f);
		}
	}
}

/* Exports the final rows of db into dir/<table>.tsv; returns the row count. */
static uint64_t export_rows(MYSQL *m, const char *dir)
{
	uint64_t rows = 0;
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		char path[4096], q[1024];
		snprintf(path, sizeof path, "%s/%s.tsv", dir, tables[i].table);
		FILE *f = fopen(path, "wb");
		if (!f)
			die("cannot write %s", path);
		snprintf(q, sizeof q, "SELECT %s FROM %s ORDER BY seq", tables[i].cols,
			 tables[i].table);
		if (mysql_query(m, q))
			die("%s", mysql_error(m));
		MYSQL_RES *r = mysql_use_result(m);
		unsigned nf = mysql_num_fields(r);
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(r))) {
			unsigned long *len = mysql_fetch_lengths(r);
			for (unsigned k = 0; k < nf; k++) {
				if (k)
					fputc('\t', f);
				put_field(f, row[k], len[k]);
			}
			fputc('\n', f);
			rows++;
		}
		mysql_free_result(r);
		fclose(f);
	}
	return rows;
}

/* The rows of db's keel tables. */
/* Rows that do not depend on the batch size: events, facts and relations
 * (an entity has one mention row per batch that names it). */
static uint64_t count_rows(MYSQL *m)
{
	uint64_t rows = 0;
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		if (!strcmp(tables[i].table, "keel_entity_mentions"))
			continue;
		char q[256];
		snprintf(q, sizeof q, "SELECT COUNT(*) FROM %s", tables[i].table);
		char *v = sql_value(m, q);
		rows += strtoull(v, NULL, 10);
		free(v);
	}
	return rows;
}

static double load_data(MYSQL *m, const char *dir)
{
	double t0 = now();
	sql(m, "START TRANSACTION");
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		char path[4096], esc[8200], q[9000];
		snprintf(path, sizeof path, "%s/%s.tsv", dir, tables[i].table);
		mysql_real_escape_string(m, esc, path, (unsigned long)strlen(path));
		snprintf(q, sizeof q, "LOAD DATA LOCAL INFILE '%s' INTO TABLE %s (%s)",
			 esc, tables[i].table, tables[i].cols);
		if (mysql_query(m, q)) {
			fprintf(stderr, "bench_mysql: LOAD DATA: %s\n", mysql_error(m));
			sql(m, "ROLLBACK");
			return -1;
		}
	}
	sql(m, "COMMIT");
	return now() - t0;
}

/* --------------------------------------------------------------- table */

static const char *verdict(bool ok)
{
	return ok ? "met" : "MISSED";
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

static void row_s(const char *what, double v, const char *note07, const char *note08,
		  const char *target, const char *verdict_text)
{
	printf("%-42s %10.2f s %12s %12s %10s %s\n", what, v, note07, note08, target,
	       verdict_text ? verdict_text : "");
}

int main(int argc, char **argv)
{
	uint64_t big = 1000000, small = 3030, mid = 101000;
	size_t big_batch[4] = {500};
	size_t nbig = 1;
	const char *url = NULL, *dir = NULL;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"url", required_argument, 0, 'u'},
					     {"dir", required_argument, 0, 'd'},
					     {"big-batch", required_argument, 0, 'b'},
					     {"tiny", no_argument, 0, 't'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:u:d:b:t", opts, NULL)) != -1) {
		if (c == 't') {
			small = 300, mid = 1000, big = 2000;
		} else if (c == 'b') {
			char *end = optarg;
			for (nbig = 0; nbig < 4 && *end; nbig++) {
				big_batch[nbig] = strtoul(end, &end, 10);
				if (!big_batch[nbig] || (*end && *end != ','))
					die("--big-batch: a list of batch sizes, as "
					    "500,5000");
				end += *end == ',';
			}
		} else if (c == 'n')
			big = strtoull(optarg, NULL, 10);
		else if (c == 'u')
			url = optarg;
		else if (c == 'd')
			dir = optarg;
		else
			return 2;
	}
	char tmpl[] = "/tmp/keel-bench-mysql-XXXXXX";
	bool own_dir = !dir;
	if (!dir && !(dir = mkdtemp(tmpl)))
		die("mkdtemp failed");
	char *script = server_script();
	char *err = NULL;
	if (keel_cartridge_load("fleet", &fleet, &err))
		die("%s", err);

	char srv[4096], cmd[8300];
	char *started = NULL;
	if (!url) {
		snprintf(srv, sizeof srv, "%s/srv", dir);
		/* The whole data set (about 1 GB at a million events) in memory,
		 * for LOAD DATA and keel alike, unless told otherwise. */
		setenv("KEEL_MARIADB_OPTS", "--innodb-buffer-pool-size=3G", 0);
		snprintf(cmd, sizeof cmd, "'%s' start '%s'", script, srv);
		fprintf(stderr, "starting a private MariaDB in %s ...\n", srv);
		FILE *p = popen(cmd, "r");
		char line[4096];
		if (!p || !fgets(line, sizeof line, p) || pclose(p) != 0)
			die("cannot start a server with %s", script);
		line[strcspn(line, "\n")] = 0;
		started = strdup(line);
		url = started;
	}
	struct target t;
	parse_url(url, &t);
	MYSQL *admin = connect_to(&t, t.db, true);

	char in_small[4096], in_101k[4096], in_big[4096];
	snprintf(in_small, sizeof in_small, "%s/fleet-small.ndjson", dir);
	snprintf(in_101k, sizeof in_101k, "%s/fleet-mid.ndjson", dir);
	snprintf(in_big, sizeof in_big, "%s/fleet-big.ndjson", dir);
	fprintf(stderr, "generating inputs in %s ...\n", dir);
	generate(in_small, small);
	generate(in_101k, mid);
	/* The Python figures and the targets are for the sizes the issues
	 * name; other sizes print their own. */
	bool sizes = small == 3030 && mid == 101000;
	char small_n[32], mid_n[32], label[96];
	grouped(small, small_n, sizeof small_n);
	grouped(mid, mid_n, sizeof mid_n);
	generate(in_big, big);

	struct run r3k, r101k, rre, rbig[4];
	struct keel_mysql_stats st[4];
	char *u = fresh_db(&t, admin, "b3k");
	struct keel_store *s = open_store(u);
	fprintf(stderr, "%s events ...\n", small_n);
	ingest(s, in_small, 500, &r3k);
	keel_store_close(s);
	free(u);

	u = fresh_db(&t, admin, "b101k");
	s = open_store(u);
	fprintf(stderr, "%s events, then again ...\n", mid_n);
	ingest(s, in_101k, 500, &r101k);
	ingest(s, in_101k, 500, &rre);
	keel_store_close(s);
	free(u);

	/* the profile compares the two ends of a batch's usual sizes */
	const size_t prof_batch[2] = {500, 5000};
	struct profiled prof[2];
	for (size_t b = 0; b < 2; b++) {
		char name[32];
		snprintf(name, sizeof name, "bprof%zu", b);
		u = fresh_db(&t, admin, name);
		s = open_store(u);
		fprintf(stderr, "%s events, batch %zu, profiled ...\n", mid_n, prof_batch[b]);
		profile_run(s, in_101k, prof_batch[b], &prof[b]);
		keel_store_close(s);
		free(u);
	}

	uint64_t big_rows[4];
	char q[1024];
	for (size_t b = 0; b < nbig; b++) {
		char name[32];
		snprintf(name, sizeof name, "bbig%zu", b);
		u = fresh_db(&t, admin, name);
		s = open_store(u);
		fprintf(stderr, "%llu events, batch %zu ...\n", (unsigned long long)big,
			big_batch[b]);
		keel_store_mysql_reset_stats(s);
		ingest(s, in_big, big_batch[b], &rbig[b]);
		st[b] = *keel_store_mysql_stats(s);
		keel_store_close(s);
		free(u);
		snprintf(q, sizeof q, "%s_%s", t.db, name);
		MYSQL *db = connect_to(&t, q, false);
		big_rows[b] = count_rows(db);
		mysql_close(db);
	}

	fprintf(stderr, "the limit: exporting the final rows, LOAD DATA ...\n");
	snprintf(q, sizeof q, "%s_bbig0", t.db);
	MYSQL *src = connect_to(&t, q, false);
	uint64_t rows = export_rows(src, dir);
	mysql_close(src);
	/* the dump does not depend on the batch (the conformance suite
	 * compares them), but the mention rows do (one per entity per
	 * transaction): each run's rate counts its own rows */
	char *lu = fresh_db(&t, admin, "blimit");
	s = open_store(lu); /* the same schema, created by keel */
	keel_store_close(s);
	free(lu);
	snprintf(q, sizeof q, "%s_blimit", t.db);
	MYSQL *dst = connect_to(&t, q, true);
	double t_limit = load_data(dst, dir);
	mysql_close(dst);

	char *version = sql_value(admin, "SELECT VERSION()");
	char *flush = sql_value(admin, "SELECT @@innodb_flush_log_at_trx_commit");
	char *pool = sql_value(admin, "SELECT @@innodb_buffer_pool_size DIV 1048576");
	char *binlog = sql_value(admin, "SELECT @@log_bin");
	mysql_close(admin);

	double rate_limit = t_limit > 0 ? (double)rows / t_limit : 0;

	printf("Keel %s bench_mysql, one run; server %s, "
	       "innodb_flush_log_at_trx_commit=%s, buffer pool %s MiB, log_bin=%s; "
	       "%ld cores\n",
	       KEEL_VERSION, version, flush, pool, binlog, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-42s %12s %12s %12s %10s\n", "measure", "this run", "python 0.7.1",
	       "python 0.8.0", "target");
	snprintf(label, sizeof label, "%s events, batch 500", small_n);
	row_s(label, r3k.seconds, sizes ? "8.9 s" : "", sizes ? "0.5 s" : "", "", NULL);
	snprintf(label, sizeof label, "%s events, batch 500", mid_n);
	row_s(label, r101k.seconds, sizes ? "~300 s" : "", sizes ? "8.4 s" : "",
	      sizes ? "<= 2 s" : "", sizes ? verdict(r101k.seconds <= 2.0) : NULL);
	snprintf(label, sizeof label, "%s re-sent (all duplicates)", mid_n);
	row_s(label, rre.seconds, "", sizes ? "2.1 s" : "", sizes ? "<= 0.3 s" : "",
	      sizes ? verdict(rre.seconds <= 0.3) : NULL);
	printf("%-42s %6.1f / %llu\n", "  statements per batch (mean / most)",
	       (double)rre.statements / (double)rre.batches,
	       (unsigned long long)rre.max_statements);
	if (t_limit > 0) {
		row_s("limit: LOAD DATA of the final rows below", t_limit, "", "", "",
		      NULL);
		printf("%-42s %10.0f /s %12s %12s\n", "  limit rows/s", rate_limit, "",
		       "60 000 /s*");
	} else {
		printf("%-42s %12s\n", "limit: LOAD DATA",
		       "unavailable (local_infile off)");
	}
	for (size_t b = 0; b < nbig; b++) {
		const struct run *r = &rbig[b];
		double rate = (double)big_rows[b] / r->seconds;
		snprintf(label, sizeof label, "%llu events, batch %zu",
			 (unsigned long long)big, big_batch[b]);
		bool target = big == 1000000 && big_batch[b] == 500;
		row_s(label, r->seconds, "~45 min", "~85 s", target ? "<= 20 s" : "",
		      target ? verdict(r->seconds <= 20.0) : NULL);
		printf("%-42s %10.0f /s %12s %12s\n", "  events/s",
		       (double)r->events / r->seconds, "", "12 000 /s");
		printf("%-42s %10.0f /s\n", "  final rows/s (rows below / time)", rate);
		if (rate_limit > 0)
			printf("%-42s %11.2fx %12s %12s %10s %s\n",
			       "  keel rows/s / limit rows/s", rate / rate_limit, "", "",
			       ">= 0.8", verdict(rate / rate_limit >= 0.8));
		printf("%-42s %6.1f / %llu %12s %12s\n",
		       "  statements per batch (mean / most)",
		       (double)r->statements / (double)r->batches,
		       (unsigned long long)r->max_statements, "~2000", "~8");
	}
	printf("(final rows: %llu = events + entity mentions + facts + relations of batch "
	       "%zu;\n",
	       (unsigned long long)rows, big_batch[0]);
	for (size_t b = 0; b < nbig; b++)
		printf(" batch %zu: %llu batches, %llu commits, %llu rows inserted, %llu "
		       "entity mentions, %llu bulk executions, longest statement %zu "
		       "bytes, longest IN list %zu, warnings %llu;\n",
		       big_batch[b], (unsigned long long)rbig[b].batches,
		       (unsigned long long)rbig[b].commits,
		       (unsigned long long)rbig[b].rows_inserted,
		       (unsigned long long)st[b].mentions_appended,
		       (unsigned long long)st[b].bulk_statements, st[b].max_statement,
		       st[b].max_in_tuples, (unsigned long long)st[b].warnings);
	printf(" * Python 0.8.0's multi-row INSERT rate; times exclude opening the store)\n");
	print_profiles(prof, prof_batch, mid_n);

	if (started) {
		snprintf(cmd, sizeof cmd, "'%s' stop '%s'", script, srv);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_mysql: could not stop the server in %s\n",
				srv);
		free(started);
	}
	if (own_dir) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_mysql: could not remove %s\n", dir);
	}
	free(script);
	free(version);
	free(flush);
	free(pool);
	free(binlog);
	keel_cartridge_free(fleet);
	return 0;
}
#endif
