/*
 * bench_replay.c - the benchmark of replay and workers (docs/replay.md)
 * measured on this machine, in one run, against their own baselines:
 *
 *   replay of an N-event tenant (default 1 000 000) on SQLite and on
 *   MariaDB, against the first ingest of the same events (batch 500):
 *   target replay >= 2x faster, both right after the ingest (nothing
 *   changed, so nothing is written) and with "status" renamed "state" in
 *   the cartridge (two predicates rewritten); ingest --replay (the same
 *   fast path for a new tenant, every row written) beside them;
 *   keel ingest --workers 1, 2 and 4 on MariaDB with 8 tenants (default
 *   400 000 events): target 2 workers >= 1.3x one worker; for each run
 *   where the time goes: wall time, this process's CPU time and the
 *   server's (mariadbd's utime + stime from /proc), and how many cores
 *   they kept busy together.
 *
 * Everything runs through the library in this process, as the keel tool
 * would; times cover the work from the first event to the last commit,
 * not generating the input or opening stores. The load average is printed
 * beside the figures: other work on the machine moves them.
 *
 * With --keel PATH (repeatable: the keel tool of each build to compare,
 * e.g. the landed build's and this one's), each build's `keel replay`
 * of the SQLite tenant runs as a process of its own, side by side, with
 * its wall time and peak resident size (GNU time's %M).
 *
 * Usage: bench_replay [--events N] [--workers-events N] [--dir DIR]
 *                     [--mysql-dir DIR] [--no-mysql] [--tiny] [--keel PATH]...
 * --tiny: 2000 events for both (what CI runs to see the benchmark run to
 * its end, bench/CMakeLists.txt).
 * Without --mysql-dir a private MariaDB is started with
 * scripts/mariadb-test-server (the suite's script) and stopped at the end.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"

#define KEEL_BENCH_MAX_KEELS 8

struct input {
	char *text;
	size_t len;
	char **lines;
	size_t *lens;
	size_t n;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench_replay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void input_generate(struct input *in, uint64_t events, uint32_t tenants)
{
	memset(in, 0, sizeof *in);
	FILE *f = open_memstream(&in->text, &in->len);
	const struct keel_generate_options o = {
	    .size = sizeof o,
	    .events = events, .tenants = tenants, .seed = 1};
	if (!f || keel_generate_fleet(&o, f) != 0)
		die("generate failed");
	fclose(f);
	in->lines = malloc(events * sizeof *in->lines);
	in->lens = malloc(events * sizeof *in->lens);
	for (char *p = in->text, *nl; *p && in->n < events; p = nl + 1) {
		nl = strchr(p, '\n');
		in->lines[in->n] = p;
		in->lens[in->n++] = (size_t)(nl - p);
	}
}

static void input_free(struct input *in)
{
	free(in->lines);
	free(in->lens);
	free(in->text);
}

static struct keel_store *open_store(const char *url)
{
	struct keel_store *s = NULL;
	char *err = NULL;
	if (keel_store_open(url, &s, &err))
		die("%s", err);
	return s;
}

/* A file of the source tree, found from this file's path (bench/ is one
 * level below the top). */
static void source_path(const char *rel, char *out, size_t n)
{
	char src[4096];
	snprintf(src, sizeof src, "%s", __FILE__);
	char *slash = strrchr(src, '/');
	if (slash)
		*slash = 0;
	slash = strrchr(src, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(src, sizeof src, ".");
	snprintf(out, n, "%s/%s", src, rel);
}

/* --------------------------------------------------------- the server */

static char script[4096], mysql_dir[4096];
static bool own_server;

static void script_path(void)
{
	const char *env = getenv("KEEL_MYSQL_SCRIPT");
	if (env && *env) {
		snprintf(script, sizeof script, "%s", env);
		return;
	}
	source_path("scripts/mariadb-test-server", script, sizeof script);
}

/* Runs the script, returns its first output line (a URL). */
static void run_script(const char *args, char *out, size_t n)
{
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "'%s' %s", script, args);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(out, (int)n, p))
		die("'%s' failed", cmd);
	out[strcspn(out, "\n")] = 0;
	if (pclose(p) != 0)
		die("'%s' failed", cmd);
}

static void fresh_db(char *url, size_t n)
{
	char args[4200];
	snprintf(args, sizeof args, "fresh '%s'", mysql_dir);
	run_script(args, url, n);
}

static double server_cpu(void)
{
	char path[4200], buf[4096];
	snprintf(path, sizeof path, "%s/pid", mysql_dir);
	FILE *f = fopen(path, "r");
	long pid = 0;
	if (!f || fscanf(f, "%ld", &pid) != 1) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = 0;
	/* Fields after the command's closing parenthesis: state is 3rd,
	 * utime 14th, stime 15th. */
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ------------------------------------------------------------- running */

struct run {
	double wall, cpu, server;
	struct keel_report report;
};

static void run_begin(struct run *r, double *t, double *c, double *sv)
{
	memset(r, 0, sizeof *r);
	*t = now();
	*c = cpu_self();
	*sv = mysql_dir[0] ? server_cpu() : 0;
}

static void run_end(struct run *r, double t, double c, double sv)
{
	r->wall = now() - t;
	r->cpu = cpu_self() - c;
	r->server = mysql_dir[0] ? server_cpu() - sv : 0;
}

/* One run of keel_ingest in a mode (KEEL_INGEST_WORKERS: n workers).
 * Opening the store and the workers' connections is not timed. */
static void ingest_mode(const char *url, const struct keel_cartridge *cart,
			const struct input *in, enum keel_ingest_mode mode, unsigned n,
			struct run *r, char *method, size_t mlen)
{
	struct keel_store *s = open_store(url);
	struct keel_ingest_options o = {.size = sizeof o, 
	    .cartridge = cart, .batch = 500, .mode = mode, .workers = n};
	struct keel_ingest *ing = NULL;
	if (keel_ingest_new(s, &o, &ing))
		die("keel_ingest_new: %s", keel_store_errmsg(s));
	double t, c, sv;
	run_begin(r, &t, &c, &sv);
	for (size_t i = 0; i < in->n; i++)
		if (keel_ingest_add(ing, in->lines[i], in->lens[i], i + 1))
			die("ingest: %s", keel_ingest_errmsg(ing));
	if (keel_ingest_finish(ing))
		die("ingest: %s", keel_ingest_errmsg(ing));
	run_end(r, t, c, sv);
	r->report = *keel_ingest_report(ing);
	if (method)
		snprintf(method, mlen, "%s", keel_ingest_method(ing));
	keel_ingest_free(ing);
	keel_store_close(s);
}

static void ingest(const char *url, const struct keel_cartridge *cart,
		   const struct input *in, struct run *r)
{
	ingest_mode(url, cart, in, KEEL_INGEST_STREAMING, 0, r, NULL, 0);
}

static void bulk(const char *url, const struct keel_cartridge *cart,
		 const struct input *in, struct run *r, char *method, size_t mlen)
{
	ingest_mode(url, cart, in, KEEL_INGEST_BULK, 0, r, method, mlen);
}

/* changed: whether the cartridge differs from the ingest's (rows must
 * change) or not (none may). */
static struct keel_replay_report *replay(const char *url,
					 const struct keel_cartridge *cart, bool changed,
					 struct run *r)
{
	struct keel_store *s = open_store(url);
	/* The changed cartridge has the recorded one's name and version but
	 * other bytes: a replay with it is a change of cartridge, which must
	 * be said (docs/replay.md), as keel replay --change-cartridge does. */
	struct keel_replay_options o = {
	    .size = sizeof o, .cartridge = cart, .change_cartridge = changed};
	struct keel_replay_report *rep = NULL;
	double t, c, sv;
	run_begin(r, &t, &c, &sv);
	if (keel_replay(s, "tenant-00", &o, &rep))
		die("replay: %s", keel_store_errmsg(s));
	run_end(r, t, c, sv);
	if (!changed && (rep->added || rep->removed))
		die("replay right after ingest changed %llu rows",
		    (unsigned long long)(rep->added + rep->removed));
	if (changed && !(rep->added && rep->removed))
		die("replay with a changed cartridge changed nothing");
	keel_store_close(s);
	return rep;
}

/* The fleet cartridge with "status" facts renamed "state": a replay with it
 * rewrites two predicates' facts (status out, state in) and keeps the rest. */
static struct keel_cartridge *changed_cartridge(void)
{
	char path[4200];
	source_path("cartridges/fleet.json", path, sizeof path);
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot read %s", path);
	char *json = malloc(1 << 20);
	size_t n = fread(json, 1, (1 << 20) - 1, f);
	fclose(f);
	json[n] = 0;
	static const char from[] = "\"predicate\": \"status\"", to[] = "\"predicate\": \"state\" ";
	for (char *p = json; (p = strstr(p, from)) != NULL; p += sizeof from - 1)
		memcpy(p, to, sizeof to - 1); /* same length: a space pads it */
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	if (keel_cartridge_compile(json, n, &c, &err))
		die("changed cartridge: %s", err ? err : "?");
	free(json);
	return c;
}

static void workers(const char *url, const struct keel_cartridge *cart,
		    const struct input *in, unsigned n, struct run *r)
{
	/* what keel ingest --workers 1 runs: the streaming path */
	ingest_mode(url, cart, in, n == 1 ? KEEL_INGEST_STREAMING : KEEL_INGEST_WORKERS, n,
		    r, NULL, 0);
}

static void print_load(void)
{
	double l[3];
	if (getloadavg(l, 3) == 3)
		printf("(load average %.2f %.2f %.2f)\n", l[0], l[1], l[2]);
}

/* A replay's lines: its time against the ingest's, and the report's split
 * (rows removed and added when it rewrote any). */
static void print_replay(const char *label, size_t events, double ingest_wall,
			 double wall, const struct keel_replay_report *rep)
{
	double ratio = ingest_wall / wall;
	printf("  %-34s %9.2f s %10.0f events/s   %.2fx the ingest (target >= 2x: %s)\n",
	       label, wall, (double)events / wall, ratio, ratio >= 2 ? "met" : "NOT MET");
	printf("    log read %.2f s | rows read beside the preparing %.2f s | compare %.2f s | "
	       "write %.2f s",
	       rep->read_seconds, rep->build_seconds - rep->read_seconds,
	       rep->compare_seconds, rep->write_seconds);
	if (rep->removed || rep->added)
		printf("; %llu rows removed, %llu added", (unsigned long long)rep->removed,
		       (unsigned long long)rep->added);
	printf("\n    %s\n", rep->method);
}

static void replay_section(const char *store, const char *url_ingest,
			   const char *url_bulk, const struct keel_cartridge *cart,
			   const struct input *in)
{
	struct run ri, rr, rc, rb;
	char method[200];
	ingest(url_ingest, cart, in, &ri);
	struct keel_replay_report *rep = replay(url_ingest, cart, false, &rr);
	struct keel_cartridge *cart2 = changed_cartridge();
	struct keel_replay_report *rep2 = replay(url_ingest, cart2, true, &rc);
	keel_cartridge_free(cart2);
	bulk(url_bulk, cart, in, &rb, method, sizeof method);
	printf("\n%s, one tenant, %zu events (%llu rows)\n", store, in->n,
	       (unsigned long long)rep->rows_after);
	printf("  %-34s %9.2f s %10.0f events/s\n", "first ingest (batch 500)", ri.wall,
	       (double)in->n / ri.wall);
	print_replay("replay", in->n, ri.wall, rr.wall, rep);
	print_replay("replay, status renamed state", in->n, ri.wall, rc.wall, rep2);
	printf("  %-34s %9.2f s %10.0f events/s   %.2fx the ingest (every row written)\n",
	       "ingest --replay (new tenant)", rb.wall, (double)in->n / rb.wall,
	       ri.wall / rb.wall);
	printf("    %s\n", method);
	if (!strcmp(store, "MariaDB"))
		printf("    server CPU: ingest %.1f s, replay %.1f s, changed replay %.1f s, "
		       "ingest --replay %.1f s\n",
		       ri.server, rr.server, rc.server, rb.server);
	print_load();
	fflush(stdout);
	keel_replay_report_free(rep);
	keel_replay_report_free(rep2);
}

/* ------------------------------------------------- keel replay, builds */

/* Runs `keel replay` of one build as a child process (its output to
 * log) under GNU time: wall time and the child's peak resident size.
 * Not wait4's ru_maxrss of a child of this process: a forked child's
 * peak counts this process's pages from before its exec. */
static void cli_replay(const char *keel, const char *url, const char *cartridge,
		       const char *log, const char *kib_file, double *wall,
		       long *maxrss_kib)
{
	fflush(stdout); /* or the child would write what is buffered again */
	double t = now();
	pid_t pid = fork();
	if (pid < 0)
		die("fork failed");
	if (pid == 0) {
		FILE *f = freopen(log, "a", stdout);
		if (!f)
			_exit(127);
		if (cartridge)
			execl("/usr/bin/time", "time", "-o", kib_file, "-f", "%M", keel,
			      "replay", "--tenant", "tenant-00", "--store", url, "--cartridge",
			      cartridge, "--change-cartridge", (char *)NULL);
		else
			execl("/usr/bin/time", "time", "-o", kib_file, "-f", "%M", keel,
			      "replay", "--tenant", "tenant-00", "--store", url, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s replay --store %s%s%s failed (see %s; GNU time is /usr/bin/time)",
		    keel, url, cartridge ? " --cartridge " : "", cartridge ? cartridge : "",
		    log);
	*wall = now() - t;
	FILE *k = fopen(kib_file, "r");
	if (!k || fscanf(k, "%ld", maxrss_kib) != 1)
		die("no peak RSS in %s", kib_file);
	fclose(k);
}

/* keel replay of the builds given with --keel, side by side on the same
 * store (the ingest --replay one): each replays right after the load
 * (nothing changes), then with "status" renamed "state" and back, in an
 * order that gives every build each direction once. */
static void cli_section(const char *url, const char *work, const char *const *keels,
			size_t nkeels)
{
	char v2[4300], log[4300], kib[4300];
	snprintf(v2, sizeof v2, "%s/v2.json", work);
	snprintf(kib, sizeof kib, "%s/cli-replay.kib", work);
	snprintf(log, sizeof log, "%s/cli-replay.log", work);
	char path[4200];
	source_path("cartridges/fleet.json", path, sizeof path);
	FILE *f = fopen(path, "rb"), *g = fopen(v2, "wb");
	if (!f || !g)
		die("cannot write %s", v2);
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		char *p = strstr(line, "\"predicate\": \"status\"");
		if (p)
			memcpy(p, "\"predicate\": \"state\" ", 21);
		fputs(line, g);
	}
	fclose(f);
	fclose(g);
	printf("\nkeel replay (the command, one process each) of the SQLite tenant "
	       "loaded by ingest --replay\n");
	printf("  %-40s %-26s %9s %12s\n", "build", "replay", "wall", "peak RSS");
	bool renamed = false;
	for (int step = 0; step < 3; step++)
		for (size_t k = 0; k < nkeels; k++) {
			/* Each changed replay undoes the one before; steps 1 and 2
			 * take the builds in opposite orders, so that each build
			 * renames once and renames back once. */
			size_t i = step == 1 ? nkeels - 1 - k : k;
			const char *cart = NULL, *what = "unchanged";
			if (step > 0) {
				cart = renamed ? "fleet" : v2;
				what = renamed ? "state back to status" : "status renamed state";
				renamed = !renamed;
			}
			double wall;
			long rss;
			cli_replay(keels[i], url, cart, log, kib, &wall, &rss);
			printf("  %-40s %-26s %7.2f s %9.1f MB\n", keels[i], what, wall,
			       (double)rss / 1024.0);
			fflush(stdout);
		}
	print_load();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"events", required_argument, NULL, 'e'},
	    {"workers-events", required_argument, NULL, 'w'},
	    {"dir", required_argument, NULL, 'd'},
	    {"mysql-dir", required_argument, NULL, 'm'},
	    {"no-mysql", no_argument, NULL, 'n'},
	    {"tiny", no_argument, NULL, 't'},
	    {"keel", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t events = 1000000, wevents = 400000;
	const char *dir = NULL;
	bool no_mysql = false;
	const char *keels[8];
	size_t nkeels = 0;
	int c;
	while ((c = getopt_long(argc, argv, "e:w:d:m:ntk:", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (nkeels == KEEL_BENCH_MAX_KEELS)
				die("at most %d --keel", KEEL_BENCH_MAX_KEELS);
			keels[nkeels++] = optarg;
			break;
		case 't':
			events = wevents = 2000;
			break;
		case 'e':
			events = strtoull(optarg, NULL, 10);
			break;
		case 'w':
			wevents = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'm':
			snprintf(mysql_dir, sizeof mysql_dir, "%s", optarg);
			break;
		case 'n':
			no_mysql = true;
			break;
		default:
			fprintf(stderr,
				"usage: bench_replay [--events N] [--workers-events N] "
				"[--dir DIR] [--mysql-dir DIR] [--no-mysql] [--tiny] "
				"[--keel PATH]...\n");
			return 2;
		}
	}
	if (!events || !wevents)
		die("--events and --workers-events must be positive");
	char tmpl[] = "/tmp/keel-bench-replay-XXXXXX";
	const char *work = dir ? dir : mkdtemp(tmpl);
	if (!work)
		die("cannot create a scratch directory");
	struct keel_cartridge *cart = NULL;
	if (keel_cartridge_load("fleet", &cart, NULL))
		die("no fleet cartridge");

	printf("bench_replay: keel %s, %ld cores\n", KEEL_VERSION,
	       sysconf(_SC_NPROCESSORS_ONLN));
	print_load();
	struct input in;
	input_generate(&in, events, 1);

	char u1[4400], u2[4400];
	snprintf(u1, sizeof u1, "sqlite:%s/ingest.db", work);
	snprintf(u2, sizeof u2, "sqlite:%s/bulk.db", work);
	unlink(u1 + 7);
	unlink(u2 + 7);
	replay_section("SQLite", u1, u2, cart, &in);
	if (nkeels)
		cli_section(u2, work, keels, nkeels);

	if (!no_mysql) {
		script_path();
		if (!mysql_dir[0]) {
			snprintf(mysql_dir, sizeof mysql_dir, "%s/mariadb", work);
			char args[4300], url[4400];
			snprintf(args, sizeof args, "start '%s'", mysql_dir);
			run_script(args, url, sizeof url);
			own_server = true;
		}
		fresh_db(u1, sizeof u1);
		fresh_db(u2, sizeof u2);
		replay_section("MariaDB", u1, u2, cart, &in);
		input_free(&in);

		input_generate(&in, wevents, 8);
		printf("\nMariaDB, keel ingest --workers N, 8 tenants, %zu events (batch "
		       "500)\n",
		       in.n);
		printf("  %-8s %9s %11s %8s %11s %11s %11s\n", "workers", "wall",
		       "events/s", "speedup", "client CPU", "server CPU", "cores busy");
		double base = 0;
		for (unsigned n = 1; n <= 4; n *= 2) {
			struct run r;
			fresh_db(u1, sizeof u1);
			workers(u1, cart, &in, n, &r);
			if (n == 1)
				base = r.wall;
			printf("  %-8u %7.2f s %11.0f %7.2fx %9.1f s %9.1f s %11.2f%s\n",
			       n, r.wall, (double)in.n / r.wall, base / r.wall, r.cpu,
			       r.server, (r.cpu + r.server) / r.wall,
			       n == 2 ? (base / r.wall >= 1.3
					     ? "   (target >= 1.3x: met)"
					     : "   (target >= 1.3x: NOT MET)")
				      : "");
			fflush(stdout);
		}
		print_load();
		if (own_server) {
			char args[4300];
			snprintf(args, sizeof args, "stop '%s' >/dev/null 2>&1",
				 mysql_dir);
			char cmd[9000];
			snprintf(cmd, sizeof cmd, "'%s' %s", script, args);
			if (system(cmd) != 0)
				fprintf(stderr,
					"bench_replay: stopping the server failed\n");
		}
	}
	input_free(&in);
	keel_cartridge_free(cart);
	if (!dir) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_replay: could not remove %s\n", work);
	}
	return 0;
}
