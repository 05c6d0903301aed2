/*
 * bench_reads.c - reads on SQLite stores, in one run:
 *
 *   the N-event fleet store (default 1 000 000, ingested at the defaults
 *     in two halves, so that the end of the first half is a past moment
 *     to read known_at): show of one vehicle now and known_at that
 *     moment, one timeline's history, why; in-process through the library
 *     (keel_show, keel_history, keel_why with keel_read_options) so that
 *     process start is not counted; p50 / p99 / max over many vehicles
 *   a vehicle whose two timelines (location, speed_kmh) hold G rows each
 *     (default 100 000: a location_reported every 10 s for 11.6 days):
 *     show and why, now and known_at
 *   keel dump of the N-event store against today's keel (--old-keel, the
 *     binary of main at d09310a, built by bench/run), which ingests the
 *     same input into its own store: both timed as processes writing to
 *     /dev/null, alternated, median of three, and the two dumps compared
 *     byte for byte once
 *   with --old-keel, show and why of the G-row vehicle by both binaries as
 *     processes (what a user waits for; process start included)
 *
 * Usage: bench_reads [--events N] [--gps G] [--calls K] [--dir DIR]
 *                    [--old-keel PATH] [--tiny]
 * (--tiny: 2000 events, G 1000, K 20: what CI runs to see the benchmark
 * run to its end, bench/CMakeLists.txt)
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"

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

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench_reads: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

/* ---------------------------------------------------------------- inputs */

/* The first `events` of the fleet stream into one file, split at
 * `first` lines into a second: the two halves of one input. */
static void generate_halves(const char *first_path, const char *second_path, uint64_t events,
			    uint64_t first)
{
	char *text = NULL;
	size_t size = 0;
	FILE *mem = open_memstream(&text, &size);
	const struct keel_generate_options o = {
	    .size = sizeof o, .events = events, .tenants = 1, .seed = 1};
	if (!mem || keel_generate_fleet(&o, mem) != 0)
		die("generate failed", NULL);
	fclose(mem);
	size_t cut = 0;
	for (uint64_t n = 0; n < first && cut < size; n++) {
		const char *nl = memchr(text + cut, '\n', size - cut);
		cut = nl ? (size_t)(nl - text) + 1 : size;
	}
	FILE *a = fopen(first_path, "wb"), *b = fopen(second_path, "wb");
	if (!a || !b || fwrite(text, 1, cut, a) != cut ||
	    fwrite(text + cut, 1, size - cut, b) != size - cut)
		die("cannot write the input", NULL);
	fclose(a);
	fclose(b);
	free(text);
}

/* The registration of vehicle in tenant, and its i-th position report;
 * positions walk a small square so that every value differs. */
static void write_registration(FILE *f, const char *tenant, const char *vehicle,
			       const char *when)
{
	fprintf(f,
		"{\"specversion\":\"1.0\",\"id\":\"%s-0\",\"source\":\"/fleet/%s/registry\","
		"\"type\":\"fleet.vehicle.registered\",\"time\":\"%s\",\"tenant\":\"%s\","
		"\"datacontenttype\":\"application/json\",\"data\":{\"vehicle_id\":\"%s\","
		"\"depot_id\":\"D-01\",\"make\":\"Iveco\",\"model\":\"Daily\",\"year\":2025}}\n",
		tenant, tenant, when, tenant, vehicle);
}

static void write_report(FILE *f, const char *tenant, const char *vehicle, uint64_t i,
			 const char *when)
{
	fprintf(f,
		"{\"specversion\":\"1.0\",\"id\":\"%s-%llu\",\"source\":"
		"\"/fleet/%s/telematics\",\"type\":\"fleet.vehicle.location_reported\","
		"\"time\":\"%s\",\"tenant\":\"%s\",\"datacontenttype\":"
		"\"application/json\",\"data\":{\"vehicle_id\":\"%s\",\"location\":"
		"{\"lat\":%.6f,\"lon\":%.6f},\"speed_kmh\":%.1f,\"heading_deg\":90}}\n",
		tenant, (unsigned long long)i, tenant, when, tenant, vehicle,
		51.3 + (double)(i % 1000) * 1e-5, 12.3 + (double)(i / 1000) * 1e-5,
		(double)(i % 90));
}

/* One vehicle reporting its position every 10 s from 2026-01-05:
 * `reports` events after its registration, the first half into
 * first_path, the rest into second_path. */
static void generate_gps(const char *first_path, const char *second_path, uint64_t reports)
{
	FILE *a = fopen(first_path, "wb"), *b = fopen(second_path, "wb");
	if (!a || !b)
		die("cannot write the GPS input", NULL);
	const int64_t start = INT64_C(1767571200000000); /* 2026-01-05T00:00:00Z */
	char when[KEEL_TIME_BUFSZ];
	keel_time_format(start, when);
	write_registration(a, "gps", "V-GPS", when);
	for (uint64_t i = 1; i <= reports; i++) {
		keel_time_format(start + (int64_t)i * 10 * INT64_C(1000000), when);
		write_report(i <= reports / 2 ? a : b, "gps", "V-GPS", i, when);
	}
	fclose(a);
	fclose(b);
}

/* Reports first .. last of the vehicle V-LIVE, the i-th at start_usec +
 * (i - first) * step_usec (microseconds: a live feed, times in the
 * present), with its registration before the first when first is 1. */
static void generate_live(const char *path, uint64_t first, uint64_t last, int64_t start_usec,
			  int64_t step_usec)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		die("cannot write the live input", path);
	char when[KEEL_TIME_BUFSZ];
	if (first == 1) {
		keel_time_format(start_usec - step_usec, when);
		write_registration(f, "live", "V-LIVE", when);
	}
	for (uint64_t i = first; i <= last; i++) {
		keel_time_format(start_usec + (int64_t)(i - first) * step_usec, when);
		write_report(f, "live", "V-LIVE", i, when);
	}
	fclose(f);
}

/* -------------------------------------------------------------- processes */

/* Runs a keel binary with stdout to `out` (NULL: /dev/null); wall seconds. */
static double run(const char *bin, char *const argv[], const char *out)
{
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		execv(bin, argv);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("a keel process failed", bin);
	return now() - t0;
}

static void ingest(const char *bin, const char *input, const char *store)
{
	char *argv[] = {"keel", "ingest", (char *)input, "--cartridge", "fleet", "--store",
			(char *)store, "--quiet", NULL};
	run(bin, argv, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return v[n / 2];
}

/* --------------------------------------------------------- store content */

/* A SQLite store of this run: its file under the run's directory and its
 * URL. An earlier run's file, with its WAL and shared memory, is removed
 * first: every store starts empty. */
struct store_file {
	char path[4096];
	char url[4200];
};

static void store_file_new(struct store_file *f, const char *dir, const char *name)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
	snprintf(f->url, sizeof f->url, "sqlite:%s", f->path);
	for (size_t k = 0; k < sizeof suffix / sizeof suffix[0]; k++) {
		char p[4200];
		snprintf(p, sizeof p, "%s%s", f->path, suffix[k]);
		if (unlink(p) != 0 && errno != ENOENT)
			die("cannot remove an earlier run's store", p);
	}
}

/* The store's clock at the last commit of what it holds. */
static int64_t last_recorded(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t t = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ||
	    sqlite3_prepare_v2(db, "SELECT max(recorded_at) FROM events", -1, &st, NULL))
		die("cannot read recorded_at", sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		t = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return t;
}

/* Every vehicle of the store, in subject order (from its canonical
 * stats: the entities of the dump are the subjects keel shows). */
struct subjects {
	char **name;
	size_t n;
};

static void vehicles(const char *path, struct subjects *out)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ||
	    sqlite3_prepare_v2(db,
			       "SELECT subject FROM entities WHERE tenant = 'tenant-00' AND "
			       "kind = 'vehicle' ORDER BY subject",
			       -1, &st, NULL))
		die("cannot list vehicles", sqlite3_errmsg(db));
	size_t cap = 1024;
	out->name = malloc(cap * sizeof *out->name);
	out->n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (out->n == cap)
			out->name = realloc(out->name, (cap *= 2) * sizeof *out->name);
		out->name[out->n++] = strdup((const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (!out->n)
		die("no vehicles in the store", path);
}

/* ----------------------------------------------------------------- reads */

enum read_kind { SHOW, HISTORY, WHY };

struct latency {
	double p50, p99, max;	 /* milliseconds, wall */
	double cpu_p50, cpu_p99; /* milliseconds of this thread's CPU */
	size_t calls, not_found;
};

/* `calls` reads of kind k, cycling through the subjects with a stride
 * that visits them all in a scattered order (no two neighbours in a row:
 * each read finds its pages where the store left them, not where the last
 * read did). The first `warm` calls are not counted: they fault the
 * library and SQLite's caches in, once per process. */
static struct latency measure(struct keel_store *s, const char *tenant,
			      const struct subjects *subj, enum read_kind k, const char *predicate,
			      const struct keel_read_options *o, size_t calls)
{
	const size_t warm = 50;
	double *lat = malloc(calls * sizeof *lat), *cpu = malloc(calls * sizeof *cpu);
	struct latency r = {.calls = calls};
	size_t stride = subj->n > 7919 ? 7919 : 1;
	for (size_t i = 0; i < warm + calls; i++) {
		const char *subject = subj->name[(i * stride) % subj->n];
		char *json = NULL;
		double t0 = now(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		int rc = k == SHOW	? keel_show(s, tenant, subject, o, &json)
			 : k == WHY	? keel_why(s, tenant, subject, predicate, o, &json)
					: keel_history(s, tenant, subject, predicate, o, &json);
		double dt = now() - t0, dc = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (rc == KEEL_ENOTFOUND)
			r.not_found += i >= warm;
		else if (rc != 0)
			die("a read failed", keel_store_errmsg(s));
		free(json);
		if (i >= warm) {
			lat[i - warm] = dt * 1000;
			cpu[i - warm] = dc * 1000;
		}
	}
	size_t i99 = (size_t)((double)(calls - 1) * 0.99 + 0.5);
	qsort(lat, calls, sizeof *lat, cmp_double);
	qsort(cpu, calls, sizeof *cpu, cmp_double);
	r.p50 = lat[calls / 2];
	r.p99 = lat[i99];
	r.max = lat[calls - 1];
	r.cpu_p50 = cpu[calls / 2];
	r.cpu_p99 = cpu[i99];
	free(lat);
	free(cpu);
	return r;
}

static void row(const char *what, const char *store, struct latency l, double target_ms)
{
	char target[32] = "";
	if (target_ms > 0)
		snprintf(target, sizeof target, "p99 <= %.0f ms %s", target_ms,
			 l.p99 <= target_ms ? "met" : "MISSED");
	printf("| %-44s | %-20s | %6zu | %7.3f | %7.3f | %7.3f | %7.3f | %7.3f | %-18s |\n", what,
	       store, l.calls, l.p50, l.p99, l.max, l.cpu_p50, l.cpu_p99, target);
	fflush(stdout);
}

/* ------------------------------------------------------------------ dump */

/* Median of three dumps by each binary, alternated so that a neighbour's
 * burst weighs on both; the dumps compared byte for byte first. */
static void dumps(const char *bin_new, const char *url_new, const char *bin_old,
		  const char *url_old, const char *dir, double *t_new, double *t_old,
		  bool *identical)
{
	char out_new[4200], out_old[4200];
	snprintf(out_new, sizeof out_new, "%s/dump-new.ndjson", dir);
	snprintf(out_old, sizeof out_old, "%s/dump-old.ndjson", dir);
	char *an[] = {"keel", "dump", "--store", (char *)url_new, NULL};
	char *ao[] = {"keel", "dump", "--store", (char *)url_old, NULL};
	*identical = false;
	if (bin_old) {
		run(bin_new, an, out_new);
		run(bin_old, ao, out_old);
		char cmd[8500];
		snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", out_new, out_old);
		*identical = system(cmd) == 0;
		unlink(out_new);
		unlink(out_old);
	}
	double vn[3], vo[3];
	for (int i = 0; i < 3; i++) {
		vn[i] = run(bin_new, an, NULL);
		vo[i] = bin_old ? run(bin_old, ao, NULL) : 0;
	}
	*t_new = median(vn, 3);
	*t_old = median(vo, 3);
}

/* Median wall time of five runs of a keel read command (process start
 * included, as a user waits for it). */
static double process_read(const char *bin, const char *cmd, const char *url,
			   const char *tenant, const char *subject, const char *predicate)
{
	char *argv[] = {"keel", (char *)cmd, "--store", (char *)url, (char *)tenant,
			(char *)subject, (char *)predicate, NULL};
	double v[5];
	for (int i = 0; i < 5; i++)
		v[i] = run(bin, argv, NULL);
	return median(v, 5);
}

int main(int argc, char **argv)
{
	uint64_t events = 1000000, gps = 100000;
	size_t calls = 2000;
	const char *dir = NULL, *old_keel = NULL;
	static const struct option opts[] = {{"events", required_argument, 0, 'n'},
					     {"gps", required_argument, 0, 'g'},
					     {"calls", required_argument, 0, 'k'},
					     {"dir", required_argument, 0, 'd'},
					     {"old-keel", required_argument, 0, 'o'},
					     {"tiny", no_argument, 0, 't'},
					     {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "n:g:k:d:o:t", opts, NULL)) != -1) {
		if (c == 't')
			events = 2000, gps = 1000, calls = 20;
		else if (c == 'n')
			events = strtoull(optarg, NULL, 10);
		else if (c == 'g')
			gps = strtoull(optarg, NULL, 10);
		else if (c == 'k')
			calls = strtoul(optarg, NULL, 10);
		else if (c == 'd')
			dir = optarg;
		else if (c == 'o')
			old_keel = optarg;
		else
			return 2;
	}
	if (old_keel && access(old_keel, X_OK) != 0)
		die("--old-keel is not an executable", old_keel);
	char tmpl[] = "/tmp/keel-bench-reads-XXXXXX";
	bool own_dir = !dir;
	if (!dir && !(dir = mkdtemp(tmpl)))
		die("mkdtemp failed", NULL);
	char in1[4096], in2[4096], gps1[4096], gps2[4096], live1[4096], live2[4096];
	snprintf(in1, sizeof in1, "%s/fleet-1.ndjson", dir);
	snprintf(in2, sizeof in2, "%s/fleet-2.ndjson", dir);
	snprintf(gps1, sizeof gps1, "%s/gps-1.ndjson", dir);
	snprintf(gps2, sizeof gps2, "%s/gps-2.ndjson", dir);
	snprintf(live1, sizeof live1, "%s/live-1.ndjson", dir);
	snprintf(live2, sizeof live2, "%s/live-2.ndjson", dir);
	struct store_file big, big_old, gps_store, gps_old, live_store;
	store_file_new(&big, dir, "reads.db");
	store_file_new(&big_old, dir, "reads-old.db");
	store_file_new(&gps_store, dir, "gps.db");
	store_file_new(&gps_old, dir, "gps-old.db");
	store_file_new(&live_store, dir, "live.db");

	fprintf(stderr, "bench_reads: generating inputs in %s ...\n", dir);
	generate_halves(in1, in2, events, events / 2);
	generate_gps(gps1, gps2, gps);
	fprintf(stderr, "bench_reads: ingesting %llu + %llu events ...\n",
		(unsigned long long)gps + 1, (unsigned long long)events);
	ingest(KEEL_BIN, in1, big.url);
	int64_t past = last_recorded(big.path); /* the first half's last commit */
	ingest(KEEL_BIN, in2, big.url);
	ingest(KEEL_BIN, gps1, gps_store.url);
	int64_t gps_past = last_recorded(gps_store.path);
	ingest(KEEL_BIN, gps2, gps_store.url);
	/* The same rows as a live feed: each half recorded just after its
	 * times (the first half's over the last minutes, the second's in the
	 * second after the first half's commit), so that the rows recorded
	 * after the known_at moment are also valid after it. */
	int64_t step = 60 * INT64_C(1000000) / (int64_t)(gps / 2 + 1);
	generate_live(live1, 1, gps / 2, keel_time_now() - 60 * INT64_C(1000000), step);
	ingest(KEEL_BIN, live1, live_store.url);
	int64_t live_past = last_recorded(live_store.path);
	generate_live(live2, gps / 2 + 1, gps, live_past + 1, INT64_C(1000000) / (int64_t)gps);
	sleep(2); /* the second half's times all before its commits */
	ingest(KEEL_BIN, live2, live_store.url);
	if (old_keel) {
		fprintf(stderr, "bench_reads: the same inputs into today's keel (%s) ...\n",
			old_keel);
		ingest(old_keel, in1, big_old.url);
		ingest(old_keel, in2, big_old.url);
		ingest(old_keel, gps1, gps_old.url);
		ingest(old_keel, gps2, gps_old.url);
	}

	struct subjects all;
	vehicles(big.path, &all);
	struct subjects one = {.name = (char *[]){"vehicle:V-GPS"}, .n = 1};
	struct subjects live = {.name = (char *[]){"vehicle:V-LIVE"}, .n = 1};
	struct keel_store *s, *g, *lv;
	char *err = NULL;
	if (keel_store_open_existing(big.url, &s, &err) ||
	    keel_store_open_existing(gps_store.url, &g, &err) ||
	    keel_store_open_existing(live_store.url, &lv, &err))
		die("cannot open the stores", err);
	const struct keel_read_options at_now = {.size = sizeof at_now};
	const struct keel_read_options then = {
	    .size = sizeof then, .known_at_set = true, .known_at = past};
	const struct keel_read_options gps_then = {
	    .size = sizeof gps_then, .known_at_set = true, .known_at = gps_past};
	const struct keel_read_options live_then = {
	    .size = sizeof live_then, .known_at_set = true, .known_at = live_past};

	char big_name[32], gps_name[32];
	snprintf(big_name, sizeof big_name, "%llu events", (unsigned long long)events);
	snprintf(gps_name, sizeof gps_name, "%llu-row timelines", (unsigned long long)gps);
	fprintf(stderr, "bench_reads: reads ...\n");
	struct latency l_show = measure(s, "tenant-00", &all, SHOW, NULL, &at_now, calls);
	struct latency l_show_then = measure(s, "tenant-00", &all, SHOW, NULL, &then, calls);
	struct latency l_hist = measure(s, "tenant-00", &all, HISTORY, "location", &at_now, calls);
	struct latency l_hist_then = measure(s, "tenant-00", &all, HISTORY, "location", &then, calls);
	struct latency l_why = measure(s, "tenant-00", &all, WHY, "location", &at_now, calls);
	struct latency g_show = measure(g, "gps", &one, SHOW, NULL, &at_now, calls);
	struct latency g_show_then = measure(g, "gps", &one, SHOW, NULL, &gps_then, calls);
	struct latency g_why = measure(g, "gps", &one, WHY, "location", &at_now, calls);
	struct latency g_why_then = measure(g, "gps", &one, WHY, "location", &gps_then, calls);
	struct latency v_show_then = measure(lv, "live", &live, SHOW, NULL, &live_then, calls);
	struct latency v_why_then =
	    measure(lv, "live", &live, WHY, "location", &live_then, calls);
	keel_store_close(s);
	keel_store_close(g);
	keel_store_close(lv);

	fprintf(stderr, "bench_reads: dumps ...\n");
	double t_dump, t_dump_old;
	bool identical;
	dumps(KEEL_BIN, big.url, old_keel, big_old.url, dir, &t_dump, &t_dump_old, &identical);
	double p_show = 0, p_why = 0, p_show_old = 0, p_why_old = 0, p_start = 0,
	       p_start_old = 0;
	if (old_keel) {
		fprintf(stderr, "bench_reads: show and why as processes ...\n");
		/* what starting a process costs on this host now */
		char *version[] = {"keel", "version", NULL};
		double v[5], vo[5];
		for (int i = 0; i < 5; i++) {
			v[i] = run(KEEL_BIN, version, NULL);
			vo[i] = run(old_keel, version, NULL);
		}
		p_start = median(v, 5);
		p_start_old = median(vo, 5);
		p_show =
		    process_read(KEEL_BIN, "show", gps_store.url, "gps", "vehicle:V-GPS", NULL);
		p_why = process_read(KEEL_BIN, "why", gps_store.url, "gps", "vehicle:V-GPS",
				     "location");
		p_show_old = process_read(old_keel, "show", gps_old.url, "gps", "vehicle:V-GPS",
					  NULL);
		p_why_old = process_read(old_keel, "why", gps_old.url, "gps", "vehicle:V-GPS",
					 "location");
	}

	printf("Keel %s bench_reads: SQLite stores, reads in-process through the "
	       "library, %zu calls each after 50 not counted; %ld cores\n",
	       KEEL_VERSION, calls, sysconf(_SC_NPROCESSORS_ONLN));
	printf("(the %s store: %zu vehicles read in turn; known_at: the end of the first "
	       "half of the input, recorded before the second half was ingested; CPU: the "
	       "calling thread's CPU time per call, which a busy host does not inflate as it "
	       "does wall time; the target is on wall time)\n\n",
	       big_name, all.n);
	printf("| %-44s | %-20s | %6s | %7s | %7s | %7s | %7s | %7s | %-18s |\n", "read", "store",
	       "calls", "p50 ms", "p99 ms", "max ms", "CPU p50", "CPU p99", "target");
	printf("|----------------------------------------------|----------------------|--------|"
	       "---------|---------|---------|---------|---------|--------------------|\n");
	row("show vehicle, now", big_name, l_show, 2);
	row("show vehicle, known_at a past moment", big_name, l_show_then, 2);
	row("history vehicle location (one timeline)", big_name, l_hist, 5);
	row("history vehicle location, known_at", big_name, l_hist_then, 5);
	row("why vehicle location, now", big_name, l_why, 0);
	row("show vehicle:V-GPS, now", gps_name, g_show, 2);
	/* no target known_at here: the issue sets none. The row valid now as
	 * known half way is sought from that moment back (src/store/sqlite/read.c): a
	 * live feed (V-LIVE) finds it at once, a history loaded in bulk
	 * (V-GPS, every row valid long before it was recorded) walks back
	 * over the rows recorded after the moment */
	row("show vehicle:V-GPS, known_at half way", gps_name, g_show_then, 0);
	row("why vehicle:V-GPS location, now", gps_name, g_why, 2);
	row("why vehicle:V-GPS location, known_at", gps_name, g_why_then, 0);
	row("show vehicle:V-LIVE, known_at half way", gps_name, v_show_then, 0);
	row("why vehicle:V-LIVE location, known_at", gps_name, v_why_then, 0);
	if (l_show_then.not_found)
		printf("(%zu of the known_at shows found no entity: vehicles registered "
		       "after that moment)\n",
		       l_show_then.not_found);
	printf("\n| %-44s | %10s | %-18s |\n", "dump of the " "store, as a process", "seconds",
	       "target");
	printf("|----------------------------------------------|------------|--------------------|\n");
	printf("| %-44s | %10.2f | %-18s |\n", "keel dump > /dev/null, this keel", t_dump, "");
	if (old_keel) {
		printf("| %-44s | %10.2f | %-18s |\n", "keel dump > /dev/null, today's (d09310a)",
		       t_dump_old, "");
		char target[32];
		snprintf(target, sizeof target, "<= 1.2x %s",
			 t_dump / t_dump_old <= 1.2 ? "met" : "MISSED");
		printf("| %-44s | %9.2fx | %-18s |\n", "this / today's", t_dump / t_dump_old,
		       target);
		printf("(the two dumps are %s)\n\n",
		       identical ? "byte-identical" : "DIFFERENT: the comparison is void");
		printf("| %-44s | %10s | %10s |\n", "vehicle:V-GPS as a process (start included)",
		       "this keel", "today's");
		printf("|----------------------------------------------|------------|------------|\n");
		printf("| %-44s | %7.1f ms | %7.1f ms |\n", "keel show (median of 5)", p_show * 1000,
		       p_show_old * 1000);
		printf("| %-44s | %7.1f ms | %7.1f ms |\n", "keel why ... location (median of 5)",
		       p_why * 1000, p_why_old * 1000);
		printf("| %-44s | %7.1f ms | %7.1f ms |\n", "keel version: process start (median of 5)",
		       p_start * 1000, p_start_old * 1000);
	} else {
		printf("(no --old-keel: today's dump not measured)\n");
	}
	fflush(stdout);
	for (size_t i = 0; i < all.n; i++)
		free(all.name[i]);
	free(all.name);
	if (own_dir) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_reads: could not remove %s\n", dir);
	}
	return 0;
}
