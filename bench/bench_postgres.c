/*
 * bench_postgres.c - PostgreSQL ingestion measured on this
 * machine, in one run, with MariaDB's figures of the same run beside:
 *
 *   101 000 fleet events at the defaults (batch 500, commits every second)
 *   the same 101 000 re-sent (all duplicates), and its limit: the same
 *   identity lookups alone, made by a plain libpq program
 *   N (default 1 000 000) fleet events at the defaults
 *   the limit: the N-event store's final rows (events, entity mentions,
 *   facts, relations, exported from it) written back by a plain libpq
 *   program with binary COPY FROM STDIN into the same tables and indexes
 *   (made by keel in a new schema), in one transaction; keel's rows/s as
 *   a ratio of it
 *   peak RSS of each keel ingest
 *
 * Each ingest is the keel binary itself (`keel ingest FILE --cartridge
 * fleet --store URL`), timed from its start to its exit, so the figures
 * are what a user sees; peak RSS is the child's (wait4). Inputs are the
 * generator's profile with one tenant, as in bench_keel and bench_mysql.
 *
 * Usage: bench_postgres [--events N] [--dir DIR] [--no-mysql] [--tiny]
 *                       [--pg-dir DIR] [--mysql-dir DIR]
 * Private servers (scripts/postgres-test-server, scripts/mariadb-test-server)
 * are started and stopped, unless --pg-dir / --mysql-dir name one those
 * scripts started (the test suite's); PostgreSQL keeps its durability
 * settings at their defaults (synchronous_commit on, fsync on). --tiny:
 * 1 000 and 2 000 events where the run uses 101 000 and N (what CI runs
 * to see the benchmark run to its end, bench/CMakeLists.txt).
 */
#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "keel.h"
#include "store/postgres/internal.h" /* KEEL_PG_SEEN_SQL: keel's own lookup */

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
	fprintf(stderr, "bench_postgres: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* scripts/NAME, found beside this source file. */
static char *script(const char *name)
{
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
	strcat(p, "scripts/");
	strcat(p, name);
	return p;
}

/* The first line a command prints (malloc'd). */
static char *command_line(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char line[4096];
	if (!p || !fgets(line, sizeof line, p))
		die("%s: no output", cmd);
	if (pclose(p) != 0)
		die("%s failed", cmd);
	line[strcspn(line, "\n")] = 0;
	return strdup(line);
}

static void generate(const char *path, uint64_t events)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		die("cannot write %s", path);
	const struct keel_generate_options o = {
	    .size = sizeof o, .events = events, .tenants = 1, .seed = 1};
	if (keel_generate_fleet(&o, f) != 0)
		die("generate failed");
	fclose(f);
}

/* ------------------------------------------------------- the server's CPU */

/* CPU seconds the server spends, whatever the machine's load does to the
 * wall time: the user and system time of every child of the postmaster
 * (the sessions, the WAL writer, the checkpointer, autovacuum), each
 * sampled every 20 ms while a measurement runs and its last value kept,
 * since a session's process is gone when it ends (its last 20 ms are
 * lost). Each process is also counted by kind (its title, as ps shows
 * it): the sessions (the work of the statements measured), autovacuum
 * (which runs whenever a table has grown enough, on whichever store, so
 * it lands in whichever measurement is running), and the rest. */
enum cpu_kind { CPU_SESSION, CPU_AUTOVACUUM, CPU_OTHER, CPU_KINDS };
#define CPU_PIDS 256
struct cpu_watch {
	long postmaster;
	pthread_t thread;
	volatile bool stop;
	bool watching; /* set before the thread starts: new pids count from 0 */
	long pid[CPU_PIDS];
	enum cpu_kind kind[CPU_PIDS];
	unsigned long long first[CPU_PIDS], last[CPU_PIDS];
	size_t n;
};

static bool proc_stat(long pid, long *ppid, unsigned long long *ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 ppid, &ut, &st) != 3)
		return false;
	*ticks = ut + st;
	return true;
}

/* A server process's kind, from its title ("postgres: keel keel [local]
 * COPY", "postgres: autovacuum worker keel", "postgres: walwriter"). */
static enum cpu_kind cpu_kind_of(long pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return CPU_OTHER;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	if (strstr(buf, "autovacuum"))
		return CPU_AUTOVACUUM;
	static const char *const aux[] = {"checkpointer", "background writer",
					  "walwriter",	  "logical replication",
					  "stats",	  "archiver"};
	for (size_t i = 0; i < sizeof aux / sizeof aux[0]; i++)
		if (strstr(buf, aux[i]))
			return CPU_OTHER;
	return CPU_SESSION;
}

static void cpu_sample(struct cpu_watch *w)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		long pid = strtol(e->d_name, NULL, 10), ppid;
		unsigned long long t;
		if (pid <= 0 || !proc_stat(pid, &ppid, &t) || ppid != w->postmaster)
			continue;
		size_t i = 0;
		while (i < w->n && w->pid[i] != pid)
			i++;
		if (i == w->n) {
			if (w->n == CPU_PIDS)
				continue;
			w->pid[w->n] = pid;
			w->kind[w->n] = cpu_kind_of(pid);
			w->first[w->n] =
			    w->watching ? 0 : t; /* new while watching: all its time */
			w->n++;
		}
		w->last[i] = t;
	}
	if (d)
		closedir(d);
}

static void *cpu_loop(void *ud)
{
	struct cpu_watch *w = ud;
	while (!w->stop) {
		cpu_sample(w);
		usleep(20000);
	}
	return NULL;
}

/* Starts watching; the processes already there count from now, new ones
 * from 0. */
static void cpu_start(struct cpu_watch *w, long postmaster)
{
	memset(w, 0, sizeof *w);
	w->postmaster = postmaster;
	cpu_sample(w);
	for (size_t i = 0; i < w->n; i++)
		w->first[i] = w->last[i];
	w->watching = true;
	pthread_create(&w->thread, NULL, cpu_loop, w);
}

/* The whole server's seconds; each kind's in kinds (may be NULL). */
static double cpu_stop(struct cpu_watch *w, double kinds[CPU_KINDS])
{
	w->stop = true;
	pthread_join(w->thread, NULL);
	cpu_sample(w);
	unsigned long long t = 0, k[CPU_KINDS] = {0};
	for (size_t i = 0; i < w->n; i++) {
		t += w->last[i] - w->first[i];
		k[w->kind[i]] += w->last[i] - w->first[i];
	}
	double hz = (double)sysconf(_SC_CLK_TCK);
	for (int i = 0; kinds && i < CPU_KINDS; i++)
		kinds[i] = (double)k[i] / hz;
	return (double)t / hz;
}

/* ------------------------------------------------------------- ingests */

struct run {
	double seconds;
	double server_cpu; /* seconds of the server's processes (postgres only) */
	double cpu_kinds[CPU_KINDS];
	long rss_kib;
	char report[512]; /* keel's "accepted ..." line */
};

static long postmaster; /* the PostgreSQL server's, for its CPU */

/* keel ingest FILE into url at the defaults: wall time and peak RSS (and
 * the PostgreSQL server's CPU when watch). */
static void ingest(const char *url, const char *path, struct run *r, bool watch)
{
	struct cpu_watch w;
	if (watch)
		cpu_start(&w, postmaster);
	char errpath[] = "/tmp/keel-bench-pg-err-XXXXXX";
	int fd = mkstemp(errpath);
	if (fd < 0)
		die("mkstemp failed");
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0)
		die("fork failed");
	if (pid == 0) {
		dup2(fd, 2);
		execl(KEEL_BIN, "keel", "ingest", path, "--cartridge", "fleet", "--store",
		      url, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid)
		die("wait4 failed");
	r->seconds = now() - t0;
	r->server_cpu = watch ? cpu_stop(&w, r->cpu_kinds) : 0;
	r->rss_kib = ru.ru_maxrss;
	FILE *f = fdopen(fd, "r");
	rewind(f);
	char line[512];
	r->report[0] = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "accepted ", 9)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(r->report, sizeof r->report, "%s", line);
		}
	fclose(f);
	unlink(errpath);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("keel ingest %s into %s: exit %d", path, url, WEXITSTATUS(st));
}

/* ------------------------------------------------------------ the limit */

static PGconn *pg_connect(const char *url)
{
	PGconn *c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK)
		die("connect: %s", PQerrorMessage(c));
	return c;
}

static void pg_sql(PGconn *c, const char *q)
{
	PGresult *r = PQexec(c, q);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		die("%s: %s", q, PQerrorMessage(c));
	PQclear(r);
}

static uint64_t pg_count(PGconn *c, const char *q)
{
	PGresult *r = PQexec(c, q);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		die("%s: %s", q, PQerrorMessage(c));
	uint64_t n = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return n;
}

/* The tables keel writes, every column it writes. */
static const struct {
	const char *table, *cols;
} tables[] = {
    {"keel_events", "seq, tenant, source, id, type, time, hash, envelope, recorded_at"},
    {"keel_entity_mentions",
     "seq, tenant, subject, kind, kind_time, first_seen, last_seen, recorded_at"},
    {"keel_fact_rows", "seq, tenant, subject, predicate, value, valid_from, "
		       "asserted_by_source, asserted_by, recorded_at"},
    {"keel_relation_rows", "seq, tenant, subject, relation, object, linked, valid_from, "
			   "asserted_by_source, asserted_by, recorded_at"},
};

/* Each table's rows of the store at url, in binary COPY format, into
 * dir/TABLE.copy; returns the row count. */
static uint64_t export_rows(const char *url, const char *dir)
{
	PGconn *c = pg_connect(url);
	uint64_t rows = 0;
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		char path[4096], q[1024];
		snprintf(path, sizeof path, "%s/%s.copy", dir, tables[i].table);
		FILE *f = fopen(path, "wb");
		if (!f)
			die("cannot write %s", path);
		snprintf(
		    q, sizeof q,
		    "COPY (SELECT %s FROM %s ORDER BY seq) TO STDOUT (FORMAT binary)",
		    tables[i].cols, tables[i].table);
		PGresult *r = PQexec(c, q);
		if (PQresultStatus(r) != PGRES_COPY_OUT)
			die("%s: %s", q, PQerrorMessage(c));
		PQclear(r);
		char *buf;
		int n;
		while ((n = PQgetCopyData(c, &buf, 0)) > 0) {
			fwrite(buf, 1, (size_t)n, f);
			PQfreemem(buf);
		}
		r = PQgetResult(c);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			die("%s: %s", q, PQerrorMessage(c));
		rows += strtoull(PQcmdTuples(r), NULL, 10);
		PQclear(r);
		fclose(f);
	}
	PQfinish(c);
	return rows;
}

/* The exported rows into the store at url (whose tables keel made), in
 * one transaction: the time from BEGIN to COMMIT. */
static double copy_in(const char *url, const char *dir)
{
	PGconn *c = pg_connect(url);
	double t0 = now();
	pg_sql(c, "BEGIN");
	static char buf[1 << 20];
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		char path[4096], q[1024];
		snprintf(path, sizeof path, "%s/%s.copy", dir, tables[i].table);
		FILE *f = fopen(path, "rb");
		if (!f)
			die("cannot read %s", path);
		snprintf(q, sizeof q, "COPY %s (%s) FROM STDIN (FORMAT binary)",
			 tables[i].table, tables[i].cols);
		PGresult *r = PQexec(c, q);
		if (PQresultStatus(r) != PGRES_COPY_IN)
			die("%s: %s", q, PQerrorMessage(c));
		PQclear(r);
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			if (PQputCopyData(c, buf, (int)n) != 1)
				die("copy: %s", PQerrorMessage(c));
		fclose(f);
		if (PQputCopyEnd(c, NULL) != 1)
			die("copy end: %s", PQerrorMessage(c));
		r = PQgetResult(c);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			die("%s: %s", q, PQerrorMessage(c));
		PQclear(r);
	}
	pg_sql(c, "COMMIT");
	double t = now() - t0;
	PQfinish(c);
	return t;
}

/* A binary text[] parameter (PostgreSQL's array send format: dimensions,
 * no nulls, element type text, then each element as length and bytes) of
 * column col of rows [from, to) of r. */
static void put_be32(char **p, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 8), (unsigned char)v};
	memcpy(*p, b, 4);
	*p += 4;
}

static int text_array(const PGresult *r, int col, int from, int to, char *out)
{
	char *p = out;
	put_be32(&p, 1);  /* dimensions */
	put_be32(&p, 0);  /* no nulls */
	put_be32(&p, 25); /* text */
	put_be32(&p, (uint32_t)(to - from));
	put_be32(&p, 1); /* lower bound */
	for (int i = from; i < to; i++) {
		int n = PQgetlength(r, i, col);
		put_be32(&p, (uint32_t)n);
		memcpy(p, PQgetvalue(r, i, col), (size_t)n);
		p += n;
	}
	return (int)(p - out);
}

/*
 * The re-send's limit: the identity lookups alone, as keel makes them (its
 * own join, KEEL_PG_SEEN_SQL, over three binary text[] parameters, prepared once,
 * results in binary), a statement for each batch of 500 of the store's
 * identities in the order they were logged, nothing else. Whatever keel
 * does for a duplicate, it asks at least this of the server.
 */
static double lookups_alone(const char *url, uint64_t *found)
{
	PGconn *c = pg_connect(url);
	PGresult *ids = PQexec(c, "SELECT tenant, source, id FROM keel_events ORDER BY seq");
	if (PQresultStatus(ids) != PGRES_TUPLES_OK)
		die("identities: %s", PQerrorMessage(c));
	PGresult *r = PQprepare(c, "seen", KEEL_PG_SEEN_SQL, 3, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("prepare: %s", PQerrorMessage(c));
	PQclear(r);
	int rows = PQntuples(ids);
	static char arrays[3][1 << 20];
	*found = 0;
	double t0 = now();
	for (int from = 0; from < rows; from += 500) {
		int to = from + 500 < rows ? from + 500 : rows;
		const char *values[3];
		int lengths[3], formats[3] = {1, 1, 1};
		for (int k = 0; k < 3; k++) {
			lengths[k] = text_array(ids, k, from, to, arrays[k]);
			values[k] = arrays[k];
		}
		r = PQexecPrepared(c, "seen", 3, values, lengths, formats, 1);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			die("lookup: %s", PQerrorMessage(c));
		*found += (uint64_t)PQntuples(r);
		PQclear(r);
	}
	double t = now() - t0;
	PQclear(ids);
	PQfinish(c);
	return t;
}

/* The rows of the store at url, all four tables. */
static uint64_t store_rows(const char *url)
{
	PGconn *c = pg_connect(url);
	uint64_t n =
	    pg_count(c, "SELECT (SELECT count(*) FROM keel_events) + (SELECT count(*) "
			"FROM keel_entity_mentions) + (SELECT count(*) FROM "
			"keel_fact_rows) + (SELECT count(*) FROM keel_relation_rows)");
	PQfinish(c);
	return n;
}

/* --------------------------------------------------------------- table */

static const char *verdict(bool ok)
{
	return ok ? "met" : "MISSED";
}

static void row(const char *what, const struct run *pg, const struct run *my,
		const char *target, const char *v)
{
	char mys[32] = "";
	if (my)
		snprintf(mys, sizeof mys, "%.2f s", my->seconds);
	printf("%-40s %10.2f s %12s %10s %s\n", what, pg->seconds, mys, target,
	       v ? v : "");
}

int main(int argc, char **argv)
{
	uint64_t big = 1000000, small = 101000;
	const char *dir = NULL, *pg_dir = NULL, *my_dir = NULL;
	bool mysql = true;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"dir", required_argument, 0, 'd'},
					     {"no-mysql", no_argument, 0, 'M'},
					     {"tiny", no_argument, 0, 't'},
					     {"pg-dir", required_argument, 0, 'P'},
					     {"mysql-dir", required_argument, 0, 'Q'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:d:MtP:Q:", opts, NULL)) != -1) {
		if (c == 't')
			small = 1000, big = 2000;
		else if (c == 'P')
			pg_dir = optarg;
		else if (c == 'Q')
			my_dir = optarg;
		else if (c == 'n')
			big = strtoull(optarg, NULL, 10);
		else if (c == 'd')
			dir = optarg;
		else if (c == 'M')
			mysql = false;
		else
			return 2;
	}
	char tmpl[] = "/tmp/keel-bench-pg-XXXXXX";
	bool own_dir = !dir;
	if (!dir && !(dir = mkdtemp(tmpl)))
		die("mkdtemp failed");
	char *pg_script = script("postgres-test-server");
	char *my_script = script("mariadb-test-server");
	char cmd[8300], pg_srv[4096], my_srv[4096];

	/* The targets are for the sizes the issue names; others print their
	 * own. */
	bool sizes = small == 101000;
	char small_n[32];
	if (sizes)
		snprintf(small_n, sizeof small_n, "101 000");
	else
		snprintf(small_n, sizeof small_n, "%llu", (unsigned long long)small);
	snprintf(pg_srv, sizeof pg_srv, "%s", pg_dir ? pg_dir : "");
	if (!pg_dir) {
		snprintf(pg_srv, sizeof pg_srv, "%s/pg", dir);
		snprintf(cmd, sizeof cmd, "'%s' start '%s'", pg_script, pg_srv);
		fprintf(stderr, "starting a private PostgreSQL in %s ...\n", pg_srv);
		free(command_line(cmd));
	}
	{
		char pidfile[4200];
		snprintf(pidfile, sizeof pidfile, "%s/cluster/data/postmaster.pid",
			 pg_srv);
		FILE *f = fopen(pidfile, "r");
		if (!f || fscanf(f, "%ld", &postmaster) != 1)
			die("cannot read %s", pidfile);
		fclose(f);
	}
	char *my_url = NULL;
	if (mysql && my_dir) {
		snprintf(my_srv, sizeof my_srv, "%s", my_dir);
	} else if (mysql) {
		snprintf(my_srv, sizeof my_srv, "%s/my", dir);
		setenv("KEEL_MARIADB_OPTS", "--innodb-buffer-pool-size=3G", 0);
		snprintf(cmd, sizeof cmd, "'%s' start '%s'", my_script, my_srv);
		fprintf(stderr, "starting a private MariaDB in %s ...\n", my_srv);
		my_url = command_line(cmd);
	}

	char in_101k[4096], in_big[4096];
	snprintf(in_101k, sizeof in_101k, "%s/fleet-101k.ndjson", dir);
	snprintf(in_big, sizeof in_big, "%s/fleet-big.ndjson", dir);
	fprintf(stderr, "generating inputs in %s ...\n", dir);
	generate(in_101k, small);
	generate(in_big, big);

	/* A fresh PostgreSQL store: a schema, named by the URL. */
	snprintf(cmd, sizeof cmd, "'%s' fresh '%s'", pg_script, pg_srv);
	char *pg_101k = command_line(cmd), *pg_big = command_line(cmd),
	     *pg_limit = command_line(cmd);
	struct run p101k, pre, pbig, m101k, mre, mbig;
	fprintf(stderr, "postgres: %s events, then again ...\n", small_n);
	ingest(pg_101k, in_101k, &p101k, true);
	ingest(pg_101k, in_101k, &pre, true);
	uint64_t looked_up;
	double t_lookups = lookups_alone(pg_101k, &looked_up);
	if (looked_up != small)
		die("the lookups alone found %llu of %llu identities",
		    (unsigned long long)looked_up, (unsigned long long)small);
	fprintf(stderr, "postgres: %llu events ...\n", (unsigned long long)big);
	ingest(pg_big, in_big, &pbig, true);
	if (mysql) {
		snprintf(cmd, sizeof cmd, "'%s' fresh '%s'", my_script, my_srv);
		char *m1 = command_line(cmd), *m2 = command_line(cmd);
		fprintf(stderr, "mariadb: %s events, then again ...\n", small_n);
		ingest(m1, in_101k, &m101k, false);
		ingest(m1, in_101k, &mre, false);
		fprintf(stderr, "mariadb: %llu events ...\n", (unsigned long long)big);
		ingest(m2, in_big, &mbig, false);
		free(m1);
		free(m2);
	}

	fprintf(stderr, "the limit: exporting the final rows, COPY FROM STDIN ...\n");
	uint64_t rows = export_rows(pg_big, dir);
	/* the same tables and indexes, made by keel */
	struct keel_store *s;
	char *err = NULL;
	if (keel_store_open(pg_limit, &s, &err))
		die("%s", err);
	keel_store_close(s);
	struct cpu_watch w;
	cpu_start(&w, postmaster);
	double t_limit = copy_in(pg_limit, dir);
	double limit_kinds[CPU_KINDS];
	double cpu_limit = cpu_stop(&w, limit_kinds);
	if (store_rows(pg_limit) != rows)
		die("the limit copied %llu rows of %llu",
		    (unsigned long long)store_rows(pg_limit), (unsigned long long)rows);
	double rate_limit = (double)rows / t_limit;
	double rate = (double)rows / pbig.seconds;

	PGconn *pc = pg_connect(pg_big);
	PGresult *r =
	    PQexec(pc, "SELECT version(), current_setting('synchronous_commit'), "
		       "current_setting('shared_buffers'), current_setting('fsync')");
	printf("Keel %s bench_postgres, one run; %s, synchronous_commit=%s, "
	       "fsync=%s, shared_buffers=%s; %ld cores\n",
	       KEEL_VERSION, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1),
	       PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 2), sysconf(_SC_NPROCESSORS_ONLN));
	PQclear(r);
	PQfinish(pc);
	double load[3] = {0, 0, 0};
	if (getloadavg(load, 3) == 3)
		printf("load average at the end: %.2f %.2f %.2f\n", load[0], load[1],
		       load[2]);
	printf("%-40s %12s %12s %10s\n", "measure (keel ingest, defaults)", "postgres",
	       mysql ? "mariadb" : "", "target");
	char label[64];
	snprintf(label, sizeof label, "%s events", small_n);
	row(label, &p101k, mysql ? &m101k : NULL, sizes ? "<= 1.5 s" : "",
	    sizes ? verdict(p101k.seconds <= 1.5) : NULL);
	snprintf(label, sizeof label, "%s re-sent (all duplicates)", small_n);
	row(label, &pre, mysql ? &mre : NULL, sizes ? "<= 0.3 s" : "",
	    sizes ? verdict(pre.seconds <= 0.3) : NULL);
	printf("%-40s %10.2f s\n", "  limit: lookups alone, 500 a statement", t_lookups);
	printf("%-40s %11.2fx\n", "  re-send / lookups alone", pre.seconds / t_lookups);
	snprintf(label, sizeof label, "%llu events", (unsigned long long)big);
	row(label, &pbig, mysql ? &mbig : NULL, "", NULL);
	printf("%-40s %10.0f /s %12s\n", "  events/s", (double)big / pbig.seconds, "");
	printf("%-40s %10.0f /s\n", "  final rows/s (rows below / time)", rate);
	printf("%-40s %10.2f s\n", "limit: binary COPY of the same rows", t_limit);
	printf("%-40s %10.0f /s\n", "  limit rows/s", rate_limit);
	printf("%-40s %11.2fx %12s %10s %s\n", "  keel rows/s / limit rows/s", rate / rate_limit,
	       "", ">= 0.8", verdict(rate / rate_limit >= 0.8));
	/* The sessions' column is the statements' own work: autovacuum runs
	 * whenever a table has grown enough, on any store, and lands in
	 * whichever measurement is running. */
	printf("the server's CPU, whatever the load does to wall time:\n");
	printf("%-40s %12s %10s %10s %10s\n", "", "all", "sessions", "autovacuum",
	       "other");
	const struct {
		const char *what;
		double all;
		const double *kinds;
	} cpu[] = {{"  %s events", p101k.server_cpu, p101k.cpu_kinds},
		   {"  %s re-sent", pre.server_cpu, pre.cpu_kinds},
		   {"%s events", pbig.server_cpu, pbig.cpu_kinds},
		   {"  the limit's COPY", cpu_limit, limit_kinds}};
	char big_n[32];
	snprintf(big_n, sizeof big_n, "%llu", (unsigned long long)big);
	for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++) {
		snprintf(label, sizeof label, cpu[i].what, i < 2 ? small_n : big_n);
		printf("%-40s %10.2f s %8.2f s %8.2f s %8.2f s\n", label, cpu[i].all,
		       cpu[i].kinds[CPU_SESSION], cpu[i].kinds[CPU_AUTOVACUUM],
		       cpu[i].kinds[CPU_OTHER]);
	}
	printf("%-40s %11.2fx %9.2fx\n", "  limit's CPU / keel's CPU (same rows)",
	       cpu_limit / pbig.server_cpu,
	       limit_kinds[CPU_SESSION] / pbig.cpu_kinds[CPU_SESSION]);
	long rss = pbig.rss_kib > p101k.rss_kib ? pbig.rss_kib : p101k.rss_kib;
	printf("%-40s %8.1f MiB %12s %10s %s\n", "peak RSS of keel ingest", rss / 1024.0,
	       "", "<= 64 MiB", verdict(rss <= 64 * 1024));
	if (mysql) {
		long mrss = mbig.rss_kib > m101k.rss_kib ? mbig.rss_kib : m101k.rss_kib;
		printf("%-40s %21.1f MiB\n", "  (mariadb's)", mrss / 1024.0);
	}
	printf("(final rows: %llu = events + entity mentions + facts + relations;\n"
	       " postgres %s: %s\n postgres re-sent: %s\n postgres %llu: %s)\n",
	       (unsigned long long)rows, small_n, p101k.report, pre.report,
	       (unsigned long long)big, pbig.report);

	snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null", pg_script, pg_srv);
	if (!pg_dir && system(cmd) != 0)
		fprintf(stderr, "bench_postgres: could not stop the server in %s\n", pg_srv);
	if (mysql && !my_dir) {
		snprintf(cmd, sizeof cmd, "'%s' stop '%s' >/dev/null", my_script, my_srv);
		if (system(cmd) != 0)
			fprintf(stderr,
				"bench_postgres: could not stop the server in %s\n",
				my_srv);
	}
	if (own_dir) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_postgres: could not remove %s\n", dir);
	}
	free(pg_101k);
	free(pg_big);
	free(pg_limit);
	free(my_url);
	free(pg_script);
	free(my_script);
	return 0;
}
