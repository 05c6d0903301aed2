/*
 * bench_http.c - keel serve under load: a small epoll load generator (many
 * keep-alive connections, one thread) against a server started in-process
 * on a loopback port. The events are the deterministic fleet stream of
 * keel_generate_fleet, so every run sends the same bytes.
 *
 * Scenarios, each on a fresh store:
 *   batch      POST /v1/events, 1 000 events a request (batch+json), closed
 *              loop on C connections: events/s into memory and SQLite;
 *   single     one event a request, paced at a fixed rate (open loop:
 *              latency counts from when a request was due, so a stalled
 *              server cannot hide its queue), SQLite: p50/p99;
 *   single max the same, closed loop: the most requests/s;
 *   no sync    the SQLite batch and single scenarios again with the
 *              writer's commits answered unsynced (as before they were
 *              synced): what the sync before each answer costs, as ratios;
 *   process    the SQLite batch scenario once more against `keel serve` run
 *              as its own process (the keel binary), whose peak RSS is then
 *              the server's own (in-process, the load generator's corpus
 *              and requests would count);
 *   limits     the same requests against --null mode (the server reads the
 *              request and answers 200 without parsing or ingesting): what
 *              HTTP itself costs on this machine; and for batches the same
 *              events given to the library directly (keel_ingest, batch
 *              1000), which the server cannot beat since it writes through
 *              one writer; and the library committing every 4 000 events,
 *              the most one commit of four connections' POSTs can hold
 *              when each is committed before it is answered.
 *
 * Usage: bench_http [--events N] [--rate R] [--seconds S] [--threads T]
 *                   [--connections C] [--dir DIR] [--only TEXT] [--port P]
 *                   [--tiny]
 * --tiny: 4000 events, 0.5 s of singles, 2 threads (what CI runs to see
 * the benchmark run to its end, bench/CMakeLists.txt).
 * --port loads a keel serve already running on 127.0.0.1:P instead (its
 * store is whatever it was started with; the library rows are skipped).
 * Prints one table (markdown) that a note can quote.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/server_bench.h"
#include "keel.h"
#include "util.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ workload */

struct corpus {
	char *text; /* NDJSON from the generator */
	size_t *off, *len;
	size_t n;
};

static void corpus_make(struct corpus *c, uint64_t events, uint64_t seed)
{
	size_t size = 0;
	FILE *f = open_memstream(&c->text, &size);
	struct keel_generate_options go = {.size = sizeof go, .events = events, .tenants = 4, .seed = seed};
	if (!f || keel_generate_fleet(&go, f) != 0) {
		fprintf(stderr, "bench_http: cannot generate events\n");
		exit(1);
	}
	fclose(f);
	c->off = keel_xmalloc((size_t)events * sizeof *c->off);
	c->len = keel_xmalloc((size_t)events * sizeof *c->len);
	c->n = 0;
	for (size_t p = 0; p < size && c->n < events;) {
		const char *nl = memchr(c->text + p, '\n', size - p);
		size_t e = nl ? (size_t)(nl - c->text) : size;
		c->off[c->n] = p;
		c->len[c->n] = e - p;
		c->n++;
		p = e + 1;
	}
}

static void corpus_free(struct corpus *c)
{
	free(c->text);
	free(c->off);
	free(c->len);
}

/* Requests: each a complete HTTP/1.1 message (keep-alive). */
struct reqs {
	struct keel_buf all;
	size_t *off, *len;
	size_t n;
	uint64_t events;
};

static void reqs_add(struct reqs *r, const char *ctype, const char *body, size_t blen,
		     size_t events)
{
	size_t start = r->all.len;
	keel_buf_addf(&r->all,
		      "POST /v1/events HTTP/1.1\r\nHost: bench\r\nContent-Type: %s\r\n"
		      "Content-Length: %zu\r\n\r\n",
		      ctype, blen);
	keel_buf_add(&r->all, body, blen);
	r->off = keel_xrealloc(r->off, (r->n + 1) * sizeof *r->off);
	r->len = keel_xrealloc(r->len, (r->n + 1) * sizeof *r->len);
	r->off[r->n] = start;
	r->len[r->n] = r->all.len - start;
	r->n++;
	r->events += events;
}

static void reqs_batches(struct reqs *r, const struct corpus *c, size_t per)
{
	memset(r, 0, sizeof *r);
	keel_buf_init(&r->all);
	struct keel_buf body;
	keel_buf_init(&body);
	for (size_t i = 0; i < c->n; i += per) {
		keel_buf_reset(&body);
		keel_buf_addc(&body, '[');
		size_t k = 0;
		for (; k < per && i + k < c->n; k++) {
			if (k)
				keel_buf_addc(&body, ',');
			keel_buf_add(&body, c->text + c->off[i + k], c->len[i + k]);
		}
		keel_buf_addc(&body, ']');
		reqs_add(r, "application/cloudevents-batch+json", body.data, body.len, k);
	}
	keel_buf_free(&body);
}

static void reqs_singles(struct reqs *r, const struct corpus *c)
{
	memset(r, 0, sizeof *r);
	keel_buf_init(&r->all);
	for (size_t i = 0; i < c->n; i++)
		reqs_add(r, "application/cloudevents+json", c->text + c->off[i], c->len[i], 1);
}

static void reqs_free(struct reqs *r)
{
	keel_buf_free(&r->all);
	free(r->off);
	free(r->len);
}

/* ------------------------------------------------------ load generator */

struct conn {
	int fd;
	bool busy;
	size_t req;	  /* request being sent */
	size_t sent;	  /* bytes of it sent */
	double due;	  /* when it was due (latency origin) */
	char in[65536];	  /* response bytes */
	size_t in_len;
};

struct run {
	double seconds;
	size_t done, failed;
	uint64_t events;
	double *lat; /* per completed request, seconds */
};

static int open_conn(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
		perror("bench_http: connect");
		exit(1);
	}
	return fd;
}

/* Returns 1 when a whole response is in c->in (status in *status), 0 if
 * more is needed. Responses have a Content-Length (libmicrohttpd). */
static int response_done(struct conn *c, int *status)
{
	c->in[c->in_len < sizeof c->in ? c->in_len : sizeof c->in - 1] = 0;
	char *sep = strstr(c->in, "\r\n\r\n");
	if (!sep)
		return 0;
	char *cl = strcasestr(c->in, "\r\nContent-Length:");
	size_t body = cl && cl < sep ? strtoul(cl + 17, NULL, 10) : 0;
	size_t need = (size_t)(sep + 4 - c->in) + body;
	if (c->in_len < need)
		return 0;
	*status = (int)strtol(c->in + 9, NULL, 10);
	/* Pipelining is not used: nothing follows the response. */
	c->in_len = 0;
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sends every request of r over nconn connections. rate > 0 paces them
 * (request i due at start + i / rate); rate 0 sends as fast as answers
 * come back. */
static void load(uint16_t port, const struct reqs *r, size_t nconn, double rate,
		 struct run *out)
{
	int ep = epoll_create1(0);
	struct conn *conns = keel_xcalloc(nconn, sizeof *conns);
	for (size_t i = 0; i < nconn; i++) {
		conns[i].fd = open_conn(port);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET,
					 .data.ptr = &conns[i]};
		epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
	}
	memset(out, 0, sizeof *out);
	out->lat = keel_xmalloc((r->n + 1) * sizeof *out->lat);
	size_t next = 0;
	double start = now_s();
	struct epoll_event evs[256];
	while (out->done + out->failed < r->n) {
		double t = now_s();
		/* Hand due requests to idle connections. */
		for (size_t i = 0; i < nconn && next < r->n; i++) {
			struct conn *c = &conns[i];
			double due = rate > 0 ? start + (double)next / rate : t;
			if (c->busy || due > t)
				continue;
			c->busy = true;
			c->req = next++;
			c->sent = 0;
			c->due = due;
			c->in_len = 0;
		}
		/* Push bytes of requests being sent. */
		for (size_t i = 0; i < nconn; i++) {
			struct conn *c = &conns[i];
			while (c->busy && c->sent < r->len[c->req]) {
				ssize_t w = send(c->fd, r->all.data + r->off[c->req] + c->sent,
						 r->len[c->req] - c->sent, MSG_NOSIGNAL);
				if (w <= 0)
					break;
				c->sent += (size_t)w;
			}
		}
		/* Sleep until the next request is due or an answer comes, to
		 * the microsecond: a millisecond timeout rounded down to 0
		 * would spin, and a spinning generator takes a core from the
		 * server it measures (at 2000/s a request is due every 0.5 ms). */
		double wait = 0.001;
		if (rate > 0 && next < r->n) {
			wait = start + (double)next / rate - now_s();
			wait = wait < 0 ? 0 : wait > 0.005 ? 0.005 : wait;
		}
		struct timespec timeout = {0, (long)(wait * 1e9)};
		int n = epoll_pwait2(ep, evs, 256, &timeout, NULL);
		for (int k = 0; k < n; k++) {
			struct conn *c = evs[k].data.ptr;
			for (;;) {
				if (c->in_len >= sizeof c->in - 1) {
					fprintf(stderr, "bench_http: response too large\n");
					exit(1);
				}
				ssize_t got = recv(c->fd, c->in + c->in_len,
						   sizeof c->in - 1 - c->in_len, 0);
				if (got == 0) {
					fprintf(stderr, "bench_http: server closed a connection\n");
					exit(1);
				}
				if (got < 0)
					break;
				c->in_len += (size_t)got;
				int status;
				if (c->busy && response_done(c, &status)) {
					double lat = now_s() - c->due;
					if (status == 200) {
						out->lat[out->done++] = lat;
					} else {
						if (out->failed++ < 3)
							fprintf(stderr, "bench_http: status %d: %.200s\n",
								status, c->in);
					}
					c->busy = false;
				}
			}
		}
	}
	out->seconds = now_s() - start;
	out->events = r->events;
	qsort(out->lat, out->done, sizeof *out->lat, cmp_double);
	for (size_t i = 0; i < nconn; i++)
		close(conns[i].fd);
	free(conns);
	close(ep);
}

static double pct(const struct run *r, double p)
{
	if (!r->done || !r->lat)
		return 0;
	size_t i = (size_t)(p * (double)(r->done - 1) + 0.5);
	return r->lat[i] * 1000;
}

/* ------------------------------------------------------------ scenarios */

struct opts {
	uint64_t events;
	double rate;
	double seconds;
	unsigned threads;
	size_t connections;
	const char *dir;
	const char *only; /* run the scenarios whose name contains this */
	unsigned port;	  /* load a running keel serve instead */
};

/* The server as keel serve runs it, or one of the benchmark's modes
 * (src/http/server_bench.h). */
enum serve_mode { SERVE_AS_IS, SERVE_DROPPING, SERVE_UNSYNCED };

static struct keel_server *serve(const struct opts *o, const char *url, enum serve_mode mode)
{
	struct keel_server_options so = {
		.size = sizeof so,
		.listen = "127.0.0.1:0",
		.store_url = url,
		.cartridge = KEEL_BUILTIN_CARTRIDGE,
		.threads = o->threads,
		.max_per_ip = 1000,
	};
	struct keel_server *srv = NULL;
	char *err = NULL;
	int rc = mode == SERVE_DROPPING  ? keel_server_start_dropping_events(&so, &srv, &err)
		 : mode == SERVE_UNSYNCED ? keel_server_start_unsynced(&so, &srv, &err)
					  : keel_server_start(&so, &srv, &err);
	if (rc != 0) {
		fprintf(stderr, "bench_http: %s\n", err);
		exit(1);
	}
	return srv;
}

static void sqlite_url(const struct opts *o, const char *name, char *url, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s.db", o->dir, name);
	unlink(path);
	char side[560];
	snprintf(side, sizeof side, "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", path);
	unlink(side);
	snprintf(url, n, "sqlite:%s", path);
}

/* A target is a floor on events/s or a ceiling on the p99 (0: none);
 * the row says whether this run met it. */
struct target {
	const char *text;
	double min_events_s;
	double max_p99_ms;
};

static void row(const char *scenario, const char *store, const struct run *r,
		const struct target *t, bool show_events)
{
	char ev[32] = "", lat50[32] = "", lat99[32] = "", target[48];
	bool met = (t->min_events_s <= 0 || (double)r->events / r->seconds >= t->min_events_s) &&
		   (t->max_p99_ms <= 0 || pct(r, 0.99) <= t->max_p99_ms) && !r->failed;
	snprintf(target, sizeof target, "%s%s", t->text,
		 t->min_events_s > 0 || t->max_p99_ms > 0 ? (met ? " met" : " MISSED") : "");
	if (show_events)
		snprintf(ev, sizeof ev, "%.0f", (double)r->events / r->seconds);
	snprintf(lat50, sizeof lat50, "%.2f", pct(r, 0.50));
	snprintf(lat99, sizeof lat99, "%.2f", pct(r, 0.99));
	printf("| %-28s | %-6s | %8zu | %6zu | %6.2f | %9s | %8.0f | %7s | %7s | %-27s |\n",
	       scenario, store, r->done, r->failed, r->seconds, ev,
	       (double)r->done / r->seconds, lat50, lat99, target);
	fflush(stdout);
}

/* The limit for batched POSTs: the same events offered to the library
 * directly, one thread (the server serialises its writes): batch 1000 with
 * commits grouped a second apart, which the server cannot beat; and
 * batches of 4 000, each committed, as the server commits a group of
 * POSTs before it answers them: four connections of 1 000 events can
 * give it at most 4 000 events a commit. */
static void direct(const char *url, const struct corpus *c, size_t batch, bool commit_each,
		   struct run *out)
{
	struct keel_store *s = NULL;
	struct keel_cartridge *cart = NULL;
	struct keel_ingest *ing = NULL;
	char *err = NULL;
	if (keel_store_open(url, &s, &err) != 0 || keel_cartridge_load("fleet", &cart, &err) != 0) {
		fprintf(stderr, "bench_http: %s\n", err ? err : "cannot open");
		exit(1);
	}
	struct keel_ingest_options io = {
	    .size = sizeof io,
	    .cartridge = cart,
	    .batch = batch,
	    .position_word = "index",
	    .commit_interval_ms = commit_each ? KEEL_COMMIT_EVERY_BATCH : 0};
	keel_ingest_new(s, &io, &ing);
	memset(out, 0, sizeof *out); /* no latencies: lat stays NULL */
	double t0 = now_s();
	for (size_t i = 0; i < c->n; i++)
		if (keel_ingest_add(ing, c->text + c->off[i], c->len[i], i) != 0)
			break;
	keel_ingest_flush(ing);
	out->seconds = now_s() - t0;
	out->events = keel_ingest_report(ing)->accepted;
	out->done = (c->n + 999) / 1000; /* the POSTs of 1 000 these events stand for */
	keel_ingest_free(ing);
	keel_cartridge_free(cart);
	keel_store_close(s);
}

/* A free loopback port: bound to port 0, read back, released (another
 * process could take it in between; on a benchmark machine none does). */
static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		perror("bench_http: free port");
		exit(1);
	}
	close(fd);
	return ntohs(a.sin_port);
}

/* `keel serve` as its own process on url; returns its pid once it
 * accepts connections (polled, every 10 ms, for at most 10 s). */
static pid_t serve_process(const char *url, uint16_t port, unsigned threads)
{
	char listen[32], nthreads[16];
	snprintf(listen, sizeof listen, "127.0.0.1:%u", port);
	snprintf(nthreads, sizeof nthreads, "%u", threads);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(KEEL_BIN, "keel", "serve", "--listen", listen, "--store", url, "--cartridge", "fleet", "--threads",
		      nthreads, "--quiet", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
		close(fd);
		if (ok)
			return pid;
		struct timespec ten_ms = {0, 10000000};
		nanosleep(&ten_ms, NULL);
	}
	fprintf(stderr, "bench_http: keel serve did not start on port %u\n", port);
	exit(1);
}

/* Stops the server process (SIGTERM: it drains and exits) and returns its
 * peak RSS in KiB: VmHWM of /proc/PID/status, read before the signal. Not
 * wait4's ru_maxrss: a child forked from this process starts with this
 * process's pages mapped (the corpus, the requests), and the kernel keeps
 * that high-water mark in the child's ru_maxrss through exec. */
static long stop_process(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	long hwm = -1;
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &hwm) == 1)
			break;
	if (f)
		fclose(f);
	kill(pid, SIGTERM);
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_http: keel serve did not exit cleanly\n");
		exit(1);
	}
	return hwm;
}

/* The 1-minute load average: figures taken on a busy machine say so. */
static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

struct scenario {
	const char *name;
	const char *store; /* "memory", "sqlite", or "null" (--null mode) */
	bool process;	   /* against the keel binary's own process */
	/* the writer's commits answered before they are synced (what the
	 * sync before each answer costs, beside the same row synced) */
	bool unsynced;
	const struct reqs *reqs;
	double rate;
	struct target target;
	bool show_events;
};

int main(int argc, char **argv)
{
	struct opts o = {
		.events = 200000,
		.rate = 2000,
		.seconds = 5,
		.threads = 4,
		.connections = 4,
		.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--tiny") == 0) {
			o.events = 4000, o.seconds = 0.5, o.threads = 2;
			continue;
		}
		if (!v) {
			fprintf(stderr, "usage: bench_http [--events N] [--rate R] [--seconds S] "
					"[--threads T] [--connections C] [--dir DIR] [--only TEXT] [--port P] "
					"[--tiny]\n");
			return 2;
		}
		if (strcmp(a, "--events") == 0)
			o.events = strtoull(v, NULL, 10);
		else if (strcmp(a, "--rate") == 0)
			o.rate = strtod(v, NULL);
		else if (strcmp(a, "--seconds") == 0)
			o.seconds = strtod(v, NULL);
		else if (strcmp(a, "--threads") == 0)
			o.threads = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--connections") == 0)
			o.connections = strtoul(v, NULL, 10);
		else if (strcmp(a, "--dir") == 0)
			o.dir = v;
		else if (strcmp(a, "--only") == 0)
			o.only = v;
		else if (strcmp(a, "--port") == 0)
			o.port = (unsigned)strtoul(v, NULL, 10);
		else {
			fprintf(stderr, "bench_http: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	size_t singles = (size_t)(o.rate * o.seconds);
	struct corpus batch_c, single_c;
	corpus_make(&batch_c, o.events, 1);
	corpus_make(&single_c, singles, 2);
	struct reqs batches, ones;
	reqs_batches(&batches, &batch_c, 1000);
	reqs_singles(&ones, &single_c);

	printf("keel serve, in-process on 127.0.0.1, %u worker threads; load generator: one "
	       "epoll thread, keep-alive; %ld cores, load average %.2f at start\n",
	       o.threads, sysconf(_SC_NPROCESSORS_ONLN), loadavg());
	printf("batches: %zu requests of 1000 events (%.0f bytes/event) on %zu connections; "
	       "singles: %zu requests\n\n",
	       batches.n, (double)batch_c.off[batch_c.n - 1] / (double)batch_c.n,
	       o.connections, ones.n);
	printf("| %-28s | %-6s | %8s | %6s | %6s | %9s | %8s | %7s | %7s | %-27s |\n",
	       "scenario", "store", "requests", "failed", "secs", "events/s", "req/s",
	       "p50 ms", "p99 ms", "target");
	printf("|------------------------------|--------|----------|--------|--------|-----------|"
	       "----------|---------|---------|-----------------------------|\n");

	struct run r;
	char name[64];
	snprintf(name, sizeof name, "single, paced %.0f/s", o.rate);
	char unsynced_name[64];
	snprintf(unsynced_name, sizeof unsynced_name, "single, paced %.0f/s, no sync", o.rate);
	const struct scenario sc[] = {
		{"batch 1000, limit (--null)", "null", false, false, &batches, 0, {"limit"}, true},
		{"batch 1000, limit (library)", "memory", false, false, &batches, 0, {"limit"}, true},
		{"batch 1000", "memory", false, false, &batches, 0,
		 {">= 200000 events/s", 200000, 0}, true},
		{"batch 1000, limit (library)", "sqlite", false, false, &batches, 0, {"limit"}, true},
		{"4000/commit, limit (library)", "sqlite", false, false, &batches, 0, {"limit"}, true},
		{"batch 1000", "sqlite", false, false, &batches, 0,
		 {">= 100000 events/s", 100000, 0}, true},
		{"batch 1000, no sync", "sqlite", false, true, &batches, 0, {"before: no sync"}, true},
		{"batch 1000, serve process", "sqlite", true, false, &batches, 0,
		 {">= 100000 events/s", 100000, 0}, true},
		{"single, paced, limit (--null)", "null", false, false, &ones, o.rate, {"limit"},
		 false},
		{name, "sqlite", false, false, &ones, o.rate, {"p99 <= 5 ms", 0, 5}, false},
		{unsynced_name, "sqlite", false, true, &ones, o.rate, {"before: no sync"}, false},
		{"single, max, limit (--null)", "null", false, false, &ones, 0, {"limit"}, false},
		{"single, max", "sqlite", false, false, &ones, 0, {""}, false},
		{"single, max, no sync", "sqlite", false, true, &ones, 0, {"before: no sync"},
		 false},
	};
	/* The rows synced and not, for the ratios after the table: batch
	 * events/s, paced p99, max req/s. */
	double synced[3] = {0}, unsynced[3] = {0};
	long serve_rss_kib = -1;
	for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
		const struct scenario *x = &sc[i];
		char label[128];
		snprintf(label, sizeof label, "%s %s", x->name, x->store);
		if (o.only && !strstr(label, o.only))
			continue;
		char url[600] = "memory:";
		if (strcmp(x->store, "sqlite") == 0)
			sqlite_url(&o, "bench_http", url, sizeof url);
		if (o.port) {
			if (strstr(x->name, "(library)") || x->process || x->unsynced)
				continue;
			size_t nconn = x->reqs == &batches ? o.connections : 16;
			load((uint16_t)o.port, x->reqs, nconn, x->rate, &r);
		} else if (strstr(x->name, "(library)")) {
			bool grouped = strstr(x->name, "/commit") != NULL;
			direct(url, &batch_c, grouped ? 4000 : 1000, grouped, &r);
		} else if (x->process) {
			uint16_t port = free_port();
			pid_t pid = serve_process(url, port, o.threads);
			load(port, x->reqs, o.connections, x->rate, &r);
			serve_rss_kib = stop_process(pid);
		} else {
			enum serve_mode mode = strcmp(x->store, "null") == 0 ? SERVE_DROPPING
					       : x->unsynced		      ? SERVE_UNSYNCED
									      : SERVE_AS_IS;
			struct keel_server *srv = serve(&o, url, mode);
			/* Batches on a few connections (one writer anyway);
			 * singles on more, as many producers would. */
			size_t nconn = x->reqs == &batches ? o.connections : 16;
			load(keel_server_port(srv), x->reqs, nconn, x->rate, &r);
			keel_server_stop(srv);
		}
		row(x->name, x->store, &r, &x->target, x->show_events);
		if (strcmp(x->store, "sqlite") == 0 && !x->process && !strstr(x->name, "limit")) {
			double *to = x->unsynced ? unsynced : synced;
			if (x->reqs == &batches)
				to[0] = (double)r.events / r.seconds;
			else if (x->rate > 0)
				to[1] = pct(&r, 0.99);
			else
				to[2] = (double)r.done / r.seconds;
		}
		free(r.lat);
	}
	if (synced[0] > 0 && unsynced[0] > 0)
		printf("\nthe sync before each answer (SQLite): batch 1000 %.0f events/s, %.0f "
		       "without (%.2fx)",
		       synced[0], unsynced[0], synced[0] / unsynced[0]);
	if (synced[1] > 0 && unsynced[1] > 0)
		printf("; single paced p99 %.2f ms, %.2f without (%.2fx)", synced[1], unsynced[1],
		       synced[1] / unsynced[1]);
	if (synced[2] > 0 && unsynced[2] > 0)
		printf("; single max %.0f req/s, %.0f without (%.2fx)", synced[2], unsynced[2],
		       synced[2] / unsynced[2]);
	if (synced[0] > 0 || synced[1] > 0 || synced[2] > 0)
		printf("\n");

	if (serve_rss_kib >= 0)
		printf("\npeak RSS of the keel serve process (batches of 1000 into SQLite): "
		       "%.1f MiB (target <= 64 MiB: %s)\n",
		       (double)serve_rss_kib / 1024, serve_rss_kib <= 64 * 1024 ? "met" : "MISSED");
	printf("\nload average %.2f at the end (figures are only comparable on an idle "
	       "machine; the limit rows are measured in the same run for that reason)\n",
	       loadavg());
	reqs_free(&batches);
	reqs_free(&ones);
	corpus_free(&batch_c);
	corpus_free(&single_c);
	return 0;
}
